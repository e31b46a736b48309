// Scaled dot-product attention: aten.scaled_dot_product_attention and the fused variants the
// exporter leaves in decomposed CUDA graphs (_scaled_dot_product_flash_attention, _efficient_,
// _cudnn_) or CPU graphs (_flash_attention_for_cpu), all as
//   out = softmax(q k^T * scale + mask) v
// from GraphTensor ops (a fused attention kernel is a compiler rule's job, not the translator's).
// Both products are GraphTensor::matmul's canonical form; the softmax runs in opmath (f16/bf16 in
// f32) and its probabilities are rounded to v's dtype for the second product, as flash kernels do.
//
// Masks, without NaN for any row that sees at least one key:
//   bool mask (True = attend): scores + (keep - 1) * max/2 (finite: a select with -inf would make
//     0 * inf = NaN), softmax, then * keep, so a row that sees no key gives 0 as PyTorch's math
//     path does (the max/2 bias alone would give it a uniform average).
//   float mask (added, may hold -inf): safe_softmax (opmath.h), which maps all -inf rows to 0.
//   is_causal: key j is visible from query i when j <= i (top-left aligned, PyTorch's tril); every
//     row sees key 0, so the bias alone is exact.
// Grouped-query attention (enable_gqa, Hq = G * Hkv): q [.., Hq, L, E] is viewed as
// [.., Hkv, G, L, E] and k, v get a stride-0 group dim, so no head is copied.
#include <cmath>

#include <fmt/format.h>

#include "frontend/aten/node.h"
#include "frontend/aten/opmath.h"

