// `luminal inspect MODEL.pt2`: what a .pt2 archive holds, without running it.
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "luminal/pt2.h"

namespace luminal::cli {

namespace {

/// "f32 [s77, 8]" for a graph value, or "?" when the graph records no tensor metadata.
std::string describe(const Pt2Program& p, const std::string& name) {
  auto it = p.graph.tensor_values.find(name);
  if (it == p.graph.tensor_values.end()) {
    auto sym = p.graph.sym_int_values.find(name);
    return sym == p.graph.sym_int_values.end() ? "?" : "symint " + sym->second.str();
  }
  const Pt2TensorMeta& m = it->second;
  std::vector<std::string> dims;
  for (const Pt2SymInt& d : m.sizes) dims.push_back(d.str());
  const std::string dt =
      m.dtype ? std::string(dtype_name(*m.dtype)) : torch_scalar_type_name(m.scalar_type);
  return fmt::format("{} [{}]", dt, fmt::join(dims, ", "));
}

/// "model.pt2: model 'model', schema 8.20, torch 2.15.0, archive version 0".
void print_header(const Pt2Archive& a) {
  const Pt2Program& p = a.program();
  fmt::print("{}: model '{}', schema {}.{}, torch {}, archive version {}\n", a.path(),
             a.model_name(), p.schema_major, p.schema_minor,
             p.torch_version.empty() ? "?" : p.torch_version, a.archive_version());
}

void print_io(const Pt2Archive& a) {
  const Pt2Program& p = a.program();
  std::vector<const Pt2InputSpec*> users;
  for (const auto& s : p.input_specs)
    if (s.kind == Pt2InputKind::UserInput) users.push_back(&s);
  fmt::print("user inputs ({}):\n", users.size());
  for (const auto* s : users) fmt::print("  {:<24} {}\n", s->name, describe(p, s->name));
  if (!p.range_constraints.empty()) {
    fmt::print("symbols ({}):\n", p.range_constraints.size());
    for (const auto& [sym, r] : p.range_constraints)
      fmt::print("  {:<24} [{}, {}]\n", Pt2SymInt{sym}.str(),
                 r.min ? std::to_string(*r.min) : "-inf", r.max ? std::to_string(*r.max) : "inf");
  }
  fmt::print("outputs ({}):\n", p.output_specs.size());
  for (const auto& s : p.output_specs) {
    const bool user = s.kind == Pt2OutputKind::UserOutput;
    fmt::print("  {:<24} {}{}\n", s.name, describe(p, s.name),
               user ? "" : fmt::format("  (mutates '{}')", s.target));
  }
}

void print_tensors(const char* title, const std::vector<Pt2Tensor>& ts) {
  if (ts.empty()) return;
  uint64_t bytes = 0;
  std::set<const std::byte*> seen;  // aliasing tensors share one storage
  for (const auto& t : ts)
    if (seen.insert(t.storage.data()).second) bytes += t.storage.size();
  fmt::print("{} ({}, {} bytes of storage):\n", title, ts.size(), bytes);
  for (const auto& t : ts)
    fmt::print("  {:<24} {} [{}]{}\n", t.name, dtype_name(t.dtype), fmt::join(t.shape, ", "),
               t.is_contiguous() ? "" : fmt::format(" strides [{}]", fmt::join(t.strides, ", ")));
}

void print_ops(const Pt2Program& p) {
  std::map<std::string, int> counts;
  for (const Pt2Node& n : p.graph.nodes) {
    std::string t = n.target;
    if (t.rfind("torch.ops.", 0) == 0) t = t.substr(10);  // "torch.ops.aten.linear.default"
    ++counts[t];
  }
  fmt::print("ops ({} nodes, {} distinct):\n", p.graph.nodes.size(), counts.size());
  for (const auto& [t, c] : counts) fmt::print("  {:>4}  {}\n", c, t);
}

}  // namespace

void add_inspect(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("inspect", "List a .pt2 archive's inputs, outputs, weights and ops");
  auto path = std::make_shared<std::string>();
  auto model = std::make_shared<std::string>();
  cmd->add_option("model", *path, "the .pt2 archive (torch.export.save)")->required();
  cmd->add_option("--model-name", *model, "which models/<name>.json (default: the first)");
  cmd->callback([path, model] {
    const Pt2Archive a = Pt2Archive::open(*path, *model);
    print_header(a);
    print_io(a);
    print_tensors("parameters and buffers", a.weights());
    print_tensors("constants", a.constants());
    print_ops(a.program());
  });
}

}  // namespace luminal::cli
