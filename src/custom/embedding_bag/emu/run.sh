#!/usr/bin/env bash
# Host emulation of the EmbeddingBag kernel (no GPU needed): runs embedding_bag.cuh's device code
# on the CPU, one CUDA thread after another over the grid and block that emit.cpp chooses, against
# the loop oracle (every dtype, several d and B, misaligned pointers, bad indices and offsets).
# Needs a built libluminal.a:
#   src/custom/embedding_bag/emu/run.sh [path/to/libluminal.a]   (default build/libluminal.a)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
lib=$(realpath "${1:-$root/build/libluminal.a}")
out=$(mktemp -d)
cp "$here/emu_common.h" "$out/common.cuh"
c++ -std=c++20 -O1 -w -DFMT_HEADER_ONLY=1 -I"$out" -I"$root/include" -I"$root/src" \
    -I"$root/src/custom/embedding_bag" "$here/emu_test.cc" "$lib" -lz -o "$out/emu"
"$out/emu"
