// The order a user gave the tracks (moved in the Tracks pane, by its buttons or by dragging),
// kept with the window's saved layout and given back when the same trace is opened again. Tracks
// are named so that a new reading of the file finds them: a track by its full name and lane, a
// group of siblings by the names of its parent's track and the parents above it. Only the groups
// whose order differs from the trace's own are kept. No Qt.
#pragma once

#include <string>
#include <vector>

#include "profiler/trace/trace.h"
#include "viewer/timeline_data/track_layout.h"

namespace stepscope::viewer {

// Each group moved: its parent's key ("" for the roots), then its children's keys in order.
using SavedTrackOrder = std::vector<std::vector<std::string>>;

SavedTrackOrder SaveTrackOrder(const trace::Trace& trace, const TrackLayout& layout);
// Gives the saved groups back to `layout`: in each group found, the children named come first in
// the saved order, the others (new in this reading) after them as they were. Returns the groups
// applied; a group whose parent is gone is skipped.
int RestoreTrackOrder(const trace::Trace& trace, const SavedTrackOrder& saved, TrackLayout& layout);

}  // namespace stepscope::viewer
