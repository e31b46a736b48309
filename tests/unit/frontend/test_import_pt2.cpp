// The ATen translator on the committed .pt2 fixtures (torch 2.11 and 2.15): translated programs
// run on the reference runtime and match the eager PyTorch outputs written beside each archive;
// symbols bind from input shapes with clear errors; the translator's own pieces (the size
// expression parser, the op table) behave.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "frontend/aten/node.h"
#include "frontend/aten/sym_expr.h"
#include "luminal/program.h"
#include "luminal/custom_op.h"
#include "luminal/safetensors.h"

namespace luminal {
namespace {

std::string fixture(const std::string& name) {
  return std::string(LUMINAL_FIXTURES) + "/pt2/" + name;
}

std::vector<float> floats(std::span<const std::byte> b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// Runs model_<tag>.pt2 on the reference runtime with input.<i> and compares output.<i>.
void expect_matches_eager(const std::string& model, const std::string& tag) {
  SCOPED_TRACE(model + "_" + tag);
  auto p = CompiledProgram::load(fixture(model + "_" + tag + ".pt2"));
  const SafetensorsFile ref = SafetensorsFile::open(fixture(model + "_" + tag + ".safetensors"));
  for (size_t i = 0; i < p->program().inputs.size(); ++i) {
    const SafeTensor& t = ref.at("input." + std::to_string(i));
    ASSERT_EQ(t.dtype, p->program().inputs[i].dtype);
    p->set_input(i, t.data, t.shape);
  }
  p->run();
  ASSERT_EQ(p->program().outputs.size(), 1u);
  const SafeTensor& want = ref.at("output.0");
  EXPECT_EQ(p->output_shape(0), want.shape);
  const std::vector<float> got = floats(p->output_bytes(0)), exp = floats(want.data);
  ASSERT_EQ(got.size(), exp.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], exp[k], 1e-6) << "element " << k;
}

TEST(ImportPt2, MlpMatchesEagerBothTorchVersions) {
  expect_matches_eager("mlp", "t211");
  expect_matches_eager("mlp", "t215");
}

TEST(ImportPt2, DlrmMatchesEagerBothTorchVersions) {
  expect_matches_eager("dlrm", "t211");
  expect_matches_eager("dlrm", "t215");
}

TEST(ImportPt2, InputsOutputsAndWeightsInExportOrder) {
  const ImportedProgram p = import_pt2(fixture("dlrm_t215.pt2"));
  std::vector<std::string> names;
  for (const ProgramTensor& t : p.inputs) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"dense", "idx0", "off0", "idx1", "off1"}));
  EXPECT_EQ(p.inputs[1].dtype, DType::I64);
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.outputs[0].name, "output_0");
  EXPECT_EQ(p.weights.size(), 9u);  // 7 parameters and buffers + 2 constants
}

// Jagged embedding_bag (1-D indices + offsets) becomes one custom::EmbeddingBag node per table.
TEST(ImportPt2, JaggedEmbeddingBagIsOneCustomNode) {
  const ImportedProgram p = import_pt2(fixture("dlrm_t215.pt2"));
  int bags = 0;
  for (const Node& n : p.graph->nodes())
    if (n.kind == OpKind::Custom && n.custom && n.custom->name() == "embedding_bag") ++bags;
  EXPECT_EQ(bags, 2);
}

TEST(ImportPt2, SymbolsBindFromInputShapes) {
  auto p = CompiledProgram::load(fixture("mlp_t215.pt2"));
  const SafetensorsFile ref = SafetensorsFile::open(fixture("mlp_t215.safetensors"));
  const DynMap d = p->program().bind_dims({{37, 8}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.begin()->second, 37);
  std::vector<float> x(37 * 8, 0.25f);
  const int64_t shape[] = {37, 8};
  p->set_input(0, std::as_bytes(std::span(x)), shape);
  p->run();
  EXPECT_EQ(p->output_shape(0), (std::vector<int64_t>{37, 4}));
}

TEST(ImportPt2, BadShapesNameTheInput) {
  const ImportedProgram p = import_pt2(fixture("mlp_t215.pt2"));
  auto message = [&](std::vector<std::vector<int64_t>> shapes) {
    try {
      p.bind_dims(shapes);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{5, 9}}).find("input 'x' has shape [5, 9], expected [s77, 8]"),
            std::string::npos);
  EXPECT_NE(message({{5}}).find("expected rank 2"), std::string::npos);
  EXPECT_NE(message({{2000, 8}}).find("outside its exported range [2, 1024]"), std::string::npos);
  EXPECT_NE(message({}).find("0 input shapes given"), std::string::npos);
}

TEST(ImportPt2, UnboundInputIsAnError) {
  auto p = CompiledProgram::load(fixture("mlp_t215.pt2"));
  EXPECT_THROW(p->run(), std::invalid_argument);
  std::vector<float> x(5 * 7);
  const int64_t shape[] = {5, 8};
  EXPECT_THROW(p->set_input(0, std::as_bytes(std::span(x)), shape),
               std::invalid_argument);  // 35 != 40 floats
}

TEST(SymExpr, ParsesBothSerializedForms) {
  const DynMap d{{"s77", 5}, {"s17", 3}};
  EXPECT_EQ(aten::parse_sym_expr("Symbol('s77', positive=True, integer=True)").eval(d), 5);
  EXPECT_EQ(aten::parse_sym_expr("Add(Symbol('s17', positive=True, integer=True), Mul(Integer(2), "
                                 "Symbol('s77', positive=True, integer=True)), Integer(-1))")
                .eval(d),
            12);
  EXPECT_EQ(aten::parse_sym_expr("2*s77 + s17 - 1").eval(d), 12);
  EXPECT_EQ(aten::parse_sym_expr("((s77 + 1)//2)").eval(d), 3);
  EXPECT_EQ(aten::parse_sym_expr("Max(1, s17 - 7)").eval(d), 1);
  EXPECT_EQ(aten::parse_sym_expr("FloorDiv(s77, 2) + Mod(s77, 2)").eval(d), 3);
  EXPECT_THROW(aten::parse_sym_expr("s77**2"), std::invalid_argument);
  EXPECT_THROW(aten::parse_sym_expr("sqrt(s77)"), std::invalid_argument);
  EXPECT_THROW(aten::parse_sym_expr("s77 +"), std::invalid_argument);
  EXPECT_THROW(aten::parse_sym_expr("Symbol('s77"), std::invalid_argument);
}

TEST(AtenTable, LooksUpWithOrWithoutPrefix) {
  EXPECT_NE(aten::find_lowering("torch.ops.aten.linear.default"), nullptr);
  EXPECT_NE(aten::find_lowering("aten.linear.default"), nullptr);
  EXPECT_EQ(aten::find_lowering("aten.linear.out"), nullptr);
  const std::vector<std::string> all = aten::registered_targets();
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  EXPECT_GT(all.size(), 30u);
}

}  // namespace
}  // namespace luminal