namespace luminal::aten {

namespace {

struct Sdpa {
  GraphTensor q, k, v;
  std::optional<GraphTensor> mask;
  bool causal = false;
  std::optional<double> scale;
  bool gqa = false;
};

void check_operands(AtenNode& n, const Sdpa& a) {
  const GraphTensor &q = a.q, &k = a.k, &v = a.v;
  if (!is_float(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    n.fail(fmt::format("query, key and value must share one float dtype, got {}, {}, {}",
                       dtype_name(q.dtype), dtype_name(k.dtype), dtype_name(v.dtype)));
  const int r = q.rank();
  if (r < 2 || k.rank() != r || v.rank() != r)
    n.fail(fmt::format("query {}, key {} and value {} must have one rank >= 2",
                       shape_string(q.dims()), shape_string(k.dims()), shape_string(v.dims())));
  if (!q.dims()[r - 1].same(k.dims()[r - 1]) || !k.dims()[r - 2].same(v.dims()[r - 2]))
    n.fail(fmt::format("query {}, key {} and value {} disagree on the head or key-sequence dim",
                       shape_string(q.dims()), shape_string(k.dims()), shape_string(v.dims())));
  if (a.mask && a.causal) n.fail("attn_mask and is_causal=True cannot be combined");
  if (a.mask && a.mask->dtype != DType::Bool && !is_float(a.mask->dtype))
    n.fail(fmt::format("attn_mask must be bool or float, got {}", dtype_name(a.mask->dtype)));
}

// The number of query heads per key/value head (1 without GQA).
int64_t group_size(AtenNode& n, const Sdpa& a) {
  const int r = a.q.rank();
  if (!a.gqa || r < 3) return 1;
  auto hq = a.q.dims()[r - 3].as_const(), hkv = a.k.dims()[r - 3].as_const();
  if (!hq || !hkv || *hkv <= 0 || *hq % *hkv != 0)
    n.fail(fmt::format("enable_gqa needs query heads ({}) to be a multiple of key/value heads ({})",
                       a.q.dims()[r - 3].to_string(), a.k.dims()[r - 3].to_string()));
  if (!a.v.dims()[r - 3].same(a.k.dims()[r - 3]))
    n.fail("enable_gqa needs key and value to have the same number of heads");
  return *hq / *hkv;
}

// softmax(scores + mask) over the last axis, in opmath.
GraphTensor probabilities(const Sdpa& a, GraphTensor s, int64_t group) {
  const int r = s.rank();
  const DType f = s.dtype;
  const double big = finite_max(f) / 2;
  Graph& g = *s.graph;
  if (a.causal) {
    const Expr &l = s.dims()[r - 2], &len = s.dims()[r - 1];
    GraphTensor i = g.arange(l, DType::I64).expand_dim(1, len);
    GraphTensor j = g.arange(len, DType::I64).expand_dim(0, l);
    return (s + i.lt(j).cast(f) * -big).softmax(-1);
  }
  if (!a.mask) return s.softmax(-1);
  // The mask broadcasts against [.., Hq, L, S]; with GQA its head dim splits like the query's.
  std::vector<Expr> full = s.dims();
  if (group > 1) {
    full.erase(full.begin() + (r - 3));
    full[r - 4] = full[r - 4] * group;
  }
  GraphTensor m = a.mask->expand_to(full);
  if (group > 1) m = m.split_dims(r - 4, group);
  if (m.dtype != DType::Bool) return safe_softmax(s + cast_to(m, f), -1);
  GraphTensor keep = m.cast(f);
  return (s + (keep - 1.0) * big).softmax(-1) * keep;
}

GraphTensor attention(AtenNode& n, const Sdpa& a) {
  check_operands(n, a);
  const int r = a.q.rank();
  const int64_t group = group_size(n, a);
  double scale = 0;
  if (a.scale) {
    scale = *a.scale;
  } else {
    auto e = a.q.dims()[r - 1].as_const();
    if (!e) n.fail("the head dim must be static when scale is not given");
    scale = 1.0 / std::sqrt(static_cast<double>(*e));
  }
  GraphTensor q = a.q, k = a.k, v = a.v;
  if (group > 1) {
    q = q.split_dims(r - 3, group);  // [.., Hkv, G, L, E]
    k = k.expand_dim(r - 2, group);  // [.., Hkv, G, S, E], stride 0 over G
    v = v.expand_dim(r - 2, group);
  }
  const int rr = q.rank();
  GraphTensor s = to_opmath((q * scale).matmul(k.transpose(rr - 1, rr - 2)));
  GraphTensor out = cast_to(probabilities(a, s, group), v.dtype).matmul(v);
  if (group > 1) out = out.merge_dims(r - 3);  // contiguous: a view
  return out;
}

void lower(AtenNode& n, const char* mask_arg, bool has_gqa) {
  if (double p = n.scalar("dropout_p", 0.0).value; p != 0.0)
    n.fail(fmt::format("dropout_p={} is not supported (inference: pass 0)", p));
  Sdpa a{n.tensor("query"), n.tensor("key"), n.tensor("value")};
  if (mask_arg) a.mask = n.opt_tensor(mask_arg);
  a.causal = n.bool_("is_causal", false);
  if (n.has("scale")) a.scale = n.scalar("scale").value;
  a.gqa = has_gqa && n.bool_("enable_gqa", false);
  if (n.has("return_debug_mask") && n.bool_("return_debug_mask"))
    n.fail("return_debug_mask=True is not supported");
  // Output 0 only: logsumexp, RNG state and debug outputs serve training; a graph that reads
  // them fails at that node ("never produced").
  n.set_output(cast_to(attention(n, a), n.out_dtype(0)), 0);
}

}  // namespace

void lower_scaled_dot_product_attention(AtenNode& n) { lower(n, "attn_mask", true); }

void lower_sdpa_flash(AtenNode& n) { lower(n, nullptr, false); }

void lower_sdpa_flash_for_cpu(AtenNode& n) { lower(n, "attn_mask", false); }

void lower_sdpa_efficient(AtenNode& n) { lower(n, "attn_bias", false); }

void lower_sdpa_cudnn(AtenNode& n) { lower(n, "attn_bias", false); }

}  // namespace luminal::aten
