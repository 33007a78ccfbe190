// Slices held per track while a file is read, handed to a TraceBuilder track after track at the
// end. A reader whose tracks interleave (Kineto's threads and streams, the tracks of a Perfetto
// sequence) would otherwise leave the builder a trace-sized gather to put them in order: 20 bytes
// per slice more at the import's peak. They are held packed by the builder that takes them.
// Blocks grow from 16 slices to 64 K, so a trace of many short tracks wastes little, and the big ones are mapped straight from the kernel
// (base/page_allocator.h): each is unmapped once copied, so memory stays one copy of the slices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/page_allocator.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

class TrackSliceBuffer {
 public:
  explicit TrackSliceBuffer(TraceBuilder& builder) : builder_(builder) {}

  // A slice before the hand-over: its track and its place among the track's slices.
  struct Ref {
    uint32_t track = 0;
    uint32_t position = 0;
  };

  Ref Add(const SliceRecord& slice);
  size_t size() const { return count_; }

  // Adds every slice to the builder (after any it holds), track after track, freeing the blocks
  // as it goes; returns the builder index of each track's first slice, by track: a Ref r is then
  // index first[r.track] + r.position. The buffer is empty afterwards.
  std::vector<uint32_t> MoveToBuilder();

  // For the tables a reader filled before the hand-over (kernel args, free-form args): row i's
  // `slice` was its place in track tracks[i]; it becomes the builder index, from what MoveTo
  // returned.
  template <typename Rows>
  static void Resolve(const std::vector<uint32_t>& first, const std::vector<uint32_t>& tracks, Rows& rows) {
    for (size_t i = 0; i < tracks.size(); ++i) rows[i].slice += first[tracks[i]];
  }

 private:
  struct Track {
    // Each filled to its capacity before the next.
    std::vector<std::vector<Slice, PageAllocator<Slice>>> blocks;
    uint32_t count = 0;
  };
  TraceBuilder& builder_;
  std::vector<Track> tracks_;
  size_t count_ = 0;
};

}  // namespace stepscope::trace
