// The timeline's rows (track_layout.h): the track tree flattened, collapsed, hidden and
// filtered-out tracks left out, pinned tracks first.
#include "viewer/timeline_data/track_layout.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <optional>
#include <regex>

#include "viewer/timeline_data/timeline_index.h"

namespace stepscope::viewer {

std::vector<std::vector<uint32_t>> TrackChildren(const trace::Trace& trace) {
  const auto& tracks = trace.tracks();
  std::vector<std::vector<uint32_t>> children(tracks.size() + 1);
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    children[static_cast<size_t>(tracks[t].parent + 1)].push_back(t);
  }
  for (auto& list : children) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      if (tracks[a].sort_index != tracks[b].sort_index) {
        return tracks[a].sort_index < tracks[b].sort_index;
      }
      return tracks[a].lane < tracks[b].lane;
    });
  }
  return children;
}

bool IsRepeatLane(const trace::Trace& trace, uint32_t track) {
  const auto slices = trace.track_slices(track);
  return !slices.empty() && std::all_of(slices.begin(), slices.end(), [](const trace::Slice& s) { return s.duplicate(); });
}

TrackLayout::TrackLayout(const trace::Trace& trace, const TimelineIndex& index)
    : trace_(&trace), index_(&index), children_(TrackChildren(trace)) {
  const auto& tracks = trace.tracks();
  collapsed_.assign(tracks.size(), false);
  hidden_.assign(tracks.size(), false);
  filtered_out_.assign(tracks.size(), false);
  for (uint32_t t = 0; t < tracks.size(); ++t) hidden_[t] = IsRepeatLane(trace, t);
  Rebuild();
}

const std::vector<uint32_t>& TrackLayout::children(int32_t track) const {
  return children_[static_cast<size_t>(track + 1)];
}

void TrackLayout::SetCollapsed(uint32_t track, bool collapsed) {
  if (collapsed_[track] == collapsed) return;
  collapsed_[track] = collapsed;
  Rebuild();
}

void TrackLayout::SetHidden(uint32_t track, bool hidden) {
  if (hidden_[track] == hidden) return;
  hidden_[track] = hidden;
  Rebuild();
}

int TrackLayout::RowOfSlice(uint32_t slice) const {
  const trace::Slice& s = trace_->slices()[slice];
  const int first = first_row_[s.track];
  if (first < 0) return -1;
  const bool leaf = children(static_cast<int32_t>(s.track)).empty();
  if (collapsed_[s.track]) return leaf ? first : -1;
  // A track with children starts with its header row.
  return first + (leaf ? 0 : 1) + s.depth;
}

void TrackLayout::SetCounters(std::vector<uint32_t> owners) {
  counters_of_.assign(trace_->tracks().size(), {});
  for (uint32_t c = 0; c < owners.size(); ++c) {
    if (owners[c] < counters_of_.size()) counters_of_[owners[c]].push_back(c);
  }
  counter_hidden_.assign(owners.size(), false);
  Rebuild();
}

void TrackLayout::SetCounterHidden(uint32_t counter, bool hidden) {
  if (counter >= counter_hidden_.size() || counter_hidden_[counter] == hidden) return;
  counter_hidden_[counter] = hidden;
  Rebuild();
}

int TrackLayout::RowOfCounter(uint32_t counter) const {
  for (size_t r = 0; r < rows_.size(); ++r) {
    if (rows_[r].kind == TimelineRow::Kind::kCounter && rows_[r].counter == counter) return static_cast<int>(r);
  }
  return -1;
}

void TrackLayout::AppendCounters(uint32_t track, int indent) {
  if (counters_of_.empty()) return;
  for (uint32_t c : counters_of_[track]) {
    if (counter_hidden_[c]) continue;
    for (int part = 0; part < kCounterRows; ++part) {
      rows_.push_back(TimelineRow{TimelineRow::Kind::kCounter, track, part, indent, part == 0, c});
    }
  }
}

namespace {

bool ContainsIgnoringCase(std::string_view text, std::string_view needle) {
  return std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         }) != text.end();
}

}  // namespace

bool TrackLayout::SetFilter(const std::string& pattern) {
  filter_ = pattern;
  const size_t n = trace_->tracks().size();
  bool valid = true;
  std::optional<std::regex> regex;
  if (!pattern.empty()) {
    try {
      regex.emplace(pattern, std::regex::ECMAScript | std::regex::icase);
    } catch (const std::regex_error&) {
      valid = false;  // a pattern typed half-way ("gpu[") still filters by substring
    }
  }
  std::vector<bool> match(n, pattern.empty());
  for (uint32_t t = 0; t < n && !pattern.empty(); ++t) {
    const std::string_view name = trace_->str(trace_->tracks()[t].name);
    const std::string path = trace_->TrackPath(t);
    match[t] = ContainsIgnoringCase(name, pattern) || ContainsIgnoringCase(path, pattern) ||
               (regex && (std::regex_search(name.begin(), name.end(), *regex) || std::regex_search(path, *regex)));
  }
  // Kept: a match, what is below a match, and what is above one (so the match has its place).
  std::vector<bool> keep(n, false);
  for (uint32_t t = 0; t < n; ++t) {
    if (!match[t]) continue;
    for (auto up = static_cast<int32_t>(t); up >= 0 && !keep[static_cast<size_t>(up)];
         up = trace_->tracks()[static_cast<size_t>(up)].parent) {
      keep[static_cast<size_t>(up)] = true;
    }
  }
  std::vector<bool> in_subtree = match;
  std::vector<uint32_t> below;
  for (uint32_t t = 0; t < n; ++t) {
    if (match[t]) below.push_back(t);
  }
  while (!below.empty()) {
    const uint32_t t = below.back();
    below.pop_back();
    for (uint32_t child : children(static_cast<int32_t>(t))) {
      if (!in_subtree[child]) {
        in_subtree[child] = keep[child] = true;
        below.push_back(child);
      }
    }
  }
  for (uint32_t t = 0; t < n; ++t) filtered_out_[t] = !keep[t];
  Rebuild();
  return valid;
}

