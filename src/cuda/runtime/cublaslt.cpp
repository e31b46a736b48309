// cuBLASLt matmuls. Row-major C = A @ B is computed as the column-major C^T = B^T @ A^T, which
// reads the same memory: B's data is cuBLASLt's "A" and A's data its "B".
#include "cuda/runtime/cublaslt.h"

#include <cublasLt.h>
#include <fmt/format.h>

#include "cuda/runtime/nvrtc.h"

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <vector>
#include <optional>
#include <stdexcept>

namespace luminal::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;
// How many of the heuristic's algorithms an autotuning CublasLt times per new shape.
constexpr int kAutotuneCandidates = 8;

void check_cublas(cublasStatus_t s, const char* call, std::string_view context) {
  if (s != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    throw std::runtime_error(fmt::format("[cuda] {} failed: {}: {} ({})", call,
                                         cublasLtGetStatusName(s), cublasLtGetStatusString(s),
                                         context));
}
#define CHECK_CUBLAS(call, ctx) check_cublas((call), #call, (ctx))

struct Types {
  cudaDataType_t data, scale;
  cublasComputeType_t compute;
};

// tf32: f32 data rounded to TF32 inside the tensor cores, fp32 accumulation (CudaOptions::precision).
Types types_of(DType dt, bool tf32, const std::string& what) {
  switch (dt) {
    case DType::F32:
      return {CUDA_R_32F, CUDA_R_32F, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case DType::F16:
      return {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::BF16:
      return {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::F64:
      return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
    default:
      throw std::runtime_error(
          fmt::format("[cuda] cuBLASLt matmul {} does not support {}", what, dtype_name(dt)));
  }
}

// How cuBLASLt stores a logical column-major R x C operand whose element (i, j) lives at
// i * si + j * sj: as itself (op N) or as its transpose (op T), with a leading dimension.
struct Operand {
  cublasOperation_t op;
  uint64_t rows, cols;
  int64_t ld;
};

std::optional<Operand> operand_of(int64_t R, int64_t C, int64_t si, int64_t sj) {
  if (si == 1 || R == 1) {
    int64_t ld = C == 1 ? std::max<int64_t>(R, 1) : sj;
    if (ld >= std::max<int64_t>(R, 1)) return Operand{CUBLAS_OP_N, uint64_t(R), uint64_t(C), ld};
  }
  if (sj == 1 || C == 1) {
    int64_t ld = R == 1 ? std::max<int64_t>(C, 1) : si;
    if (ld >= std::max<int64_t>(C, 1)) return Operand{CUBLAS_OP_T, uint64_t(C), uint64_t(R), ld};
  }
  return std::nullopt;
}

// Largest power of two (at most 256) dividing the address: what cuBLASLt may assume.
uint32_t alignment(CUdeviceptr p) {
  if (p == 0) return 256;
  uint64_t low = p & (~p + 1);
  return static_cast<uint32_t>(std::min<uint64_t>(low, 256));
}

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const T& v,
              const std::string& what) {
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(T)), what);
}

struct Prefs {
  size_t workspace;
  uint32_t align_a, align_b, align_c;
};

// cuBLASLt's heuristic's algorithms for these descriptors, best predicted first (at most `count`).
std::vector<cublasLtMatmulAlgo_t> heuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                            cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                                            cublasLtMatrixLayout_t lc, const Prefs& p, int count,
                                            const std::string& what) {
  cublasLtMatmulPreference_t pref = nullptr;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref), what);
  std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                  decltype(&cublasLtMatmulPreferenceDestroy)>
      owner(pref, &cublasLtMatmulPreferenceDestroy);
  auto set = [&](cublasLtMatmulPreferenceAttributes_t a, auto v) {
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, a, &v, sizeof(v)), what);
  };
  set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{p.workspace});
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p.align_a);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p.align_b);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p.align_c);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p.align_c);
  std::vector<cublasLtMatmulHeuristicResult_t> results(size_t(std::max(count, 1)));
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref,
                                                     int(results.size()), results.data(), &found);
  // NOT_SUPPORTED means "no algorithm for this configuration", the case the caller can handle.
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  CHECK_CUBLAS(st, what);
  std::vector<cublasLtMatmulAlgo_t> algos;
  for (int i = 0; i < found; ++i)
    if (results[size_t(i)].state == CUBLAS_STATUS_SUCCESS) algos.push_back(results[size_t(i)].algo);
  return algos;
}

