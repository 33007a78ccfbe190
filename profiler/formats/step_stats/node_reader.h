// A pass's reader of a Trace's StepStats payload (step_stats_payload.h), slice by slice (the node
// store's entries are not in slice order): for the StepStats writers, merging and the payload's
// detail decoder; every other consumer reads DetailReader (slice_details.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "profiler/trace/node_ref.h"
#include "profiler/formats/step_stats/node_store.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

class StepStatsPayload;

// Reads the NodeExecStats of many slices, decompressing each stored block once when slices are
// visited in order. `needed_fields` (NodeField bits) lets a pass skip blocks where no node has
// what it looks for: Get() is then null for their slices. One reader per thread.
class NodeReader {
 public:
  explicit NodeReader(const Trace& trace, uint32_t needed_fields = 0xffffffffu);
  ~NodeReader();
  NodeReader(const NodeReader&) = delete;
  NodeReader& operator=(const NodeReader&) = delete;
  // Valid until the next call; null when the slice has no node.
  const tf::NodeExecStats* Get(uint32_t slice);
  // The slice's node as NodeExecStats wire bytes (NodeStore::Reader::Bytes); empty when none.
  std::string_view Bytes(uint32_t slice);
  // Where the slice's node is in the source RunMetadata; invalid when it has none.
  NodeRef Ref(uint32_t slice);

 private:
  const Trace& trace_;
  const StepStatsPayload* payload_;  // null without one
  std::unique_ptr<NodeStore::Reader> reader_;
};

}  // namespace stepscope::trace
