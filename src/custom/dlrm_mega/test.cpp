// DLRM on the CPU reference runtime: dot_interaction by hand, the graph path and the DlrmMega
// decomposition against an independent plain-loop oracle and against PyTorch fixtures, config
// validation and inference from weights, and the megakernel's shape checks and kernel signature.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "custom/dlrm_mega/op.h"
#include "custom/dlrm_mega/test_util.h"
#include "expect_error.h"
#include "luminal/reference.h"
#include "luminal/models/dlrm.h"
#include "luminal/safetensors.h"
#include "models/dlrm/mega.h"
#include "test_caps.h"

namespace luminal {
namespace {

using dlrm_test::config;
using dlrm_test::jagged;
using dlrm_test::max_abs_diff;
using nn::BagMode;
using Floats = std::vector<float>;

// Expects f() to throw an exception whose message contains every key.
using ::luminal::test::expect_error;

TEST(DlrmInteraction, HandChecked) {
  // Sample 0: T = (1,2), (3,4), (5,-2): pairs (1,0) = 3+8 = 11, (2,0) = 5-4 = 1, (2,1) = 15-8 = 7.
  // Sample 1: T = (0,1), (2,0), (1,1): pairs (1,0) = 0, (2,0) = 1, (2,1) = 2.
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 2});
  GraphTensor a = g.named_tensor("a", {2, 2});
  GraphTensor b = g.named_tensor("b", {2, 2});
  GraphTensor y = nn::dot_interaction(x, {a, b}).output();
  ASSERT_EQ(shape_string(y.dims()), "[2, 5]");
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{1, 2, 0, 1}));
  rt.set_data(a, std::span<const float>(Floats{3, 4, 2, 0}));
  rt.set_data(b, std::span<const float>(Floats{5, -2, 1, 1}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{1, 2, 11, 1, 7, 0, 1, 0, 1, 2}));
}

TEST(DlrmInteraction, RejectsMismatchedFeatures) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 4});
  GraphTensor a = g.named_tensor("a", {2, 3});
  expect_error([&] { nn::dot_interaction(x, {a}); }, {"[dot_interaction]", "ly[0]", "[2, 3]"});
}

// Runs build_dlrm and build_dlrm_mega on the CPU reference and compares both with the loop oracle
// (jagged bags of 0..max_bag rows).
void check_against_loops(const models::DlrmConfig& c, uint32_t seed, int64_t max_bag = 3) {
  const dlrm_test::Model m = dlrm_test::random_model(c, seed, max_bag);
  const std::string path = dlrm_test::temp_path(fmt::format("w{}.safetensors", seed));
  dlrm_test::write_weights(m, path);
  const std::vector<double> want = dlrm_test::forward_loops(m);
  Floats results[2];
  for (int mega = 0; mega < 2; ++mega) {
    Graph g;
    const models::DlrmGraph dg = mega ? models::build_dlrm_mega(g, c) : models::build_dlrm(g, c);
    ReferenceRuntime rt(g);
    // k tables + a weight and a bias per layer.
    EXPECT_EQ(load_safetensors(rt, path), c.ln_emb.size() + 2 * (c.ln_bot.size() + c.ln_top.size() - 2));
    dlrm_test::set_inputs(rt, dg, m);
    rt.execute(dlrm_test::dyn_of(m));
    results[mega] = rt.get_f32(dg.out);
    EXPECT_LE(max_abs_diff(results[mega], want), 1e-5) << (mega ? "build_dlrm_mega" : "build_dlrm");
  }
  EXPECT_EQ(results[0], results[1]) << "the decomposition must be the graph path itself";
  std::filesystem::remove(path);
}

TEST(DlrmModel, SeedShapeMatchesLoops) { check_against_loops(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 5), 1); }

TEST(DlrmModel, EightTablesBag3MatchesLoops) {
  check_against_loops(config({13, 16, 8}, {10, 20, 30, 40, 50, 60, 70, 80}, {44, 16, 1}, 3, 3), 2);
}

TEST(DlrmModel, DeepI64MatchesLoops) {
  check_against_loops(config({13, 64, 32, 16}, {100, 50, 25}, {22, 64, 32, 1}, 4, 2, DType::I64), 3);
}

TEST(DlrmModel, TopWithoutHiddenLayerMatchesLoops) {
  check_against_loops(config({5, 3}, {7}, {4, 1}, 2, 2), 4);
}

