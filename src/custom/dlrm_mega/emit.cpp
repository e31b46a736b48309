// DlrmMega's CUDA source generator: one straight-line kernel per shape over the device templates in
// dlrm_mega.cuh (every dim a compile-time constant).
#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "custom/dlrm_mega/op.h"
#include "custom/dlrm_mega/plan.h"

namespace luminal::custom {

namespace {

// FNV-1a: a stable kernel name per shape.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

std::string join_dims(const std::vector<int64_t>& v, const char* sep) { return fmt::format("{}", fmt::join(v, sep)); }

// Parameter names, in the custom-op input order.
std::string params(const nn::DlrmConfig& c, const MegaPlan& p) {
  std::string s = "    const void* dense_x_";
  for (int64_t k = 0; k < c.num_tables(); ++k) s += fmt::format(", const void* indices_{}_", k);
  for (int64_t k = 0; k < c.num_tables(); ++k) s += fmt::format(", const void* emb_{}_", k);
  for (const MegaLayer& l : p.layers) {
    const char* m = l.top ? "top" : "bot";
    s += fmt::format(",\n    const void* {0}_w{1}_, const void* {0}_b{1}_", m, l.index);
  }
  return s + ",\n    void* out_, int* error";
}

// "smem + off" or the global weight pointer.
std::string weight_ptr(const MegaLayer& l) {
  const char* m = l.top ? "top" : "bot";
  if (l.smem) return fmt::format("smem + {}", l.offset);
  return fmt::format("static_cast<const float*>({}_w{}_)", m, l.index);
}

std::string bias_ptr(const MegaLayer& l) {
  return fmt::format("static_cast<const float*>({}_b{}_)", l.top ? "top" : "bot", l.index);
}

// Waits for the layer's cp.async group (groups complete in order).
std::string wait_for(const MegaLayer& l, const MegaPlan& p) {
  if (!l.smem) return "";
  return fmt::format("  stage_wait<{}>();\n", p.staged - 1 - l.group);
}

std::string staging(const MegaPlan& p) {
  std::string s;
  for (const MegaLayer& l : p.layers) {
    if (!l.smem) continue;
    s += fmt::format("  stage_async<{}, {}, {}, {}, kBlock>({}, static_cast<const float*>({}_w{}_), tid);\n",
                     l.out, l.in, l.ld, l.rows, weight_ptr(l), l.top ? "top" : "bot", l.index);
    s += "  stage_commit();\n";
  }
  return s;
}

std::string inputs(const nn::DlrmConfig& c) {
  const char* idx = c.index_dtype == DType::I64 ? "long long" : "int";
  std::string s = fmt::format("  float x[{0}];\n  load_row<{0}>(x, static_cast<const float*>(dense_x_) + sample * {0});\n",
                              c.ln_bot[0]);
  s += "  bool bad = false;\n";
  for (int64_t k = 0; k < c.num_tables(); ++k) {
    s += fmt::format("  float raw{}[BAG][SD];\n", k);
    s += fmt::format(
        "  bad |= gather_bag<BAG, D, G>(raw{0}, static_cast<const float*>(emb_{0}_), "
        "static_cast<const {1}*>(indices_{0}_), sample, {2}LL, g);\n",
        k, idx, c.ln_emb[k]);
  }
  return s;
}

std::string bottom(const nn::DlrmConfig& c, const MegaPlan& p) {
  std::string s, prev;
  const int nb = static_cast<int>(c.ln_bot.size()) - 1;
  for (int i = 0; i < nb; ++i) {
    const MegaLayer& l = p.layers[i];
    const std::string dst = i + 1 == nb ? "t[0]" : fmt::format("b{}", i);
    const std::string in = i == 0 ? fmt::format("RowIn<{}>{{x}}", l.in) : fmt::format("DvecIn<{}, G>{{{}, g}}", l.in, prev);
    s += wait_for(l, p);
    if (i + 1 < nb) s += fmt::format("  float {}[cdiv({}, G)];\n", dst, l.out);
    s += fmt::format("  dense<{}, {}, {}, {}, Act::Relu, G>({}, {}, {}, g, {});\n", l.in, l.out, l.ld,
                     l.smem ? "true" : "false", dst, weight_ptr(l), bias_ptr(l), in);
    prev = dst;
  }
  return s;
}

std::string top(const nn::DlrmConfig& c, const MegaPlan& p) {
  const int nb = static_cast<int>(c.ln_bot.size()) - 1, nt = static_cast<int>(c.ln_top.size()) - 1;
  const int n = static_cast<int>(c.num_tables()) + 1;
  std::string s;
  const MegaLayer& f = p.layers[nb];
  const char* act0 = nt == 1 ? "Act::Sigmoid" : "Act::Relu";
  s += wait_for(f, p);
  s += fmt::format("  float acc0[cdiv({}, G)] = {{}};\n", f.out);
  s += fmt::format("  accumulate<{}, 0, D, {}, {}, G>(acc0, {}, g, DvecIn<D, G>{{t[0], g}});\n", f.out, f.ld,
                   f.smem ? "true" : "false", weight_ptr(f));
  s += fmt::format("  accumulate_pairs<{}, D, {}, {}, {}, G>(acc0, t, {}, g);\n", n, f.out, f.ld,
                   f.smem ? "true" : "false", weight_ptr(f));
  s += fmt::format("  float h0[cdiv({}, G)];\n  finish<{}, {}, G>(h0, acc0, {}, g);\n", f.out, f.out, act0, bias_ptr(f));
  for (int i = 1; i < nt; ++i) {
    const MegaLayer& l = p.layers[nb + i];
    s += wait_for(l, p);
    s += fmt::format("  float h{}[cdiv({}, G)];\n", i, l.out);
    s += fmt::format("  dense<{}, {}, {}, {}, {}, G>(h{}, {}, {}, g, DvecIn<{}, G>{{h{}, g}});\n", l.in, l.out, l.ld,
                     l.smem ? "true" : "false", i + 1 == nt ? "Act::Sigmoid" : "Act::Relu", i, weight_ptr(l),
                     bias_ptr(l), l.in, i - 1);
  }
  return s + fmt::format("  const float y = h{}[0];\n", nt - 1);
}

}  // namespace

CustomKernel emit_dlrm_mega(const nn::DlrmConfig& c, int lanes) {
  const MegaPlanResult r = plan_dlrm_mega(c, lanes);
  if (!r.plan) throw std::invalid_argument("[dlrm_mega] unsupported: " + r.why);
  const MegaPlan& p = *r.plan;
  const std::string shape = fmt::format(
      "batch {}, bag {}, {} indices, tables [{}] x d {}, bottom {}, top {}", c.batch, c.bag,
      dtype_name(c.index_dtype), join_dims(c.ln_emb, ", "), c.dim(), join_dims(c.ln_bot, "-"), join_dims(c.ln_top, "-"));
  CustomKernel k;
  k.entry = fmt::format("dlrm_mega_{:016x}", fnv1a(fmt::format("{}; {} lanes", shape, p.lanes)));
  k.grid = {static_cast<unsigned>(p.grid), 1, 1};
  k.block = {static_cast<unsigned>(p.block), 1, 1};
  k.shared_bytes = static_cast<unsigned>(p.smem_floats) * 4;
  std::string& s = k.source;
  s += "// dlrm_mega: the whole DLRM forward in one kernel (generated by src/custom/dlrm_mega/emit.cpp).\n";
  s += fmt::format("// {}.\n", shape);
  s += fmt::format("// {} lanes per sample, {} threads per block, {} blocks; {} of {} layers' weights in shared memory.\n",
                   p.lanes, p.block, p.grid, p.staged, p.layers.size());
  s += "#include \"dlrm_mega.cuh\"\n\n";
  s += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n{}) {{\n", p.block, k.entry, params(c, p));
  s += "  using namespace dlrm;\n";
  s += fmt::format("  constexpr int G = {};\n  constexpr int kBlock = {};\n  constexpr long long kBatch = {};\n",
                   p.lanes, p.block, c.batch);
  s += fmt::format("  constexpr int D = {};\n  constexpr int SD = cdiv(D, G);\n  constexpr int BAG = {};\n", c.dim(), c.bag);
  if (p.smem_floats > 0) s += fmt::format("  extern __shared__ __align__(16) float smem[];  // {} floats\n", p.smem_floats);
  s += "  const int tid = threadIdx.x;\n  const Group<G> g{tid % G};\n";
  s += "  const long long sample_id = (static_cast<long long>(blockIdx.x) * kBlock + tid) / G;\n";
  s += "  // Tail lanes recompute the last sample (keeping every lane in the shuffles and barriers) and store nothing.\n";
  s += "  const long long sample = sample_id < kBatch ? sample_id : kBatch - 1;\n\n";
  s += "  // Weights to shared memory, one cp.async group per layer; each layer waits for its own.\n" + staging(p);
  s += "\n  // Dense row and embedding rows, issued before the bottom MLP so their latency overlaps it.\n" + inputs(c);
  s += "\n  // Bottom MLP; its last layer is feature 0 of the interaction.\n";
  s += fmt::format("  float t[{}][SD];\n", c.num_tables() + 1) + bottom(c, p);
  s += "\n  // Embedding bags (sum) are features 1..n-1.\n";
  for (int64_t k = 0; k < c.num_tables(); ++k) s += fmt::format("  sum_bag<BAG, SD>(t[{}], raw{});\n", k + 1, k);
  s += "\n  // Top MLP; the first layer consumes [x, the interaction pairs] as they are produced.\n" + top(c, p);
  s += "\n  if (g.lane == 0 && sample_id < kBatch) {\n";
  s += "    static_cast<float*>(out_)[sample_id] = bad ? nan_f32() : y;\n";
  s += "    if (bad && error != nullptr) atomicOr(error, 1);\n  }\n}\n";
  return k;
}

namespace {

// The config these concrete inputs describe (batch from dense_x), or the reason they do not fit it.
std::string config_for_inputs(const nn::DlrmConfig& c, const std::vector<std::vector<int64_t>>& dims,
                              const std::vector<DType>& dtypes, nn::DlrmConfig& out) {
  const size_t k = c.ln_emb.size();
  if (dims.size() != dtypes.size() || dims.empty() || dims[0].size() != 2) return "malformed input list";
  out = c;
  out.batch = dims[0][0];
  // Expected dims and dtypes, in the input order of DlrmMega.
  std::vector<std::vector<int64_t>> want{{out.batch, c.ln_bot[0]}};
  std::vector<DType> want_dt{DType::F32};
  for (size_t i = 0; i < k; ++i) want.push_back({out.batch * c.bag}), want_dt.push_back(c.index_dtype);
  for (size_t i = 0; i < k; ++i) want.push_back({c.ln_emb[i], c.dim()}), want_dt.push_back(DType::F32);
  for (const auto* ln : {&c.ln_bot, &c.ln_top}) {
    for (size_t i = 0; i + 1 < ln->size(); ++i) {
      want.push_back({(*ln)[i + 1], (*ln)[i]}), want_dt.push_back(DType::F32);
      want.push_back({(*ln)[i + 1]}), want_dt.push_back(DType::F32);
    }
  }
  if (dims.size() != want.size()) return fmt::format("{} inputs, expected {}", dims.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (dims[i] != want[i] || dtypes[i] != want_dt[i]) {
      return fmt::format("input {} is {} [{}], expected {} [{}] (f32 data, i32/i64 indices only)", i,
                         dtype_name(dtypes[i]), fmt::join(dims[i], ", "), dtype_name(want_dt[i]),
                         fmt::join(want[i], ", "));
    }
  }
  return "";
}

}  // namespace

std::string why_unsupported(const nn::DlrmConfig& c, const std::vector<std::vector<int64_t>>& input_dims,
                            const std::vector<DType>& input_dtypes) {
  nn::DlrmConfig actual;
  if (std::string why = config_for_inputs(c, input_dims, input_dtypes, actual); !why.empty()) return why;
  return why_unsupported(actual);
}

std::optional<CustomKernel> DlrmMega::cuda_kernel(const std::vector<std::vector<int64_t>>& input_dims,
                                                  const std::vector<DType>& input_dtypes) const {
  nn::DlrmConfig actual;
  if (!config_for_inputs(config_, input_dims, input_dtypes, actual).empty()) return std::nullopt;
  if (!why_unsupported(actual).empty()) return std::nullopt;
  return emit_dlrm_mega(actual);
}

}  // namespace luminal::custom
