// .pt2 reader on archives written by torch 2.11 and 2.15 (tests/fixtures/pt2/make_pt2_fixtures.py):
// the program's structure, and every weight/constant equal to the safetensors written beside it.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "luminal/pt2.h"
#include "luminal/safetensors.h"

namespace luminal {
namespace {

std::string fixture(const std::string& name) {
  return std::string(LUMINAL_FIXTURES) + "/pt2/" + name;
}

/// The tensor's elements in row-major order, gathered through its strides (independent of the
/// reader's own contiguous_bytes()).
std::vector<std::byte> gather(const Pt2Tensor& t) {
  const size_t es = dtype_size(t.dtype);
  size_t numel = 1;
  for (int64_t d : t.shape) numel *= static_cast<size_t>(d);
  std::vector<std::byte> out(numel * es);
  std::vector<int64_t> idx(t.shape.size(), 0);
  for (size_t i = 0; i < numel; ++i) {
    int64_t off = t.storage_offset;
    for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * t.strides[k];
    std::memcpy(out.data() + i * es, t.storage.data() + off * es, es);
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < t.shape[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

/// Every weight and constant equals "param.<name>" / "const.<name>" of the expected file, and the
/// archive holds exactly those.
void expect_tensors_match(const Pt2Archive& a, const std::string& expected_path) {
  const SafetensorsFile expected = SafetensorsFile::open(expected_path);
  size_t n_param = 0, n_const = 0;
  for (const SafeTensor& e : expected.tensors()) {
    const bool param = e.name.rfind("param.", 0) == 0, constant = e.name.rfind("const.", 0) == 0;
    if (!param && !constant) continue;
    const std::string name = e.name.substr(6);  // "param." and "const." are 6 chars
    (param ? n_param : n_const)++;
    const Pt2Tensor* t = a.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dtype, e.dtype) << name;
    EXPECT_EQ(t->shape, e.shape) << name;
    const std::vector<std::byte> got = gather(*t);
    ASSERT_EQ(got.size(), e.data.size()) << name;
    EXPECT_EQ(std::memcmp(got.data(), e.data.data(), got.size()), 0) << name << " values differ";
  }
  EXPECT_EQ(a.weights().size(), n_param);
  EXPECT_EQ(a.constants().size(), n_const);
  EXPECT_GT(n_param, 0u);
}

std::vector<std::string> targets(const Pt2Program& p) {
  std::vector<std::string> out;
  for (const Pt2Node& n : p.graph.nodes) out.push_back(n.target);
  return out;
}

std::vector<std::string> user_inputs(const Pt2Program& p) {
  std::vector<std::string> out;
  for (const auto& s : p.input_specs)
    if (s.kind == Pt2InputKind::UserInput) out.push_back(s.name);
  return out;
}

class Pt2Versions : public ::testing::TestWithParam<const char*> {};

TEST_P(Pt2Versions, MlpProgramAndWeights) {
  const std::string tag = GetParam();
  const Pt2Archive a = Pt2Archive::open(fixture("mlp_" + tag + ".pt2"));
  const Pt2Program& p = a.program();
  EXPECT_EQ(a.prefix(), "mlp_" + tag + "/");
  EXPECT_EQ(a.model_name(), "model");
  EXPECT_EQ(p.schema_major, 8);
  EXPECT_EQ(p.schema_minor, tag == std::string("t211") ? 17 : 20);
  EXPECT_EQ(targets(p), (std::vector<std::string>{"torch.ops.aten.linear.default",
                                                  "torch.ops.aten.relu.default",
                                                  "torch.ops.aten.linear.default"}));
  EXPECT_EQ(user_inputs(p), std::vector<std::string>{"x"});
  ASSERT_EQ(p.output_specs.size(), 1u);
  EXPECT_EQ(p.output_specs[0].kind, Pt2OutputKind::UserOutput);
  EXPECT_EQ(p.output_specs[0].name, p.graph.nodes.back().outputs.at(0).tensor_name());
  // x: [batch, 8] with batch a symbol bounded by Dim("batch", min=2, max=1024), example 5.
  const Pt2TensorMeta& x = p.graph.tensor_values.at("x");
  EXPECT_EQ(x.dtype, DType::F32);
  ASSERT_EQ(x.sizes.size(), 2u);
  ASSERT_TRUE(x.sizes[0].is_symbolic());
  EXPECT_EQ(x.sizes[0].value, 5);
  EXPECT_FALSE(x.sizes[1].is_symbolic());
  EXPECT_EQ(x.sizes[1].value, 8);
  const std::string sym = x.sizes[0].str();
  ASSERT_EQ(p.range_constraints.count(sym), 1u) << sym;
  EXPECT_EQ(p.range_constraints.at(sym).min, 2);
  EXPECT_EQ(p.range_constraints.at(sym).max, 1024);
  // The first linear's inputs by ATen parameter name, with the parameter placeholders.
  const Pt2Node& fc1 = p.graph.nodes[0];
  ASSERT_EQ(fc1.inputs.size(), 3u);
  EXPECT_EQ(fc1.inputs[0].name, "input");
  EXPECT_EQ(fc1.inputs[0].arg.tensor_name(), "x");
  EXPECT_EQ(fc1.inputs[1].arg.tensor_name(), "p_fc1_weight");
  EXPECT_NE(fc1.stack_trace().find("self.fc1(x)"), std::string::npos) << fc1.stack_trace();
  expect_tensors_match(a, fixture("mlp_" + tag + ".safetensors"));
  for (const Pt2Tensor& t : a.weights()) {
    EXPECT_TRUE(t.mapped) << t.name;  // torch writes STORED entries: zero-copy
    EXPECT_TRUE(t.is_param) << t.name;
  }
}

TEST_P(Pt2Versions, DlrmProgramWeightsAndConstants) {
  const std::string tag = GetParam();
  const Pt2Archive a = Pt2Archive::open(fixture("dlrm_" + tag + ".pt2"));
  const Pt2Program& p = a.program();
  const std::string op = "torch.ops.aten.";
  EXPECT_EQ(targets(p),
            (std::vector<std::string>{
                op + "linear.default", op + "relu.default", op + "embedding_bag.padding_idx",
                op + "embedding_bag.padding_idx", op + "stack.default", op + "transpose.int",
                op + "bmm.default", op + "index.Tensor", op + "mul.Tensor", op + "cat.default",
                op + "linear.default", op + "sigmoid.default"}));
  EXPECT_EQ(user_inputs(p), (std::vector<std::string>{"dense", "idx0", "off0", "idx1", "off1"}));
  int params = 0, buffers = 0, constants = 0;
  for (const auto& s : p.input_specs) {
    params += s.kind == Pt2InputKind::Parameter;
    buffers += s.kind == Pt2InputKind::Buffer;
    constants += s.kind == Pt2InputKind::TensorConstant;
    if (s.target == "lj") {
      EXPECT_FALSE(s.persistent);
    }
  }
  EXPECT_EQ(params, 6);
  EXPECT_EQ(buffers, 2);
  EXPECT_EQ(constants, 1);
  // aten.index.Tensor(z, [None, li, lj]): an optional-tensor list with a leading None.
  const Pt2Node& index = p.graph.nodes[7];
  const Pt2Argument& indices = index.inputs.at(1).arg;
  EXPECT_EQ(indices.kind, "optional_tensors");
  ASSERT_EQ(indices.values.size(), 3u);
  EXPECT_EQ(indices.values[0].kind, Pt2Value::Kind::None);
  EXPECT_EQ(indices.values[1].str, "b_li");
  EXPECT_EQ(indices.values[2].str, "b_lj");
  // embedding_bag's mode is an int argument (0 = sum).
  const Pt2Node& bag = p.graph.nodes[2];
  ASSERT_EQ(bag.inputs.at(4).name, "mode");
  ASSERT_EQ(bag.inputs.at(4).arg.kind, "int");
  EXPECT_EQ(bag.inputs.at(4).arg.values.at(0).i, 0);
  EXPECT_EQ(bag.outputs.size(), 4u);  // (output, offset2bag, bag_size, max_indices)
  expect_tensors_match(a, fixture("dlrm_" + tag + ".safetensors"));
  // li and lj are the two rows of one tril_indices tensor: lj is stored with a storage offset.
  const Pt2Tensor* lj = a.find_tensor("lj");
  ASSERT_NE(lj, nullptr);
  EXPECT_EQ(lj->storage_offset, 3);
  EXPECT_FALSE(lj->is_param);
}

INSTANTIATE_TEST_SUITE_P(Torch, Pt2Versions, ::testing::Values("t211", "t215"));

TEST(Pt2, DeflatedArchiveInflatesTheSameWeights) {
  const Pt2Archive a = Pt2Archive::open(fixture("mlp_t215_deflated.pt2"));
  ASSERT_FALSE(a.weights().empty());
  for (const Pt2Tensor& t : a.weights()) EXPECT_FALSE(t.mapped) << t.name;
  expect_tensors_match(a, fixture("mlp_t215.safetensors"));
  EXPECT_EQ(a.program().graph.nodes.size(), 3u);
}

TEST(Pt2, SymbolsPrintReadably) {
  EXPECT_EQ((Pt2SymInt{"Symbol('s77', positive=True, integer=True)"}.str()), "s77");
  EXPECT_EQ((Pt2SymInt{"Mul(Integer(2), Symbol('s0', integer=True))"}.str()), "2*s0");
  EXPECT_EQ((Pt2SymInt{"Mul(Add(Symbol('a'), Integer(1)), Symbol('b'))"}.str()), "(a + 1)*b");
  EXPECT_EQ((Pt2SymInt{"Weird(("}.str()), "Weird((");  // unparsable: kept raw
  EXPECT_EQ((Pt2SymInt{"", 42}.str()), "42");
}

TEST(Pt2, ScalarTypeCodes) {
  EXPECT_EQ(dtype_from_torch_scalar_type(7), DType::F32);
  EXPECT_EQ(dtype_from_torch_scalar_type(5), DType::I64);
  EXPECT_EQ(dtype_from_torch_scalar_type(13), DType::BF16);
  EXPECT_EQ(dtype_from_torch_scalar_type(10), std::nullopt);
  EXPECT_EQ(torch_scalar_type_name(10), "complex64");
  EXPECT_EQ(torch_scalar_type_name(99), "scalar_type(99)");
}

}  // namespace
}  // namespace luminal
