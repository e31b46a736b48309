// Which steps of a plan may run concurrently: the streams of a captured CUDA graph's branches.
#pragma once

#include <cstdint>
#include <vector>

namespace luminal::compiler {

/// Half-open byte range [begin, end) of device memory.
struct ByteRange {
  uint64_t begin = 0, end = 0;
};

/// The memory one step reads and writes at the current dims and pointers.
struct StepAccess {
  std::vector<ByteRange> reads, writes;
  bool launches = true;  // false: enqueues nothing at these dims (no stream, no edges)
};

/// True when two steps touch overlapping memory with at least one writing it (read-after-write,
/// write-after-read or write-after-write): they must keep their order.
bool conflicts(const StepAccess& earlier, const StepAccess& later);

/// Where one step runs: its stream (0 = the capturing stream), and the earlier steps on other
/// streams it must wait for (only those not already implied by stream order or other waits).
struct BranchSlot {
  int stream = 0;
  std::vector<int> waits;
};

/// Orders steps by their memory hazards (read-after-write, write-after-read, write-after-write on
/// overlapping ranges; two reads never conflict) and spreads independent chains over at most
/// max_streams streams. A step goes on a stream whose last step it already depends on, so stream
/// order adds no false edges where it can be avoided. Steps keep their plan order within a stream.
std::vector<BranchSlot> schedule_branches(const std::vector<StepAccess>& steps, int max_streams);

/// The plan buffers one step reads and writes.
struct StepBuffers {
  std::vector<int> reads, writes;
};

/// Per step, the first step it may run beside once captured with branches: one past its latest
/// producer (the last earlier step writing a buffer it reads), 0 when it has none. The arena
/// starts a written buffer's lifetime there, so it never shares memory with a step the writer
/// may overlap (sharing would be safe, since memory hazards order them, but would serialize them).
std::vector<int> earliest_start(const std::vector<StepBuffers>& steps);

/// Number of streams a schedule uses (0 when no step launches).
int streams_used(const std::vector<BranchSlot>& slots, const std::vector<StepAccess>& steps);

/// The stream with the most launching steps before its first join (a step waiting for another
/// stream's), the lowest such id on a tie, 0 when none launches: the longest chain beside the
/// others, which a capture with branch priorities runs at the highest priority, so that a chain of
/// small latency-bound kernels (DLRM's bottom MLP) takes SMs ahead of a wide kernel beside it (the
/// bags). Steps after a join run alone and the join's stream keeps them.
int lead_stream(const std::vector<BranchSlot>& slots, const std::vector<StepAccess>& steps);

}  // namespace luminal::compiler
