// The MlpChain kernel: a whole chain of dense layers of 16-bit floats in one persistent launch,
// y_l = epilogue(y_{l-1} W_l^T + b_l) with the epilogue nothing, ReLU, or DCNv2's cross step
// x0 * (.) + y_{l-2} (x0 the chain's input), so the layers pay one launch, no tails between them,
// and a row block's next layer starts as soon as that block's previous layer is written (not the
// whole layer). Work is BM x 64 output tiles, layer by layer; blocks take tiles from an atomic ticket and a
// tile of layer l waits (acquire) until every tile of layer l - 1 over its rows has been released.
// A ticket only ever waits on smaller tickets, which running blocks hold, so the chain finishes for
// any grid size: no co-residency needed (no cooperative launch). The last block out zeroes the
// counters for the next launch. Intermediate layers live in the workspace (L2-resident at small
// batches) and are read through L2 (cp.async.cg). Each tile: 4 warps (2 x 2), mma.sync m16n8k16
// with fp32 accumulation over a 4-stage cp.async ring of k 32; bias, ReLU and the rounding to 16
// bits in the epilogue (one rounding per layer, as the per-layer plan's GEMMs). Needs every k a
// multiple of 8 (16-byte chunks); any n (columns past n are zero-filled and never stored).
#pragma once

#include "common.cuh"
#include "tensor_core.cuh"
#include "mma_tile.cuh"  // after tensor_core.cuh

