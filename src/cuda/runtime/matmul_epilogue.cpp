// The fallback matmul epilogue kernel.
#include "cuda/runtime/matmul_epilogue.h"

#include <fmt/format.h>

#include <stdexcept>

#include "cuda/runtime/jit_cache.h"

namespace luminal::cuda {
namespace {

// Storage type and conversions per dtype: arithmetic in the storage type for f32/f64, in float
// for the 16-bit types, each op's result rounded to the dtype as the reference runtime does.
struct TypeCode {
  const char* header;
  const char* type;
  const char* compute;
  const char* to_compute;    // function converting the storage type to the compute type ("" = none)
  const char* from_compute;  // and back
};

TypeCode type_code(DType dt) {
  switch (dt) {
    case DType::F32:
      return {"", "float", "float", "", ""};
    case DType::F64:
      return {"", "double", "double", "", ""};
    case DType::F16:
      return {"#include <cuda_fp16.h>\n", "__half", "float", "__half2float", "__float2half_rn"};
    case DType::BF16:
      return {"#include <cuda_bf16.h>\n", "__nv_bfloat16", "float", "__bfloat162float",
              "__float2bfloat16_rn"};
    default:
      throw std::runtime_error(fmt::format("[cuda] no matmul epilogue for {}", dtype_name(dt)));
  }
}

}  // namespace

std::string matmul_epilogue_source(DType dt) {
  const TypeCode t = type_code(dt);
  return fmt::format(R"({header}// Bias add and ReLU after a cuBLASLt matmul ({name}).
extern "C" __global__ void luminal_matmul_epilogue({type}* c, const {type}* bias, long long total, long long n,
                                                   int relu) {{
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  {type} x = c[i];
  if (bias != nullptr) {{
    {compute} sum = {to}(x) + {to}(bias[i % n]);
    x = {from}(sum);  // rounded to the dtype, as a separate Add node would be
  }}
  if (relu != 0) {{
    {compute} v = {to}(x);
    x = {from}(v * ({compute})(({compute})0 < v));  // the graph's relu: x * (0 < x)
  }}
  c[i] = x;
}}
)",
                     fmt::arg("header", t.header), fmt::arg("name", dtype_name(dt)),
                     fmt::arg("type", t.type), fmt::arg("compute", t.compute),
                     fmt::arg("to", t.to_compute), fmt::arg("from", t.from_compute));
}

std::string tf32_split_source() {
  return R"(// TF32x3 operands: x = hi + lo, both exact in TF32's 10 mantissa bits up to lo's rounding.
extern "C" __global__ void luminal_tf32_split(const float* x, float* hi, float* lo, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  const unsigned u = __float_as_uint(v);
  if ((u & 0x7f800000u) == 0x7f800000u) {  // inf or NaN: as it is, nothing left over
    hi[i] = v;
    lo[i] = 0.0f;
    return;
  }
  unsigned r = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;  // nearest, ties to even
  if ((r & 0x7f800000u) == 0x7f800000u) r = u & 0xffffe000u;  // rounding overflowed: truncate
  const float h = __uint_as_float(r);
  hi[i] = h;
  lo[i] = v - h;
}
)";
}

// Compiles (through the JIT cache) and loads `entry` of `source`, keeping its module in `module`.
CUfunction EpilogueKernels::load(const std::string& source, const char* entry, const char* what,
                                 ModuleHandle& module) {
  const DeviceImage img = JitCache::global().get(source, entry, target_);
  CUmodule m = nullptr;
  CHECK_CUDA_CTX(drv().cuModuleLoadData(&m, img.bytes.data()), what);
  module.reset(m);
  CUfunction f = nullptr;
  CHECK_CUDA_CTX(drv().cuModuleGetFunction(&f, m, entry), what);
  return f;
}

CUfunction EpilogueKernels::tf32_split() {
  if (split_fn_ == nullptr)
    split_fn_ = load(tf32_split_source(), "luminal_tf32_split", "the tf32x3 split kernel", split_module_);
  return split_fn_;
}

CUfunction EpilogueKernels::get(DType dt) {
  auto it = functions_.find(dt);
  if (it != functions_.end()) return it->second;
  const CUfunction f = load(matmul_epilogue_source(dt), "luminal_matmul_epilogue",
                            "the matmul epilogue kernel", modules_[dt]);
  functions_.emplace(dt, f);
  return f;
}

}  // namespace luminal::cuda