// `algo` with k split over `splits` slices (partial sums reduced by cuBLASLt, in its workspace),
// if this algorithm supports split-K for these descriptors within the workspace; else nullopt.
// For matmuls with fewer output tiles than SMs and a long k, where one slice per tile leaves most
// SMs idle (DLRM-v2's cross-layer V GEMM at one sample: m 270, n 512, k 3456).
std::optional<cublasLtMatmulAlgo_t> split_k_of(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                               cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                                               cublasLtMatrixLayout_t lc, cublasLtMatmulAlgo_t algo,
                                               uint32_t splits, size_t workspace) {
  int32_t supported = 0;
  uint32_t schemes = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &supported,
                                        sizeof(supported), &written) != CUBLAS_STATUS_SUCCESS ||
      !supported ||
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
                                        sizeof(schemes), &written) != CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  for (uint32_t scheme : {uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE),
                          uint32_t(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE),
                          uint32_t(CUBLASLT_REDUCTION_SCHEME_INPLACE)}) {
    if (!(schemes & scheme)) continue;
    cublasLtMatmulAlgo_t a = algo;
    cublasLtMatmulHeuristicResult_t check{};
    if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                             sizeof(splits)) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                             sizeof(scheme)) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulAlgoCheck(h, desc, la, lb, lc, lc, &a, &check) == CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= workspace)
      return a;
  }
  return std::nullopt;
}

template <class T>
void set_layout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, const T& v,
                const std::string& what) {
  CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, a, &v, sizeof(T)), what);
}

std::mutex& tuned_mutex() {
  static std::mutex m;
  return m;
}

// Autotuned choices (index into the heuristic's list) by device, candidate count and shape key.
std::map<std::string, size_t>& tuned_choices() {
  static std::map<std::string, size_t> choices;
  return choices;
}

}  // namespace

std::string MatmulShape::to_string() const {
  std::string s =
      batch == 1 ? fmt::format("{}x{}x{}", m, n, k) : fmt::format("{}x{}x{}x{}", batch, m, n, k);
  if (bias) s += " +bias";
  if (relu) s += " relu";
  return s;
}

struct CublasLt::Algo {
  cublasLtMatmulAlgo_t algo;
  bool separate_epilogue = false;  // found only without the fused epilogue
};

