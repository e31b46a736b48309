// The DLRM model's megakernel shape (internal to src/models/dlrm and its tests).
#pragma once

#include "custom/dlrm_mega/shape.h"
#include "luminal/models/dlrm.h"

namespace luminal::models {

/// The DlrmMega shape of config c (its widths, tables, bags and batch).
custom::DlrmMegaShape mega_shape(const DlrmConfig& c);

}  // namespace luminal::models