namespace mlp_chain {

constexpr int kBN = 64, kBK = 32, kStages = 4, kThreads = 128;
constexpr int kRowBytes = kBK * 2;  // one stage row: 4 chunks of 16 bytes

/// What follows a layer's bias.
enum Epilogue : int { kNone = 0, kRelu = 1, kCross = 2 };

/// One layer: W [n, k] (nn.Linear's layout), b [n] (null: none), its Epilogue, and its split of k:
/// `split` slices of `slice_k` (a multiple of 32) when the layer has too few tiles to fill the GPU.
struct Layer {
  const unsigned short* w;
  const unsigned short* b;
  int n, k, epilogue, split, slice_k;
};

/// Shared memory of BM-row tiles of an L-layer chain: the ring of stages, the broadcast ticket, then
/// the layer table (indexed by the running layer: a local array would live on the stack).
template <int BM>
constexpr int stage_bytes() { return (BM + kBN) * kRowBytes; }
template <int BM, int L>
constexpr int shared_bytes() { return kStages * stage_bytes<BM>() + 16 + L * int(sizeof(Layer)); }

using lum_tc::swizzled;

using lum_tc::from_f32;
using lum_tc::to_f32;

/// Starts the copy of k-tile kt: rows [m0, m0 + BM) of a [m, K] (rows lda apart) and rows [n0, n0 + 64)
/// of w [N, K].
template <int BM>
__device__ __forceinline__ void load_stage(unsigned stage, const unsigned short* a, long long lda,
                                           const unsigned short* w, long long m, long long m0, int n0, int N, int K,
                                           int kt) {
  for (int i = threadIdx.x; i < (BM + kBN) * (kBK / 8); i += kThreads) {
    const int r = i / (kBK / 8), c = i % (kBK / 8), k = kt * kBK + c * 8;
    if (r < BM) {
      const bool ok = m0 + r < m && k < K;
      lum_tc::copy16(stage + swizzled(r, c), ok ? a + (m0 + r) * lda + k : a, ok);
    } else {
      const bool ok = n0 + r - BM < N && k < K;
      lum_tc::copy16(stage + BM * kRowBytes + swizzled(r - BM, c), ok ? w + (long long)(n0 + r - BM) * K + k : w, ok);
    }
  }
}

/// y[row, col] = epilogue(v + b[col]): nothing, ReLU, or x0 * (.) + res (x0 rows n apart, res rows
/// ldr apart; res written this launch, so read through L2).
template <bool F16>
__device__ __forceinline__ float finish(float v, const Layer& layer, long long row, int col,
                                        const unsigned short* __restrict__ x0, const unsigned short* res,
                                        long long ldr) {
  if (layer.b) v += to_f32<F16>(layer.b[col]);
  if (layer.epilogue == kRelu) return v * (v > 0.f ? 1.f : 0.f);  // as the graph's x * (x > 0)
  if (layer.epilogue == kCross) {
    return to_f32<F16>(x0[row * layer.n + col]) * v + to_f32<F16>(lum_tc::load_cg16(res + row * ldr + col));
  }
  return v;
}

/// One BM x 64 tile of a W^T over k-tiles [kt0, kt1) (a [m, K], rows lda apart): with `partial`
/// null, y = finish(.) for [m, N] (rows ldy apart; res may be y itself: each element is read and then
/// written by one thread); else the fp32 sums go to partial[row * part_stride + col]. All threads of
/// the block.
template <bool F16, int BM>
__device__ void tile(const unsigned short* __restrict__ a, long long lda, const Layer& layer, unsigned short* y,
                     long long ldy, long long m, long long m0, int n0, int kt0, int kt1, unsigned base,
                     const unsigned short* __restrict__ x0, const unsigned short* res, long long ldr, float* partial,
                     long long part_stride) {
  constexpr int kWM = BM / 2, kMT = kWM / 16, kNT = 32 / 8;  // a warp: (BM / 2) x 32 outputs
  const int N = layer.n, K = layer.k, KT = kt1 - kt0;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm = (warp / 2) * kWM, wn = (warp % 2) * 32;
  float acc[kMT][kNT][4];
  for (int i = 0; i < kMT; ++i)
    for (int j = 0; j < kNT; ++j)
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  for (int s = 0; s < kStages - 1; ++s) {
    if (s < KT) load_stage<BM>(base + s * stage_bytes<BM>(), a, lda, layer.w, m, m0, n0, N, K, kt0 + s);
    lum_tc::commit();  // empty groups keep the count: group s is k-tile kt0 + s
  }
  for (int kt = 0; kt < KT; ++kt) {
    lum_tc::wait_pending<kStages - 2>();  // k-tile kt has landed (this thread's copies)
    __syncthreads();                      // ... every thread's; and stage (kt - 1) is free
    const int next = kt + kStages - 1;
    if (next < KT) load_stage<BM>(base + (next % kStages) * stage_bytes<BM>(), a, lda, layer.w, m, m0, n0, N, K, kt0 + next);
    lum_tc::commit();
    const unsigned a_tile = base + (kt % kStages) * stage_bytes<BM>(), b_tile = a_tile + BM * kRowBytes;
    lum_tc::warp_mma_k32<F16>(acc, a_tile, b_tile, wm, wn, lane);
  }
  lum_tc::wait_pending<0>();
  __syncthreads();  // every warp is done with the stages before the next tile's copies land there

  // Accumulator element e of tile (i, j): row lane / 4 + 8 (e / 2), column 2 (lane % 4) + e % 2.
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int col = n0 + wn + j * 8 + 2 * (lane % 4);
    if (col >= N) continue;
    const bool pair = col + 1 < N;
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long row = m0 + wm + i * 16 + lane / 4 + 8 * h;
        if (row >= m) continue;
        if (partial) {
          float* at = partial + row * part_stride + col;
          at[0] = acc[i][j][2 * h];
          if (pair) at[1] = acc[i][j][2 * h + 1];
          continue;
        }
        const float o0 = finish<F16>(acc[i][j][2 * h], layer, row, col, x0, res, ldr);
        const float o1 = pair ? finish<F16>(acc[i][j][2 * h + 1], layer, row, col + 1, x0, res, ldr) : 0.f;
        unsigned short* at = y + row * ldy + col;
        if (pair && ldy % 2 == 0) {
          *reinterpret_cast<unsigned*>(at) = unsigned(from_f32<F16>(o0)) | (unsigned(from_f32<F16>(o1)) << 16);
        } else {
          at[0] = from_f32<F16>(o0);
          if (pair) at[1] = from_f32<F16>(o1);
        }
      }
  }
}

