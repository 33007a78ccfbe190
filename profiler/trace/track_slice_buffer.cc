// Slices held per track while a file is read, then handed over (track_slice_buffer.h).
#include "profiler/trace/track_slice_buffer.h"

#include <algorithm>

#include "base/free_storage.h"

namespace stepscope::trace {

TrackSliceBuffer::Ref TrackSliceBuffer::Add(const SliceRecord& slice) {
  if (tracks_.size() <= slice.track) tracks_.resize(slice.track + 1);
  Track& track = tracks_[slice.track];
  if (track.blocks.empty() || track.blocks.back().size() == track.blocks.back().capacity()) {
    track.blocks.emplace_back().reserve(std::min<size_t>(size_t{16} << track.blocks.size(), size_t{1} << 16));
  }
  track.blocks.back().push_back(builder_.Pack(slice));
  ++count_;
  return {slice.track, track.count++};
}

std::vector<uint32_t> TrackSliceBuffer::FirstIndices() const {
  std::vector<uint32_t> first(tracks_.size(), 0);
  auto next = static_cast<uint32_t>(builder_.slice_count());
  for (size_t t = 0; t < tracks_.size(); ++t) {
    first[t] = next;
    next += tracks_[t].count;
  }
  return first;
}

void TrackSliceBuffer::MoveToBuilder() {
  uint32_t next = builder_.AddSlices(count_);
  for (size_t t = 0; t < tracks_.size(); ++t) {
    for (auto& block : tracks_[t].blocks) {
      builder_.SetPackedSlices(next, block);
      next += static_cast<uint32_t>(block.size());
      FreeStorage(block);
    }
  }
  FreeStorage(tracks_);
  count_ = 0;
}

}  // namespace stepscope::trace
