// The timeline's markers (markers.h): a list kept in time order.
#include "viewer/timeline_data/markers.h"

#include <algorithm>

namespace stepscope::viewer {

const Marker& MarkerSet::Add(int64_t time_ns, std::string label) {
  const int64_t id = next_id_++;
  if (label.empty()) label = "M" + std::to_string(id);
  auto at = std::upper_bound(markers_.begin(), markers_.end(), time_ns,
                             [](int64_t t, const Marker& m) { return t < m.time_ns; });
  return *markers_.insert(at, Marker{id, time_ns, std::move(label)});
}

bool MarkerSet::Rename(int64_t id, std::string label) {
  auto it = std::find_if(markers_.begin(), markers_.end(), [&](const Marker& m) { return m.id == id; });
  if (it == markers_.end()) return false;
  it->label = std::move(label);
  return true;
}

bool MarkerSet::Remove(int64_t id) {
  return std::erase_if(markers_, [&](const Marker& m) { return m.id == id; }) > 0;
}

const Marker* MarkerSet::Find(int64_t id) const {
  auto it = std::find_if(markers_.begin(), markers_.end(), [&](const Marker& m) { return m.id == id; });
  return it == markers_.end() ? nullptr : &*it;
}

}  // namespace stepscope::viewer
