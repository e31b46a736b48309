// Many-part concats (codegen emits them as a select of one part per element, see
// src/cuda/codegen/concat_select.cpp): 2, 27 and 64 parts along the last and a middle axis, parts
// that are inputs, reductions (embedding bags), inlined expressions and views; nested concats,
// dynamic dims, and the sums of padded reads that are not concats (overlapping pads, gaps, pads on
// two axes, a concat plus a broadcast), which must stay plain sums. Expectations from plain loops.
#include <algorithm>

#include "luminal/nn.h"
#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

const Expr kBatch = Expr::sym("batch");

/// Row-major [outer, sum(widths), inner] from parts shaped [outer, widths[k], inner].
std::vector<double> concat_ref(const std::vector<std::vector<double>>& parts, size_t outer,
                               const std::vector<size_t>& widths, size_t inner) {
  std::vector<double> out;
  for (size_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < parts.size(); ++k) {
      for (size_t j = 0; j < widths[k] * inner; ++j)
        out.push_back(parts[k][o * widths[k] * inner + j]);
    }
  }
  return out;
}

/// Widths 1..4 cycling, so part boundaries are irregular.
std::vector<size_t> cycling_widths(size_t n) {
  std::vector<size_t> w;
  for (size_t k = 0; k < n; ++k) w.push_back(1 + (k * 7) % 4);
  return w;
}

/// n input parts [outer, w_k, inner] (inner 0 means rank 2: [outer, w_k]) concatenated on axis 1.
CaseIO input_parts(Graph& g, size_t n, size_t outer, size_t inner) {
  CaseIO io;
  const std::vector<size_t> widths = cycling_widths(n);
  std::vector<GraphTensor> parts;
  std::vector<std::vector<double>> vals;
  for (size_t k = 0; k < n; ++k) {
    std::vector<Expr> shape{static_cast<int64_t>(outer), static_cast<int64_t>(widths[k])};
    if (inner > 0) shape.push_back(static_cast<int64_t>(inner));
    vals.push_back(random_values(outer * widths[k] * std::max<size_t>(inner, 1), -2, 2, 100 + k));
    parts.push_back(io.in(g.named_tensor("x" + std::to_string(k), shape), vals.back()));
  }
  io.out(concat(parts, 1), concat_ref(vals, outer, widths, std::max<size_t>(inner, 1)));
  return io;
}

}  // namespace

LUMINAL_OP_CASE(ConcatCase, inputs_2_last_axis) { return input_parts(g, 2, 3, 0); }
LUMINAL_OP_CASE(ConcatCase, inputs_27_last_axis) { return input_parts(g, 27, 5, 0); }
LUMINAL_OP_CASE(ConcatCase, inputs_64_last_axis) { return input_parts(g, 64, 3, 0); }
LUMINAL_OP_CASE(ConcatCase, inputs_2_middle_axis) { return input_parts(g, 2, 2, 3); }
LUMINAL_OP_CASE(ConcatCase, inputs_27_middle_axis) { return input_parts(g, 27, 2, 3); }
LUMINAL_OP_CASE(ConcatCase, inputs_64_middle_axis) { return input_parts(g, 64, 2, 5); }

LUMINAL_OP_CASE(ConcatCase, embedding_bags_27) {
  // The DLRM feature concat: a dense row [B, d] and 26 sum-bags [B, d] -> [B, 27 d], also read by
  // a reduction over each feature (the select inlined into a reduce kernel).
  CaseIO io;
  const size_t batch = 3, d = 4, bag = 2, vocab = 5, tables = 26;
  std::vector<std::vector<double>> vals{random_values(batch * d, -1, 1, 7)};
  std::vector<GraphTensor> feats{io.in(g.named_tensor("dense", {3, 4}), vals[0])};
  for (size_t t = 0; t < tables; ++t) {
    nn::EmbeddingBag eb(g, "emb" + std::to_string(t), 5, 4, nn::BagMode::Sum);
    const std::vector<double> table = random_values(vocab * d, -1, 1, 200 + t);
    io.in(eb.weight, table);
    std::vector<double> idx, sum(batch * d, 0.0);
    for (size_t b = 0; b < batch * bag; ++b)
      idx.push_back(static_cast<double>((b * 3 + t) % vocab));
    for (size_t b = 0; b < batch * bag; ++b) {
      for (size_t j = 0; j < d; ++j)
        sum[(b / bag) * d + j] += table[static_cast<size_t>(idx[b]) * d + j];
    }
    GraphTensor ix = io.in(g.named_tensor("idx" + std::to_string(t), {6}, DType::I32), idx);
    feats.push_back(eb(ix, 2));
    vals.push_back(sum);
  }
  const std::vector<double> want = concat_ref(vals, batch, std::vector<size_t>(tables + 1, d), 1);
  GraphTensor c = concat(feats, 1);
  io.out(c, want);
  std::vector<double> row_sums;
  for (size_t i = 0; i < want.size(); i += d)
    row_sums.push_back(want[i] + want[i + 1] + want[i + 2] + want[i + 3]);
  io.out(c.split_dims(1, 4).sum(2), row_sums);
  return io;
}

