// The GEMV kernel's source and its launch for a matmul step.
#include "cuda/runtime/gemv.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace luminal::cuda {
namespace {

const char* gemv_type(DType dt) {
  switch (dt) {
    case DType::F32:
      return "LumGemvF32";
    case DType::F16:
      return "LumGemvF16";
    case DType::BF16:
      return "LumGemvBf16";
    default:
      throw std::invalid_argument(fmt::format("[cuda] no GEMV kernel for {}", dtype_name(dt)));
  }
}

}  // namespace

std::string gemv_entry(DType dt) {
  gemv_type(dt);  // refuses other dtypes
  return fmt::format("luminal_gemv_{}", dtype_name(dt));
}

std::string gemv_group_entry(DType dt) { return gemv_entry(dt) + "_group"; }

std::string gemv_source(DType dt, int loads) {
  return fmt::format(R"(#include "gemv.cuh"
extern "C" __global__ void __launch_bounds__({block}) {entry}(
    const {type}::Storage* a, const {type}::Storage* b, {type}::Storage* c,
    const {type}::Storage* bias, long long m, long long n, long long k, long long lda,
    long long ldb, long long a_batch, long long b_batch, long long relu, long long splits,
    const {type}::Storage* residual) {{
  lum_gemv<{type}, {loads}>(a, b, c, bias, m, n, k, lda, ldb, a_batch, b_batch, relu, splits,
                            residual);
}}

extern "C" __global__ void __launch_bounds__({block}) {entry}_group(
    const {type}::Storage* a, long long m, long long k, long long lda,
    const void* b0, void* c0, long long n0, long long ldb0, long long s0, long long blocks0,
    const void* b1, void* c1, long long n1, long long ldb1, long long s1, long long blocks1,
    const void* b2, void* c2, long long n2, long long ldb2, long long s2, long long blocks2) {{
  lum_gemv_group<{type}, {loads}>(a, m, k, lda, LumGemvPart{{b0, c0, n0, ldb0, s0, blocks0}},
                                  LumGemvPart{{b1, c1, n1, ldb1, s1, blocks1}},
                                  LumGemvPart{{b2, c2, n2, ldb2, s2, blocks2}});
}}
)",
                     fmt::arg("block", kGemvBlock), fmt::arg("entry", gemv_entry(dt)),
                     fmt::arg("type", gemv_type(dt)), fmt::arg("loads", loads));
}

int64_t gemv_splits(int64_t n, int64_t k, int64_t vec, int sm_count) {
  // 62 warps per SM (an H200 SM holds at most 64), over the device's SMs.
  const int64_t target_warps = int64_t{62} * std::max(sm_count, 1);
  int64_t splits = 1;
  while (splits < 8 && n * splits < target_warps && k / vec / (splits * 2) >= 32) splits *= 2;
  return splits;
}

std::optional<Launch> gemv_launch(const compiler::MatmulStep& st, CUfunction fn,
                                  const StepContext& c, int forced_splits) {
  if (st.gemv_max_m <= 0 || fn == nullptr) return std::nullopt;
  const int64_t m = st.m.eval(c.dyn), n = st.n.eval(c.dyn), k = st.k.eval(c.dyn);
  const int64_t batch = st.batch.eval(c.dyn);
  if (m < 1 || m > st.gemv_max_m || n < 1 || k < 1 || batch < 1 || batch > 65535)
    return std::nullopt;
  // A [m, k] and B [k, n] must both run along k contiguously: B is then a [n, k] weight.
  if (st.a_col.eval(c.dyn) != 1 || st.b_row.eval(c.dyn) != 1) return std::nullopt;
  const int64_t lda = st.a_row.eval(c.dyn), ldb = st.b_col.eval(c.dyn);
  const int64_t a_batch = st.a_batch.eval(c.dyn), b_batch = st.b_batch.eval(c.dyn);
  const int64_t es = int64_t(dtype_size(st.dtype)), vec = 16 / es;
  const CUdeviceptr a = c.ptrs[size_t(st.a)] + CUdeviceptr(st.a_offset.eval(c.dyn) * es);
  const CUdeviceptr b = c.ptrs[size_t(st.b)] + CUdeviceptr(st.b_offset.eval(c.dyn) * es);
  const CUdeviceptr bias = st.bias >= 0 ? c.ptrs[size_t(st.bias)] : 0;
  // 16-byte vector loads: every row start of A and B must be 16-byte aligned.
  for (int64_t v : {k, m > 1 ? lda : vec, n > 1 ? ldb : vec, batch > 1 ? a_batch : vec,
                    batch > 1 ? b_batch : vec})
    if (v % vec != 0) return std::nullopt;
  if (a % 16 != 0 || b % 16 != 0) return std::nullopt;
  const int64_t splits = forced_splits > 0 ? forced_splits : gemv_splits(n, k, vec, c.sm_count);
  const int64_t cols_per_block = kGemvBlock / 32 / splits;
  Launch l;
  l.fn = fn;
  l.grid[0] = unsigned((n + cols_per_block - 1) / cols_per_block);
  l.grid[1] = unsigned(batch);
  l.block[0] = kGemvBlock;
  for (int64_t v : {int64_t(a), int64_t(b), int64_t(c.ptrs[size_t(st.c)]), int64_t(bias), m, n, k,
                    lda, ldb, a_batch, b_batch, int64_t(st.relu), splits, int64_t{0}})
    l.values.push_back(static_cast<unsigned long long>(v));
  return l;
}