TEST(DlrmModel, UniformMeanMatchesLoops) {
  check_against_loops(
      dlrm_test::with_mode(config({13, 16, 8}, {10, 20, 30}, {14, 16, 1}, 3, 3), BagMode::Mean), 6);
}

// PyTorch EmbeddingBag bags (offsets; lengths 0..3, one of 10, empty bags at both ends).
TEST(DlrmModel, JaggedSumI32MatchesLoops) {
  check_against_loops(jagged(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 6)), 7);
}

TEST(DlrmModel, JaggedMeanI64MatchesLoops) {
  check_against_loops(
      jagged(config({13, 64, 32, 16}, {100, 50, 25}, {22, 64, 32, 1}, 5, 1, DType::I64),
             BagMode::Mean),
      8);
}

TEST(DlrmModel, JaggedSumI64AndMeanI32MatchLoops) {
  check_against_loops(jagged(config({13, 16, 8}, {10, 20, 30, 40}, {18, 16, 1}, 4, 1, DType::I64)),
                      9);
  check_against_loops(jagged(config({5, 3}, {7, 9}, {6, 1}, 7), BagMode::Mean), 10);
}

TEST(DlrmModel, JaggedEmptyTablesAndLongBagsMatchLoops) {
  // max bag 0: tables 0 and 2 get no indices at all (nnz = 0), table 1 one row.
  check_against_loops(jagged(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 5), BagMode::Mean), 11,
                      0);
  check_against_loops(jagged(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 5)), 12, 40);
}

// PyTorch-pinned fixtures (tests/fixtures/dlrm/<name>, written by examples/dlrm/export.py).
void check_fixture(const std::string& name, bool mega) {
  if (!std::filesystem::exists(dlrm_test::fixture_dir(name) + "/weights.safetensors"))
    GTEST_SKIP() << "no fixture " << dlrm_test::fixture_dir(name);
  const dlrm_test::Fixture f = dlrm_test::load_fixture(name);
  EXPECT_LE(max_abs_diff(dlrm_test::run_fixture(f, mega, reference_backend()), f.expected), 1e-5)
      << name << (mega ? " (mega decomposition)" : " (graph path)");
}

TEST(DlrmFixture, SeedMega) { check_fixture("seed", true); }
TEST(DlrmFixture, Tables8Bag3Mega) { check_fixture("tables8_bag3", true); }
TEST(DlrmFixture, DeepI64Mega) { check_fixture("deep", true); }
TEST(DlrmFixture, SeedGraphPath) { check_fixture("seed", false); }

TEST(DlrmModel, OutOfRangeIndexIsAnErrorOnTheReference) {
  const models::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2);
  dlrm_test::Model m = dlrm_test::random_model(c, 5);
  m.indices[1][1] = 20;  // table 1 has 20 rows
  const std::string path = dlrm_test::temp_path("oob.safetensors");
  dlrm_test::write_weights(m, path);
  Graph g;
  const models::DlrmGraph dg = models::build_dlrm_mega(g, c);
  ReferenceRuntime rt(g);
  load_safetensors(rt, path);
  dlrm_test::set_inputs(rt, dg, m);
  EXPECT_THROW(rt.execute(), std::exception);
  std::filesystem::remove(path);
}

// ---- config ----

TEST(DlrmConfig, ValidationErrors) {
  const models::DlrmConfig ok = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 4);
  EXPECT_NO_THROW(ok.validate());
  EXPECT_EQ(ok.dim(), 4);
  EXPECT_EQ(ok.num_tables(), 3);
  auto bad = [&](auto edit, const std::vector<std::string>& keys) {
    models::DlrmConfig c = ok;
    edit(c);
    expect_error([&] { c.validate(); }, keys);
  };
  bad([](auto& c) { c.ln_top[0] = 11; }, {"[dlrm]", "ln_top[0] is 11", "gives 4 + 6 = 10"});
  bad([](auto& c) { c.ln_top.back() = 2; }, {"[dlrm]", "end with 1"});
  bad([](auto& c) { c.ln_emb.clear(); }, {"[dlrm]", "ln_emb is empty"});
  bad([](auto& c) { c.ln_bot = {13}; }, {"[dlrm]", "ln_bot needs at least 2"});
  bad([](auto& c) { c.ln_emb[1] = 0; }, {"[dlrm]", "ln_emb[1] is 0"});
  bad([](auto& c) { c.batch = 0; }, {"[dlrm]", "batch"});
  bad([](auto& c) { c.bag = 0; }, {"[dlrm]", "bag"});
  bad([](auto& c) { c.index_dtype = DType::F32; }, {"[dlrm]", "index dtype", "f32"});
  Graph g;
  models::DlrmConfig c = ok;
  c.ln_top[0] = 12;
  expect_error([&] { models::build_dlrm(g, c); }, {"[dlrm]", "ln_top[0]"});
  expect_error([&] { custom::DlrmMega op(models::mega_shape(c)); }, {"[dlrm]", "ln_top[0]"});
}