LUMINAL_OP_CASE(ConcatCase, expressions_64_middle_axis) {
  // Parts are inlined expressions and views of two inputs: x_k = a * (k + 1) + b^T slice, or exp.
  CaseIO io;
  const std::vector<double> av = random_values(2 * 3, -1, 1, 11),
                            bv = random_values(3 * 2, -1, 1, 12);
  GraphTensor a = io.in(g.named_tensor("a", {2, 1, 3}), av);
  GraphTensor b = io.in(g.named_tensor("b", {3, 2}), bv);
  GraphTensor bt = b.transpose(0, 1).expand_dim(1, 1);  // [2, 1, 3], bt[i, 0, j] = b[j, i]
  std::vector<GraphTensor> parts;
  std::vector<std::vector<double>> vals;
  for (int k = 0; k < 64; ++k) {
    std::vector<double> v;
    if (k % 3 == 2) {
      parts.push_back(a.exp());
      for (double x : av) v.push_back(std::exp(x));
    } else {
      parts.push_back(a * (k + 1.0) + bt);
      for (size_t i = 0; i < 2; ++i) {
        for (size_t j = 0; j < 3; ++j) v.push_back(av[i * 3 + j] * (k + 1.0) + bv[j * 2 + i]);
      }
    }
    vals.push_back(v);
  }
  io.out(concat(parts, 1), concat_ref(vals, 2, std::vector<size_t>(64, 1), 3));
  return io;
}

LUMINAL_OP_CASE(ConcatCase, nested_concats) {
  // Concats of concats (padded partial sums): [a | [b | c]] | [c | a] along the last axis.
  CaseIO io;
  const std::vector<double> av = random_values(4, -1, 1, 21), bv = random_values(6, -1, 1, 22),
                            cv = random_values(2, -1, 1, 23);
  GraphTensor a = io.in(g.named_tensor("a", {2, 2}), av);
  GraphTensor b = io.in(g.named_tensor("b", {2, 3}), bv);
  GraphTensor c = io.in(g.named_tensor("c", {2, 1}), cv);
  GraphTensor left = a.concat_along(b.concat_along(c, 1), 1);
  io.out(concat({left, concat({c, a}, 1)}, 1),
         concat_ref({av, bv, cv, cv, av}, 2, {2, 3, 1, 1, 2}, 1));
  return io;
}

LUMINAL_OP_CASE(ConcatCase, dynamic_batch_27) {
  // 27 parts [batch, 2] on the last axis, batch dynamic.
  CaseIO io;
  io.dyn = {{"batch", 3}};
  std::vector<GraphTensor> parts;
  std::vector<std::vector<double>> vals;
  for (int k = 0; k < 27; ++k) {
    vals.push_back(random_values(6, -3, 3, 300 + k));
    parts.push_back(io.in(g.named_tensor("x" + std::to_string(k), {kBatch, 2}), vals.back()) * 2.0);
    for (double& v : vals.back()) v *= 2.0;
  }
  io.out(concat(parts, 1), concat_ref(vals, 3, std::vector<size_t>(27, 2), 1));
  return io;
}

