// torch.export's symbolic sizes ("s77", "2*s0 + 1", "((s0 - 1)//2)", "Max(1, s0)") as luminal
// Exprs.
#pragma once

#include <string>
#include <string_view>

#include "luminal/expr.h"

namespace luminal::aten {

/// Parses a sympy integer expression in either form torch has written: srepr ("Mul(Integer(2),
/// Symbol('s77', positive=True, integer=True))", torch 2.11 and later) or str ("2*s77 + 1"):
/// integers, symbols, + - * // %, Add, Mul, FloorDiv, Mod, PythonMod, CeilDiv, Max, Min.
/// Throws "[aten] cannot parse size expression '...'" naming the unsupported part.
Expr parse_sym_expr(std::string_view text);

}  // namespace luminal::aten