// Writes a weights file for a model, optionally dropping or replacing one tensor.
std::string weights_file(const models::DlrmConfig& c, const std::string& drop = "", const TensorData* replace = nullptr) {
  const dlrm_test::Model m = dlrm_test::random_model(c, 9);
  const std::string full = dlrm_test::temp_path("full.safetensors");
  dlrm_test::write_weights(m, full);
  const SafetensorsFile f = SafetensorsFile::open(full);
  std::vector<TensorData> ts;
  for (const SafeTensor& t : f.tensors()) {
    if (t.name == drop) continue;
    if (replace && t.name == replace->name) {
      ts.push_back(*replace);
      continue;
    }
    ts.push_back({t.name, t.dtype, t.shape, std::vector<std::byte>(t.data.begin(), t.data.end())});
  }
  const std::string path = dlrm_test::temp_path("edited.safetensors");
  write_safetensors(path, ts);
  std::filesystem::remove(full);
  return path;
}

TEST(DlrmConfig, FromWeightsInfersWidths) {
  const models::DlrmConfig c = config({13, 64, 32, 16}, {100, 50, 25}, {22, 64, 32, 1}, 4, 2);
  const std::string path = weights_file(c);
  const models::DlrmConfig got = models::DlrmConfig::from_weights(SafetensorsFile::open(path), 7, 3);
  EXPECT_EQ(got.ln_bot, (std::vector<int64_t>{13, 64, 32, 16}));
  EXPECT_EQ(got.ln_emb, (std::vector<int64_t>{100, 50, 25}));
  EXPECT_EQ(got.ln_top, (std::vector<int64_t>{22, 64, 32, 1}));
  EXPECT_EQ(got.batch, 7);
  EXPECT_EQ(got.bag, 3);
  std::filesystem::remove(path);
}

TEST(DlrmConfig, FromWeightsErrorsNameTheTensor) {
  const models::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 4);
  auto expect_file_error = [&](const std::string& path, const std::vector<std::string>& keys) {
    expect_error([&] { models::DlrmConfig::from_weights(SafetensorsFile::open(path), 4, 1); }, keys);
    std::filesystem::remove(path);
  };
  expect_file_error(weights_file(c, "bot_l.0.weight"), {"[dlrm]", "missing 'bot_l.0.weight'"});
  expect_file_error(weights_file(c, "top_l.2.bias"), {"[dlrm]", "missing 'top_l.2.bias'"});
  expect_file_error(weights_file(c, "emb_l.0.weight"), {"[dlrm]", "emb_l.0.weight"});
  const Floats w29(4 * 9, 0.f);
  const TensorData bad_in = make_tensor_data<float>("bot_l.2.weight", {4, 9}, w29);
  expect_file_error(weights_file(c, "", &bad_in), {"[dlrm]", "'bot_l.2.weight' has shape [4, 9]", "[*, 8]"});
  const Floats e5(20 * 5, 0.f);
  const TensorData bad_emb = make_tensor_data<float>("emb_l.1.weight", {20, 5}, e5);
  expect_file_error(weights_file(c, "", &bad_emb), {"[dlrm]", "'emb_l.1.weight' has shape [20, 5]", "[vocab, 4]"});
  // Dropping the last table leaves ln_top[0] inconsistent with the interaction width.
  expect_file_error(weights_file(c, "emb_l.2.weight"), {"[dlrm]", "ln_top[0] is 10"});
}

// ---- megakernel shape checks and signature ----

