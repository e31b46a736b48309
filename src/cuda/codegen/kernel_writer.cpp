// KernelWriter: parameters, statements with scoped CSE, and the final source text.
// Reading values through views lives in view_reader.cpp.
#include "cuda/codegen/kernel_writer.h"

#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

#include "cuda/codegen/dtype_code.h"

namespace luminal::cuda::codegen {

namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string_view kind_name(compiler::PlanBuffer::Kind k) {
  switch (k) {
    case compiler::PlanBuffer::Kind::Input: return "input";
    case compiler::PlanBuffer::Kind::Output: return "output";
    default: return "intermediate";
  }
}

// "%3 Input 'x'" / "%7 SumReduce".
std::string node_label(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  std::string s = fmt::format("%{} {}", id, op_name(n.kind));
  if (n.kind == OpKind::Input) s += fmt::format(" '{}'", n.name);
  return s;
}

}  // namespace

bool is_atom(std::string_view s) {
  if (s.empty()) return false;
  if (is_identifier(s)) return true;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

KernelWriter::KernelWriter(const Graph& g, const compiler::KernelPlan& plan, std::string name,
                           Flavor flavor)
    : g_(g), plan_(plan), name_(std::move(name)), flavor_(flavor) {}

std::string KernelWriter::thread_index() const {
  return flavor_ == Flavor::Host ? "lum_i" : "(long long)blockIdx.x * blockDim.x + threadIdx.x";
}

std::string KernelWriter::buffer(int index, bool write) {
  if (index < 0 || static_cast<size_t>(index) >= plan_.buffers.size()) {
    throw std::logic_error(fmt::format("[codegen] {}: bad buffer index {}", name_, index));
  }
  bool found = false;
  for (Param& p : params_) {
    if (p.buffer != index) continue;
    p.write |= write;
    found = true;
  }
  if (!found) params_.push_back({index, write});
  return fmt::format("b{}", index);
}

std::string KernelWriter::dim(const Expr& e) {
  for (const std::string& s : e.symbols()) {
    if (!is_identifier(s)) {
      throw std::invalid_argument(
          fmt::format("[lower] dynamic dim name '{}' is not a C identifier", s));
    }
    syms_.insert(s);
  }
  return e.to_code("d_");
}

std::string KernelWriter::error_flag() {
  err_ = true;
  return "err";
}

void KernelWriter::line(const std::string& s) {
  body_.push_back(std::string(2 * scopes_.size(), ' ') + s);
}

void KernelWriter::open(const std::string& head) {
  line(head + " {");
  scopes_.emplace_back();
}

void KernelWriter::close() {
  if (scopes_.size() <= 1) throw std::logic_error("[codegen] close() without open()");
  scopes_.pop_back();
  line("}");
}

std::string KernelWriter::fresh(std::string_view base) {
  int& n = name_counts_[std::string(base)];
  std::string s = n == 0 ? std::string(base) : fmt::format("{}_{}", base, n);
  ++n;
  return s;
}

std::string KernelWriter::let(std::string_view type, std::string_view base, const std::string& code) {
  const std::string key = fmt::format("let|{}|{}", type, code);
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (auto f = it->find(key); f != it->end()) return f->second;
  }
  std::string name = fresh(base);
  line(fmt::format("const {} {} = {};", type, name, code));
  scopes_.back()[key] = name;
  return name;
}

void KernelWriter::let_named(std::string_view type, const std::string& name, const std::string& code) {
  if (name_counts_[name]++ != 0) throw std::logic_error(fmt::format("[codegen] duplicate name {}", name));
  line(fmt::format("const {} {} = {};", type, name, code));
}

void KernelWriter::note_node(NodeId node) {
  if (node_set_.insert(node).second) nodes_.push_back(node);
}

std::string KernelWriter::signature() const {
  std::vector<std::string> ps;
  for (const Param& p : params_) {
    const std::string_view t = storage_type(plan_.buffers[p.buffer].dtype);
    ps.push_back(fmt::format("{}{}* __restrict__ b{}", p.write ? "" : "const ", t, p.buffer));
  }
  for (const std::string& s : syms_) ps.push_back("long long d_" + s);
  if (err_) ps.push_back("int* __restrict__ err");
  return fmt::format("{}", fmt::join(ps, ", "));
}

compiler::KernelStep KernelWriter::finish(Expr threads, unsigned block, const std::string& summary,
                                          const std::vector<std::string>& includes) {
  if (scopes_.size() != 1) throw std::logic_error(fmt::format("[codegen] {}: unclosed scope", name_));
  compiler::KernelStep step;
  step.name = name_;
  step.threads = std::move(threads);
  step.block = block;
  step.nodes = nodes_;
  std::string src = fmt::format("// luminal kernel {}: {}\n", name_, summary);
  std::string listing;
  for (NodeId id : nodes_) {
    std::string item = node_label(g_, id);
    if (listing.size() + item.size() > 90) {
      src += "//   nodes: " + listing + "\n";
      listing.clear();
    }
    listing += listing.empty() ? item : ", " + item;
  }
  if (!listing.empty()) src += "//   nodes: " + listing + "\n";
  for (const Param& p : params_) {
    const compiler::PlanBuffer& b = plan_.buffers[p.buffer];
    src += fmt::format("//   b{}: {} {} {} [{}]\n", p.buffer, node_label(g_, b.node),
                       dtype_name(b.dtype), kind_name(b.kind), b.numel.to_string());
    (p.write ? step.writes : step.reads).push_back(p.buffer);
    step.args.push_back({compiler::KernelArg::Kind::Buffer, p.buffer, {}});
  }
  for (const std::string& s : syms_) step.args.push_back({compiler::KernelArg::Kind::Dim, -1, s});
  if (err_) step.args.push_back({compiler::KernelArg::Kind::ErrorFlag, -1, {}});
  if (flavor_ == Flavor::Host) {  // the CPU backend's translation unit includes its prelude once
    src += fmt::format("static inline void {}(const long long lum_i, {}) {{\n", name_, signature());
  } else {
    for (const std::string& inc : includes) src += fmt::format("#include \"{}\"\n", inc);
    src += fmt::format("\nextern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n", block,
                       name_, signature());
  }
  for (const std::string& l : body_) src += l + "\n";
  src += "}\n";
  step.source = std::move(src);
  return step;
}

}  // namespace luminal::cuda::codegen
