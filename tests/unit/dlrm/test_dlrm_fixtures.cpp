// DLRM on the CPU reference runtime against PyTorch fixtures (tests/fixtures/dlrm/*, written by
// examples/dlrm/export.py): the graph path and the megakernel's decomposition, per fixture.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "luminal/reference.h"
#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "luminal/safetensors.h"

namespace luminal {
namespace {

struct Fixture {
  std::string name;
  // The shapes make_fixtures.sh passes to export.py (hand-copied, not inferred).
  std::vector<int64_t> ln_bot, ln_emb, ln_top;
  int64_t bag;
  DType file_index_dtype;
};

const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> f = {
      {"seed", {13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 1, DType::I32},
      {"tables8_bag3", {13, 16, 8}, {10, 20, 30, 40, 50, 60, 70, 80}, {44, 16, 1}, 3, DType::I32},
      {"deep", {13, 64, 32, 16}, {100, 50, 25}, {22, 64, 32, 1}, 2, DType::I64},
  };
  return f;
}

std::string dir_of(const Fixture& f) { return std::string(LUMINAL_FIXTURES) + "/dlrm/" + f.name; }

template <class T>
std::vector<T> values(const SafeTensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(T));
  return v;
}

// Indices in the file's dtype, converted to `want` (i32 <-> i64).
void bind_indices(Runtime& rt, const GraphTensor& t, const SafeTensor& st, DType want) {
  std::vector<int64_t> wide;
  if (st.dtype == DType::I64) {
    wide = values<int64_t>(st);
  } else {
    for (int32_t x : values<int32_t>(st)) wide.push_back(x);
  }
  if (want == DType::I64) {
    rt.set_data(t, std::span<const int64_t>(wide));
  } else {
    const std::vector<int32_t> narrow(wide.begin(), wide.end());
    rt.set_data(t, std::span<const int32_t>(narrow));
  }
}

// Builds the model (graph or mega), runs it on the CPU and returns max |out - expected|.
double run_fixture(const Fixture& f, bool mega, DType index_dtype) {
  const SafetensorsFile w = SafetensorsFile::open(dir_of(f) + "/weights.safetensors");
  const SafetensorsFile in = SafetensorsFile::open(dir_of(f) + "/inputs.safetensors");
  const int64_t batch = in.at("dense_x").shape[0];
  models::DlrmConfig c = models::DlrmConfig::from_weights(w, batch, f.bag);
  c.index_dtype = index_dtype;
  Graph g;
  const models::DlrmGraph d = mega ? models::build_dlrm_mega(g, c) : models::build_dlrm(g, c);
  ReferenceRuntime rt(g);
  EXPECT_EQ(load_safetensors(rt, w.path()),
            2 * (c.ln_bot.size() - 1 + c.ln_top.size() - 1) + c.ln_emb.size());
  rt.set_data(d.dense_x, std::span<const float>(values<float>(in.at("dense_x"))));
  for (size_t k = 0; k < d.indices.size(); ++k) {
    bind_indices(rt, d.indices[k], in.at(fmt::format("indices_{}", k)), index_dtype);
  }
  rt.execute();
  const std::vector<float> out = rt.get_f32(d.out);
  const std::vector<float> expected = values<float>(in.at("expected"));
  EXPECT_EQ(out.size(), expected.size());
  double diff = 0;
  for (size_t i = 0; i < std::min(out.size(), expected.size()); ++i) {
    const double e = std::fabs(static_cast<double>(out[i]) - expected[i]);
    diff = std::isnan(e) ? e : std::max(diff, e);
  }
  return diff;
}

class DlrmFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(DlrmFixture, ConfigInferredFromWeights) {
  const Fixture& f = fixtures()[GetParam()];
  const SafetensorsFile w = SafetensorsFile::open(dir_of(f) + "/weights.safetensors");
  const SafetensorsFile in = SafetensorsFile::open(dir_of(f) + "/inputs.safetensors");
  const models::DlrmConfig c = models::DlrmConfig::from_weights(w, 16, f.bag);
  EXPECT_EQ(c.ln_bot, f.ln_bot);
  EXPECT_EQ(c.ln_emb, f.ln_emb);
  EXPECT_EQ(c.ln_top, f.ln_top);
  EXPECT_EQ(in.at("indices_0").dtype, f.file_index_dtype);
  EXPECT_EQ(in.at("indices_0").shape, std::vector<int64_t>{16 * f.bag});
}

TEST_P(DlrmFixture, GraphPathMatchesPyTorch) {
  const Fixture& f = fixtures()[GetParam()];
  EXPECT_LE(run_fixture(f, /*mega=*/false, f.file_index_dtype), 1e-5);
}

TEST_P(DlrmFixture, GraphPathWithConvertedIndicesMatchesPyTorch) {
  const Fixture& f = fixtures()[GetParam()];
  const DType other = f.file_index_dtype == DType::I32 ? DType::I64 : DType::I32;
  EXPECT_LE(run_fixture(f, /*mega=*/false, other), 1e-5);
}

TEST_P(DlrmFixture, MegakernelDecompositionMatchesPyTorch) {
  const Fixture& f = fixtures()[GetParam()];
  EXPECT_LE(run_fixture(f, /*mega=*/true, f.file_index_dtype), 1e-5);
}

// The runtime must refuse weights whose shapes disagree with the graph, naming the tensor.
TEST_P(DlrmFixture, WeightsOfAnotherShapeAreRejected) {
  const Fixture& f = fixtures()[GetParam()];
  const SafetensorsFile w = SafetensorsFile::open(dir_of(f) + "/weights.safetensors");
  models::DlrmConfig c = models::DlrmConfig::from_weights(w, 16, f.bag);
  c.ln_emb[1] += 1;  // the file's emb_l.1.weight has ln_emb[1] rows
  Graph g;
  models::build_dlrm(g, c);
  ReferenceRuntime rt(g);
  try {
    load_safetensors(rt, w.path());
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("emb_l.1.weight"), std::string::npos) << e.what();
  }
}

// Named "dlrm/..." so that `ctest -R dlrm` selects them.
INSTANTIATE_TEST_SUITE_P(dlrm, DlrmFixture, ::testing::Range<size_t>(0, 3),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                           return fixtures()[i.param].name;
                         });

}  // namespace
}  // namespace luminal