TEST(DlrmMega, WhyUnsupported) {
  EXPECT_EQ(custom::why_unsupported(models::mega_shape(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048)), test::h200_caps()), "");
  const std::string wide = custom::why_unsupported(models::mega_shape(config({13, 128, 4}, {10, 20, 30}, {10, 8, 1}, 2048)), test::h200_caps());
  EXPECT_NE(wide.find("ln_bot[1] = 128 exceeds 64"), std::string::npos) << wide;
  const std::string top = custom::why_unsupported(models::mega_shape(config({13, 8, 4}, {10, 20, 30}, {10, 100, 1}, 2048)), test::h200_caps());
  EXPECT_NE(top.find("ln_top[1] = 100"), std::string::npos) << top;
  const std::string inval = custom::why_unsupported(models::mega_shape(config({13, 8, 4}, {10, 20, 30}, {11, 8, 1}, 2048)), test::h200_caps());
  EXPECT_NE(inval.find("ln_top[0]"), std::string::npos) << inval;
  expect_error([] { custom::emit_dlrm_mega(models::mega_shape(config({13, 128, 4}, {10, 20, 30}, {10, 8, 1}, 8)), test::h200_caps()); },
               {"[dlrm_mega] unsupported", "ln_bot[1]"});
}

TEST(DlrmMega, PlanInvariantsAndTuningChecks) {
  for (const models::DlrmConfig& c : {config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048),
                                  config({13, 64, 32, 16}, {100, 50, 25}, {22, 64, 32, 1}, 1000, 2),
                                  config({13, 8, 4}, {10, 20, 30}, {10, 1}, 1)}) {
    const custom::MegaPlanResult r = custom::plan_dlrm_mega(models::mega_shape(c), test::h200_caps());
    ASSERT_TRUE(r.plan) << r.why;
    const custom::MegaPlan& p = *r.plan;
    EXPECT_EQ(32 % p.lanes, 0);
    EXPECT_EQ(p.block % 32, 0);
    EXPECT_GE(p.grid * p.block, c.batch * p.lanes);  // the grid covers the batch
    EXPECT_LT((p.grid - 1) * p.block, c.batch * p.lanes);
    EXPECT_LE(p.smem_floats * 4, custom::kMegaSmemBytes);
    EXPECT_EQ(p.layers.size(), c.ln_bot.size() + c.ln_top.size() - 2);
    for (const custom::MegaLayer& l : p.layers) {
      if (l.smem) {
        EXPECT_EQ(l.ld % 8, 4) << "conflict-free row stride";
        EXPECT_EQ(l.offset % 4, 0) << "float4-aligned rows";
      }
    }
  }
  const models::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 64);
  EXPECT_NE(custom::plan_dlrm_mega(models::mega_shape(c), test::h200_caps(), {3, 0}).why.find("power of two"), std::string::npos);
  EXPECT_NE(custom::plan_dlrm_mega(models::mega_shape(c), test::h200_caps(), {0, 100}).why.find("multiple of 32"), std::string::npos);
  EXPECT_EQ(custom::plan_dlrm_mega(models::mega_shape(c), test::h200_caps(), {4, 256}).plan->lanes, 4);
  // A table of 40M rows and d = 64 is fine: only its row offsets need 64 bits.
  EXPECT_EQ(custom::why_unsupported(models::mega_shape(config({13, 64}, {40'000'000, 10}, {67, 8, 1}, 256)), test::h200_caps()), "");
}

// Concrete input dims and dtypes for a config, in DlrmMega's input order (dyn: jagged nnz_k).
std::pair<std::vector<std::vector<int64_t>>, std::vector<DType>> mega_inputs(
    const models::DlrmConfig& c, const DynMap& dyn = {}) {
  Graph g;
  const models::DlrmTensors t = models::DlrmTensors::declare(g, c);
  std::pair<std::vector<std::vector<int64_t>>, std::vector<DType>> r;
  for (const GraphTensor& x : t.flat()) {
    r.first.push_back(eval_all(x.dims(), dyn));
    r.second.push_back(x.dtype);
  }
  return r;
}

