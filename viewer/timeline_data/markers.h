// Markers the user drops on the timeline (M): a time and a label each, kept per document, in
// time order. No Qt: the list's rules are tested on their own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepscope::viewer {

struct Marker {
  int64_t id = 0;       // stable across renames and reordering
  int64_t time_ns = 0;  // trace time
  std::string label;
  bool operator==(const Marker&) const = default;
};

class MarkerSet {
 public:
  // Adds a marker; an empty label becomes "M<n>" (n counts the markers ever added).
  const Marker& Add(int64_t time_ns, std::string label = "");
  // False when no marker has this id.
  bool Rename(int64_t id, std::string label);
  bool Remove(int64_t id);
  void Clear() { markers_.clear(); }
  const Marker* Find(int64_t id) const;
  // In time order (equal times: in the order they were added).
  const std::vector<Marker>& markers() const { return markers_; }
  bool empty() const { return markers_.empty(); }

 private:
  std::vector<Marker> markers_;
  int64_t next_id_ = 1;
};

}  // namespace stepscope::viewer
