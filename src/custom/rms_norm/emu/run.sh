#!/usr/bin/env bash
# Host emulation of the RmsNorm kernel (no GPU needed): runs rms_norm.cuh's device code on the CPU,
# one std::thread per CUDA thread of each block (barriers and warp shuffles emulated), over the
# grid and block that emit.cpp chooses, against the loop oracle. Needs a built libluminal.a:
#   src/custom/rms_norm/emu/run.sh [path/to/libluminal.a]   (default build/libluminal.a)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
lib=$(realpath "${1:-$root/build/libluminal.a}")
out=$(mktemp -d)
# The host stand-in for common.cuh is embedding_bag's (the same conversions serve both kernels).
cp "$root/src/custom/embedding_bag/emu/emu_common.h" "$out/common.cuh"
c++ -std=c++20 -O1 -w -ffp-contract=off -DFMT_HEADER_ONLY=1 -I"$out" -I"$root/include" \
    -I"$root/src" -I"$root/src/custom/rms_norm" "$here/emu_test.cc" "$lib" -lz -lpthread -o "$out/emu"
"$out/emu"
