// DlrmMega's CUDA source generator: one straight-line kernel per shape over the device templates in
// dlrm_mega.cuh (every dim a compile-time constant).
#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "custom/dlrm_mega/op.h"
#include "custom/dlrm_mega/plan.h"
#include "custom/kernel_name.h"

namespace luminal::custom {

namespace {

std::string join_dims(const std::vector<int64_t>& v, const char* sep) { return fmt::format("{}", fmt::join(v, sep)); }

// Parameter names, in the custom-op input order: one line per group. Jagged configs add the
// offsets and the leading element counts (custom_op.h) up to the indices': n_indices_k is nnz_k,
// read at run time so one kernel serves every nnz (the later counts are not declared).
std::string params(const DlrmMegaShape& c, const MegaPlan& p) {
  std::string idx, off, emb, counts = "long long n_dense_x";
  for (int64_t k = 0; k < c.num_tables(); ++k) {
    idx += fmt::format("{}const void* indices_{}_", k ? ", " : "", k);
    off += fmt::format("{}const void* offsets_{}_", k ? ", " : "", k);
    emb += fmt::format("{}const void* emb_{}_", k ? ", " : "", k);
    counts += fmt::format(", long long n_indices_{}", k);
  }
  std::string s =
      "    const void* dense_x_,\n    " + idx + ",\n    " + (c.jagged ? off + ",\n    " : "") + emb;
  for (const MegaLayer& l : p.layers) {
    const char* m = l.top ? "top" : "bot";
    s += fmt::format(",\n    const void* {0}_w{1}_, const void* {0}_b{1}_", m, l.index);
  }
  // n_dense_x gives the batch at run time; the indices' counts are read for jagged bags only.
  return s + ",\n    void* out_, int* error,\n    " + (c.jagged ? counts : "long long n_dense_x");
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
    s += fmt::format("  stage_async<{}, {}, {}, kBlock>({}, static_cast<const float*>({}_w{}_), tid);\n", l.out,
                     l.in, l.ld, weight_ptr(l), l.top ? "top" : "bot", l.index);
    s += "  stage_commit();\n";
  }
  return s;
}

const char* index_type(const DlrmMegaShape& c) {
  return c.index_dtype == DType::I64 ? "long long" : "int";
}

// Jagged bags: each table's span (parked in its T row) and first row into acc{k}; finish_bag adds
// the rest after the bottom MLP.
std::string jagged_inputs(const DlrmMegaShape& c) {
  std::string s = "  bool bad = false;\n  bool bad_offsets = false;\n";
  for (int64_t k = 0; k < c.num_tables(); ++k) {
    s += fmt::format("  float acc{}[SD];\n  {{\n    long long lo, hi;\n", k);
    s += fmt::format(
        "    bad_offsets |= bag_span(lo, hi, static_cast<const {1}*>(offsets_{0}_), sample, "
        "kBatch, n_indices_{0});\n",
        k, index_type(c));
    s += fmt::format(
        "    bad |= first_row<D, G>(acc{0}, t + {1} * DP, static_cast<const float*>(emb_{0}_), "
        "static_cast<const {2}*>(indices_{0}_), lo, hi, {3}LL, lane);\n  }}\n",
        k, k + 1, index_type(c), c.ln_emb[k]);
  }
  return s;
}

std::string inputs(const DlrmMegaShape& c) {
  const char* idx = index_type(c);
  std::string s = fmt::format("  load_row<{0}, G>(act0, static_cast<const float*>(dense_x_) + sample * {0}, lane);\n",
                              c.ln_bot[0]);
  if (c.jagged) return s + jagged_inputs(c) + "  __syncwarp();\n";
  s += "  bool bad = false;\n";
  for (int64_t k = 0; k < c.num_tables(); ++k) {
    s += fmt::format("  float raw{}[BAG][SD];\n", k);
    s += fmt::format(
        "  bad |= gather_bag<BAG, D, G>(raw{0}, static_cast<const float*>(emb_{0}_), "
        "static_cast<const {1}*>(indices_{0}_), sample, {2}LL, lane);\n",
        k, idx, c.ln_emb[k]);
  }
  return s + "  __syncwarp();\n";
}

// One dense layer reading row `in` and writing `out` (and `out2`), then a group barrier.
std::string layer(const MegaLayer& l, const MegaPlan& p, const char* act, const std::string& out,
                  const std::string& out2, const std::string& in) {
  std::string s = wait_for(l, p);
  s += fmt::format("  dense<{}, {}, {}, {}, {}, G>({}, {}, {}, {}, {}, lane);\n", l.in, l.out, l.ld,
                   l.smem ? "true" : "false", act, out, out2, in, weight_ptr(l), bias_ptr(l));
  return s + "  __syncwarp();\n";
}

// The activation rows ping-pong: layer i reads act{i % 2} and writes the other.
std::string act_row(int i) { return fmt::format("act{}", i % 2); }

std::string bottom(const DlrmMegaShape& c, const MegaPlan& p) {
  std::string s;
  const int nb = static_cast<int>(c.ln_bot.size()) - 1;
  for (int i = 0; i < nb; ++i) {
    // The last bottom layer is feature 0 of T and the head of R = [x, pairs].
    const bool last = i + 1 == nb;
    s += layer(p.layers[i], p, "Act::Relu", last ? "t" : act_row(i + 1), last ? act_row(i + 1) : "nullptr",
               act_row(i));
  }
  return s;
}

// The bags into T[1..N-1]: uniform bags reduce their prefetched rows, jagged ones add the rest.
std::string bags(const DlrmMegaShape& c) {
  const bool mean = c.mode == nn::BagMode::Mean;
  std::string s;
  for (int64_t k = 0; k < c.num_tables(); ++k) {
    if (c.jagged) {
      s += fmt::format(
          "  bad |= finish_bag<D, G, {3}>(t + {0} * DP, acc{1}, "
          "static_cast<const float*>(emb_{1}_), static_cast<const {2}*>(indices_{1}_), {4}LL, "
          "lane);\n",
          k + 1, k, index_type(c), mean ? "true" : "false", c.ln_emb[k]);
    } else {
      s += fmt::format("  store_bag_{}<BAG, D, G>(t + {} * DP, raw{}, lane);\n",
                       mean ? "mean" : "sum", k + 1, k);
    }
  }
  return s + "  __syncwarp();\n";
}

// "bag 3", "bag 3 (mean)", "jagged bags", "jagged bags (mean)".
std::string bag_desc(const DlrmMegaShape& c) {
  std::string s = c.jagged ? "jagged bags" : fmt::format("bag {}", c.bag);
  return c.mode == nn::BagMode::Mean ? s + " (mean)" : s;
}

// The output (NaN on bad input) and the error word: 1 = an index out of range (the runtime's
// gather bit), 4 = bad offsets (as dlrm_sparse).
std::string store(const DlrmMegaShape& c) {
  std::string s = "\n  if (lane == 0 && sample_id < kBatch) {\n";
  if (!c.jagged) {
    s += "    static_cast<float*>(out_)[sample_id] = bad ? nan_f32() : y;\n";
    return s + "    if (bad && error != nullptr) atomicOr(error, 1);\n  }\n}\n";
  }
  s += "    static_cast<float*>(out_)[sample_id] = bad || bad_offsets ? nan_f32() : y;\n";
  s += "    if ((bad || bad_offsets) && error != nullptr) atomicOr(error, (bad ? 1 : 0) | "
       "(bad_offsets ? 4 : 0));\n";
  return s + "  }\n}\n";
}

std::string top(const DlrmMegaShape& c, const MegaPlan& p) {
  const int nb = static_cast<int>(c.ln_bot.size()) - 1, nt = static_cast<int>(c.ln_top.size()) - 1;
  std::string s;
  for (int i = 0; i < nt; ++i) {
    const int r = nb + i;  // R sits in act{nb % 2}
    s += layer(p.layers[r], p, i + 1 == nt ? "Act::Sigmoid" : "Act::Relu", act_row(r + 1), "nullptr", act_row(r));
  }
  return s + fmt::format("  const float y = {}[0];\n", act_row(nb + nt));
}

}  // namespace

