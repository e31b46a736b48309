// Candidates as data: text form, parsing, hashing, and the Choices a lowering asks.
#include "compiler/search/candidate.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace luminal::compiler::search {

namespace {

// Keys and options are written bare, so they may not hold the separators; whitespace is refused
// too, since "a=b, c=d" typed on a command line would otherwise name a key that never matches.
bool valid_word(std::string_view w) {
  if (w.empty()) return false;
  return std::none_of(w.begin(), w.end(), [](char ch) {
    return ch == ',' || ch == '=' || std::isspace(static_cast<unsigned char>(ch)) ||
           std::iscntrl(static_cast<unsigned char>(ch));
  });
}

void check_options(const ChoicePoint& p) {
  if (p.options.empty())
    throw std::invalid_argument("[search] choice point '" + p.key + "' has no options");
}

}  // namespace

uint64_t fnv1a64(std::string_view data, uint64_t h) {
  for (unsigned char ch : data) {
    h ^= ch;
    h *= 0x100000001b3ull;
  }
  return h;
}

const std::string& Candidate::pick(const ChoicePoint& p) const {
  check_options(p);
  if (auto it = picks.find(p.key); it != picks.end())
    if (std::find(p.options.begin(), p.options.end(), it->second) != p.options.end())
      return it->second;
  return p.options[0];
}

std::string Candidate::to_string() const {
  std::string s;
  for (const auto& [k, v] : picks) {
    if (!s.empty()) s += ',';
    s += k;
    s += '=';
    s += v;
  }
  return s;
}

std::optional<Candidate> Candidate::parse(std::string_view text) {
  Candidate c;
  if (text.empty()) return c;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view seg = text.substr(0, comma);
    const size_t eq = seg.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view k = seg.substr(0, eq), v = seg.substr(eq + 1);
    if (!valid_word(k) || !valid_word(v)) return std::nullopt;
    if (!c.picks.emplace(std::string(k), std::string(v)).second) return std::nullopt;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);  // a trailing comma leaves an empty segment: refused above
  }
  return c;
}

uint64_t Candidate::hash() const { return fnv1a64(to_string()); }

Choices::Choices(Candidate c) : candidate_(std::move(c)) {}

const std::string& Choices::choose(ChoicePoint p) {
  check_options(p);
  if (auto it = answers_.find(p.key); it != answers_.end()) return it->second;
  const std::string pick = candidate_.pick(p);
  auto [it, _] = answers_.emplace(p.key, pick);
  points_.push_back(std::move(p));
  return it->second;
}

Candidate canonical(const Candidate& c, const std::vector<ChoicePoint>& points) {
  Candidate out;
  for (const ChoicePoint& p : points) {
    if (!c.picks.contains(p.key)) continue;
    const std::string& v = c.pick(p);
    if (v != p.options[0]) out.picks.emplace(p.key, v);
  }
  return out;
}

}  // namespace luminal::compiler::search