struct MatmulCall::Descs {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  double alpha64 = 1.0, beta64 = 0.0;
  float alpha32 = 1.0f, beta32 = 0.0f;
  bool f64 = false;
  const cublasLtMatmulAlgo_t* algo = nullptr;
  ~Descs() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

CublasLt::CublasLt(const DeviceInfo& dev, std::string target, Fp32Math math, bool autotune)
    : dev_(dev), math_(math), autotune_(autotune), epilogue_(std::move(target)) {
  if (math != Fp32Math::Exact && dev.cc_major < 8) {
    throw std::runtime_error(fmt::format("[cuda] precision {} needs TF32 tensor cores (sm_80+); {} is sm_{}{}",
                                         math == Fp32Math::TF32 ? "tf32" : "tf32x3", dev.name,
                                         dev.cc_major, dev.cc_minor));
  }
  cublasLtHandle_t h = nullptr;
  CHECK_CUBLAS(cublasLtCreate(&h), "creating the cuBLASLt handle");
  handle_ = h;
  workspace_ = device_alloc(dev, kWorkspaceBytes, "the cuBLASLt workspace");
  workspace_bytes_ = kWorkspaceBytes;
}

CublasLt::~CublasLt() {
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

MatmulCall::MatmulCall(CublasLt& lt, const MatmulShape& s, const MatmulPointers& p)
    : MatmulCall(lt, s, p, true) {}

MatmulCall::MatmulCall(CublasLt& lt, const MatmulShape& s, const MatmulPointers& p, bool whole)
    : lt_(lt), shape_(s), ptr_(p) {
  const std::string what = "matmul " + s.to_string();
  if (s.batch <= 0 || s.m <= 0 || s.n <= 0) {
    mode_ = Mode::Skip;
    return;
  }
  if (s.k <= 0) {  // an empty sum: C = 0
    if (s.bias || s.relu)
      throw std::runtime_error(fmt::format("[cuda] {}: k = 0 with an epilogue", what));
    mode_ = Mode::Zero;
    return;
  }
  const Types t = types_of(s.dtype, lt.math_ != Fp32Math::Exact, what);
  if (s.fp8 && (s.dtype != DType::BF16 || s.batch != 1 || s.a_col != 1 || s.b_row != 1))
    throw std::logic_error(fmt::format("[cuda] {}: fp8 needs one bf16 product of row-major A and "
                                       "B^T", what));
  // fp8: e4m3 operands (cuBLASLt's "TN", both along k), bf16 C and bias.
  const cudaDataType_t operand_t = s.fp8 ? CUDA_R_8F_E4M3 : t.data;
  // cuBLASLt "A" = B^T (n x k), "B" = A^T (k x m), D = C^T (n x m, ld n).
  std::optional<Operand> op_a = operand_of(s.n, s.k, s.b_col, s.b_row);
  std::optional<Operand> op_b = operand_of(s.k, s.m, s.a_col, s.a_row);
  if (!op_a || !op_b)
    throw std::runtime_error(fmt::format(
        "[cuda] {}: operand strides A ({}, {}) B ({}, {}) have no unit stride cuBLASLt can use",
        what, s.a_row, s.a_col, s.b_row, s.b_col));
  if (s.batch > INT_MAX) throw std::runtime_error(fmt::format("[cuda] {}: batch too large", what));
  d_ = std::make_unique<Descs>();
  Descs& d = *d_;
  d.f64 = s.dtype == DType::F64;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&d.desc, t.compute, t.scale), what);
  set_desc(d.desc, CUBLASLT_MATMUL_DESC_TRANSA, int32_t(op_a->op), what);
  set_desc(d.desc, CUBLASLT_MATMUL_DESC_TRANSB, int32_t(op_b->op), what);
  cublasLtEpilogue_t epi = s.bias ? (s.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                  : (s.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  set_desc(d.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(epi), what);
  if (s.bias) {
    const void* bias = reinterpret_cast<const void*>(p.bias);  // length n = rows of D
    set_desc(d.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, what);
    set_desc(d.desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, int64_t{0}, what);
    if (s.fp8) set_desc(d.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(CUDA_R_16BF), what);
  }
  if (s.fp8) {
    // cuBLASLt's A is our B^T (scale per its row = our column), its B our A^T (per our row).
    const void* a_scale = reinterpret_cast<const void*>(p.b_scale);
    const void* b_scale = reinterpret_cast<const void*>(p.a_scale);
    set_desc(d.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale, what);
    set_desc(d.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale, what);
    const int32_t outer = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    set_desc(d.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, outer, what);
    set_desc(d.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, outer, what);
  }
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&d.la, operand_t, op_a->rows, op_a->cols, op_a->ld), what);
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&d.lb, operand_t, op_b->rows, op_b->cols, op_b->ld), what);
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&d.lc, t.data, uint64_t(s.n), uint64_t(s.m), s.n), what);
  if (s.batch > 1) {
    const int32_t count = static_cast<int32_t>(s.batch);
    for (cublasLtMatrixLayout_t l : {d.la, d.lb, d.lc})
      set_layout(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, count, what);
    set_layout(d.la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t{s.b_batch}, what);
    set_layout(d.lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t{s.a_batch}, what);
    set_layout(d.lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t{s.m * s.n}, what);
  }

  const uint32_t al_a = alignment(p.b), al_b = alignment(p.a), al_c = alignment(p.c);
  const uint32_t al_bias = s.bias ? alignment(p.bias) : 256;
  const std::string key = fmt::format(
      "{} {} {} {} {} | {} {} {} | {} {} {} | {} {} {} {} | {} {} {} {} | {} {} | {} {} {}",
      int(s.dtype), s.batch, s.m, s.n, s.k, int(op_a->op), op_a->ld, s.b_batch, int(op_b->op),
      op_b->ld, s.a_batch, al_a, al_b, al_c, al_bias, s.bias, s.relu, op_a->rows, op_b->rows,
      op_a->cols, int(t.compute), s.algo, s.fp8, s.split_k);  // the compute type (TF32 or not) changes the algorithm
  auto it = lt.algos_.find(key);
  if (it == lt.algos_.end()) {
    const Prefs prefs{lt.workspace_bytes_, al_a, al_b, al_c};
    cublasLtHandle_t h = static_cast<cublasLtHandle_t>(lt.handle_);
    const int count = lt.autotune_ ? kAutotuneCandidates : s.algo + 1;
    std::vector<cublasLtMatmulAlgo_t> algos =
        heuristic(h, d.desc, d.la, d.lb, d.lc, prefs, count, what);
    bool separate = false;
    if (algos.empty() && epi != CUBLASLT_EPILOGUE_DEFAULT) {  // e.g. no fused bias for this dtype
      set_desc(d.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_DEFAULT), what);
      algos = heuristic(h, d.desc, d.la, d.lb, d.lc, prefs, count, what);
      separate = true;
    }
    if (algos.empty())
      throw std::runtime_error(
          fmt::format("[cuda] cuBLASLt has no algorithm for {} ({})", what, dtype_name(s.dtype)));
    d.algo = &algos[0];
    size_t best = std::min(size_t(std::max(s.algo, 0)), algos.size() - 1);
    if (lt.autotune_ && algos.size() > 1) {
      // One timing per process and device: every runtime then picks the same algorithm for the
      // same shape (equal results across runtimes, no re-tuning per compile).
      const std::string tuned_key = fmt::format("{} {} {}", lt.dev_.ordinal, algos.size(), key);
      std::lock_guard<std::mutex> lock(tuned_mutex());
      auto tuned = tuned_choices().find(tuned_key);
      if (tuned == tuned_choices().end())
        tuned = tuned_choices().emplace(tuned_key, fastest(algos.data(), algos.size())).first;
      best = std::min(tuned->second, algos.size() - 1);
    }
    cublasLtMatmulAlgo_t algo = algos[best];
    if (s.split_k > 1) {  // the search's choice; an algorithm without split-K here runs unsplit
      if (auto split = split_k_of(h, d.desc, d.la, d.lb, d.lc, algo, uint32_t(s.split_k), prefs.workspace))
        algo = *split;
      else if (debug_level() >= 1)
        std::fprintf(stderr, "[cublaslt] %s: no split-K %d for its algorithm, runs unsplit\n",
                     s.to_string().c_str(), s.split_k);
    }
    it = lt.algos_.emplace(key, std::make_unique<CublasLt::Algo>(CublasLt::Algo{algo, separate})).first;
  }
  d.algo = &it->second->algo;
  if (it->second->separate_epilogue) {
    set_desc(d.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_DEFAULT), what);
    const unsigned long long total = static_cast<unsigned long long>(s.batch * s.m * s.n);
    post_fn_ = lt.epilogue_.get(s.dtype);
    post_blocks_ = static_cast<unsigned>((total + 255) / 256);
    post_values_[0] = p.c;
    post_values_[1] = s.bias ? p.bias : 0;
    post_values_[2] = total;
    post_values_[3] = static_cast<unsigned long long>(s.n);
    post_values_[4] = s.relu ? 1 : 0;
    // The kernel's last parameter is an int: its first 4 bytes are the value (little-endian).
    for (int i = 0; i < 5; ++i) post_params_[i] = &post_values_[i];
  }
  if (whole && lt.math_ == Fp32Math::TF32x3 && s.dtype == DType::F32) init_split(p, what);
}

