// The concat select (src/cuda/codegen/concat_select.cpp): a concat's kernel evaluates one part per
// output element. Checked on the generated source: every part's load appears once, in its own leaf
// of a binary search (n parts: n - 1 `if`s, one load per leaf), with no padding guards; sums of
// padded reads that are not concats stay plain sums.
#include <sstream>
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "cuda/codegen/kernels.h"
#include "compiler/kernel_plan.h"
#include "luminal/nn.h"
#include "luminal/tensor.h"

namespace luminal {
namespace {

using compiler::KernelPlan;
using compiler::KernelStep;

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// `if`s in src besides the thread prologue's bounds check.
size_t branches(const std::string& src) { return count(src, "if (") - count(src, "if (i >= "); }

// The source of the one kernel that writes `node`'s buffer.
std::string source_writing(const KernelPlan& p, NodeId node) {
  const int b = p.buffer_of_node.at(node);
  std::string src;
  for (const auto& s : p.steps) {
    const auto* k = std::get_if<KernelStep>(&s);
    if (!k) continue;
    for (int w : k->writes) {
      if (w == b) {
        EXPECT_TRUE(src.empty()) << "two kernels write buffer " << b;
        src = k->source;
      }
    }
  }
  EXPECT_FALSE(src.empty()) << "no kernel writes node " << node;
  return src;
}

// Lines of src that load from buffer b ("b3[").
size_t lines_loading(const std::string& src, int b) {
  const std::string ld = "b" + std::to_string(b) + "[";
  size_t n = 0, start = 0;
  while (start < src.size()) {
    size_t end = src.find('\n', start);
    if (end == std::string::npos) end = src.size();
    const std::string line = src.substr(start, end - start);
    EXPECT_LE(count(line, ld), 1u) << line;
    n += count(line, ld) > 0;
    start = end + 1;
  }
  return n;
}

// Loads of all `parts` in src: each exactly once, and no line loads two different parts.
void expect_one_load_each(const std::string& src, const KernelPlan& p,
                          const std::vector<GraphTensor>& parts) {
  for (const GraphTensor& t : parts) {
    const int b = p.buffer_of_node.at(t.id);
    ASSERT_GE(b, 0);
    EXPECT_EQ(lines_loading(src, b), 1u) << "part %" << t.id << "\n" << src;
  }
  std::istringstream lines(src);
  for (std::string line; std::getline(lines, line);) {
    size_t parts_here = 0;
    for (const GraphTensor& t : parts)
      parts_here += count(line, "b" + std::to_string(p.buffer_of_node.at(t.id)) + "[") > 0;
    EXPECT_LE(parts_here, 1u) << line;
  }
}

TEST(ConcatSelect, Inputs27LastAxisReadOncePerElement) {
  Graph g;
  std::vector<GraphTensor> parts;
  for (int k = 0; k < 27; ++k)
    parts.push_back(g.named_tensor("x" + std::to_string(k), {2048, 128}));
  GraphTensor c = concat(parts, 1).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const std::string src = source_writing(p, c.id);
  expect_one_load_each(src, p, parts);
  EXPECT_EQ(branches(src), 26u) << src;  // a binary search: 27 leaves, 26 branches
  EXPECT_EQ(count(src, " ? "), 0u) << "no padding guards\n" << src;
}

TEST(ConcatSelect, MiddleAxisAndInlinedParts) {
  // 64 parts [4, 2, 3] on axis 1, each x_k * (k + 1): one load of x_k, in its own leaf.
  Graph g;
  std::vector<GraphTensor> ins, parts;
  for (int k = 0; k < 64; ++k) {
    ins.push_back(g.named_tensor("x" + std::to_string(k), {4, 2, 3}));
    parts.push_back(ins.back() * (k + 1.0));
  }
  GraphTensor c = concat(parts, 1).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const std::string src = source_writing(p, c.id);
  expect_one_load_each(src, p, ins);
  EXPECT_EQ(branches(src), 63u) << src;
}

TEST(ConcatSelect, EmbeddingBagsOfTheDlrmShape) {
  // The DLRM feature concat: dense [B, d] and 26 sum-bag reductions, each read once by the concat.
  Graph g;
  std::vector<GraphTensor> feats{g.named_tensor("dense", {2048, 128})};
  for (int t = 0; t < 26; ++t) {
    nn::EmbeddingBag eb(g, "emb" + std::to_string(t), 1000, 128, nn::BagMode::Sum);
    const int bag = 2 + t % 2;
    feats.push_back(eb(g.named_tensor("idx" + std::to_string(t), {2048 * bag}, DType::I32), bag));
  }
  GraphTensor c = concat(feats, 1).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const std::string src = source_writing(p, c.id);
  expect_one_load_each(src, p, feats);
  EXPECT_EQ(branches(src), 26u) << src;
}

TEST(ConcatSelect, InlinedGathersOfOneRowBags) {
  // Bags of one row are inlined gathers: each table and each index array is loaded in one leaf.
  Graph g;
  std::vector<GraphTensor> feats{g.named_tensor("dense", {2048, 128})}, tables{feats[0]}, idx;
  for (int t = 0; t < 26; ++t) {
    nn::EmbeddingBag eb(g, "emb" + std::to_string(t), 1000, 128, nn::BagMode::Sum);
    idx.push_back(g.named_tensor("idx" + std::to_string(t), {2048}, DType::I32));
    feats.push_back(eb(idx.back(), 1));
    tables.push_back(eb.weight);
  }
  GraphTensor c = concat(feats, 1).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const std::string src = source_writing(p, c.id);
  expect_one_load_each(src, p, tables);
  expect_one_load_each(src, p, idx);
  EXPECT_EQ(branches(src), 26u) << src;
}

TEST(ConcatSelect, NestedConcatsFlattenIntoOneSearch) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {4, 2}), b = g.named_tensor("b", {4, 3}),
              d = g.named_tensor("d", {4, 1});
  GraphTensor c =
      concat({a.concat_along(b.concat_along(d, 1), 1), d.concat_along(a, 1)}, 1).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const std::string src = source_writing(p, c.id);
  // Five parts (a and d twice): a and d are loaded once in each of their two leaves.
  EXPECT_EQ(branches(src), 4u) << src;
  EXPECT_EQ(lines_loading(src, p.buffer_of_node.at(b.id)), 1u) << src;
  EXPECT_EQ(lines_loading(src, p.buffer_of_node.at(a.id)), 2u) << src;
  EXPECT_EQ(count(src, " ? "), 0u) << src;
}

