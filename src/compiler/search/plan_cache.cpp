// PlanCache: one small JSON file per key, written by rename so readers never see half an entry.
#include "compiler/search/plan_cache.h"
#include "io/environment.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

namespace luminal::compiler::search {

namespace {

constexpr int kVersion = 1;

bool debug() { return io::debug_level() >= 1; }

std::string hex(uint64_t key) { return fmt::format("{:016x}", key); }

// The entry in j, or nullopt with the reason in why.
std::optional<CachedPlan> from_json(const nlohmann::json& j, uint64_t key, std::string& why) {
  auto fail = [&why](const char* reason) {
    why = reason;
    return std::optional<CachedPlan>{};
  };
  auto has = [&j](const char* field, nlohmann::json::value_t type) {
    return j.contains(field) && j[field].type() == type;
  };
  using T = nlohmann::json::value_t;
  if (!j.is_object()) return fail("not an object");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != kVersion)
    return fail("another version");
  if (!has("key", T::string) || j["key"] != hex(key)) return fail("another key");
  if (!has("candidate", T::string) || !j.contains("us") || !j["us"].is_number() ||
      !j.contains("candidates") || !j["candidates"].is_number_integer())
    return fail("missing fields");
  auto c = Candidate::parse(j["candidate"].get<std::string>());
  if (!c) return fail("malformed candidate");
  return CachedPlan{std::move(*c), j["us"].get<double>(), j["candidates"].get<int>()};
}

}  // namespace

PlanCache PlanCache::in_cache_root(bool enabled) {
  if (!enabled) return PlanCache({});
  const std::filesystem::path base = io::cache_root();
  return PlanCache(base.empty() ? base : base / "plans" / "v1");
}

std::filesystem::path PlanCache::file_for(uint64_t key) const {
  if (!enabled()) return {};
  return dir_ / (hex(key) + ".json");
}

std::optional<CachedPlan> PlanCache::load(uint64_t key) const {
  if (!enabled()) return std::nullopt;
  const std::filesystem::path file = file_for(key);
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;  // missing: the usual case, not worth a log line
  std::stringstream text;
  text << in.rdbuf();
  std::string why = "not JSON";
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  std::optional<CachedPlan> plan;
  if (!j.is_discarded()) plan = from_json(j, key, why);
  if (!plan && debug())
    fmt::print(stderr, "[plan cache] ignoring {}: {} (the next store replaces it)\n", file.string(),
               why);
  return plan;
}

void PlanCache::store(uint64_t key, const CachedPlan& plan) const {
  if (!enabled()) return;
  static std::atomic<uint64_t> serial{0};  // with the pid: a temp name no other writer uses
  const std::filesystem::path file = file_for(key);
  const std::filesystem::path tmp =
      dir_ / fmt::format(".{}.{}.{}.tmp", hex(key), ::getpid(), serial++);
  const nlohmann::json j = {{"version", kVersion},
                            {"key", hex(key)},
                            {"candidate", plan.candidate.to_string()},
                            {"us", plan.us},
                            {"candidates", plan.candidates}};
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << j.dump() << '\n';
    out.close();
    if (!out) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    if (debug())
      fmt::print(stderr, "[plan cache] cannot write {}: {}\n", file.string(), ec.message());
  }
}

uint64_t plan_key(const std::vector<std::string>& parts) {
  uint64_t h = fnv1a64("luminal-plan v1");
  for (const std::string& p : parts) {
    h = fnv1a64(fmt::format("\n{}:", p.size()), h);
    h = fnv1a64(p, h);
  }
  return h;
}

}  // namespace luminal::compiler::search
