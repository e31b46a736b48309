#include "cpu/host_matmul.h"

#include <omp.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "cpu/host_gemv.h"
#include "cpu/host_int8_matmul.h"
#include "cpu/onednn.h"
#include "custom/host_kernel_util.h"

namespace luminal::cpu {

namespace {

double load(DType dt, const std::byte* p, int64_t i) {
  switch (dt) {
    case DType::F64: { double v; std::memcpy(&v, p + i * 8, 8); return v; }
    case DType::F32: { float v; std::memcpy(&v, p + i * 4, 4); return v; }
    case DType::BF16: { uint16_t h; std::memcpy(&h, p + i * 2, 2); return bf16_bits_to_f32(h); }
    case DType::F16: { uint16_t h; std::memcpy(&h, p + i * 2, 2); return f16_bits_to_f32(h); }
    default: throw std::logic_error("[cpu] matmul dtype");
  }
}

void store(DType dt, std::byte* p, int64_t i, double v) {
  switch (dt) {
    case DType::F64: std::memcpy(p + i * 8, &v, 8); return;
    case DType::F32: { const float f = float(v); std::memcpy(p + i * 4, &f, 4); return; }
    case DType::BF16: { const uint16_t h = f32_to_bf16_bits(float(v)); std::memcpy(p + i * 2, &h, 2); return; }
    case DType::F16: { const uint16_t h = f32_to_f16_bits(float(v)); std::memcpy(p + i * 2, &h, 2); return; }
    default: throw std::logic_error("[cpu] matmul dtype");
  }
}

// out[(bi * rows + r) * cols + c] = p[off + bi * sb + r * sr + c * sc] as f32 (a strided view made
// dense), for a 16-bit float dtype.
void widen(DType dt, const std::byte* p, int64_t off, int64_t batch, int64_t rows, int64_t cols, int64_t sb,
           int64_t sr, int64_t sc, float* out) {
  const auto* h = reinterpret_cast<const uint16_t*>(p) + off;
  const bool bf = dt == DType::BF16;
#pragma omp parallel for collapse(2) if (batch * rows * cols > (1 << 16))
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t r = 0; r < rows; ++r) {
      float* o = out + (bi * rows + r) * cols;
      const uint16_t* row = h + bi * sb + r * sr;
      for (int64_t c = 0; c < cols; ++c) {
        const uint16_t v = row[c * sc];
        o[c] = bf ? custom::host::bf16_to_f32(v) : f16_bits_to_f32(v);
      }
    }
}

// p[i] = in[i] rounded to a 16-bit float dtype, i < n.
void narrow(DType dt, const float* in, int64_t n, std::byte* p) {
  auto* h = reinterpret_cast<uint16_t*>(p);
  const bool bf = dt == DType::BF16;
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) h[i] = bf ? custom::host::f32_to_bf16(in[i]) : f32_to_f16_bits(in[i]);
}

}  // namespace

// The step's expressions at one execute.
struct HostMatmul::Shape {
  int64_t batch, m, n, k, a_off, a_row, a_col, a_batch, b_off, b_row, b_col, b_batch;
  uint64_t b_version;  // 0: b may change between calls
  std::vector<int64_t> key() const {
    return {batch, m, n, k, a_off, a_row, a_col, a_batch, b_off, b_row, b_col, b_batch, b_version != 0};
  }
};

namespace {

// Packing pays from a few rows up; a decode step's single row reads each weight once anyway.
constexpr int64_t kPackMinRows = 16;

// One oneDNN primitive for a Shape and its memory handles (data pointers set per run).
struct Library {
  dnnl::matmul prim;
  dnnl::memory src, wei, dst, bias;
  std::unordered_map<int, dnnl::memory> args;  // the same handles, by oneDNN argument
  std::string impl;
  // Packed variants: the weights' layout the primitive reads (WeightPacks' copy of `wei_source`).
  std::optional<dnnl::memory::desc> packed;
  dnnl::memory::desc wei_source;
};

// Which library variant won per shape, process-wide, so the search's other candidates and dim
// buckets do not time it again (plans on other threads may ask at the same time).
std::mutex g_choices_mutex;
std::map<std::string, std::string> g_library_choices;

std::string library_choice(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_choices_mutex);
  const auto it = g_library_choices.find(key);
  return it == g_library_choices.end() ? "" : it->second;
}

