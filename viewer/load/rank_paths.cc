// The cross-rank critical path found again on the merged timeline (rank_paths.h): each path
// slice noted by its track's names, its name, absolute start and duration before the merge, and
// looked up among the merged copy of that track's slices after it.
#include "viewer/load/rank_paths.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

namespace stepscope::viewer {
namespace {

std::vector<std::string> TrackNames(const trace::Trace& trace, uint32_t track) {
  std::vector<std::string> names;
  for (int32_t t = static_cast<int32_t>(track); t >= 0; t = trace.tracks()[static_cast<size_t>(t)].parent) {
    names.emplace_back(trace.str(trace.tracks()[static_cast<size_t>(t)].name));
  }
  return names;
}

// The merged tracks of one input (under its process track), by their names up to that process.
class InputTracks {
 public:
  InputTracks(const trace::Trace& merged, uint32_t process_track) {
    const auto& tracks = merged.tracks();
    for (uint32_t t = 0; t < tracks.size(); ++t) {
      std::vector<std::string> names;
      int32_t at = static_cast<int32_t>(t);
      while (at >= 0 && static_cast<uint32_t>(at) != process_track) {
        names.emplace_back(merged.str(tracks[static_cast<size_t>(at)].name));
        at = tracks[static_cast<size_t>(at)].parent;
      }
      if (at >= 0) by_names_.emplace(std::move(names), t);
    }
  }
  // The merge puts an input's tracks under a process of its own: the input's root (its host or
  // process) keeps its name below it, so the input's chain is the merged chain up to the process.
  const uint32_t* Find(const std::vector<std::string>& names) const {
    auto it = by_names_.find(names);
    return it == by_names_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::vector<std::string>, uint32_t> by_names_;
};

// The merged slice of `key` on `track`: the same name and duration, starting nearest to `start_ns`
// (the merge moved it there; within 1 µs, for a drift's rounding), or -1.
int64_t FindSlice(const trace::Trace& merged, uint32_t track, const PendingRankPaths::Key& key, int64_t start_ns) {
  const std::span<const trace::Slice> slices = merged.track_slices(track);
  constexpr int64_t kTolerance = 1000;
  auto it = std::lower_bound(slices.begin(), slices.end(), start_ns - kTolerance,
                             [](const trace::Slice& s, int64_t t) { return s.start_ns < t; });
  int64_t best = -1, best_distance = kTolerance + 1;
  for (; it != slices.end() && it->start_ns <= start_ns + kTolerance; ++it) {
    if (it->dur_ns != key.dur_ns || merged.str(merged.slice_name(*it)) != key.name) continue;
    const int64_t distance = std::llabs(it->start_ns - start_ns);
    if (distance < best_distance) {
      best_distance = distance;
      best = (it - slices.begin()) + (slices.data() - merged.slices().data());
    }
  }
  return best;
}

}  // namespace

PendingRankPaths NoteRankPaths(std::span<const trace::Trace> traces, analysis::CrossRankPaths paths) {
  PendingRankPaths pending;
  pending.keys.resize(paths.steps.size());
  for (size_t p = 0; p < paths.steps.size(); ++p) {
    for (const analysis::RankSegment& segment : paths.steps[p].segments) {
      const trace::Trace& trace = traces[segment.input];
      auto& keys = pending.keys[p].emplace_back();
      for (const analysis::PathElement& e : segment.path.elements) {
        const trace::Slice& slice = trace.slices()[e.slice];
        keys.push_back({TrackNames(trace, slice.track), std::string(trace.str(trace.slice_name(slice))),
                        trace.epoch_ns() + slice.start_ns, slice.dur_ns});
      }
    }
  }
  pending.paths = std::move(paths);
  return pending;
}

std::vector<MergedRankPath> ResolveRankPaths(PendingRankPaths pending, const trace::Trace& merged,
                                             const analysis::MergeReport& report) {
  std::vector<MergedRankPath> out;
  std::map<size_t, InputTracks> tracks_of;  // by input, built when a path first reaches it
  const int64_t origin = merged.epoch_ns();
  for (size_t p = 0; p < pending.paths.steps.size(); ++p) {
    analysis::CrossRankPath& path = pending.paths.steps[p];
    MergedRankPath& shown = out.emplace_back();
    shown.step = path.step;
    shown.begin_ns = path.begin_ns - origin;
    shown.end_ns = path.end_ns - origin;
    shown.length_ns = path.length_ns;
    std::copy(std::begin(path.bound_ns), std::end(path.bound_ns), shown.bound_ns);
    shown.bound_by = path.bound_by;
    shown.transfer_ns = path.transfer_ns;
    shown.gap_ns = path.gap_ns;
    shown.waits = std::move(path.waits);
    shown.holds = std::move(path.holds);
    shown.held_by = path.held_by;
    for (size_t s = 0; s < path.segments.size(); ++s) {
      analysis::RankSegment& segment = path.segments[s];
      const size_t input = segment.input;
      if (input >= report.inputs.size()) continue;
      const analysis::MergedInput& merged_input = report.inputs[input];
      auto tracks = tracks_of.find(input);
      if (tracks == tracks_of.end()) tracks = tracks_of.emplace(input, InputTracks(merged, merged_input.process_track)).first;
      // The merge's own correction of this input (merge.cc): its offset, or its rank's clock
      // where that clock drifts.
      const bool drifts = input < report.alignment.rank_of_input.size() &&
                          report.alignment.ranks[report.alignment.rank_of_input[input]].drift_ppm != 0;
      bool first = true;
      for (size_t k = 0; k < segment.path.elements.size(); ++k) {
        const PendingRankPaths::Key& key = pending.keys[p][s][k];
        const int64_t correction = drifts ? report.alignment.CorrectionAt(input, key.absolute_start_ns) : merged_input.offset_ns;
        const uint32_t* track = tracks->second.Find(key.track_names);
        const int64_t slice = track == nullptr ? -1 : FindSlice(merged, *track, key, key.absolute_start_ns + correction - origin);
        if (slice < 0) {
          ++shown.unmatched;
          continue;
        }
        analysis::PathElement element = std::move(segment.path.elements[k]);
        element.slice = static_cast<uint32_t>(slice);
        element.start_ns = merged.slices()[static_cast<size_t>(slice)].start_ns;
        if (first && s > 0) {
          element.edge = "rank";
          shown.jumps.push_back(shown.elements.size());
        }
        first = false;
        shown.elements.push_back(std::move(element));
        shown.element_rank.push_back(segment.rank);
      }
    }
  }
  return out;
}

}  // namespace stepscope::viewer