namespace {

// A GEMV launch's values (gemv_launch): a, b, c, bias, m, n, k, lda, ldb, a_batch, b_batch, relu,
// splits, residual.
enum GemvValue {
  kA,
  kB,
  kC,
  kBias,
  kM,
  kN,
  kK,
  kLda,
  kLdb,
  kABatch,
  kBBatch,
  kRelu,
  kSplits,
  kResidual
};

}  // namespace

std::vector<std::pair<int, int>> gemv_group_heads(const compiler::KernelPlan& plan) {
  std::vector<std::pair<int, int>> out;
  auto gemv = [&](size_t i) {
    const auto* m = std::get_if<compiler::MatmulStep>(&plan.steps[i]);
    return m != nullptr && m->gemv_max_m > 0 ? m : nullptr;
  };
  for (size_t x = 0; x < plan.steps.size(); ++x) {
    const compiler::MatmulStep* mx = gemv(x);
    if (mx == nullptr) continue;
    for (size_t i = x > kGemvGroupLookahead ? x - kGemvGroupLookahead : 0; i < x; ++i) {
      const compiler::MatmulStep* mi = gemv(i);
      if (mi != nullptr && mi->a == mx->a && mi->dtype == mx->dtype &&
          mi->a_offset.same(mx->a_offset) && mi->m.same(mx->m) && mi->k.same(mx->k)) {
        out.emplace_back(int(x), int(i));
        break;
      }
    }
  }
  return out;
}

int group_gemvs(std::vector<Op>& ops, const std::vector<bool>& is_gemv,
                std::vector<compiler::StepAccess> acc,
                const std::map<CUfunction, CUfunction>& group_fns) {
  constexpr size_t kLookahead = kGemvGroupLookahead, kMaxParts = 3;
  // GEMV launches touch no cuBLASLt workspace: drop that pseudo-range (step_accesses) from them.
  for (size_t i = 0; i < ops.size(); ++i)
    if (is_gemv[i])
      std::erase_if(acc[i].writes,
                    [](const compiler::ByteRange& r) { return r.end == ~uint64_t{0}; });
  auto groupable = [&](size_t i) {
    if (!is_gemv[i] || !ops[i].launch || !group_fns.contains(ops[i].launch->fn)) return false;
    const Launch& l = *ops[i].launch;
    return l.grid[1] == 1 && l.values[kBias] == 0 && l.values[kRelu] == 0 &&
           l.values[kResidual] == 0;
  };
  int grouped = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!groupable(i)) continue;
    const std::vector<unsigned long long>& head = ops[i].launch->values;
    std::vector<size_t> parts{i};
    for (size_t x = i + 1; x < ops.size() && x <= i + kLookahead && parts.size() < kMaxParts; ++x) {
      if (!groupable(x)) continue;
      const std::vector<unsigned long long>& v = ops[x].launch->values;
      if (v[kA] != head[kA] || v[kM] != head[kM] || v[kK] != head[kK] || v[kLda] != head[kLda] ||
          ops[x].launch->fn != ops[i].launch->fn)
        continue;
      // x runs at i's place: it must commute with every step between them that stays there.
      bool ok = true;
      for (size_t y = i + 1; y < x && ok; ++y)
        ok = std::find(parts.begin(), parts.end(), y) != parts.end() ||
             !compiler::conflicts(acc[x], acc[y]);
      for (size_t p : parts) ok = ok && !compiler::conflicts(acc[x], acc[p]);
      if (ok) parts.push_back(x);
    }
    if (parts.size() < 2) continue;
    Launch g;
    g.fn = group_fns.at(ops[i].launch->fn);
    g.grid[0] = 0;  // the parts' blocks, added below
    std::copy(std::begin(ops[i].launch->block), std::end(ops[i].launch->block), g.block);
    g.values = {head[kA], head[kM], head[kK], head[kLda]};
    for (size_t p = 0; p < kMaxParts; ++p) {
      if (p < parts.size()) {
        const Launch& l = *ops[parts[p]].launch;
        const std::vector<unsigned long long>& v = l.values;
        g.values.insert(g.values.end(), {v[kB], v[kC], v[kN], v[kLdb], v[kSplits], l.grid[0]});
        g.grid[0] += l.grid[0];
      } else {
        g.values.insert(g.values.end(), {0, 0, 0, 0, 1, 0});
      }
    }
    ops[i].launch = std::move(g);
    for (size_t p = 1; p < parts.size(); ++p) ops[parts[p]].launch.reset();
    grouped += int(parts.size()) - 1;
  }
  return grouped;
}