// Elements from an operand's first to its last under the view (strides >= 0, as cuBLASLt's).
static int64_t operand_span(int64_t batch, int64_t rows, int64_t cols, int64_t s_batch, int64_t s_row,
                     int64_t s_col, const std::string& what) {
  if (s_batch < 0 || s_row < 0 || s_col < 0)
    throw std::runtime_error(fmt::format("[cuda] {}: tf32x3 needs non-negative strides", what));
  return 1 + (batch - 1) * s_batch + (rows - 1) * s_row + (cols - 1) * s_col;
}

struct MatmulCall::Split {
  std::shared_ptr<DeviceAllocation> scratch;  // A's hi and lo, then B's
  CUdeviceptr a_hi = 0, a_lo = 0, b_hi = 0, b_lo = 0;
  long long a_span = 0, b_span = 0;
  CUfunction fn = nullptr;
  std::unique_ptr<MatmulCall> part;  // the same product without the epilogue, for lo*hi and hi*lo
};

void MatmulCall::init_split(const MatmulPointers& p, const std::string& what) {
  const MatmulShape& s = shape_;
  auto sp = std::make_unique<Split>();
  sp->a_span = operand_span(s.batch, s.m, s.k, s.a_batch, s.a_row, s.a_col, what);
  sp->b_span = operand_span(s.batch, s.k, s.n, s.b_batch, s.b_row, s.b_col, what);
  // 256-byte aligned parts: cuBLASLt's algorithm was chosen for the operands' own alignments.
  auto rounded = [](long long elems) { return (size_t(elems) * 4 + 255) / 256 * 256; };
  const size_t a_bytes = rounded(sp->a_span), b_bytes = rounded(sp->b_span);
  sp->scratch = device_alloc(lt_.dev_, 2 * (a_bytes + b_bytes), "the tf32x3 operand parts of " + what);
  const CUdeviceptr base = sp->scratch->ptr;
  // Each part keeps its operand's offset within 256 bytes, so the alignment cuBLASLt assumed holds.
  sp->a_hi = base + (p.a & 255);
  sp->a_lo = base + a_bytes + (p.a & 255);
  sp->b_hi = base + 2 * a_bytes + (p.b & 255);
  sp->b_lo = base + 2 * a_bytes + b_bytes + (p.b & 255);
  sp->fn = lt_.epilogue_.tf32_split();
  MatmulShape plain = s;
  plain.bias = plain.relu = false;
  sp->part = std::make_unique<MatmulCall>(lt_, plain, p, false);
  split_ = std::move(sp);
}