void set_library_choice(const std::string& key, const std::string& impl) {
  std::lock_guard<std::mutex> lock(g_choices_mutex);
  g_library_choices[key] = impl;
}

}  // namespace

// The primitives for one Shape (none when oneDNN cannot run it).
struct HostMatmul::Prepared {
  // [0] reads the weights as bound; with constant weights, variants reading a packed copy follow
  // (2-D and 3-D descriptors: oneDNN's brgemm picks different blockings for each, and which is
  // fastest depends on the shape and CPU, so they are timed at the shape's first run).
  std::vector<Library> libs;
  size_t lib = 0;  // the one that runs
  bool libs_timed = false;
  std::string impl;
  // bf16 / f16 where oneDNN has no primitive for them on this CPU (AVX2 without AVX-512 BF16):
  // operands widened into dense f32 copies, an f32 primitive, the result rounded back.
  bool widened = false;
  std::vector<float> a32, b32, c32, bias32;
  bool gemv = false;  // one row against k-contiguous weights: gemv() may run it
  bool timed = false;  // gemv and oneDNN were timed (the faster is `impl`)
  std::unique_ptr<Int8Matmul> int8;  // compile precision int8: runs instead of libs where it can
  bool int8_timed = false;           // int8 was timed against the float GEMM (and kept if faster)
};

HostMatmul::HostMatmul(const compiler::MatmulStep& step, DType bias_dtype, WeightPacks* packs, Layout layout,
                       Int8 int8)
    : step_(step), bias_dtype_(bias_dtype), packs_(packs), layout_(layout), int8_(int8) {}

HostMatmul::~HostMatmul() {
  if (packs_ == nullptr) return;
  for (auto& [key, p] : prepared_)
    for (const Library& l : p->libs)
      if (l.packed) packs_->release(this, *l.packed);
}

