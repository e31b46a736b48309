// Candidates as data (shared/DESIGN.md section 9): the choice points a lowering exposes, one pick
// per point, and the Choices object through which a lowering asks for its picks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace luminal::compiler::search {

/// FNV-1a 64 of data, continuing from h (chain calls to hash several parts).
uint64_t fnv1a64(std::string_view data, uint64_t h = 0xcbf29ce484222325ull);

/// A place where the compiler can implement something more than one way.
struct ChoicePoint {
  std::string key;                   // stable id, e.g. "matmul@17", "dlrm@0", "algo@3"
  std::vector<std::string> options;  // options[0] is the default (today's heuristic choice)
  std::string about;                 // what it is, for reports ("matmul 2048x512x256 f32")
};

/// One choice per choice point, as data: printable, parseable, hashable.
struct Candidate {
  std::map<std::string, std::string> picks;  // key -> option; a missing key means its default

  /// The option for p: picks[p.key] when it is one of p.options, else p.options[0].
  const std::string& pick(const ChoicePoint& p) const;
  /// "k1=v1,k2=v2" in key order ("" for the default candidate).
  std::string to_string() const;
  /// Parses to_string()'s format; nullopt for malformed text (an empty, duplicate or
  /// whitespace-holding key or option, a segment without exactly one '=').
  static std::optional<Candidate> parse(std::string_view text);
  /// FNV-1a 64 of to_string() (stable across runs and machines).
  uint64_t hash() const;
  /// Equal picks (compare canonical() forms to compare plans).
  bool operator==(const Candidate&) const = default;
};

/// Asked by a lowering at each choice point: records the point and answers with the candidate's
/// pick.
class Choices {
 public:
  /// Answers with c's picks (the default candidate: every point's options[0]).
  explicit Choices(Candidate c = {});
  /// Records p (first time per key; a second ask with the same key returns the same pick, even if
  /// its options differ) and returns the pick. Throws std::invalid_argument for a point without
  /// options.
  const std::string& choose(ChoicePoint p);
  /// Every point asked, in asking order.
  const std::vector<ChoicePoint>& points() const { return points_; }
  /// The candidate restricted to the points asked, with defaults written out explicitly (what was
  /// really used).
  Candidate used() const { return Candidate{answers_}; }

 private:
  Candidate candidate_;
  std::vector<ChoicePoint> points_;
  std::map<std::string, std::string> answers_;  // a map: choose() hands out references into it
};

/// Drops picks equal to their point's default, picks that are not among their point's options, and
/// picks for keys not in points (canonical form, so equal plans hash equal).
Candidate canonical(const Candidate& c, const std::vector<ChoicePoint>& points);

}  // namespace luminal::compiler::search
