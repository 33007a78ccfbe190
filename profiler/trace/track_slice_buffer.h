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

  // The builder index each track's first slice gets from MoveToBuilder, by track: a Ref r is
  // then index first[r.track] + r.position. Known before the move, so that the tables pointing at
  // slices are resolved and their tracks freed first (their bytes are not held with the slices'
  // move).
  std::vector<uint32_t> FirstIndices() const;
  // Adds every slice to the builder (after any it holds), track after track, freeing the blocks
  // as it goes. The buffer is empty afterwards.
  void MoveToBuilder();

  // For the tables a reader filled before the hand-over (kernel args, free-form args): row i's
  // `slice` was its place in track tracks[i]; it becomes the builder index, from FirstIndices.
  template <typename Tracks, typename Rows>
  static void Resolve(const std::vector<uint32_t>& first, const Tracks& tracks, Rows& rows) {
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