std::vector<GemvResidual> gemv_residuals(const Graph& g, const compiler::KernelPlan& plan) {
  const std::vector<compiler::StepBuffers> bufs = step_buffers(plan);
  std::vector<std::vector<size_t>> readers(plan.buffers.size());
  for (size_t s = 0; s < bufs.size(); ++s)
    for (int b : bufs[s].reads)  // a step may list a buffer twice (its reads and its arguments)
      if (readers[size_t(b)].empty() || readers[size_t(b)].back() != s)
        readers[size_t(b)].push_back(s);
  auto whole = [&](const NodeInput& in) {
    return in.view.is_contiguous() && in.view.numel().same(product(g.node(in.node).shape));
  };
  std::vector<GemvResidual> out;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto* m = std::get_if<compiler::MatmulStep>(&plan.steps[i]);
    if (m == nullptr || m->gemv_max_m <= 0 || m->bias >= 0 || m->relu) continue;
    const compiler::PlanBuffer& cb = plan.buffers[size_t(m->c)];
    if (cb.kind != compiler::PlanBuffer::Kind::Intermediate || readers[size_t(m->c)].size() != 1)
      continue;
    const size_t j = readers[size_t(m->c)][0];
    const auto* k = std::get_if<compiler::KernelStep>(&plan.steps[j]);
    if (k == nullptr || j <= i || j - i > kGemvGroupLookahead || k->nodes.size() != 1 ||
        k->writes.size() != 1)
      continue;
    const Node& add = g.node(k->nodes[0]);
    if (add.kind != OpKind::Add || add.dtype != m->dtype || add.inputs.size() != 2 ||
        !product(add.shape).same(cb.numel))
      continue;
    for (int side = 0; side < 2; ++side) {
      const NodeInput &x = add.inputs[size_t(side)], &r = add.inputs[size_t(1 - side)];
      const int rb = plan.buffer_of_node[r.node];
      if (x.node != cb.node || r.node == cb.node || rb < 0 || !whole(x) || !whole(r) ||
          !product(g.node(r.node).shape).same(cb.numel))
        continue;
      // The kernel reads nothing but the product and the residual.
      const bool only = std::all_of(bufs[j].reads.begin(), bufs[j].reads.end(),
                                    [&](int b) { return b == m->c || b == rb; });
      if (only) out.push_back({int(i), int(j), rb, k->writes[0]});
      break;
    }
  }
  return out;
}

int fuse_gemv_residuals(std::vector<Op>& ops, const std::vector<GemvResidual>& fusions,
                        std::vector<compiler::StepAccess>& acc,
                        const std::vector<CUdeviceptr>& ptrs, const std::vector<size_t>& bytes) {
  auto range = [&](int b) {
    return compiler::ByteRange{ptrs[size_t(b)], ptrs[size_t(b)] + bytes[size_t(b)]};
  };
  int fused = 0;
  for (const GemvResidual& f : fusions) {
    Op &mm = ops[size_t(f.matmul_step)], &add = ops[size_t(f.add_step)];
    if (!mm.launch || !add.launch || mm.launch->grid[1] != 1) continue;  // cuBLASLt at these dims
    // The product now reads the residual and writes the sum, at its own place: it must commute
    // with every step up to the Add's.
    compiler::StepAccess moved = acc[size_t(f.matmul_step)];
    moved.reads.push_back(range(f.residual));
    moved.writes = {range(f.out)};
    bool ok = true;
    for (int y = f.matmul_step + 1; y < f.add_step && ok; ++y)
      ok = !compiler::conflicts(moved, acc[size_t(y)]);
    if (!ok) continue;
    mm.launch->values[kC] = ptrs[size_t(f.out)];
    mm.launch->values[kResidual] = ptrs[size_t(f.residual)];
    add.launch.reset();
    acc[size_t(f.matmul_step)] = std::move(moved);
    ++fused;
  }
  return fused;
}

}  // namespace luminal::cuda