TEST(DlrmMega, KernelSignatureFollowsCustomOpContract) {
  const models::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048);
  const custom::DlrmMega op(models::mega_shape(c));
  auto [dims, dtypes] = mega_inputs(c);
  ASSERT_EQ(dims.size(), 15u);  // dense_x, 3 indices, 3 tables, 2 + 2 (weight, bias) pairs
  const std::optional<CustomKernel> k = test::cuda_kernel_for(op, dims, dtypes);
  ASSERT_TRUE(k);
  // One const void* per input, then the output, the error word and dense_x's element count (the
  // batch at run time); nothing else.
  const std::string sig = k->source.substr(k->source.find(k->entry));
  const std::string params = sig.substr(0, sig.find(')'));
  size_t inputs = 0;
  for (size_t p = params.find("const void*"); p != std::string::npos; p = params.find("const void*", p + 1)) ++inputs;
  EXPECT_EQ(inputs, dims.size());
  EXPECT_NE(params.find("void* out_, int* error,\n    long long n_dense_x"), std::string::npos)
      << params;
  EXPECT_EQ(params.find("n_indices"), std::string::npos) << "uniform bags read no other count";
  EXPECT_LT(params.find("dense_x_"), params.find("indices_0_"));
  EXPECT_LT(params.find("indices_2_"), params.find("emb_0_"));
  EXPECT_LT(params.find("emb_2_"), params.find("bot_w0_"));
  EXPECT_LT(params.find("bot_b1_"), params.find("top_w0_"));
  EXPECT_EQ(k->block[0] % 32, 0u);
  EXPECT_GE(static_cast<int64_t>(k->grid[0]) * k->block[0], 2048);
  // Batch comes from the inputs: the kernel reads it at run time, the grid covers it.
  dims[0][0] = 100;
  for (size_t i = 1; i <= 3; ++i) dims[i][0] = 100;
  const std::optional<CustomKernel> k100 = test::cuda_kernel_for(op, dims, dtypes);
  ASSERT_TRUE(k100);
  EXPECT_NE(k100->source.find("kBatch = n_dense_x / 13;"), std::string::npos);
  EXPECT_EQ(k100->source.find("100"), std::string::npos) << "the batch is not in the source";
  EXPECT_LT(k100->grid[0], k->grid[0]);
}

// Jagged inputs: offsets after the indices, and nnz_k read from the element counts, not baked in.
TEST(DlrmMega, JaggedKernelTakesOffsetsAndAnyNnz) {
  const models::DlrmConfig c =
      jagged(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048), BagMode::Mean);
  const custom::DlrmMega op(models::mega_shape(c));
  auto [dims, dtypes] = mega_inputs(c, {{"nnz_0", 5}, {"nnz_1", 0}, {"nnz_2", 7000}});
  ASSERT_EQ(dims.size(), 18u);  // dense_x, 3 indices, 3 offsets, 3 tables, 4 (weight, bias) pairs
  EXPECT_EQ(dims[4], (std::vector<int64_t>{2048}));
  const std::optional<CustomKernel> k = test::cuda_kernel_for(op, dims, dtypes);
  ASSERT_TRUE(k) << custom::why_unsupported(models::mega_shape(c), dims, dtypes, test::h200_caps());
  const std::string sig = k->source.substr(k->source.find(k->entry));
  const std::string params = sig.substr(0, sig.find(')'));
  size_t inputs = 0;
  for (size_t p = params.find("const void*"); p != std::string::npos;
       p = params.find("const void*", p + 1))
    ++inputs;
  EXPECT_EQ(inputs, dims.size());
  EXPECT_LT(params.find("indices_2_"), params.find("offsets_0_"));
  EXPECT_LT(params.find("offsets_2_"), params.find("emb_0_"));
  // The counts follow the error word in input order: dense_x's, then each indices'.
  EXPECT_NE(params.find("void* out_, int* error,\n    long long n_dense_x, long long n_indices_0, "
                        "long long n_indices_1, "
                        "long long n_indices_2"),
            std::string::npos)
      << params;
  EXPECT_NE(k->source.find("finish_bag<D, G, true>"), std::string::npos);
  EXPECT_EQ(k->source.find("BAG"), std::string::npos) << "no bag length in a jagged kernel";
  dims[1][0] = 123456, dims[3][0] = 1;
  const std::optional<CustomKernel> k2 = test::cuda_kernel_for(op, dims, dtypes);
  ASSERT_TRUE(k2);
  EXPECT_EQ(k2->entry, k->entry);
  EXPECT_EQ(k2->source, k->source) << "nnz must not be in the source";
  dims[4] = {2049};  // include_last_offset-style offsets are not this op's
  EXPECT_FALSE(test::cuda_kernel_for(op, dims, dtypes));
  EXPECT_NE(custom::why_unsupported(models::mega_shape(c), dims, dtypes, test::h200_caps()).find("expected i32 [2048]"),
            std::string::npos);
  dims[4] = {2048};
  dims[1] = {5, 1};  // indices must be 1-D
  EXPECT_NE(custom::why_unsupported(models::mega_shape(c), dims, dtypes, test::h200_caps()).find("expected i32 [nnz]"), std::string::npos);
}