namespace {

// Best of three timed calls after a warm-up, in seconds.
template <class Fn>
double best_of_three(Fn&& fn) {
  fn();
  double t = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t = std::min(t, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return t;
}

}  // namespace

void HostMatmul::run(const DynMap& dyn, const std::byte* a, const std::byte* b, std::byte* c,
                     const std::byte* bias, uint64_t b_version) {
  const compiler::MatmulStep& st = step_;
  const Shape s{st.batch.eval(dyn), st.m.eval(dyn), st.n.eval(dyn), st.k.eval(dyn),
                st.a_offset.eval(dyn), st.a_row.eval(dyn), st.a_col.eval(dyn), st.a_batch.eval(dyn),
                st.b_offset.eval(dyn), st.b_row.eval(dyn), st.b_col.eval(dyn), st.b_batch.eval(dyn),
                b_version};
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  std::unique_ptr<Prepared>& p = prepared_[s.key()];
  if (!p) {
    p = std::make_unique<Prepared>();
    prepare(s, *p);
  }
  if (p->libs.size() > 1 && !p->libs_timed) choose_library(s, *p, a, b, c, bias);
  if (p->int8 && !p->int8_timed && int8_ == Int8::timed) choose_int8(s, *p, a, b, c, bias);
  if (p->int8 && run_int8(s, *p, a, b, c, bias)) {
    impl_ = p->int8->impl();
    return;
  }
  if (p->gemv && !p->timed) choose_gemv(s, *p, a, b, c, bias);
  impl_ = p->impl;
  if (p->gemv && p->impl == "gemv") return run_gemv(s, a, b, c, bias);
  run_library(s, *p, a, b, c, bias);
}

void HostMatmul::run_library(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                             const std::byte* bias) {
  if (p.libs.empty()) return run_loop(s, a, b, c, bias);
  if (p.widened) return run_widened(s, p, a, b, c, bias);
  run_onednn(s, p, a, b, c, bias);
}

bool HostMatmul::run_int8(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                          const std::byte* bias) {
  const int64_t es = int64_t(dtype_size(step_.dtype));
  return int8_weights_->update(step_.dtype, b + s.b_off * es, s.b_row, s.b_col, s.n, s.k, s.b_version) &&
         p.int8->run(a + s.a_off * es, s.a_row, c, bias, bias_dtype_);
}

void HostMatmul::prepare(const Shape& s, Prepared& p) {
  const compiler::MatmulStep& st = step_;
  const auto dt = onednn_type(st.dtype);
  const auto bdt = onednn_type(bias_dtype_);
  if (dt && bdt && s.k > 0) {
    using desc = dnnl::memory::desc;
    using dims = dnnl::memory::dims;
    // A batch stride of 0 is a broadcast operand: batch dim 1 in oneDNN's terms, whose stride
    // must still look plain (a 0 stride sends oneDNN to its reference kernel).
    const bool a_bcast = s.a_batch == 0 || s.batch == 1, b_bcast = s.b_batch == 0 || s.batch == 1;
    const int64_t ab = a_bcast ? 1 : s.batch, bb = b_bcast ? 1 : s.batch;
    const int64_t asb = a_bcast ? s.m * s.k : s.a_batch, bsb = b_bcast ? s.k * s.n : s.b_batch;
    const desc src({ab, s.m, s.k}, *dt, dims{asb, s.a_row, s.a_col});
    const desc wei({bb, s.k, s.n}, *dt, dims{bsb, s.b_row, s.b_col});
    const desc dst({s.batch, s.m, s.n}, *dt, dims{s.m * s.n, s.n, 1});
    const desc bia({1, 1, s.n}, *bdt, dims{s.n, s.n, 1});
    dnnl::primitive_attr attr;
    if (st.relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(ops);
    }
    // Adds the primitive for these descriptors (false when oneDNN has no implementation here).
    // `packed_from`: the weights say "any" and are read from a packed copy of this plain layout,
    // kept only if oneDNN picks a layout other than it and the plan's budget has room.
    auto create = [&](const desc& a, const desc& w, const desc& o, const desc& bi,
                      const std::optional<desc>& packed_from = std::nullopt) {
      try {
        const auto d = st.bias >= 0 ? dnnl::matmul::desc(a, w, bi, o) : dnnl::matmul::desc(a, w, o);
        const dnnl::matmul::primitive_desc pd(d, attr, onednn_engine());
        Library l;
        if (packed_from) {
          if (pd.weights_desc() == *packed_from || !packs_->reserve(this, pd.weights_desc())) return false;
          l.packed = pd.weights_desc();
          l.wei_source = *packed_from;
        }
        l.prim = dnnl::matmul(pd);
        l.impl = std::string("onednn ") + pd.impl_info_str();
        if (packed_from) l.impl += fmt::format(" (packed weights, {}-d)", a.dims().size());
        l.src = dnnl::memory(a, onednn_engine(), nullptr);
        l.wei = dnnl::memory(pd.weights_desc(), onednn_engine(), nullptr);
        l.dst = dnnl::memory(o, onednn_engine(), nullptr);
        l.args = {{DNNL_ARG_SRC, l.src}, {DNNL_ARG_WEIGHTS, l.wei}, {DNNL_ARG_DST, l.dst}};
        if (st.bias >= 0) {
          l.bias = dnnl::memory(bi, onednn_engine(), nullptr);
          l.args.emplace(DNNL_ARG_BIAS, l.bias);
        }
        p.libs.push_back(std::move(l));
        return true;
      } catch (const dnnl::error&) {
        return false;
      }
    };
    const bool half = st.dtype == DType::BF16 || st.dtype == DType::F16;
    if (create(src, wei, dst, bia)) {
      // Constant weights shared by the whole batch: variants reading them packed, 3-D and 2-D.
      if (packs_ != nullptr && s.b_version != 0 && bb == 1 && s.m >= kPackMinRows && layout_ != Layout::plain) {
        if (layout_ != Layout::packed_2d)
          create(src, desc({1, s.k, s.n}, *dt, dnnl::memory::format_tag::any), dst, bia, wei);
        if (s.batch == 1 && layout_ != Layout::packed_3d)
          create(desc({s.m, s.k}, *dt, dims{s.a_row, s.a_col}), desc({s.k, s.n}, *dt, dnnl::memory::format_tag::any),
                 desc({s.m, s.n}, *dt, dims{s.n, 1}), desc({1, s.n}, *bdt, dims{s.n, 1}),
                 desc({s.k, s.n}, *dt, dims{s.b_row, s.b_col}));
        // A named layout replaces the plain primitive (where oneDNN packs at all for this shape).
        if (layout_ != Layout::timed && p.libs.size() > 1) p.libs.erase(p.libs.begin());
      }
    } else if (half) {
      using f32 = dnnl::memory::data_type;
      p.widened = create(desc({ab, s.m, s.k}, f32::f32, dims{s.m * s.k, s.k, 1}),
                         desc({bb, s.k, s.n}, f32::f32, dims{s.k * s.n, s.n, 1}),
                         desc({s.batch, s.m, s.n}, f32::f32, dims{s.m * s.n, s.n, 1}),
                         desc({1, 1, s.n}, f32::f32, dims{s.n, s.n, 1}));
      if (p.widened) {
        p.libs[0].impl += fmt::format(" ({} widened to f32)", dtype_name(st.dtype));
        p.a32.resize(size_t(ab * s.m * s.k));
        p.b32.resize(size_t(bb * s.k * s.n));
        p.c32.resize(size_t(s.batch * s.m * s.n));
        p.bias32.resize(size_t(s.n));
      }
    }
    // Still none (f64; f16 / bf16 without any primitive): the loop runs it.
  }
  p.impl = p.libs.empty() ? "loop" : p.libs[0].impl;
  // int8: row-major activations of one batch against constant weights shared by it.
  if (int8_ != Int8::off && (st.dtype == DType::BF16 || st.dtype == DType::F32) && s.b_version != 0 && s.batch == 1 &&
      s.m >= kPackMinRows && s.a_col == 1 && s.k > 0) {
    if (!int8_weights_) int8_weights_ = std::make_unique<Int8Weights>();
    p.int8 = Int8Matmul::make(s.m, s.n, s.k, st.dtype, st.bias >= 0, st.relu, int8_weights_.get(), packs_);
  }
  p.gemv = s.batch == 1 && s.m == 1 && s.a_col == 1 && s.b_row == 1 && s.k > 0 &&
           gemv_supports(st.dtype, bias_dtype_);
}

// Times the library variants on this call's buffers (best of three after a warm-up) and keeps the
// fastest; the packed copies of the others are released. A shape timed before in this process
// takes the earlier winner, with m rounded up to a power of two: a prefill of each new prompt
// length must not time the variants again.
void HostMatmul::choose_library(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                                const std::byte* bias) {
  int64_t m_bucket = 1;
  while (m_bucket < s.m) m_bucket *= 2;
  std::string key = fmt::format("{} relu {} bias {} threads {} | batch {} m <= {} n {} k {} a {} {} b {} {}",
                                dtype_name(step_.dtype), step_.relu, step_.bias >= 0, omp_get_max_threads(), s.batch,
                                m_bucket, s.n, s.k, s.a_row, s.a_col, s.b_row, s.b_col);
  for (const Library& l : p.libs) key += " | " + l.impl;
  std::string winner = library_choice(key);
  p.lib = 0;
  if (winner.empty()) {
    double best = 1e30;
    for (size_t i = 0; i < p.libs.size(); ++i) {
      p.lib = i;
      const double t = best_of_three([&] { run_onednn(s, p, a, b, c, bias); });
      if (t < best) {
        best = t;
        winner = p.libs[i].impl;
      }
    }
    set_library_choice(key, winner);
  }
  for (size_t i = 0; i < p.libs.size(); ++i)
    if (p.libs[i].impl == winner) p.lib = i;
  for (size_t i = 0; i < p.libs.size(); ++i)
    if (i != p.lib && p.libs[i].packed) packs_->release(this, *p.libs[i].packed);
  Library chosen = std::move(p.libs[p.lib]);
  p.libs.clear();
  p.libs.push_back(std::move(chosen));
  p.lib = 0;
  p.impl = p.libs[0].impl;
  p.libs_timed = true;
}

// Int8 trades two passes over the activations (their scale, their quantization) for a GEMM at
// twice bf16's rate; where those passes cost more (wide activations, few columns; memory-bound on
// this class of machine) the float GEMM stays. Timed like choose_library, the winner kept
// process-wide so every run of the process computes a shape the same way.
void HostMatmul::choose_int8(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                             const std::byte* bias) {
  const std::string key = fmt::format("int8 {} relu {} bias {} threads {} | m {} n {} k {} | {}",
                                      dtype_name(step_.dtype), step_.relu, step_.bias >= 0, omp_get_max_threads(),
                                      s.m, s.n, s.k, p.impl);
  auto int8 = [&] { return run_int8(s, p, a, b, c, bias); };
  std::string winner = library_choice(key);
  if (winner.empty() && int8()) {  // (a NaN in this call's inputs: decided at a later call)
    const double t_int8 = best_of_three(int8);
    const double t_float = best_of_three([&] { run_library(s, p, a, b, c, bias); });
    winner = t_int8 < t_float ? "int8" : "float";
    set_library_choice(key, winner);
  }
  if (winner.empty()) return;
  if (winner != "int8") p.int8.reset();
  p.int8_timed = true;
}

void HostMatmul::run_widened(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                             const std::byte* bias) const {
  const DType dt = step_.dtype;
  const bool a_bcast = s.a_batch == 0 || s.batch == 1, b_bcast = s.b_batch == 0 || s.batch == 1;
  widen(dt, a, s.a_off, a_bcast ? 1 : s.batch, s.m, s.k, s.a_batch, s.a_row, s.a_col, p.a32.data());
  widen(dt, b, s.b_off, b_bcast ? 1 : s.batch, s.k, s.n, s.b_batch, s.b_row, s.b_col, p.b32.data());
  if (step_.bias >= 0)
    for (int64_t j = 0; j < s.n; ++j) p.bias32[size_t(j)] = float(load(bias_dtype_, bias, j));
  Library& l = p.libs[0];
  l.src.set_data_handle(p.a32.data());
  l.wei.set_data_handle(p.b32.data());
  l.dst.set_data_handle(p.c32.data());
  if (step_.bias >= 0) l.bias.set_data_handle(p.bias32.data());
  dnnl::stream& stream = onednn_stream();
  l.prim.execute(stream, l.args);
  stream.wait();
  narrow(dt, p.c32.data(), int64_t(p.c32.size()), c);
}

void HostMatmul::run_gemv(const Shape& s, const std::byte* a, const std::byte* b, std::byte* c,
                          const std::byte* bias) const {
  const size_t es = dtype_size(step_.dtype);
  gemv(step_.dtype, a + s.a_off * int64_t(es), b + s.b_off * int64_t(es), s.b_col, s.n, s.k, c,
       step_.bias >= 0 ? bias : nullptr, bias_dtype_, step_.relu);
}

// Times gemv() and oneDNN (or the loop) on this call's buffers, best of three each after a
// warm-up, and keeps the faster for the shape; the last run leaves the result in c.
void HostMatmul::choose_gemv(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                             const std::byte* bias) {
  const double library = best_of_three([&] { run_library(s, p, a, b, c, bias); });
  const double own = best_of_three([&] { run_gemv(s, a, b, c, bias); });
  if (own < library) p.impl = "gemv";
  p.timed = true;
}

void HostMatmul::run_onednn(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                            const std::byte* bias) const {
  const compiler::MatmulStep& st = step_;
  const size_t es = dtype_size(st.dtype);
  Library& l = p.libs[p.lib];
  const std::byte* w = b + s.b_off * int64_t(es);
  l.src.set_data_handle(const_cast<std::byte*>(a + s.a_off * int64_t(es)));
  if (l.packed) l.args[DNNL_ARG_WEIGHTS] = packs_->get(this, w, s.b_version, l.wei_source, *l.packed);
  else l.wei.set_data_handle(const_cast<std::byte*>(w));
  l.dst.set_data_handle(c);
  if (st.bias >= 0) l.bias.set_data_handle(const_cast<std::byte*>(bias));
  dnnl::stream& stream = onednn_stream();
  l.prim.execute(stream, l.args);
  stream.wait();
}

void HostMatmul::run_loop(const Shape& s, const std::byte* a, const std::byte* b, std::byte* c,
                          const std::byte* bias) const {
  const DType dt = step_.dtype;
#pragma omp parallel for collapse(2) if (s.batch * s.m * s.n * s.k > (1 << 16))
  for (int64_t bi = 0; bi < s.batch; ++bi) {
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < s.k; ++k) {
          acc += load(dt, a, s.a_off + bi * s.a_batch + i * s.a_row + k * s.a_col) *
                 load(dt, b, s.b_off + bi * s.b_batch + k * s.b_row + j * s.b_col);
        }
        if (dt != DType::F64) acc = float(acc);
        if (step_.bias >= 0) acc = (dt == DType::F64 ? acc : double(float(acc))) + load(bias_dtype_, bias, j);
        if (step_.relu && acc < 0) acc = 0;
        store(dt, c, (bi * s.m + i) * s.n + j, acc);
      }
    }
  }
}

}  // namespace luminal::cpu