CustomKernel emit_dlrm_mega(const DlrmMegaShape& c, const DeviceCaps& caps, MegaTuning tuning) {
  const MegaPlanResult r = plan_dlrm_mega(c, caps, tuning);
  if (!r.plan) throw std::invalid_argument("[dlrm_mega] unsupported: " + r.why);
  const MegaPlan& p = *r.plan;
  const std::string shape =
      fmt::format("{}, {} indices, tables [{}] x d {}, bottom {}, top {}", bag_desc(c),
                  dtype_name(c.index_dtype), join_dims(c.ln_emb, ", "), c.dim(),
                  join_dims(c.ln_bot, "-"), join_dims(c.ln_top, "-"));
  CustomKernel k;
  k.entry = fmt::format("dlrm_mega_{:016x}", fnv1a(fmt::format("{}; {} lanes; block {}", shape, p.lanes, p.block)));
  k.grid = {static_cast<unsigned>(p.grid), 1, 1};
  k.block = {static_cast<unsigned>(p.block), 1, 1};
  k.shared_bytes = static_cast<unsigned>(p.smem_floats) * 4;  // above 48 KB the launcher opts in
  std::string& s = k.source;
  s += "// dlrm_mega: the whole DLRM forward in one kernel (generated by src/custom/dlrm_mega/emit.cpp).\n";
  s += fmt::format("// {}.\n", shape);
  s += fmt::format("// {} lanes per sample, {} threads per block; {} of {} layers' weights in shared memory.\n",
                   p.lanes, p.block, p.staged, p.layers.size());
  s += "#include \"dlrm_mega.cuh\"\n\n";
  s += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n{}) {{\n", p.block, k.entry, params(c, p));
  s += "  using namespace dlrm;\n";
  const int n = static_cast<int>(c.num_tables()) + 1;
  // The batch at run time, so one source serves every batch with this lanes/block plan.
  s += fmt::format("  constexpr int G = {};\n  constexpr int kBlock = {};\n  const long long kBatch = n_dense_x / {};\n",
                   p.lanes, p.block, c.ln_bot[0]);
  s += fmt::format("  constexpr int D = {};\n  constexpr int SD = cdiv(D, G);\n", c.dim());
  if (!c.jagged) s += fmt::format("  constexpr int BAG = {};\n", c.bag);
  s += fmt::format("  constexpr int N = {};\n  constexpr int AW = {};\n  constexpr int DP = {};\n", n, p.act_stride,
                   p.feat_stride);
  s += fmt::format("  // Shared memory: {} floats of staged weights, then per sample two activation rows of AW and\n"
                   "  // the interaction features T[N][DP] ({} floats per sample, {} in all).\n",
                   p.weight_floats, p.sample_floats, p.smem_floats);
  s += "  extern __shared__ __align__(16) float smem[];\n";
  s += "  const int tid = threadIdx.x;\n  const int lane = tid % G;\n";
  s += "  const long long sample_id = (static_cast<long long>(blockIdx.x) * kBlock + tid) / G;\n";
  s += "  // Tail lanes recompute the last sample (keeping every lane in the barriers) and store nothing.\n";
  s += "  const long long sample = sample_id < kBatch ? sample_id : kBatch - 1;\n";
  s += fmt::format("  float* const act0 = smem + {} + (tid / G) * (2 * AW + N * DP);\n", p.weight_floats);
  s += "  float* const act1 = act0 + AW;\n  float* const t = act1 + AW;\n\n";
  s += "  // Weights to shared memory, one cp.async group per layer; each layer waits for its own.\n" + staging(p);
  s += c.jagged ? "\n  // Dense row (act0), each bag's span and first row (registers), issued "
                  "before the bottom MLP so their\n"
                  "  // latency overlaps it.\n"
                : "\n  // Dense row (act0) and embedding rows (registers), issued before the "
                  "bottom MLP so their latency overlaps it.\n";
  s += inputs(c);
  s += "\n  // Bottom MLP; its last layer writes T[0] and the head of R = [x, pairs].\n" + bottom(c, p);
  s += fmt::format("\n  // Embedding bags ({}{}) are T[1..N-1]; then the pairs complete R.\n",
                   c.jagged ? "the rest of each jagged bag, " : "",
                   c.mode == nn::BagMode::Mean ? "mean" : "sum");
  s += bags(c);
  s += fmt::format("  interact<N, D, DP, G>({}, t, lane);\n  __syncwarp();\n", act_row(static_cast<int>(c.ln_bot.size()) - 1));
  s += "\n  // Top MLP.\n" + top(c, p);
  s += store(c);
  return k;
}

namespace {

// The config these concrete inputs describe (batch from dense_x), or the reason they do not fit it.
std::string config_for_inputs(const DlrmMegaShape& c, const std::vector<std::vector<int64_t>>& dims,
                              const std::vector<DType>& dtypes, DlrmMegaShape& out) {
  const size_t k = c.ln_emb.size();
  if (dims.size() != dtypes.size() || dims.empty() || dims[0].size() != 2) return "malformed input list";
  out = c;
  out.batch = dims[0][0];
  // Expected dims and dtypes, in the input order of DlrmMega; kAnyLength: jagged indices [nnz_k].
  constexpr int64_t kAnyLength = -1;
  std::vector<std::vector<int64_t>> want{{out.batch, c.ln_bot[0]}};
  std::vector<DType> want_dt{DType::F32};
  for (size_t i = 0; i < k; ++i) {
    want.push_back({c.jagged ? kAnyLength : out.batch * c.bag}), want_dt.push_back(c.index_dtype);
  }
  for (size_t i = 0; c.jagged && i < k; ++i)
    want.push_back({out.batch}), want_dt.push_back(c.index_dtype);
  for (size_t i = 0; i < k; ++i) want.push_back({c.ln_emb[i], c.dim()}), want_dt.push_back(DType::F32);
  for (const auto* ln : {&c.ln_bot, &c.ln_top}) {
    for (size_t i = 0; i + 1 < ln->size(); ++i) {
      want.push_back({(*ln)[i + 1], (*ln)[i]}), want_dt.push_back(DType::F32);
      want.push_back({(*ln)[i + 1]}), want_dt.push_back(DType::F32);
    }
  }
  if (dims.size() != want.size()) return fmt::format("{} inputs, expected {}", dims.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const bool any = want[i] == std::vector<int64_t>{kAnyLength};
    const bool dims_ok = any ? dims[i].size() == 1 && dims[i][0] >= 0 : dims[i] == want[i];
    if (!dims_ok || dtypes[i] != want_dt[i]) {
      return fmt::format("input {} is {} [{}], expected {} [{}] (f32 data, i32/i64 indices only)",
                         i, dtype_name(dtypes[i]), fmt::join(dims[i], ", "), dtype_name(want_dt[i]),
                         any ? "nnz" : fmt::format("{}", fmt::join(want[i], ", ")));
    }
  }
  return "";
}

}  // namespace

std::string why_unsupported(const DlrmMegaShape& c, const std::vector<std::vector<int64_t>>& input_dims,
                            const std::vector<DType>& input_dtypes, const DeviceCaps& caps) {
  DlrmMegaShape actual;
  if (std::string why = config_for_inputs(c, input_dims, input_dtypes, actual); !why.empty()) return why;
  return why_unsupported(actual, caps);
}

std::optional<CustomKernel> DlrmMega::cuda_kernel(const KernelRequest& request) const {
  const std::vector<std::vector<int64_t>>& input_dims = request.dims;
  const std::vector<DType>& input_dtypes = request.dtypes;
  DlrmMegaShape actual;
  if (!config_for_inputs(config_, input_dims, input_dtypes, actual).empty()) return std::nullopt;
  if (!why_unsupported(actual, request.device).empty()) return std::nullopt;
  return emit_dlrm_mega(actual, request.device);
}

}  // namespace luminal::custom
