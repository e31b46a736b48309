// PlanCache: round trip, misses, corrupt entries ignored then replaced, disabled, environment.
#include "compiler/search/plan_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

namespace luminal::compiler::search {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed at the end of the test.
class PlanCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("luminal_plan_cache_test_" + std::to_string(::getpid()) +
                                        "_" + std::to_string(std::random_device{}()));
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& file, const std::string& text) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  }
  fs::path dir_;
};

const CachedPlan kPlan{Candidate{{{"matmul@17", "generated"}, {"algo@3", "2"}}}, 57.25, 31};

TEST_F(PlanCacheTest, StoreThenLoadRoundTrips) {
  const PlanCache cache(dir_ / "plans" / "v1");  // the directory is created by the first store
  ASSERT_TRUE(cache.enabled());
  cache.store(0x1234, kPlan);
  const auto got = cache.load(0x1234);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->candidate, kPlan.candidate);
  EXPECT_DOUBLE_EQ(got->us, 57.25);
  EXPECT_EQ(got->candidates, 31);
  EXPECT_EQ(cache.file_for(0x1234).filename(), "0000000000001234.json");
  EXPECT_TRUE(fs::exists(cache.file_for(0x1234)));
  for (const auto& e : fs::directory_iterator(cache.dir()))  // no temp file left behind
    EXPECT_EQ(e.path().extension(), ".json") << e.path();
}

TEST_F(PlanCacheTest, AMissingKeyIsAMiss) {
  const PlanCache cache(dir_);
  EXPECT_FALSE(cache.load(1).has_value());  // no directory yet
  cache.store(1, kPlan);
  EXPECT_FALSE(cache.load(2).has_value());
}

TEST_F(PlanCacheTest, CorruptEntriesAreMissesAndTheNextStoreReplacesThem) {
  const PlanCache cache(dir_);
  const uint64_t key = 0xabcdef;
  const std::string good =
      R"({"version":1,"key":"0000000000abcdef","candidate":"a=b","us":1.5,"candidates":2})";
  cache.store(key, kPlan);
  ASSERT_TRUE(cache.load(key).has_value());
  write(cache.file_for(key), good);
  ASSERT_TRUE(cache.load(key).has_value());  // the hand-written form is the real format
  for (const std::string& bad : std::vector<std::string>{
           std::string("\x00\xff garbage", 10), good.substr(0, good.size() / 2),
           std::string("[1,2]"),
           R"({"version":2,"key":"0000000000abcdef","candidate":"a=b","us":1.5,"candidates":2})",
           R"({"version":1,"key":"0000000000abcdee","candidate":"a=b","us":1.5,"candidates":2})",
           R"({"version":1,"key":"0000000000abcdef","candidate":"a=b,","us":1.5,"candidates":2})",
           R"({"version":1,"key":"0000000000abcdef","candidate":"a=b","candidates":2})"}) {
    write(cache.file_for(key), bad);
    EXPECT_FALSE(cache.load(key).has_value()) << bad;
    cache.store(key, kPlan);
    const auto got = cache.load(key);
    ASSERT_TRUE(got.has_value()) << bad;
    EXPECT_EQ(got->candidate, kPlan.candidate);
  }
}

TEST_F(PlanCacheTest, ADisabledCacheDoesNothing) {
  const PlanCache cache{fs::path()};
  EXPECT_FALSE(cache.enabled());
  cache.store(1, kPlan);
  EXPECT_FALSE(cache.load(1).has_value());
  EXPECT_TRUE(cache.file_for(1).empty());
}

TEST_F(PlanCacheTest, AnUnwritableDirectoryIsSwallowed) {
  write(dir_.string() + ".file", "x");  // a file where the cache wants a directory
  const PlanCache cache(dir_.string() + ".file");
  EXPECT_NO_THROW(cache.store(1, kPlan));
  EXPECT_FALSE(cache.load(1).has_value());
  fs::remove(dir_.string() + ".file");
}

// Sets an environment variable for one scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_F(PlanCacheTest, CacheRootHonoursTheCacheDirAndTheOffSwitch) {
  {
    ScopedEnv dir("LUMINAL_CACHE_DIR", dir_.c_str());
    const PlanCache cache = PlanCache::in_cache_root();
    EXPECT_EQ(cache.dir(), dir_ / "plans" / "v1");
    cache.store(7, kPlan);
    EXPECT_TRUE(fs::exists(dir_ / "plans" / "v1" / "0000000000000007.json"));
  }
  {
    ScopedEnv dir("LUMINAL_CACHE_DIR", nullptr), xdg("XDG_CACHE_HOME", dir_.c_str());
    EXPECT_EQ(PlanCache::in_cache_root().dir(), dir_ / "luminal" / "plans" / "v1");
  }
  {
    ScopedEnv dir("LUMINAL_CACHE_DIR", dir_.c_str());
    EXPECT_FALSE(PlanCache::in_cache_root(/*enabled=*/false).enabled());
  }
}

TEST(PlanCache, KeysDependOnEveryPartAndTheirBoundaries) {
  const uint64_t k = plan_key({"graph", "H200", "batch=4;", "fp32"});
  EXPECT_EQ(k, plan_key({"graph", "H200", "batch=4;", "fp32"}));
  EXPECT_NE(k, plan_key({"graph", "H200", "batch=8;", "fp32"}));
  EXPECT_NE(plan_key({"ab", "c"}), plan_key({"a", "bc"}));
  EXPECT_NE(plan_key({}), plan_key({""}));
}

}  // namespace
}  // namespace luminal::compiler::search