void MatmulCall::run_split(CUstream stream) const {
  const Split& sp = *split_;
  auto split = [&](CUdeviceptr x, CUdeviceptr hi, CUdeviceptr lo, long long n) {
    void* params[] = {&x, &hi, &lo, &n};
    const CUresult r =
        drv().cuLaunchKernel(sp.fn, unsigned((n + 255) / 256), 1, 1, 256, 1, 1, 0, stream, params, nullptr);
    if (r != CUDA_SUCCESS) [[unlikely]]  // the message only when it failed: run() is on execute's path
      check_cu(r, "cuLaunchKernel", "tf32x3 split of matmul " + shape_.to_string());
  };
  split(ptr_.a, sp.a_hi, sp.a_lo, sp.a_span);
  split(ptr_.b, sp.b_hi, sp.b_lo, sp.b_span);
  const CUdeviceptr ws = lt_.workspace_->ptr;
  auto check = [&](int st) {
    if (st != CUBLAS_STATUS_SUCCESS) [[unlikely]]
      check_cublas(cublasStatus_t(st), "cublasLtMatmul", "tf32x3 matmul " + shape_.to_string());
  };
  // Smallest terms first: C = lo*hi, C += hi*lo, then C += hi*hi with the epilogue (bias, ReLU).
  check(sp.part->gemm(stream, ws, sp.a_lo, sp.b_hi, false));
  check(sp.part->gemm(stream, ws, sp.a_hi, sp.b_lo, true));
  check(gemm(stream, ws, sp.a_hi, sp.b_hi, true));
}

MatmulCall::~MatmulCall() = default;

