// The StepStats payload of a Trace (trace_payload.h): every NodeExecStats of the source, kept
// compressed in a NodeStore (node_store.h) with the rest of the RunMetadata, so the pb/pbtxt
// writers and merging get the source back losslessly, and DetailReader's details of a StepStats
// slice are decoded from its node on demand (step_stats_details.cc). This header is the one way
// the StepStats format's own code reaches a trace's payload; analyses, the viewer and the other
// formats read DetailReader instead.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/formats/step_stats/node_store.h"
#include "profiler/trace/trace.h"
#include "profiler/trace/trace_payload.h"

namespace stepscope::tf {
class RunMetadata;
class NodeExecStats;
}  // namespace stepscope::tf

namespace stepscope::trace {

class StepStatsPayload final : public TracePayload {
 public:
  // `entry_of_slice`: each slice's store entry, or empty when entry = slice for the first
  // `slice_count` entries (NodeStore::Build).
  StepStatsPayload(std::shared_ptr<const NodeStore> store, std::vector<uint32_t> entry_of_slice, size_t slice_count);

  const NodeStore& store() const { return *store_; }
  // The store entry of a slice's node, NodeRef::kNone when it has none.
  uint32_t entry(uint32_t slice) const {
    if (slice >= slice_count_) return NodeRef::kNone;
    if (!entry_of_slice_.empty()) return entry_of_slice_[slice];
    return slice < store_->entry_count() ? slice : NodeRef::kNone;
  }

  std::string_view name() const override { return "StepStats"; }
  size_t memory_bytes() const override;
  NodeRef SourceRef(uint32_t slice) const override;
  std::unique_ptr<PayloadDetails> OpenDetails(const Trace& trace, uint32_t needed) const override;
  std::vector<RecordField> SourceRecord(const Trace& trace, uint32_t slice, std::string* title) const override;

 private:
  std::shared_ptr<const NodeStore> store_;
  std::vector<uint32_t> entry_of_slice_;
  size_t slice_count_;
};

// A reader's hand-over: the builder takes the metadata over, and Build() moves its nodes into the
// trace's payload (NodeStore::Build).
void SetStepStatsPayload(TraceBuilder& builder, std::shared_ptr<tf::RunMetadata> metadata);
// Or a node store being filled (binary input: the wire scan adds every node), which Build()
// finishes with `rest` (the RunMetadata without node_stats, serialised); `device_first_node[d]`
// is the index of device d's first node over all devices.
void SetStepStatsPayload(TraceBuilder& builder, std::unique_ptr<NodeStoreWriter> store, std::string rest,
                         std::vector<uint32_t> device_first_node);

// The trace's StepStats payload; null when it has none (another format, or none kept).
const StepStatsPayload* StepStatsOf(const Trace& trace);
inline bool HasStepStats(const Trace& trace) { return StepStatsOf(trace) != nullptr; }
// The source RunMetadata, rebuilt from the payload (every node parsed: for writers and merging,
// not per-slice lookups); a fresh copy the caller owns; null without a StepStats payload.
std::shared_ptr<tf::RunMetadata> LoadRunMetadata(const Trace& trace);
// The tensors `metadata`'s cost graph and partition graphs describe (DetailReader::GraphTensors;
// step_stats_graphs.cc).
std::vector<GraphTensor> GraphTensorsOf(const tf::RunMetadata& metadata);
// One slice's NodeExecStats, parsed on demand (null when it has none). For passes over many
// slices use NodeReader (node_reader.h), which decompresses each block once.
std::unique_ptr<tf::NodeExecStats> NodeOf(const Trace& trace, uint32_t slice);

}  // namespace stepscope::trace
