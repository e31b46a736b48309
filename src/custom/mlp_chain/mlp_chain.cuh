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

namespace mlp_chain {

constexpr int kBN = 64, kBK = 32, kStages = 4, kThreads = 128;
constexpr int kRowBytes = kBK * 2;  // one stage row: 4 chunks of 16 bytes

/// What follows a layer's bias.
enum Epilogue : int { kNone = 0, kRelu = 1, kCross = 2 };

/// One layer: W [n, k] (nn.Linear's layout), b [n] (null: none), and its Epilogue.
struct Layer {
  const unsigned short* w;
  const unsigned short* b;
  int n, k, epilogue;
};

/// Shared memory of BM-row tiles of an L-layer chain: the ring of stages, the broadcast ticket, then
/// the layer table (indexed by the running layer: a local array would live on the stack).
template <int BM>
constexpr int stage_bytes() { return (BM + kBN) * kRowBytes; }
template <int BM, int L>
constexpr int shared_bytes() { return kStages * stage_bytes<BM>() + 16 + L * int(sizeof(Layer)); }

/// Byte offset of 16-byte chunk c of row r in a stage: chunks XOR-swizzled by r / 2, so the eight
/// rows one ldmatrix reads land in distinct banks.
__device__ __forceinline__ unsigned swizzled(int r, int c) {
  return unsigned(r * kRowBytes + ((c ^ ((r >> 1) & 3)) << 4));
}

template <bool F16>
__device__ __forceinline__ float to_f32(unsigned short h) {
  if constexpr (F16) return lum_f16_to_f32(h);
  else return lum_bf16_to_f32(h);
}
template <bool F16>
__device__ __forceinline__ unsigned short from_f32(float f) {
  if constexpr (F16) return lum_f32_to_f16(f);
  else return lum_f32_to_bf16(f);
}

/// Starts the copy of k-tile kt: rows [m0, m0 + BM) of a [m, K] and rows [n0, n0 + 64) of w [N, K].
template <int BM>
__device__ __forceinline__ void load_stage(unsigned stage, const unsigned short* a, const unsigned short* w,
                                           long long m, long long m0, int n0, int N, int K, int kt) {
  for (int i = threadIdx.x; i < (BM + kBN) * (kBK / 8); i += kThreads) {
    const int r = i / (kBK / 8), c = i % (kBK / 8), k = kt * kBK + c * 8;
    if (r < BM) {
      const bool ok = m0 + r < m && k < K;
      lum_tc::copy16(stage + swizzled(r, c), ok ? a + (m0 + r) * K + k : a, ok);
    } else {
      const bool ok = n0 + r - BM < N && k < K;
      lum_tc::copy16(stage + BM * kRowBytes + swizzled(r - BM, c), ok ? w + (long long)(n0 + r - BM) * K + k : w, ok);
    }
  }
}

/// One BM x 64 tile of y = epilogue(a W^T + b): a [m, K], y [m, N]; a cross epilogue reads x0 and
/// res [m, N] (res may be y itself: each element is read and then written by one thread). All
/// threads of the block.
template <bool F16, int BM>
__device__ void tile(const unsigned short* __restrict__ a, const Layer& layer, unsigned short* y, long long m,
                     long long m0, int n0, unsigned base, const unsigned short* __restrict__ x0,
                     const unsigned short* res) {
  constexpr int kWM = BM / 2, kMT = kWM / 16, kNT = 32 / 8;  // a warp: (BM / 2) x 32 outputs
  const int N = layer.n, K = layer.k, KT = (K + kBK - 1) / kBK;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm = (warp / 2) * kWM, wn = (warp % 2) * 32;
  float acc[kMT][kNT][4];
  for (int i = 0; i < kMT; ++i)
    for (int j = 0; j < kNT; ++j)
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  for (int s = 0; s < kStages - 1; ++s) {
    if (s < KT) load_stage<BM>(base + s * stage_bytes<BM>(), a, layer.w, m, m0, n0, N, K, s);
    lum_tc::commit();  // empty groups keep the count: group s is k-tile s
  }
  for (int kt = 0; kt < KT; ++kt) {
    lum_tc::wait_pending<kStages - 2>();  // k-tile kt has landed (this thread's copies)
    __syncthreads();                      // ... every thread's; and stage (kt - 1) is free
    const int next = kt + kStages - 1;
    if (next < KT) load_stage<BM>(base + (next % kStages) * stage_bytes<BM>(), a, layer.w, m, m0, n0, N, K, next);
    lum_tc::commit();
    const unsigned a_tile = base + (kt % kStages) * stage_bytes<BM>(), b_tile = a_tile + BM * kRowBytes;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      unsigned af[kMT][4], bf[kNT / 2][4];
#pragma unroll
      for (int i = 0; i < kMT; ++i)  // matrices: rows 0-7 / 8-15 x k 0-7 / 8-15 = a0, a1, a2, a3
        lum_tc::ldmatrix4(af[i], a_tile + swizzled(wm + i * 16 + lane % 8 + 8 * ((lane / 8) % 2), 2 * kk + lane / 16));
#pragma unroll
      for (int j = 0; j < kNT / 2; ++j)  // n 0-7 x k 0-7 / 8-15, then n 8-15: b0, b1 of two n8 tiles
        lum_tc::ldmatrix4(bf[j], b_tile + swizzled(wn + j * 16 + lane % 8 + 8 * (lane / 16), 2 * kk + (lane / 8) % 2));
#pragma unroll
      for (int i = 0; i < kMT; ++i)
#pragma unroll
        for (int j = 0; j < kNT; ++j)
          lum_tc::mma<F16>(acc[i][j], af[i], bf[j / 2][2 * (j % 2)], bf[j / 2][2 * (j % 2) + 1]);
    }
  }
  lum_tc::wait_pending<0>();
  __syncthreads();  // every warp is done with the stages before the next tile's copies land there