TEST(DlrmMega, BagLimitsAndModes) {
  const models::DlrmConfig uniform = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048, 100);
  EXPECT_NE(custom::why_unsupported(models::mega_shape(uniform), test::h200_caps()).find("bag 100 exceeds 64"), std::string::npos);
  EXPECT_EQ(custom::why_unsupported(models::mega_shape(jagged(uniform)), test::h200_caps()), "") << "a jagged bag may be any length";
  // A jagged bag holds one accumulator row per table: it plans as uniform bags of one row.
  const custom::MegaPlanResult pj =
      custom::plan_dlrm_mega(models::mega_shape(jagged(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 64, 3))), test::h200_caps());
  const custom::MegaPlanResult p1 =
      custom::plan_dlrm_mega(models::mega_shape(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 64, 1)), test::h200_caps());
  ASSERT_TRUE(pj.plan && p1.plan);
  EXPECT_EQ(pj.plan->registers, p1.plan->registers);
  EXPECT_EQ(pj.plan->lanes, p1.plan->lanes);
  // Uniform mean: the same kernel but for the reduction (and its name).
  const models::DlrmConfig sum = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 64, 3);
  const CustomKernel ks = custom::emit_dlrm_mega(models::mega_shape(sum), test::h200_caps());
  const CustomKernel km = custom::emit_dlrm_mega(models::mega_shape(dlrm_test::with_mode(sum, BagMode::Mean)), test::h200_caps());
  EXPECT_NE(ks.entry, km.entry);
  EXPECT_NE(km.source.find("store_bag_mean<BAG, D, G>"), std::string::npos);
  EXPECT_EQ(km.source.find("store_bag_sum"), std::string::npos);
  EXPECT_NE(km.source.find("bag 3 (mean)"), std::string::npos);
}

TEST(DlrmMega, CudaKernelDeclinesWhatItCannotRun) {
  const models::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 64);
  auto [dims, dtypes] = mega_inputs(c);
  std::vector<DType> f16 = dtypes;
  f16[7] = DType::F16;  // bot_l.0.weight
  EXPECT_FALSE(test::cuda_kernel_for(custom::DlrmMega(models::mega_shape(c)), dims, f16));
  EXPECT_NE(custom::why_unsupported(models::mega_shape(c), dims, f16, test::h200_caps()).find("expected f32"), std::string::npos);
  const models::DlrmConfig wide = config({13, 100, 4}, {10, 20, 30}, {10, 8, 1}, 64);
  auto [wdims, wdtypes] = mega_inputs(wide);
  EXPECT_FALSE(test::cuda_kernel_for(custom::DlrmMega(models::mega_shape(wide)), wdims, wdtypes));
  EXPECT_NE(custom::why_unsupported(models::mega_shape(wide), wdims, wdtypes, test::h200_caps()).find("exceeds 64"), std::string::npos);
}

TEST(DlrmMega, DecomposeChecksItsInputs) {
  const models::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 4);
  Graph g;
  models::DlrmTensors t = models::DlrmTensors::declare(g, c);
  std::vector<GraphTensor> flat = t.flat();
  const custom::DlrmMega op(models::mega_shape(c));
  EXPECT_EQ(shape_string(op.decompose(g, flat).dims()), "[4, 1]");
  std::vector<GraphTensor> fewer(flat.begin(), flat.end() - 1);
  expect_error([&] { op.decompose(g, fewer); }, {"[dlrm]", "expected 15 inputs", "got 14"});
  std::swap(flat[7], flat[9]);  // bot_l.0.weight <-> bot_l.2.weight
  expect_error([&] { op.decompose(g, flat); }, {"[dlrm]", "'bot_l.0.weight'", "expected f32 [8, 13]"});
  // Jagged: the offsets follow the indices.
  const models::DlrmConfig cj = jagged(c);
  Graph gj;
  std::vector<GraphTensor> fj = models::DlrmTensors::declare(gj, cj).flat();
  const custom::DlrmMega opj(models::mega_shape(cj));
  EXPECT_EQ(shape_string(opj.decompose(gj, fj).dims()), "[4, 1]");
  std::vector<GraphTensor> fjewer(fj.begin(), fj.end() - 1);
  expect_error([&] { opj.decompose(gj, fjewer); },
               {"[dlrm]", "expected 18 inputs", "3 offsets", "got 17"});
  std::swap(fj[1], fj[4]);  // indices_0 <-> offsets_0
  expect_error([&] { opj.decompose(gj, fj); }, {"[dlrm]", "'offsets_0'", "expected i32 [4]"});
}

}  // namespace
}  // namespace luminal
