#!/usr/bin/env bash
# Host emulation of the EmbeddingBag kernel (no GPU needed): runs embedding_bag.cuh's device code
# on the CPU, one CUDA thread after another over the grid and block that emit.cpp chooses, against
# the loop oracle (every dtype, several d and B, misaligned pointers, bad indices and offsets).
# Needs a built tree (its libluminal_*.a):
#   src/custom/embedding_bag/emu/run.sh [build dir]   (default build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
build=$(realpath "${1:-$root/build}")
out=$(mktemp -d)
cp "$here/emu_common.h" "$out/common.cuh"
c++ -std=c++20 -O1 -w -DFMT_HEADER_ONLY=1 -I"$out" -I"$root/include" -I"$root/src" \
    -I"$root/src/custom/embedding_bag" "$here/emu_test.cc" -Wl,--start-group "$build"/libluminal_*.a -Wl,--end-group \
    -lfmt -ldl -lz -fopenmp -o "$out/emu"
"$out/emu"