  // Accumulator element e of tile (i, j): row lane / 4 + 8 (e / 2), column 2 (lane % 4) + e % 2.
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int col = n0 + wn + j * 8 + 2 * (lane % 4);
    if (col >= N) continue;
    const bool pair = col + 1 < N;
    const float b0 = layer.b ? to_f32<F16>(layer.b[col]) : 0.f, b1 = pair && layer.b ? to_f32<F16>(layer.b[col + 1]) : 0.f;
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long row = m0 + wm + i * 16 + lane / 4 + 8 * h;
        if (row >= m) continue;
        float o0 = acc[i][j][2 * h] + b0, o1 = acc[i][j][2 * h + 1] + b1;
        const long long at_ = row * N + col;
        if (layer.epilogue == kRelu) {
          o0 *= o0 > 0.f ? 1.f : 0.f, o1 *= o1 > 0.f ? 1.f : 0.f;  // as the graph's x * (x > 0)
        } else if (layer.epilogue == kCross) {  // res: written this launch (through L2)
          o0 = to_f32<F16>(x0[at_]) * o0 + to_f32<F16>(lum_tc::load_cg16(res + at_));
          if (pair) o1 = to_f32<F16>(x0[at_ + 1]) * o1 + to_f32<F16>(lum_tc::load_cg16(res + at_ + 1));
        }
        unsigned short* at = y + at_;
        if (pair && N % 2 == 0) {
          *reinterpret_cast<unsigned*>(at) = unsigned(from_f32<F16>(o0)) | (unsigned(from_f32<F16>(o1)) << 16);
        } else {
          at[0] = from_f32<F16>(o0);
          if (pair) at[1] = from_f32<F16>(o1);
        }
      }
  }
}

/// The whole chain: x [m, layers[0].k] -> out [m, layers[L - 1].n], m <= row_cap * BM. A cross
/// layer l (l >= 1) reads x0 = x and the residual y_{l-2}: layer l - 1's input, which is x for l = 1
/// and else the buffer layer l writes (l - 2 and l have one parity; the residual's row block was
/// fully read by layer l - 1, which this tile waited for). The
/// workspace holds the ticket, the exit count and one done count per (layer, row block), layer l's
/// at l * row_cap (zero at entry, zeroed again by the last block out; a fixed layout, so what a
/// launch at another batch left in the activation buffers never lands on a counter), then the
/// intermediate layers in two buffers of `act_elems` elements each from byte `act_offset` (layer l
/// writes buffer l % 2; a row block's tiles of layer l + 1 start only after all of layer l's over
/// it finished, so none still reads what they overwrite).
template <bool F16, int BM, int L>
__device__ void run(const unsigned short* __restrict__ x, unsigned short* __restrict__ out, const Layer (&layers)[L],
                    long long m, void* workspace, int row_cap, long long act_offset, long long act_elems) {
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
  const int row_blocks = int((m + BM - 1) / BM);
  int total = 0;
  for (int l = 0; l < L; ++l) total += row_blocks * ((table[l].n + kBN - 1) / kBN);

  for (;;) {
    if (threadIdx.x == 0) *broadcast = lum_tc::fetch_add(ticket, 1);
    __syncthreads();
    int t = *broadcast;
    __syncthreads();  // read by all before thread 0 writes the next ticket
    if (t >= total) break;
    int l = 0, col_blocks = (table[0].n + kBN - 1) / kBN;
    while (t >= row_blocks * col_blocks) {  // tickets run layer by layer, row block by row block
      t -= row_blocks * col_blocks;
      ++l;
      col_blocks = (table[l].n + kBN - 1) / kBN;
    }
    const int mb = t / col_blocks, nb = t % col_blocks;
    if (l > 0) {  // every tile of layer l - 1 over these rows
      if (threadIdx.x == 0) {
        const int* ready = done + (l - 1) * row_cap + mb;
        const int need = (table[l - 1].n + kBN - 1) / kBN;
        while (lum_tc::load_acquire(ready) < need) lum_tc::pause(64);
      }
      __syncthreads();
    }
    const unsigned short* in = l == 0 ? x : act + ((l - 1) % 2) * act_elems;
    unsigned short* to = l == L - 1 ? out : act + (l % 2) * act_elems;
    const unsigned short* res = l == 1 ? x : act + (l % 2) * act_elems;
    tile<F16, BM>(in, table[l], to, m, (long long)mb * BM, nb * kBN, base, x, res);
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
