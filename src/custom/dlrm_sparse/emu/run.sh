#!/usr/bin/env bash
# Host emulation of the DlrmSparse kernel (no GPU needed): generates the kernels of shapes.h, turns
# them into host C++ and checks them against the loop oracle. Needs a built tree (its libluminal_*.a):
#   src/custom/dlrm_sparse/emu/run.sh [build dir]   (default build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
build=$(realpath "${1:-$root/build}")
libs=(-Wl,--start-group "$build"/libluminal_*.a -Wl,--end-group -lfmt -ldl -fopenmp)
out=$(mktemp -d)
flags=(-std=c++20 -O1 -w -DFMT_HEADER_ONLY=1 -I"$root/include" -I"$root/src")
srcs=("$root/src/custom/dlrm_sparse/emit.cpp" "$root/src/custom/dlrm_sparse/reference.cpp")
c++ "${flags[@]}" "$here/gen.cc" "${srcs[@]}" "${libs[@]}" -o "$out/gen"
"$out/gen" "$out"
python3 "$here/make_host_kernels.py" "$out"
c++ "${flags[@]}" -I"$here" "$out/kernels_host.cpp" "$here/emu_test.cc" "${srcs[@]}" "${libs[@]}" -lpthread -o "$out/emu"
"$out/emu"