TEST(ConcatSelect, DynamicAxisBoundariesAreSymbolic) {
  Graph g;
  const Expr s = Expr::sym("s");
  GraphTensor a = g.named_tensor("a", {s, 4}), b = g.named_tensor("b", {2, 4}),
              d = g.named_tensor("d", {s, 4});
  GraphTensor c = concat({a, b, d}, 0).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const std::string src = source_writing(p, c.id);
  expect_one_load_each(src, p, {a, b, d});
  EXPECT_EQ(branches(src), 2u) << src;
}

TEST(ConcatSelect, PartsInReverseOrderAreSorted) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3}), y = g.named_tensor("y", {2, 2});
  GraphTensor s = (y.pad(1, 3, 0) + x.pad(1, 0, 2)).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const std::string src = source_writing(p, s.id);
  EXPECT_EQ(branches(src), 1u) << src;
  EXPECT_NE(src.find("if (i1 < 3)"), std::string::npos) << src;
  expect_one_load_each(src, p, {x, y});
}

TEST(ConcatSelect, OverlappingPadsStayASum) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 3}), y = g.named_tensor("y", {4, 3});
  GraphTensor s = (x.pad(1, 0, 1) + y.pad(1, 1, 0)).output();
  const std::string src = source_writing(cuda::codegen::lower_and_render(g), s.id);
  EXPECT_EQ(branches(src), 0u) << src;
  EXPECT_NE(src.find("(v0 + v1)"), std::string::npos) << src;  // the Add of both guarded reads
  EXPECT_EQ(count(src, " ? "), 2u) << src;
}

TEST(ConcatSelect, PadsOnTwoAxesStayASum) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {1, 2}), y = g.named_tensor("y", {1, 2});
  GraphTensor s = (x.pad(0, 0, 1).pad(1, 0, 1) + y.pad(0, 1, 0).pad(1, 1, 0)).output();
  EXPECT_EQ(branches(source_writing(cuda::codegen::lower_and_render(g), s.id)), 0u);
}

TEST(ConcatSelect, ConcatPlusBroadcastSelectsInsideTheSum) {
  // (a | b) + row: the outer Add is a sum, the concat under it a select.
  Graph g;
  GraphTensor a = g.named_tensor("a", {2, 1}), b = g.named_tensor("b", {2, 2}),
              r = g.named_tensor("r", {3});
  GraphTensor s = (concat({a, b}, 1) + r.expand_dim(0, 2)).output();
  const std::string src = source_writing(cuda::codegen::lower_and_render(g), s.id);
  EXPECT_EQ(branches(src), 1u) << src;
}

TEST(ConcatSelect, GapsReadZero) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 2}), y = g.named_tensor("y", {2, 1});
  GraphTensor s = (x.pad(1, 0, 2) + y.pad(1, 3, 0)).output();
  const std::string src = source_writing(cuda::codegen::lower_and_render(g), s.id);
  EXPECT_EQ(branches(src), 2u) << src;  // x | zeros | y
  EXPECT_EQ(count(src, "= 0.0f;"), 1u) << src;
}

TEST(PaddedRead, InlinedProducerIsNotEvaluatedInPadding) {
  // (x * 2) padded: x is loaded inside `if (valid)`, at an unclamped index (no `ok ? c : 0`).
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 3});
  GraphTensor y = (x * 2.0).pad(1, 1, 1).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const std::string src = source_writing(p, y.id);
  EXPECT_EQ(branches(src), 1u) << src;
  EXPECT_EQ(count(src, " ? "), 0u) << src;
  EXPECT_EQ(lines_loading(src, p.buffer_of_node.at(x.id)), 1u) << src;
  EXPECT_LT(src.find("if (ok"), src.find("b" + std::to_string(p.buffer_of_node.at(x.id)) + "["))
      << src;
}

TEST(PaddedRead, GatherInPaddingFlagsNothing) {
  // A padded gather: its index load and range check run only for valid rows.
  Graph g;
  GraphTensor t = g.named_tensor("t", {10, 4}), i = g.named_tensor("i", {3}, DType::I32);
  GraphTensor y = t.gather(i).pad(0, 2, 0).output();
  const std::string src = source_writing(cuda::codegen::lower_and_render(g), y.id);
  EXPECT_LT(src.find("if (ok"), src.find("lum_clamp_row")) << src;
}

}  // namespace
}  // namespace luminal