LUMINAL_OP_CASE(ConcatCase, dynamic_axis) {
  // Along the dynamic axis: [batch, 2] | [2, 2] | [batch, 2] -> [2 batch + 2, 2].
  CaseIO io;
  io.dyn = {{"batch", 2}};
  const std::vector<double> av = random_values(4, -1, 1, 31), bv = random_values(4, -1, 1, 32),
                            cv = random_values(4, -1, 1, 33);
  GraphTensor a = io.in(g.named_tensor("a", {kBatch, 2}), av);
  GraphTensor b = io.in(g.named_tensor("b", {2, 2}), bv);
  GraphTensor c = io.in(g.named_tensor("c", {kBatch, 2}), cv);
  std::vector<double> want = av;
  want.insert(want.end(), bv.begin(), bv.end());
  want.insert(want.end(), cv.begin(), cv.end());
  io.out(concat({a, b, c}, 0), want);
  return io;
}

LUMINAL_OP_CASE(ConcatCase, i32_parts) {
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {2, 1}, DType::I32), {5, -6});
  GraphTensor b = io.in(g.named_tensor("b", {2, 2}, DType::I32), {1, 2, 3, 4});
  io.out(concat({b, a, b}, 1), {1, 2, 5, 1, 2, 3, 4, -6, 3, 4});
  return io;
}

LUMINAL_OP_CASE(PaddedSumCase, overlapping) {
  // x padded to [0, 3) and y to [1, 4) overlap on [1, 3): a real sum, not a concat.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1, 2, 3, 4, 5, 6});
  GraphTensor y = io.in(g.named_tensor("y", {2, 3}), {10, 20, 30, 40, 50, 60});
  io.out(x.pad(1, 0, 1) + y.pad(1, 1, 0), {1, 12, 23, 30, 4, 45, 56, 60});
  return io;
}

LUMINAL_OP_CASE(PaddedSumCase, gap_between_parts) {
  // Disjoint with a hole: x on [0, 2), y on [3, 4), zeros at 2 (and -0.0 in x stays a zero).
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 2}), {1, -0.0, 3, 4});
  GraphTensor y = io.in(g.named_tensor("y", {2, 1}), {7, 8});
  io.out(x.pad(1, 0, 2) + y.pad(1, 3, 0), {1, 0, 0, 7, 3, 4, 0, 8});
  return io;
}

LUMINAL_OP_CASE(PaddedSumCase, parts_in_reverse_order) {
  // A concat written right part first: y on [3, 5), x on [0, 3).
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1, 2, 3, 4, 5, 6});
  GraphTensor y = io.in(g.named_tensor("y", {2, 2}), {7, 8, 9, 10});
  io.out(y.pad(1, 3, 0) + x.pad(1, 0, 2), {1, 2, 3, 7, 8, 4, 5, 6, 9, 10});
  return io;
}

LUMINAL_OP_CASE(PaddedSumCase, pads_on_two_axes) {
  // x on rows [0, 1) cols [0, 2), y on rows [1, 2) cols [1, 3): disjoint, but on two axes.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {1, 2}), {1, 2});
  GraphTensor y = io.in(g.named_tensor("y", {1, 2}), {3, 4});
  io.out(x.pad(0, 0, 1).pad(1, 0, 1) + y.pad(0, 1, 0).pad(1, 1, 0), {1, 2, 0, 0, 3, 4});
  return io;
}

LUMINAL_OP_CASE(PaddedSumCase, concat_plus_broadcast) {
  // An unpadded operand overlaps every part: (a | b) + row.
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {2, 1}), {1, 2});
  GraphTensor b = io.in(g.named_tensor("b", {2, 2}), {3, 4, 5, 6});
  GraphTensor r = io.in(g.named_tensor("r", {3}), {10, 20, 30});
  io.out(concat({a, b}, 1) + r.expand_dim(0, 2), {11, 23, 34, 12, 25, 36});
  return io;
}

LUMINAL_OP_CASE(PaddedSumCase, concat_of_slices_then_pad) {
  // A concat read through a slice and a pad (not a plain view): [x | y][:, 1:4] padded by 1 each
  // side.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 2}), {1, 2, 3, 4});
  GraphTensor y = io.in(g.named_tensor("y", {2, 3}), {5, 6, 7, 8, 9, 10});
  GraphTensor c = concat({x, y}, 1).slice(1, 1, 4).pad(1, 1, 1);
  io.out(c + c, {0, 4, 10, 12, 0, 0, 8, 16, 18, 0});
  return io;
}

}  // namespace luminal::ops_test