// Times each candidate on the tuning stream (a warm-up, then the best of a few runs), writing
// into a scratch C: the real C may still be read by queued work, and A, B and bias are only read.
// Keeps the heuristic's first unless another is clearly faster (timing noise is ~0.5 us).
size_t MatmulCall::fastest(const void* candidates, size_t count) {
  const auto* algos = static_cast<const cublasLtMatmulAlgo_t*>(candidates);
  const Driver& drv_ = drv();
  if (!lt_.tune_stream_) {
    CUstream st = nullptr;
    CHECK_CUDA(drv_.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    lt_.tune_stream_.reset(st);
    for (EventHandle* e : {&lt_.tune_start_, &lt_.tune_end_}) {
      CUevent ev = nullptr;
      CHECK_CUDA(drv_.cuEventCreate(&ev, CU_EVENT_DEFAULT));
      e->reset(ev);
    }
  }
  // Its own workspace too: queued plan work may be using the plan's (a split-K matmul, say).
  if (!lt_.tune_workspace_)
    lt_.tune_workspace_ = device_alloc(lt_.dev_, lt_.workspace_bytes_, "the autotuning workspace");
  const size_t c_bytes = size_t(shape_.batch * shape_.m * shape_.n) * dtype_size(shape_.dtype);
  const std::shared_ptr<DeviceAllocation> scratch =
      device_alloc(lt_.dev_, c_bytes, "the matmul autotuning scratch");
  const MatmulPointers real = ptr_;
  ptr_.c = scratch->ptr;
  CUstream st = lt_.tune_stream_.get();
  std::vector<float> best_of(count, 1e30f);
  for (size_t i = 0; i < count; ++i) {
    d_->algo = &algos[i];
    const CUdeviceptr ws = lt_.tune_workspace_->ptr;
    if (gemm(st, ws) != CUBLAS_STATUS_SUCCESS) continue;  // this candidate cannot run here: never chosen
    for (int trial = 0; trial < 3; ++trial) {
      CHECK_CUDA(drv_.cuEventRecord(lt_.tune_start_.get(), st));
      for (int rep = 0; rep < 2; ++rep) gemm(st, ws);
      CHECK_CUDA(drv_.cuEventRecord(lt_.tune_end_.get(), st));
      CHECK_CUDA(drv_.cuEventSynchronize(lt_.tune_end_.get()));
      float ms = 0;
      CHECK_CUDA(drv_.cuEventElapsedTime_v2(&ms, lt_.tune_start_.get(), lt_.tune_end_.get()));
      best_of[i] = std::min(best_of[i], ms * 500.0f);  // us per run
    }
  }
  CHECK_CUDA(drv_.cuStreamSynchronize(st));  // the scratch is freed on return
  ptr_ = real;
  size_t best = 0;
  for (size_t i = 1; i < count; ++i)
    if (best_of[i] < best_of[best] * 0.97f) best = i;
  if (debug_level() >= 1)
    std::fprintf(stderr, "[cublaslt] %s: algorithm %zu of %zu (%.2f us; the heuristic's first %.2f us)\n",
                 shape_.to_string().c_str(), best + 1, count, double(best_of[best]),
                 double(best_of[0]));
  lt_.tuned_ += 1;
  return best;
}

int MatmulCall::gemm(CUstream stream, CUdeviceptr workspace, CUdeviceptr a, CUdeviceptr b,
                     bool accumulate) const {
  const Descs& d = *d_;
  static constexpr float kOne32 = 1.0f;
  static constexpr double kOne64 = 1.0;
  const void* alpha = d.f64 ? static_cast<const void*>(&d.alpha64) : &d.alpha32;
  const void* beta = accumulate ? (d.f64 ? static_cast<const void*>(&kOne64) : &kOne32)
                                : (d.f64 ? static_cast<const void*>(&d.beta64) : &d.beta32);
  return cublasLtMatmul(static_cast<cublasLtHandle_t>(lt_.handle_), d.desc, alpha,
                        reinterpret_cast<const void*>(b), d.la,
                        reinterpret_cast<const void*>(a), d.lb, beta,
                        reinterpret_cast<const void*>(ptr_.c), d.lc,
                        reinterpret_cast<void*>(ptr_.c), d.lc, d.algo,
                        reinterpret_cast<void*>(workspace), lt_.workspace_bytes_,
                        reinterpret_cast<cudaStream_t>(stream));
}

void MatmulCall::run(CUstream stream) const {
  if (mode_ == Mode::Skip) return;
  if (mode_ == Mode::Zero) {
    const size_t bytes = size_t(shape_.batch * shape_.m * shape_.n) * dtype_size(shape_.dtype);
    CHECK_CUDA_CTX(drv().cuMemsetD8Async(ptr_.c, 0, bytes, stream), "matmul with k = 0");
    return;
  }
  if (split_) {
    run_split(stream);
  } else {
    const int st = gemm(stream, lt_.workspace_->ptr);
    if (st != CUBLAS_STATUS_SUCCESS) [[unlikely]]
      check_cublas(cublasStatus_t(st), "cublasLtMatmul", "matmul " + shape_.to_string());
  }
  if (post_fn_ != nullptr) {
    CHECK_CUDA_CTX(drv().cuLaunchKernel(post_fn_, post_blocks_, 1, 1, 256, 1, 1, 0, stream,
                                        const_cast<void**>(post_params_), nullptr),
                   "epilogue of matmul " + shape_.to_string());
  }
}

}  // namespace luminal::cuda
