// Checkpoint loading on CUDA: a device-memory check before any allocation, then every tensor
// streamed from the file mapping through a ring of pinned chunks (converted there when asked).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "cuda/runtime/cuda_plan.h"
#include "io/float_convert.h"
#include "io/load_progress.h"

namespace luminal::cuda {
namespace {

constexpr size_t kAlign = 256;  // device_alloc's rounding

size_t alloc_size(uint64_t bytes) {
  return (std::max<uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
}

// A ring of pinned chunks: the host fills one while the DMA engine copies the others. A chunk is
// reused only after the event recorded behind its copy has completed.
class PinnedRing {
 public:
  static constexpr size_t kChunk = size_t{16} << 20;
  static constexpr size_t kChunks = 4;

  PinnedRing(CUstream stream, uint64_t total) : stream_(stream) {
    // At least a few KiB, so a chunk always holds whole elements of any dtype.
    chunk_ = size_t(std::clamp<uint64_t>(total, 4096, kChunk));
  }
  ~PinnedRing() {
    for (size_t i = 0; i < kChunks; ++i) {
      if (events_[i] == nullptr) continue;
      drv().cuEventSynchronize(events_[i]);  // a copy may still read the chunk freed next
      drv().cuEventDestroy_v2(events_[i]);
    }
  }
  PinnedRing(const PinnedRing&) = delete;
  PinnedRing& operator=(const PinnedRing&) = delete;

  /// Bytes per chunk.
  size_t chunk() const { return chunk_; }
  /// The next free chunk (waits for its previous copy).
  std::byte* acquire() {
    if (bufs_[next_].data() == nullptr) {
      bufs_[next_] = PinnedBuffer(chunk_);
      CHECK_CUDA(drv().cuEventCreate(&events_[next_], CU_EVENT_DISABLE_TIMING));
    } else {
      CHECK_CUDA(drv().cuEventSynchronize(events_[next_]));
    }
    return bufs_[next_].data();
  }
  /// Queues the copy of the first `n` bytes of the acquired chunk to dst.
  void submit(CUdeviceptr dst, size_t n) {
    CHECK_CUDA(drv().cuMemcpyHtoDAsync_v2(dst, bufs_[next_].data(), n, stream_));
    CHECK_CUDA(drv().cuEventRecord(events_[next_], stream_));
    next_ = (next_ + 1) % kChunks;
  }

 private:
  CUstream stream_;
  size_t chunk_ = 0, next_ = 0;
  std::array<PinnedBuffer, kChunks> bufs_;
  std::array<CUevent, kChunks> events_{};
};

// Streams one tensor to dst, converting element-aligned pieces when the dtypes differ.
void stream_item(PinnedRing& ring, const LoadItem& it, CUdeviceptr dst,
                 io::LoadProgress& progress) {
  const size_t si = dtype_size(it.from), di = dtype_size(it.to);
  const uint64_t count = it.data.size() / si;
  const uint64_t per_chunk = ring.chunk() / di;  // the chunk holds the converted elements
  for (uint64_t first = 0; first < count; first += per_chunk) {
    const uint64_t n = std::min(per_chunk, count - first);
    std::byte* p = ring.acquire();
    if (it.from == it.to)
      std::memcpy(p, it.data.data() + first * si, n * si);
    else
      io::convert_float_elements(it.from, it.to, it.data.data() + first * si, p, n);
    ring.submit(dst + first * di, n * di);
    progress.add(n * di);
  }
}

}  // namespace


bool CudaPlan::owned_fits(const InputSlot& s, uint64_t bytes) const {
  return s.owned && s.owned->capacity >= bytes && s.owned.use_count() == 1;
}

void CudaPlan::check_load_fits(uint64_t needed, const LoadOptions& opts) const {
  size_t free = 0, total = 0;
  CHECK_CUDA(drv().cuMemGetInfo_v2(&free, &total));
  if (needed <= free && (opts.device_memory_limit == 0 || needed <= opts.device_memory_limit))
    return;
  if (needed > free)
    throw std::runtime_error(
        fmt::format("[load] model needs {} of device memory, the device has {} free ({} total)",
                    io::format_bytes(needed), io::format_bytes(free), io::format_bytes(total)));
  throw std::runtime_error(
      fmt::format("[load] model needs {} of device memory, LoadOptions::device_memory_limit is {}",
                  io::format_bytes(needed), io::format_bytes(opts.device_memory_limit)));
}

bool CudaPlan::load_items(const std::vector<LoadItem>& items, const LoadOptions& opts) {
  dev.make_current();
  uint64_t total = 0, needed = 0;
  for (const LoadItem& it : items) {
    total += it.bytes;
    if (!owned_fits(slot(it.node), it.bytes)) needed += alloc_size(it.bytes);
  }
  check_load_fits(needed, opts);  // before any allocation
  size_t free_before = 0, dev_total = 0;
  CHECK_CUDA(drv().cuMemGetInfo_v2(&free_before, &dev_total));
  try {
    sync_stream();  // queued work may still read blocks about to be replaced or overwritten
    std::vector<std::shared_ptr<DeviceAllocation>> blocks(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      InputSlot& s = slot(items[i].node);
      s.has_data = false;  // nothing half-written is ever usable
      blocks[i] = owned_fits(s, items[i].bytes)
                      ? s.owned
                      : device_alloc(dev, items[i].bytes, "input " + node_label(items[i].node));
    }
    io::LoadProgress progress(total, opts.progress);
    {
      PinnedRing ring(stream, total);
      for (size_t i = 0; i < items.size(); ++i)
        stream_item(ring, items[i], blocks[i]->ptr, progress);
    }
    sync_stream();
    for (size_t i = 0; i < items.size(); ++i) {
      InputSlot& s = slot(items[i].node);
      s.owned = std::move(blocks[i]);
      s.external = 0;
      s.staged = false;
      s.bytes = items[i].bytes;
      s.has_data = s.persist = true;
      s.version = next_slot_version();
    }
    dirty = true;
    size_t free_after = 0;
    CHECK_CUDA(drv().cuMemGetInfo_v2(&free_after, &dev_total));
    progress.finish(
        items.size(),
        fmt::format("; device memory: {} used by the load, {} free of {}",
                    io::format_bytes(free_before > free_after ? free_before - free_after : 0),
                    io::format_bytes(free_after), io::format_bytes(dev_total)));
  } catch (...) {
    // A failed upload leaves every input the checkpoint names without data (runtime.h).
    drv().cuStreamSynchronize(stream);
    staging.stream_synchronized();
    for (const LoadItem& it : items) {
      InputSlot& s = slot(it.node);
      s.owned.reset();
      s.external = 0;
      s.has_data = s.staged = false;
    }
    dirty = true;
    throw;
  }
  return true;
}

}  // namespace luminal::cuda