void TrackLayout::SetPinned(uint32_t track, bool pinned) {
  const auto it = std::find(pinned_.begin(), pinned_.end(), track);
  if (pinned == (it != pinned_.end())) return;
  if (pinned) {
    pinned_.push_back(track);
  } else {
    pinned_.erase(it);
  }
  Rebuild();
}

bool TrackLayout::pinned(uint32_t track) const {
  return std::find(pinned_.begin(), pinned_.end(), track) != pinned_.end();
}

bool TrackLayout::MoveTrack(uint32_t track, int delta) {
  auto& siblings = children_[static_cast<size_t>(trace_->tracks()[track].parent + 1)];
  const auto it = std::find(siblings.begin(), siblings.end(), track);
  const auto from = static_cast<int>(it - siblings.begin());
  const int to = std::clamp(from + delta, 0, static_cast<int>(siblings.size()) - 1);
  if (to == from) return false;
  siblings.erase(it);
  siblings.insert(siblings.begin() + to, track);
  Rebuild();
  return true;
}

bool TrackLayout::MoveTrackTo(uint32_t track, int place) {
  const auto& siblings = children(trace_->tracks()[track].parent);
  const auto from = static_cast<int>(std::find(siblings.begin(), siblings.end(), track) - siblings.begin());
  // Below its own place: the siblings after it move up one once it has left.
  return MoveTrack(track, (place > from ? place - 1 : place) - from);
}

TrackLayout::SiblingDrop TrackLayout::DropAt(uint32_t track, double row_position) const {
  const int row = static_cast<int>(std::floor(row_position));
  if (row < 0 || row >= static_cast<int>(rows_.size())) return {};
  const int32_t parent = trace_->tracks()[track].parent;
  // The sibling whose subtree holds the row: the row's track, or the track above it under `parent`.
  int32_t sibling = static_cast<int32_t>(rows_[static_cast<size_t>(row)].track);
  while (sibling >= 0 && trace_->tracks()[static_cast<size_t>(sibling)].parent != parent) {
    sibling = trace_->tracks()[static_cast<size_t>(sibling)].parent;
  }
  if (sibling < 0) return {};
  const auto& siblings = children(parent);
  const auto place = static_cast<int>(std::find(siblings.begin(), siblings.end(), static_cast<uint32_t>(sibling)) -
                                      siblings.begin());
  // Its rows: from its first, while they show it or a track below it (a pinned sibling's block is
  // at the top, the others' where the tree puts them; the row is in one of them).
  auto below_sibling = [&](uint32_t t) {
    for (int32_t up = static_cast<int32_t>(t); up >= 0; up = trace_->tracks()[static_cast<size_t>(up)].parent) {
      if (up == sibling) return true;
    }
    return false;
  };
  int first = row, end = row + 1;
  while (first > 0 && below_sibling(rows_[static_cast<size_t>(first - 1)].track)) --first;
  while (end < static_cast<int>(rows_.size()) && below_sibling(rows_[static_cast<size_t>(end)].track)) ++end;
  if (row_position < (first + end) / 2.0) return {place, first};
  return {place + 1, end};
}

bool TrackLayout::SetChildOrder(int32_t parent, const std::vector<uint32_t>& order) {
  auto& siblings = children_[static_cast<size_t>(parent + 1)];
  if (!std::is_permutation(order.begin(), order.end(), siblings.begin(), siblings.end())) return false;
  siblings = order;
  Rebuild();
  return true;
}

void TrackLayout::Rebuild() {
  rows_.clear();
  first_row_.assign(trace_->tracks().size(), -1);
  for (uint32_t track : pinned_) Append(track, 0, track);
  pinned_rows_ = static_cast<int>(rows_.size());
  for (uint32_t root : roots()) Append(root, 0, UINT32_MAX);
}

void TrackLayout::Append(uint32_t track, int indent, uint32_t pinned_root) {
  if (hidden_[track] || filtered_out_[track]) return;
  // A pinned track is shown once, at the top (as its own pinned root).
  if (track != pinned_root && pinned(track)) return;
  const auto& kids = children(static_cast<int32_t>(track));
  const int levels = index_->depth_count(track);
  first_row_[track] = static_cast<int>(rows_.size());
  if (!kids.empty()) {
    rows_.push_back(TimelineRow{TimelineRow::Kind::kHeader, track, 0, indent, true});
    if (collapsed_[track]) return;
  } else if (collapsed_[track]) {
    // A collapsed leaf keeps one row: its outermost level.
    rows_.push_back(TimelineRow{TimelineRow::Kind::kSlices, track, 0, indent, true});
    return;
  }
  for (int depth = 0; depth < levels; ++depth) {
    rows_.push_back(TimelineRow{TimelineRow::Kind::kSlices, track, depth, indent,
                                kids.empty() && depth == 0});
  }
  if (kids.empty() && levels == 0) {
    rows_.push_back(TimelineRow{TimelineRow::Kind::kSlices, track, 0, indent, true});
  }
  // After the track's own levels, so that RowOfSlice's arithmetic holds.
  AppendCounters(track, kids.empty() ? indent : indent + 1);
  for (uint32_t child : kids) Append(child, indent + 1, pinned_root);
}

}  // namespace stepscope::viewer
