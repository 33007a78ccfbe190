// NodeReader: a slice's entry in the trace's StepStats payload, read through one store reader per
// pass.
#include "profiler/formats/step_stats/node_reader.h"

#include "profiler/formats/step_stats/step_stats_payload.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {

NodeReader::NodeReader(const Trace& trace, uint32_t needed_fields) : trace_(trace), payload_(StepStatsOf(trace)) {
  if (payload_ != nullptr) reader_ = std::make_unique<NodeStore::Reader>(payload_->store(), needed_fields);
}
NodeReader::~NodeReader() = default;

const tf::NodeExecStats* NodeReader::Get(uint32_t slice) {
  if (reader_ == nullptr) return nullptr;
  const uint32_t entry = payload_->entry(slice);
  return entry == NodeRef::kNone ? nullptr : reader_->Get(entry);
}

NodeRef NodeReader::Ref(uint32_t slice) {
  if (reader_ == nullptr) return trace_.node_ref(slice);
  const uint32_t entry = payload_->entry(slice);
  return entry == NodeRef::kNone ? NodeRef{} : reader_->Ref(entry);
}

std::string_view NodeReader::Bytes(uint32_t slice) {
  if (reader_ == nullptr) return {};
  const uint32_t entry = payload_->entry(slice);
  return entry == NodeRef::kNone ? std::string_view() : reader_->Bytes(entry);
}

}  // namespace stepscope::trace