/// Layer l's k slices at this batch: its split where it has fewer than `split_below` tiles, else 1.
__device__ __forceinline__ int slices(const Layer& layer, int row_blocks, int split_below) {
  return row_blocks * ((layer.n + kBN - 1) / kBN) < split_below ? layer.split : 1;
}

/// The whole chain: x [m, layers[0].k] -> out [m, layers[L - 1].n], m <= row_cap * BM. A cross
/// layer l (l >= 1) reads x0 = x and the residual y_{l-2}: layer l - 1's input, which is x for l = 1
/// and else the buffer layer l writes (l - 2 and l have one parity; the residual's row block was
/// fully read by layer l - 1, which this tile waited for).
///
/// The workspace: the ticket, the exit count, a done count per (layer, row block) at l * row_cap,
/// then per layer with split > 1 an arrival count per tile (row_cap x its column blocks; all zero
/// at entry and left zero: fixed places, so what a launch at another batch left in the buffers never
/// lands on a counter); from byte `act_offset` the intermediate layers in two buffers of
/// m x `act_stride` elements (rounded to 256 bytes) with rows `act_stride` apart whatever the layer's width, so a row block's
/// rows are the same bytes for every layer (layer l writes buffer l % 2; a row block's tiles of
/// layer l + 1 start only after all of layer l's over it finished, so none still reads what they
/// overwrite, and no other row block's rows are touched); then the
/// split layers' fp32 partial sums, [m rows][slice][column] at a row stride of the largest split x
/// n of the layers split at this batch.
///
/// A split tile's slices are consecutive tickets; each writes its partial sums and counts in, and
/// the last to arrive adds them up in slice order (deterministic), finishes the tile, resets its
/// count and releases it. No block ever waits on a later ticket.
template <bool F16, int BM, int L>
__device__ void run(const unsigned short* __restrict__ x, unsigned short* __restrict__ out, const Layer (&layers)[L],
                    long long m, void* workspace, int row_cap, long long act_offset, long long act_stride,
                    int split_below) {
  LUM_DYNAMIC_SHARED(smem, 128);
  const unsigned base = lum_tc::shared_address(smem);
  int* broadcast = reinterpret_cast<int*>(smem + kStages * stage_bytes<BM>());
  Layer* table = reinterpret_cast<Layer*>(smem + kStages * stage_bytes<BM>() + 16);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int l = 0; l < L; ++l) table[l] = layers[l];
  }
  __syncthreads();
  int* counters = static_cast<int*>(workspace);
  int *ticket = counters, *exited = counters + 1, *done = counters + 2;
  unsigned short* act = reinterpret_cast<unsigned short*>(static_cast<unsigned char*>(workspace) + act_offset);
  const long long act_elems = (m * act_stride * 2 + 255) / 256 * 128;  // one buffer, 256-byte aligned
  float* partials = reinterpret_cast<float*>(act + 2 * act_elems);
  const int row_blocks = int((m + BM - 1) / BM);
  int total = 0;
  long long part_stride = 0;
  for (int l = 0; l < L; ++l) {
    const int s = slices(table[l], row_blocks, split_below);
    total += row_blocks * ((table[l].n + kBN - 1) / kBN) * s;
    if (s > 1 && (long long)s * table[l].n > part_stride) part_stride = (long long)s * table[l].n;
  }

  for (;;) {
    if (threadIdx.x == 0) *broadcast = lum_tc::fetch_add(ticket, 1);
    __syncthreads();
    int t = *broadcast;
    __syncthreads();  // read by all before thread 0 writes the next ticket
    if (t >= total) break;
    // Tickets run layer by layer, row block by row block, column block by column block, slice by slice.
    int l = 0, col_blocks = (table[0].n + kBN - 1) / kBN, split = slices(table[0], row_blocks, split_below);
    int* arrivals = done + L * row_cap;
    while (t >= row_blocks * col_blocks * split) {
      t -= row_blocks * col_blocks * split;
      if (table[l].split > 1) arrivals += row_cap * col_blocks;
      ++l;
      col_blocks = (table[l].n + kBN - 1) / kBN;
      split = slices(table[l], row_blocks, split_below);
    }
    const int slice = t % split, nb = (t / split) % col_blocks, mb = t / split / col_blocks;
    if (l > 0) {  // every tile of layer l - 1 over these rows
      if (threadIdx.x == 0) {
        const int* ready = done + (l - 1) * row_cap + mb;
        const int need = (table[l - 1].n + kBN - 1) / kBN;
        while (lum_tc::load_acquire(ready) < need) lum_tc::pause(64);
      }
      __syncthreads();
    }
    const Layer& layer = table[l];
    const unsigned short* in = l == 0 ? x : act + ((l - 1) % 2) * act_elems;
    unsigned short* to = l == L - 1 ? out : act + (l % 2) * act_elems;
    const unsigned short* res = l == 1 ? x : act + (l % 2) * act_elems;
    const long long lda = l == 0 ? layer.k : act_stride, ldy = l == L - 1 ? layer.n : act_stride,
                    ldr = l == 1 ? layer.n : act_stride;
    const long long m0 = (long long)mb * BM;
    const int n0 = nb * kBN, KT = (layer.k + kBK - 1) / kBK;
    if (split == 1) {
      tile<F16, BM>(in, lda, layer, to, ldy, m, m0, n0, 0, KT, base, x, res, ldr, nullptr, 0);
    } else {
      const int kt0 = slice * (layer.slice_k / kBK), kt1 = kt0 + layer.slice_k / kBK < KT ? kt0 + layer.slice_k / kBK : KT;
      tile<F16, BM>(in, lda, layer, to, ldy, m, m0, n0, kt0, kt1, base, x, res, ldr, partials + (long long)slice * layer.n,
                    part_stride);
      __syncthreads();  // every thread's partial sums are stored
      int* count = arrivals + mb * col_blocks + nb;
      if (threadIdx.x == 0) {  // release this slice's sums; the last to arrive acquires the others'
        __threadfence();
        const bool last = lum_tc::fetch_add(count, 1) == split - 1;
        if (last) __threadfence();
        *broadcast = last;
      }
      __syncthreads();
      const bool last = *broadcast;
      __syncthreads();  // read by all before the next ticket overwrites it
      if (!last) continue;
      for (int i = threadIdx.x; i < BM * kBN; i += kThreads) {
        const long long row = m0 + i / kBN;
        const int col = n0 + i % kBN;
        if (row >= m || col >= layer.n) continue;
        const float* p = partials + row * part_stride + col;
        float v = 0.f;
        for (int s = 0; s < split; ++s) v += lum_tc::load_cg_f32(p + (long long)s * layer.n);
        to[row * ldy + col] = from_f32<F16>(finish<F16>(v, layer, row, col, x, res, ldr));
      }
      if (threadIdx.x == 0) *count = 0;
    }
    __syncthreads();  // every thread's stores are issued
    if (threadIdx.x == 0) {
      __threadfence();
      lum_tc::add_release(done + l * row_cap + mb, 1);
    }
  }
  if (threadIdx.x == 0) {  // every other block out: this one is last and resets the counters
    __threadfence();
    *broadcast = lum_tc::fetch_add(exited, 1) == int(gridDim.x) - 1;
  }
  __syncthreads();
  if (*broadcast) {
    __threadfence();
    for (int i = threadIdx.x; i < L * row_blocks; i += kThreads) done[(i / row_blocks) * row_cap + i % row_blocks] = 0;
    if (threadIdx.x == 0) *ticket = 0, *exited = 0;
  }
}

}  // namespace mlp_chain
