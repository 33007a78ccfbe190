// The critical path across ranks (profiler/analysis/rank_critical_path.h) on a merged timeline.
// The analysis walks the ranks' own traces, which the merge consumes; the path's slices are
// therefore noted before the merge (PendingRankPaths) and found in the merged trace after it
// (ResolveRankPaths): on the merged copy of the slice's track, at the slice's start moved by the
// correction the merge applied to its input, with the same name and duration.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "profiler/analysis/merge.h"
#include "profiler/analysis/rank_critical_path.h"
#include "profiler/trace/trace.h"

namespace stepscope::viewer {

// One step's path on the merged timeline.
struct MergedRankPath {
  int64_t step = -1;
  int64_t begin_ns = 0, end_ns = 0, length_ns = 0;  // merged trace time
  int64_t bound_ns[analysis::kPathBounds] = {};
  analysis::PathBound bound_by = analysis::PathBound::kCpu;
  int64_t transfer_ns = 0, gap_ns = 0;
  // The path's elements in path order, `slice` an index into the merged trace; an element whose
  // slice was not found in the merge is left out (counted in `unmatched`). The first element of
  // every segment after the first has the edge "rank": the path left the rank it waited on.
  std::vector<analysis::PathElement> elements;
  std::vector<int32_t> element_rank;       // per element
  std::vector<size_t> jumps;               // positions in `elements` where the path changes rank
  std::vector<analysis::RankWait> waits;   // waits[k]: the jump into segment k + 1
  std::vector<analysis::RankHold> holds;
  int32_t held_by = -1;                    // index into holds, as CrossRankPath::held_by
  int64_t unmatched = 0;
};

// The paths' slices, noted while the ranks' traces are still whole.
struct PendingRankPaths {
  analysis::CrossRankPaths paths;
  struct Key {
    std::vector<std::string> track_names;  // the slice's track, then its parents to the root
    std::string name;
    int64_t absolute_start_ns = 0, dur_ns = 0;
  };
  std::vector<std::vector<std::vector<Key>>> keys;  // [step][segment][element]
};
PendingRankPaths NoteRankPaths(std::span<const trace::Trace> traces, analysis::CrossRankPaths paths);

// The noted paths in the merged trace, clocks moved as `report` (MergeTraces') moved each input.
std::vector<MergedRankPath> ResolveRankPaths(PendingRankPaths pending, const trace::Trace& merged,
                                             const analysis::MergeReport& report);

}  // namespace stepscope::viewer
