// Host-side conversion between float dtypes for loading checkpoints (internal).
#pragma once

#include <cstddef>

#include "luminal/dtype.h"

namespace luminal::io {

/// True when a file tensor of dtype `from` may load into an input of dtype `to` with
/// LoadOptions::convert_floats: from F32/F16/BF16 to any other float dtype.
bool can_convert_float(DType from, DType to);

/// Converts `count` elements from `src` (dtype from) to `dst` (dtype to) through float, rounding
/// to nearest even as src/core/dtype.cpp does (one rounding: every source value is exact in float).
/// Pointers need no alignment.
void convert_float_elements(DType from, DType to, const std::byte* src, std::byte* dst,
                            size_t count);

}  // namespace luminal::io
