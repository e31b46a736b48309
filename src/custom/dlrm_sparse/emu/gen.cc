// Writes the generated kernel of every emulated shape to <dir>/k_<tag>.cu.
#include <cstdio>
#include <fstream>
#include <string>

#include "custom/dlrm_sparse/emu/shapes.h"

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  for (const auto& e : luminal::sparse_emu::emu_shapes())
    std::ofstream(dir + "/k_" + e.tag + ".cu") << luminal::custom::emit_dlrm_sparse(e.s).source;
  return 0;
}
