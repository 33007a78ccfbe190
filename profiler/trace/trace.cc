// The Trace model: its accessors and TraceBuilder, which sorts slices, rebases them on the epoch,
// assigns nesting depth and overlap lanes, and renumbers everything that points at slices.
#include "profiler/trace/trace.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "base/check.h"
#include "base/free_storage.h"
#include "base/saturating.h"
#include "profiler/trace/trace_payload.h"

namespace stepscope::trace {

std::string_view TrackKindName(TrackKind kind) {
  switch (kind) {
    case TrackKind::kHost: return "host";
    case TrackKind::kDevice: return "device";
    case TrackKind::kOpLane: return "ops";
    case TrackKind::kGpuStream: return "gpu_stream";
    case TrackKind::kGpuAllStreams: return "gpu_all_streams";
    case TrackKind::kGpuMemcpy: return "gpu_memcpy";
    case TrackKind::kHostMemcpy: return "host_memcpy";
    case TrackKind::kCollective: return "collective";
    case TrackKind::kOther: return "other";
  }
  return "other";
}

std::optional<TrackKind> TrackKindOfName(std::string_view name) {
  for (TrackKind kind : {TrackKind::kHost, TrackKind::kDevice, TrackKind::kOpLane, TrackKind::kGpuStream,
                         TrackKind::kGpuAllStreams, TrackKind::kGpuMemcpy, TrackKind::kHostMemcpy,
                         TrackKind::kCollective, TrackKind::kOther}) {
    if (TrackKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

std::string_view SliceKindName(SliceKind kind) {
  switch (kind) {
    case SliceKind::kOp: return "op";
    case SliceKind::kKernel: return "kernel";
    case SliceKind::kMemcpy: return "memcpy";
    case SliceKind::kMemset: return "memset";
    case SliceKind::kCollective: return "collective";
    case SliceKind::kRuntime: return "runtime";
    case SliceKind::kOther: return "other";
    case SliceKind::kAnnotation: return "annotation";
    case SliceKind::kSync: return "sync";
    case SliceKind::kPythonFrame: return "python";
  }
  return "other";
}

namespace {

SliceRecord RecordOf(const Slice& s, const LabelTable& labels, int64_t shift_ns) {
  const SliceLabel& label = labels[s.label];
  return SliceRecord{s.start_ns + shift_ns, s.dur_ns, static_cast<uint32_t>(s.track), label.name, label.op_type,
                     static_cast<uint16_t>(s.depth), s.kind, s.flags};
}

}  // namespace

std::string_view SourceFormatName(SourceFormat format) {
  switch (format) {
    case SourceFormat::kRunMetadataBinary: return "RunMetadata (binary)";
    case SourceFormat::kRunMetadataText: return "RunMetadata (text)";
    case SourceFormat::kStepStatsBinary: return "StepStats (binary)";
    case SourceFormat::kStepStatsText: return "StepStats (text)";
    case SourceFormat::kChromeJson: return "Chrome trace JSON";
    case SourceFormat::kSynthetic: return "built in memory";
    case SourceFormat::kXSpace: return "XSpace (TensorFlow 2 / JAX profiler)";
    case SourceFormat::kPerfettoProto: return "Perfetto protobuf";
  }
  return "unknown";
}

Trace::Trace() = default;
Trace::~Trace() = default;
Trace::Trace(Trace&&) noexcept = default;
Trace& Trace::operator=(Trace&&) noexcept = default;

std::span<const Slice> Trace::track_slices(uint32_t track) const {
  const uint32_t begin = track_begin_[track];
  return {slices_.data() + begin, track_begin_[track + 1] - begin};
}

NodeRef Trace::node_ref(uint32_t slice) const {
  if (slice < node_refs_.size()) return node_refs_[slice];
  if (payload_ == nullptr || slice >= slices_.size()) return {};
  return payload_->SourceRef(slice);
}

namespace {
template <typename Args>
const Args* FindBySlice(const std::vector<Args>& table, uint32_t slice) {
  auto it = std::lower_bound(table.begin(), table.end(), slice,
                             [](const Args& args, uint32_t s) { return args.slice < s; });
  return it != table.end() && it->slice == slice ? &*it : nullptr;
}
}  // namespace

const TransferArgs* Trace::transfer_args(uint32_t slice) const { return FindBySlice(transfer_args_, slice); }

std::span<const SliceArg> Trace::slice_args(uint32_t slice) const {
  auto by_slice = [](const SliceArg& a, const SliceArg& b) { return a.slice < b.slice; };
  const auto range = std::equal_range(slice_args_.begin(), slice_args_.end(), SliceArg::Number(slice, 0, 0), by_slice);
  return {slice_args_.data() + (range.first - slice_args_.begin()), static_cast<size_t>(range.second - range.first)};
}

SliceRecord Trace::Record(const Slice& s) const { return RecordOf(s, labels_, epoch_ns_); }

std::string Trace::TrackPath(uint32_t track) const {
  std::vector<uint32_t> chain;
  for (int32_t t = static_cast<int32_t>(track); t >= 0; t = tracks_[t].parent) chain.push_back(t);
  std::string path;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!path.empty()) path += " / ";
    path += str(tracks_[*it].name);
  }
  return path;
}

int32_t Trace::DeviceOf(uint32_t track) const {
  for (int32_t t = static_cast<int32_t>(track); t >= 0; t = tracks_[t].parent) {
    if (tracks_[t].kind == TrackKind::kDevice) return t;
  }
  return -1;
}

int32_t Trace::HostOf(uint32_t track) const {
  int32_t t = static_cast<int32_t>(track);
  while (t >= 0 && tracks_[t].parent >= 0) t = tracks_[t].parent;
  return t;
}

TraceBuilder::TraceBuilder() = default;
TraceBuilder::~TraceBuilder() = default;

uint32_t TraceBuilder::AddTrack(const Track& track) {
  STEPSCOPE_CHECK(track.parent < static_cast<int32_t>(trace_.tracks_.size()));
  trace_.tracks_.push_back(track);
  return static_cast<uint32_t>(trace_.tracks_.size() - 1);
}

uint32_t TraceBuilder::AddSlices(size_t count) {
  const size_t first = slices_.size();
  slices_.resize(first + count);
  if (has_refs_) trace_.node_refs_.resize(first + count);
  return static_cast<uint32_t>(first);
}

uint32_t TraceBuilder::AddSlice(const SliceRecord& slice, NodeRef ref) {
  STEPSCOPE_CHECK(slice.track < trace_.tracks_.size());
  if (ref.valid() && !has_refs_) {
    has_refs_ = true;
    trace_.node_refs_.resize(slices_.size());
  }
  slices_.push_back(Pack(slice));
  if (has_refs_) trace_.node_refs_.push_back(ref);
  return static_cast<uint32_t>(slices_.size() - 1);
}

Slice TraceBuilder::Pack(const SliceRecord& r) {
  if (!has_base_) {
    base_ns_ = r.start_ns;
    has_base_ = true;
  }
  int64_t start = SaturatingSub(r.start_ns, base_ns_);
  if (start > Slice::kMaxStartNs || start < -Slice::kMaxStartNs) [[unlikely]] {
    start = std::clamp(start, -Slice::kMaxStartNs, Slice::kMaxStartNs);
    ++starts_clamped_;
  }
  int64_t dur = r.dur_ns;
  if (dur < 0) [[unlikely]] {
    dur = 0;
    ++negative_durations_;
  } else if (dur > Slice::kMaxDurNs) [[unlikely]] {
    dur = Slice::kMaxDurNs;
    ++durations_clamped_;
  }
  // Every field at once: the compiler then builds each 8-byte word in a register. Set one by one,
  // the packed fields went through memory, each read stalling on the write before it.
  return Slice{.start_ns = start,
               .depth = std::min<uint32_t>(r.depth, Slice::kMaxDepth),  // Build sets the depth
               .kind = r.kind,
               .flags = r.flags,
               .dur_ns = dur,
               // Past the last track a slice can name: LimitTracks makes it an instant on the
               // catch-all track.
               .track = std::min<uint32_t>(r.track, Slice::kMaxTrack),
               .label = trace_.labels_.Intern(r.name, r.op_type)};
}

SliceRecord TraceBuilder::slice(uint32_t index) const {
  // Until Build the starts are relative to base_ns_.
  return RecordOf(slices_[index], trace_.labels_, base_ns_);
}

void TraceBuilder::SetPackedSlices(uint32_t index, std::span<const Slice> packed) {
  std::copy(packed.begin(), packed.end(), slices_.begin() + index);
}

void TraceBuilder::AddFlow(uint32_t from_slice, uint32_t to_slice, FlowKind kind) {
  if (to_slice > Flow::kMaxSlice) {
    trace_.import_stats_.Add("flow_past_slice_limit_skipped");
    return;
  }
  trace_.flows_.push_back(Flow{from_slice, to_slice, kind});
}

namespace {

// Places the slices of one source track onto lanes so that no lane holds a partial overlap.
// The track's slices come sorted by (start, longer first). Lane 0 is the track itself;
// further lanes are sibling tracks created on demand.
class LaneAssigner {
 public:
  LaneAssigner(StringTable& strings, std::vector<Track>& tracks, MappedArray<Slice>& slices)
      : strings_(strings), tracks_(tracks), slices_(slices) {}

  // `count` slices, the k-th at index_at(k). Returns how many slices had to leave lane 0.
  template <typename IndexAt>
  int64_t Assign(uint32_t track, size_t count, IndexAt index_at) {
    lanes_.assign(1, Lane{track, {}});
    const bool nesting = !tracks_[track].concurrent;
    int64_t moved = 0;
    for (size_t k = 0; k < count; ++k) {
      Slice& slice = slices_[index_at(k)];
      size_t lane = 0;
      for (;; ++lane) {
        if (lane == lanes_.size()) {
          if (tracks_.size() > Slice::kMaxTrack) {
            // No track left for a lane: the slice stays as an instant on lane 0 (counted).
            slice.dur_ns = 0;
            ++lost_to_track_limit_;
            lane = 0;
            break;
          }
          lanes_.push_back(Lane{NewLane(track, lane), {}});
        }
        auto& open = lanes_[lane].open_ends;
        while (!open.empty() && open.back() <= slice.start_ns) open.pop_back();
        if (open.empty() || (nesting && slice.end_ns() <= open.back())) break;
      }
      auto& open = lanes_[lane].open_ends;
      if (open.size() > Slice::kMaxDepth) [[unlikely]] ++depths_clamped_;
      open.push_back(slice.end_ns());  // read before the writes: they are partial, packed words
      slice.depth = std::min<size_t>(open.size() - 1, Slice::kMaxDepth);
      slice.track = lanes_[lane].track;
      if (lane != 0) ++moved;
    }
    return moved;
  }
  // Slices made instants because the track limit left no lane for them.
  int64_t lost_to_track_limit() const { return lost_to_track_limit_; }
  // Slices nested deeper than a Slice can say (their depth is kMaxDepth).
  int64_t depths_clamped() const { return depths_clamped_; }
  // The source track of each lane made, in the order the lanes were appended to the tracks.
  std::span<const uint32_t> lane_sources() const { return lane_sources_; }

 private:
  struct Lane {
    uint32_t track;
    std::vector<int64_t> open_ends;  // ends of the enclosing slices, innermost last
  };

  uint32_t NewLane(uint32_t track, size_t lane) {
    Track copy = tracks_[track];
    copy.lane = static_cast<int32_t>(lane);
    std::string name(strings_.Get(copy.name));
    name += " #" + std::to_string(lane + 1);
    copy.name = strings_.Intern(name);
    tracks_.push_back(copy);
    lane_sources_.push_back(track);
    return static_cast<uint32_t>(tracks_.size() - 1);
  }

  StringTable& strings_;
  std::vector<Track>& tracks_;
  MappedArray<Slice>& slices_;
  std::vector<Lane> lanes_;
  std::vector<uint32_t> lane_sources_;
  int64_t lost_to_track_limit_ = 0;
  int64_t depths_clamped_ = 0;
};

// Moves each overlap lane (appended after the source tracks) to just after its source track and
// the lanes made before it: the slices of a source track and of its lanes then stay where the
// source track's were, so putting them in track order moves them within that range only.
// Renumbers the parents and counters; returns each old track's new index.
std::vector<uint32_t> PlaceLanesAfterSources(std::vector<Track>& tracks, size_t source_tracks,
                                             std::span<const uint32_t> lane_sources,
                                             std::vector<CounterSeries>& counters) {
  std::vector<uint32_t> lanes_begin(source_tracks + 1, 0);  // lanes of source t: a run, by t
  for (uint32_t source : lane_sources) ++lanes_begin[source + 1];
  for (size_t t = 0; t < source_tracks; ++t) lanes_begin[t + 1] += lanes_begin[t];
  std::vector<uint32_t> lanes(lane_sources.size());
  std::vector<uint32_t> fill(lanes_begin.begin(), lanes_begin.end() - 1);
  for (size_t l = 0; l < lane_sources.size(); ++l) {
    lanes[fill[lane_sources[l]]++] = static_cast<uint32_t>(source_tracks + l);
  }
  std::vector<uint32_t> new_index(tracks.size());
  uint32_t next = 0;
  for (size_t t = 0; t < source_tracks; ++t) {
    new_index[t] = next++;
    for (uint32_t l = lanes_begin[t]; l < lanes_begin[t + 1]; ++l) new_index[lanes[l]] = next++;
  }
  std::vector<Track> placed(tracks.size());
  for (size_t t = 0; t < tracks.size(); ++t) {
    Track& track = placed[new_index[t]] = tracks[t];
    if (track.parent >= 0) track.parent = static_cast<int32_t>(new_index[static_cast<size_t>(track.parent)]);
  }
  tracks.swap(placed);
  for (CounterSeries& c : counters) {
    if (c.track >= 0) c.track = static_cast<int32_t>(new_index[static_cast<size_t>(c.track)]);
  }
  return new_index;
}

// True when the slices at `indices` (one track's) come in (start, longer first, then added
// first) order.
bool InTrackOrder(const MappedArray<Slice>& slices, std::span<const uint32_t> indices) {
  auto before = [&](uint32_t a, uint32_t b) {
    const Slice& x = slices[a];
    const Slice& y = slices[b];
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    if (x.dur_ns != y.dur_ns) return x.dur_ns > y.dur_ns;
    return a < b;
  };
  return std::is_sorted(indices.begin(), indices.end(), before);
}

// Within runs of keys (sorted by start, then added first) that start together, rare, puts the
// longer slices first, keeping the added order among equals.
template <typename Key, typename SameStart, typename SliceOf>
void LongerFirstAmongEqualStarts(const MappedArray<Slice>& slices, std::vector<Key>& keys, SameStart same_start,
                                 SliceOf slice_of) {
  for (size_t i = 0; i + 1 < keys.size();) {
    size_t j = i + 1;
    while (j < keys.size() && same_start(keys[j], keys[i])) ++j;
    if (j - i > 1) {
      std::stable_sort(keys.begin() + static_cast<std::ptrdiff_t>(i), keys.begin() + static_cast<std::ptrdiff_t>(j),
                       [&](const Key& x, const Key& y) { return slices[slice_of(x)].dur_ns > slices[slice_of(y)].dur_ns; });
    }
    i = j;
  }
}

// Sorts the indices (ascending) of one track's slices into (start, longer first, then added
// first) order. The keys side by side: comparing through the indices would fetch two slices per
// comparison. A key is 8 bytes where the track allows, one integer: the start from the track's
// earliest in 40 bits (18 minutes) above the place in `indices` in 24 (16.7 M slices); else 16
// (start and index). On 10 GB of Kineto JSON an 8 M-slice stream is out of order: its sort held
// 20 bytes a slice at the import's peak (these keys and the index list), now 12.
void SortTrackOrder(const MappedArray<Slice>& slices, std::span<uint32_t> indices) {
  constexpr int kPlaceBits = 24;
  constexpr uint64_t kPlaceMask = (uint64_t{1} << kPlaceBits) - 1;
  int64_t earliest = std::numeric_limits<int64_t>::max(), latest = std::numeric_limits<int64_t>::min();
  for (uint32_t i : indices) {
    earliest = std::min<int64_t>(earliest, slices[i].start_ns);
    latest = std::max<int64_t>(latest, slices[i].start_ns);
  }
  if (indices.size() <= kPlaceMask + 1 &&
      static_cast<uint64_t>(latest - earliest) < (uint64_t{1} << (64 - kPlaceBits))) {
    std::vector<uint64_t> keys(indices.size());
    for (size_t k = 0; k < indices.size(); ++k) {
      keys[k] = (static_cast<uint64_t>(slices[indices[k]].start_ns - earliest) << kPlaceBits) | k;
    }
    std::sort(keys.begin(), keys.end());
    LongerFirstAmongEqualStarts(
        slices, keys, [](uint64_t x, uint64_t y) { return (x >> kPlaceBits) == (y >> kPlaceBits); },
        [&](uint64_t key) { return indices[key & kPlaceMask]; });
    for (uint64_t& key : keys) key = indices[key & kPlaceMask];  // all read before any is written
    for (size_t k = 0; k < keys.size(); ++k) indices[k] = static_cast<uint32_t>(keys[k]);
    return;
  }
  struct Key {
    int64_t start;
    uint32_t index;
  };
  std::vector<Key> keys;
  keys.reserve(indices.size());
  for (uint32_t i : indices) keys.push_back({slices[i].start_ns, i});
  std::sort(keys.begin(), keys.end(), [](const Key& x, const Key& y) {
    return x.start != y.start ? x.start < y.start : x.index < y.index;
  });
  LongerFirstAmongEqualStarts(
      slices, keys, [](const Key& x, const Key& y) { return x.start == y.start; }, [](const Key& key) { return key.index; });
  for (size_t i = 0; i < keys.size(); ++i) indices[i] = keys[i].index;
}

// Slice indices in (track, start, longer first, then added first) order. Readers mostly add
// each track's slices in time order but interleave tracks (the generator): a stable counting pass
// by track, then only the tracks found out of order are sorted, so a 100 M-slice trace costs two
// linear passes and 8 bytes per slice, not a sort of 24-byte keys.
std::vector<uint32_t> OrderByTrackThenTime(const MappedArray<Slice>& slices, size_t track_count) {
  std::vector<uint32_t> begin(track_count + 1, 0);
  for (const Slice& s : slices) ++begin[s.track + 1];
  for (size_t t = 0; t < track_count; ++t) begin[t + 1] += begin[t];
  std::vector<uint32_t> order(slices.size());
  {
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (uint32_t i = 0; i < slices.size(); ++i) order[fill[slices[i].track]++] = i;
  }
  for (size_t t = 0; t < track_count; ++t) {
    const std::span<uint32_t> track(order.data() + begin[t], begin[t + 1] - begin[t]);
    if (!InTrackOrder(slices, track)) SortTrackOrder(slices, track);
  }
  return order;
}

// Puts at each position i of [lo, hi) what was at order[i - offset] (`order` maps [lo, hi) onto
// itself), in place, following the permutation's cycles: the extra memory is a bit per slice,
// where a gather into a copy needed a copy of every slice of the window at the import's peak (a
// Kineto stream out of time order is a third of a big trace). The cycles jump about the window,
// which a gather does not; on 10 GB of Kineto JSON (an 8 M-slice stream out of order) the import
// took 22.0 s before and 22.4 s after, and its peak fell by 4 bytes per slice with the sorting
// done track by track.
template <typename Items>
void Permute(std::span<const uint32_t> order, size_t offset, size_t lo, size_t hi, Items& items) {
  if (items.empty()) return;
  auto source = [&](size_t i) -> size_t { return order[i - offset]; };
  std::vector<bool> placed(hi - lo, false);
  for (size_t start = lo; start < hi; ++start) {
    if (placed[start - lo] || source(start) == start) continue;
    const auto value = items[start];
    size_t i = start;
    while (source(i) != start) {
      items[i] = items[source(i)];
      placed[i - lo] = true;
      i = source(i);
    }
    items[i] = value;
    placed[i - lo] = true;
  }
}

// True when slice y may follow slice x: (track, start, longer first) order.
bool InTraceOrder(const Slice& x, const Slice& y) {
  return x.track < y.track ||
         (x.track == y.track && (x.start_ns < y.start_ns || (x.start_ns == y.start_ns && x.dur_ns >= y.dur_ns)));
}

// True when the slices already come in (track, start, longer first) order.
bool SlicesInOrder(const MappedArray<Slice>& slices) {
  for (size_t i = 1; i < slices.size(); ++i) {
    if (!InTraceOrder(slices[i - 1], slices[i])) return false;
  }
  return true;
}

}  // namespace

void TraceBuilder::Reorder(std::span<const uint32_t> order, size_t offset) {
  // The permutation as closed windows: runs [lo, hi) whose slices all stay inside them (a track
  // sorted on its own is one), each permuted apart.
  auto source = [&](size_t i) -> size_t { return order[i - offset]; };
  const size_t end = offset + order.size();
  std::vector<std::pair<size_t, size_t>> windows;
  for (size_t i = offset; i < end;) {
    if (source(i) == i) {
      ++i;
      continue;
    }
    const size_t lo = i;
    size_t reach = source(i);
    do {
      reach = std::max<size_t>(reach, source(i));
      ++i;
    } while (i <= reach);
    windows.emplace_back(lo, i);
  }
  if (windows.empty()) return;
  const size_t lo = windows.front().first, hi = windows.back().second;
  std::vector<uint32_t> new_index(hi - lo);  // of the slices from the first window to the last
  for (size_t i = lo; i < hi; ++i) new_index[source(i) - lo] = static_cast<uint32_t>(i);
  for (const auto& [first, last] : windows) {
    Permute(order, offset, first, last, slices_);
    Permute(order, offset, first, last, trace_.node_refs_);
  }
  RenumberSlices([&](uint32_t& slice) {
    if (slice >= lo && slice < hi) slice = new_index[slice - lo];
  });
}

void TraceBuilder::RenumberSlices(const std::function<void(uint32_t&)>& renumber) {
  for (Flow& flow : trace_.flows_) {
    renumber(flow.from_slice);
    uint32_t to = flow.to_slice;  // a bit-field: renumbered through a copy
    renumber(to);
    flow.to_slice = to;
  }
  for (KernelArgsTable::Row& args : trace_.kernel_args_.rows()) renumber(args.slice);
  for (TransferArgs& args : trace_.transfer_args_) renumber(args.slice);
  for (SliceArg& arg : trace_.slice_args_) renumber(arg.slice);
  trace_.details_.Renumber(renumber);
}

bool TraceBuilder::SortNearlyOrderedTrack(size_t begin, size_t end) {
  const size_t n = end - begin;
  const size_t max_strays = n / 4;
  // The strays: the slices before the latest one kept so far. What is left is in order.
  std::vector<bool> stray(n, false);
  MappedArray<uint32_t> strays;  // mapped, as the moves below: growing never holds two copies
  for (size_t i = begin + 1, kept = begin; i < end; ++i) {
    const Slice& x = slices_[kept];
    const Slice& y = slices_[i];
    if (x.start_ns < y.start_ns || (x.start_ns == y.start_ns && x.dur_ns >= y.dur_ns)) {
      kept = i;
      continue;
    }
    if (strays.size() == max_strays) return false;
    stray[i - begin] = true;
    strays.push_back(static_cast<uint32_t>(i));
  }
  // (start, longer first, then added first), as OrderByTrackThenTime orders. The strays are
  // sorted through their slices: few, so 4 bytes each rather than keys.
  auto before = [&](uint32_t a, uint32_t b) {
    const Slice& x = slices_[a];
    const Slice& y = slices_[b];
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.dur_ns != y.dur_ns ? x.dur_ns > y.dur_ns : a < b;
  };
  std::sort(strays.begin(), strays.end(), before);

  // Merge the sorted strays into the kept slices; each slice whose place changes is a move.
  struct Move {
    uint32_t from, to;
  };
  MappedArray<Move> moves;  // by `to`, as made
  size_t next_stray = 0, to = begin;
  auto place = [&](uint32_t from) {
    if (from != to) moves.push_back({from, static_cast<uint32_t>(to)});
    ++to;
  };
  for (size_t i = begin; i < end; ++i) {
    if (stray[i - begin]) continue;
    while (next_stray < strays.size() && before(strays[next_stray], static_cast<uint32_t>(i))) {
      place(strays[next_stray++]);
    }
    place(static_cast<uint32_t>(i));
  }
  while (next_stray < strays.size()) place(strays[next_stray++]);
  FreeStorage(strays);
  FreeStorage(stray);

  // The moved slices form cycles among themselves: follow them, fetching a place's move by a
  // binary search (a bit per move, not an index per slice of the track).
  auto move_into = [&](uint32_t slot) {
    return static_cast<size_t>(std::lower_bound(moves.begin(), moves.end(), slot,
                                                [](const Move& m, uint32_t p) { return m.to < p; }) -
                               moves.begin());
  };
  auto permute = [&](auto& items) {
    if (items.empty()) return;
    std::vector<bool> placed(moves.size(), false);
    for (size_t first = 0; first < moves.size(); ++first) {
      if (placed[first]) continue;
      const auto value = items[moves[first].to];
      size_t m = first;
      while (moves[m].from != moves[first].to) {
        items[moves[m].to] = items[moves[m].from];
        placed[m] = true;
        m = move_into(moves[m].from);
      }
      items[moves[m].to] = value;
      placed[m] = true;
    }
  };
  permute(slices_);
  permute(trace_.node_refs_);
  std::sort(moves.begin(), moves.end(), [](const Move& x, const Move& y) { return x.from < y.from; });
  RenumberSlices([&](uint32_t& slice) {
    if (slice < begin || slice >= end) return;
    auto it = std::lower_bound(moves.begin(), moves.end(), slice, [](const Move& m, uint32_t s) { return m.from < s; });
    if (it != moves.end() && it->from == slice) slice = it->to;
  });
  return true;
}

void TraceBuilder::SortSlices() {
  if (SlicesInOrder(slices_)) return;
  bool grouped = true;  // each track's slices in one run (TrackSliceBuffer hands them over so)
  for (size_t i = 1; i < slices_.size() && grouped; ++i) grouped = slices_[i - 1].track <= slices_[i].track;
  if (!grouped) return Reorder(OrderByTrackThenTime(slices_, trace_.tracks_.size()), 0);
  // Track by track, only those out of order: the memory is the largest such track's keys, not an
  // index per slice of the trace.
  for (size_t begin = 0; begin < slices_.size();) {
    size_t end = begin + 1;
    bool in_order = true;
    for (; end < slices_.size() && slices_[end].track == slices_[begin].track; ++end) {
      const Slice& x = slices_[end - 1];
      const Slice& y = slices_[end];
      in_order = in_order && (x.start_ns < y.start_ns || (x.start_ns == y.start_ns && x.dur_ns >= y.dur_ns));
    }
    if (!in_order && !SortNearlyOrderedTrack(begin, end)) {
      std::vector<uint32_t> track(end - begin);
      std::iota(track.begin(), track.end(), static_cast<uint32_t>(begin));
      SortTrackOrder(slices_, track);
      Reorder(track, begin);
    }
    begin = end;
  }
}

Trace TraceBuilder::Build() && {
  auto& slices = slices_;
  auto& tracks = trace_.tracks_;

  // Epoch: the earliest instant of the trace, so relative times stay small and exact. The same
  // read of the slices finds whether they come in order already (a pass over 2 GB less at 10^8).
  int64_t epoch = std::numeric_limits<int64_t>::max();
  bool in_order = true;
  if (!slices.empty()) {
    int64_t first = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < slices.size(); ++i) {
      const Slice& s = slices[i];
      STEPSCOPE_CHECK(s.track < tracks.size());  // AddSlices leaves the track to the caller
      first = std::min<int64_t>(first, s.start_ns);
      if (i > 0) in_order &= InTraceOrder(slices[i - 1], s);
    }
    epoch = SaturatingAdd(base_ns_, first);
  }
  for (const CounterSeries& c : trace_.counters_) {
    for (int64_t ts : c.ts_ns) epoch = std::min(epoch, ts);
  }
  epoch = std::min(epoch, epoch_at_most_ns_);
  if (epoch == std::numeric_limits<int64_t>::max()) epoch = 0;
  trace_.epoch_ns_ = epoch;
  const bool tracks_limited = tracks.size() > Slice::kMaxTrack;
  LimitTracks();
  for (CounterSeries& c : trace_.counters_) {
    for (int64_t& ts : c.ts_ns) ts -= epoch;
  }
  for (StepWindow& w : trace_.step_windows_) {
    w.begin_ns -= epoch;
    w.end_ns -= epoch;
  }
  std::stable_sort(trace_.step_windows_.begin(), trace_.step_windows_.end(),
                   [](const StepWindow& a, const StepWindow& b) { return a.begin_ns < b.begin_ns; });

  // Readers that add each track's slices in time order, track after track (our protobuf, XSpace
  // lines, the generator) or sorted them before (SortSlices) need no order at all.
  if (tracks_limited) in_order = SlicesInOrder(slices);  // LimitTracks moved slices
  std::vector<uint32_t> order = in_order ? std::vector<uint32_t>{} : OrderByTrackThenTime(slices, tracks.size());
  auto index_at = [&](size_t k) { return in_order ? static_cast<uint32_t>(k) : order[k]; };

  // Nesting depth and overlap lanes, track by track.
  LaneAssigner assigner(trace_.strings_, tracks, slices);
  const size_t source_tracks = tracks.size();
  for (size_t begin = 0; begin < slices.size();) {
    const uint32_t track = slices[index_at(begin)].track;
    size_t end = begin;
    while (end < slices.size() && slices[index_at(end)].track == track) ++end;
    const int64_t moved = assigner.Assign(track, end - begin, [&](size_t k) { return index_at(begin + k); });
    if (!tracks[track].concurrent) trace_.import_stats_.Add("overlap_moved_to_lane", moved);
    begin = end;
  }
  trace_.import_stats_.Add("slices_made_instant_at_track_limit", assigner.lost_to_track_limit());
  depths_clamped_ += assigner.depths_clamped();
  if (tracks.size() != source_tracks) {
    // Some slices moved to overlap lanes. Each lane follows its source track and holds slices of
    // that track in its time order: a stable pass by track gives the same order as sorting by
    // (track, time) again, and moves slices only within their source track's range (local moves;
    // lanes after all tracks made this one permutation across the whole trace).
    const std::vector<uint32_t> new_index =
        PlaceLanesAfterSources(tracks, source_tracks, assigner.lane_sources(), trace_.counters_);
    for (Slice& slice : slices) slice.track = new_index[slice.track];
    if (in_order) {
      order.resize(slices.size());
      std::iota(order.begin(), order.end(), 0u);
      in_order = false;
    }
    std::vector<uint32_t> begin(tracks.size() + 1, 0);
    for (uint32_t index : order) ++begin[slices[index].track + 1];
    for (size_t t = 0; t < tracks.size(); ++t) begin[t + 1] += begin[t];
    std::vector<uint32_t> by_track(order.size());
    for (uint32_t index : order) by_track[begin[slices[index].track]++] = index;
    order.swap(by_track);
  }

  // Apply the permutation to slices, refs, flows and arguments (nothing to do when the reader
  // added the slices in order already: our own protobuf, XSpace lines).
  Reorder(order, 0);
  FreeStorage(order);
  auto by_slice = [](const auto& a, const auto& b) { return a.slice < b.slice; };
  // Sorted in place and not shrunk: capacity never written is never resident, and shrinking
  // would copy the table at the import's peak.
  auto sort_args = [&](auto& table) {
    if (!std::is_sorted(table.begin(), table.end(), by_slice)) std::sort(table.begin(), table.end(), by_slice);
  };
  sort_args(trace_.kernel_args_.rows());
  sort_args(trace_.transfer_args_);
  trace_.details_.Finish(epoch);
  if (!std::is_sorted(trace_.slice_args_.begin(), trace_.slice_args_.end(), by_slice)) {
    // By slice index, keeping each slice's order: a counting sort (arguments come several per
    // slice, millions in a large trace).
    std::vector<uint32_t> begin(slices.size() + 1, 0);
    for (const SliceArg& arg : trace_.slice_args_) ++begin[arg.slice + 1];
    for (size_t i = 0; i < slices.size(); ++i) begin[i + 1] += begin[i];
    std::vector<SliceArg> sorted_args(trace_.slice_args_.size());
    for (const SliceArg& arg : trace_.slice_args_) sorted_args[begin[arg.slice]++] = arg;
    trace_.slice_args_.swap(sorted_args);
  }
  if (payload_factory_) {
    trace_.payload_ = payload_factory_(trace_.node_refs_, slices.size());
    payload_factory_ = nullptr;
  }
  // The payload knows each slice's record.
  if (trace_.payload_ != nullptr) FreeStorage(trace_.node_refs_);

  // One pass puts the slices on the epoch, counts them per track and finds the span.
  trace_.track_begin_.assign(tracks.size() + 1, 0);
  RebaseSlices(slices.empty() ? 0 : SaturatingSub(base_ns_, epoch));
  for (size_t t = 0; t < tracks.size(); ++t) trace_.track_begin_[t + 1] += trace_.track_begin_[t];
  return std::move(trace_);
}

void TraceBuilder::LimitTracks() {
  auto& tracks = trace_.tracks_;
  if (tracks.size() <= Slice::kMaxTrack) return;
  // More tracks than a slice can name: the slices of the tracks past the limit become instants
  // on one catch-all track, counted (a concurrent track: instants never need a lane).
  const uint32_t catch_all = Slice::kMaxTrack - 1;
  Track& last = tracks[catch_all];
  last.name = trace_.strings_.Intern("(tracks past " + std::to_string(catch_all) + ")");
  last.concurrent = true;
  int64_t moved = 0;
  for (Slice& s : slices_) {
    if (s.track < catch_all) continue;
    s.track = catch_all;
    s.dur_ns = 0;
    ++moved;
  }
  for (CounterSeries& c : trace_.counters_) c.track = std::min<int32_t>(c.track, catch_all);
  tracks.resize(catch_all + 1);
  trace_.import_stats_.Add("slices_made_instant_at_track_limit", moved);
}

void TraceBuilder::RebaseSlices(int64_t shift_ns) {
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  uint32_t* per_track = trace_.track_begin_.data() + 1;
  for (Slice& s : slices_) {
    // The epoch is at or before the base: starts move up, and may pass the limit.
    int64_t start = SaturatingAdd(s.start_ns, shift_ns);
    if (start > Slice::kMaxStartNs) [[unlikely]] {
      start = Slice::kMaxStartNs;
      ++starts_clamped_;
    }
    ++per_track[s.track];
    first = std::min(first, start);
    last = std::max<int64_t>(last, start + s.dur_ns);
    s.start_ns = start;
  }
  if (!slices_.empty()) {
    trace_.span_begin_ns_ = first;
    trace_.span_end_ns_ = last;
  }
  trace_.slices_ = std::move(slices_);
  trace_.kernel_args_.Freeze(trace_.slices_.size());
  trace_.import_stats_.Add("negative_duration_clamped", negative_durations_);
  trace_.import_stats_.Add("slice_start_clamped_at_78_hours", starts_clamped_);
  trace_.import_stats_.Add("slice_duration_clamped_at_9_7_hours", durations_clamped_);
  trace_.import_stats_.Add("slice_depth_clamped_at_511", depths_clamped_);
}

}  // namespace stepscope::trace
