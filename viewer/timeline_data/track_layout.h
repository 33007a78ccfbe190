// The rows of the timeline: the track tree (host/rank -> device -> stream/thread lanes) flattened
// in display order, one header row per track that has children and one row per nesting level
// of a track that has slices, and kCounterRows rows per counter track drawn under its device
// (after the track's own slices, before its children). Collapsing a track hides everything below
// it; hiding a track removes it and its subtree; a filter keeps the tracks whose name matches
// (with their subtree and the tracks above them); pinned tracks come first, and siblings can be
// reordered. No Qt: the row arithmetic is tested on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::viewer {

class TimelineIndex;

// Children of every track in display order (sort index, then lane): slot 0 holds the roots,
// slot t + 1 the children of track t.
std::vector<std::vector<uint32_t>> TrackChildren(const trace::Trace& trace);

// A lane whose every slice repeats one recorded on another lane (TensorFlow's /stream:all and
// /memcpy aggregates: slices flagged duplicate). Hidden until the user shows it (the track tree's
// check box), as the analyses skip these slices and the exports drop the lanes; a lane with a
// slice of its own (a trace recorded with the aggregates only) is shown.
bool IsRepeatLane(const trace::Trace& trace, uint32_t track);

struct TimelineRow {
  enum class Kind : uint8_t { kHeader, kSlices, kCounter };
  Kind kind = Kind::kSlices;
  uint32_t track = 0;
  int depth = 0;       // nesting level shown on this row (kSlices); row of the counter (kCounter)
  int indent = 0;      // tree depth of the track
  bool first_of_track = true;  // the row that carries the track's label
  uint32_t counter = 0;        // kCounter: index into the counter tracks
};

class TrackLayout {
 public:
  TrackLayout(const trace::Trace& trace, const TimelineIndex& index);

  // Children of a track (roots for -1) in display order: sort index, then creation order.
  const std::vector<uint32_t>& children(int32_t track) const;
  const std::vector<uint32_t>& roots() const { return children(-1); }

  void SetCollapsed(uint32_t track, bool collapsed);
  bool collapsed(uint32_t track) const { return collapsed_[track]; }
  // Repeat lanes (IsRepeatLane) start hidden.
  void SetHidden(uint32_t track, bool hidden);
  bool hidden(uint32_t track) const { return hidden_[track]; }

  // Counter tracks (CounterTracks), each given by the track it is drawn under; a counter takes
  // kCounterRows rows so that it is tall enough to read while every row keeps one height.
  static constexpr int kCounterRows = 2;
  void SetCounters(std::vector<uint32_t> owners);
  size_t counter_count() const { return counter_hidden_.size(); }
  void SetCounterHidden(uint32_t counter, bool hidden);
  bool counter_hidden(uint32_t counter) const { return counter_hidden_[counter]; }
  // The first row of a counter, or -1 when it is not shown.
  int RowOfCounter(uint32_t counter) const;
  // Tracks whose name or path contains `pattern` (ignoring case) or matches it as a regular
  // expression (ECMAScript, ignoring case) are kept, with their subtree and the tracks above
  // them; the others are left out. Empty: no filter. False when the pattern is no valid regular
  // expression (then only the substring match applies).
  bool SetFilter(const std::string& pattern);
  const std::string& filter() const { return filter_; }
  bool filtered_out(uint32_t track) const { return filtered_out_[track]; }
  // Pinned tracks' rows come first, in the order they were pinned, each with its subtree; the
  // timeline keeps them at the top while the other rows scroll.
  void SetPinned(uint32_t track, bool pinned);
  bool pinned(uint32_t track) const;
  const std::vector<uint32_t>& pinned_tracks() const { return pinned_; }
  int pinned_row_count() const { return pinned_rows_; }
  // Moves a track `delta` places among its siblings (clamped to the first and last place);
  // false when it did not move.
  bool MoveTrack(uint32_t track, int delta);
  // Moves a track to place `place` among its siblings, counted before it leaves its own place
  // (as a drop in the Tracks pane or on the timeline gives it); false when it did not move.
  bool MoveTrackTo(uint32_t track, int place);
  // Where a track dragged by its label to `row_position` (a row index plus the fraction of the
  // row above the pointer) would go among its siblings: before the sibling whose rows (its own
  // and those shown below it) hold that position, or after it from the middle of those rows on.
  // `place` counts as MoveTrackTo's; `line_row` is the row the drop goes before (the line to
  // draw). Both -1 over another parent's tracks (refused, as in the Tracks pane) or no row.
  struct SiblingDrop {
    int place = -1;
    int line_row = -1;
  };
  SiblingDrop DropAt(uint32_t track, double row_position) const;
  // Puts the children of `parent` (roots for -1) in `order`, a permutation of them (else false,
  // nothing changed): a saved order given back (track_order.h).
  bool SetChildOrder(int32_t parent, const std::vector<uint32_t>& order);

  const std::vector<TimelineRow>& rows() const { return rows_; }
  // The row showing `slice`, or -1.
  int RowOfSlice(uint32_t slice) const;

 private:
  void Rebuild();
  void Append(uint32_t track, int indent, uint32_t pinned_root);
  void AppendCounters(uint32_t track, int indent);

  const trace::Trace* trace_;
  const TimelineIndex* index_;
  std::vector<std::vector<uint32_t>> children_;  // [track + 1]; slot 0 holds the roots
  std::vector<bool> collapsed_;
  std::vector<bool> hidden_;
  std::string filter_;
  std::vector<bool> filtered_out_;
  std::vector<uint32_t> pinned_;  // in pin order
  int pinned_rows_ = 0;
  std::vector<TimelineRow> rows_;
  std::vector<int> first_row_;
  std::vector<std::vector<uint32_t>> counters_of_;  // per track, its counters in order
  std::vector<bool> counter_hidden_;
};

}  // namespace stepscope::viewer
