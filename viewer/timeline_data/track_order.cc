// Saving and restoring the tracks' order by name (track_order.h).
#include "viewer/timeline_data/track_order.h"

#include <map>

namespace stepscope::viewer {
namespace {

std::string TrackKey(const trace::Trace& trace, uint32_t track) {
  const trace::Track& t = trace.tracks()[track];
  return std::string(trace.str(t.full_name)) + '\x1f' + std::to_string(t.lane);
}

// The keys of a track and its parents, root first, joined: a group's name.
std::string PathKey(const trace::Trace& trace, int32_t track) {
  std::string key;
  for (int32_t t = track; t >= 0; t = trace.tracks()[static_cast<size_t>(t)].parent) {
    key = TrackKey(trace, static_cast<uint32_t>(t)) + (key.empty() ? "" : "\x1e" + key);
  }
  return key;
}

}  // namespace

SavedTrackOrder SaveTrackOrder(const trace::Trace& trace, const TrackLayout& layout) {
  SavedTrackOrder saved;
  const std::vector<std::vector<uint32_t>> original = TrackChildren(trace);
  for (size_t slot = 0; slot < original.size(); ++slot) {
    const int32_t parent = static_cast<int32_t>(slot) - 1;
    const std::vector<uint32_t>& shown = layout.children(parent);
    if (shown == original[slot]) continue;
    std::vector<std::string>& group = saved.emplace_back();
    group.push_back(PathKey(trace, parent));
    for (uint32_t child : shown) group.push_back(TrackKey(trace, child));
  }
  return saved;
}

int RestoreTrackOrder(const trace::Trace& trace, const SavedTrackOrder& saved, TrackLayout& layout) {
  std::map<std::string, int32_t> parents;  // only the tracks with children can be a group's parent
  parents.emplace("", -1);
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!layout.children(static_cast<int32_t>(t)).empty()) parents.emplace(PathKey(trace, static_cast<int32_t>(t)), t);
  }
  int applied = 0;
  for (const std::vector<std::string>& group : saved) {
    if (group.empty()) continue;
    const auto parent = parents.find(group.front());
    if (parent == parents.end()) continue;
    std::vector<uint32_t> rest = layout.children(parent->second), order;
    // Siblings of one key (rare) are taken in their current order.
    for (size_t k = 1; k < group.size(); ++k) {
      for (auto it = rest.begin(); it != rest.end(); ++it) {
        if (TrackKey(trace, *it) == group[k]) {
          order.push_back(*it);
          rest.erase(it);
          break;
        }
      }
    }
    order.insert(order.end(), rest.begin(), rest.end());
    if (layout.SetChildOrder(parent->second, order)) ++applied;
  }
  return applied;
}

}  // namespace stepscope::viewer
