// Dim buckets (shared/DESIGN.md section 9): ranges of a dynamic dim, one searched plan each. The
// types are public (luminal/search.h: runtimes take them as options); the compiler names them here.
#pragma once

#include "luminal/search.h"

namespace luminal::compiler::search {

using luminal::DimBucket;
using luminal::find_bucket;
using luminal::pow2_buckets;

}  // namespace luminal::compiler::search
