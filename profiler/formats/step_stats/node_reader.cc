// NodeReader: a slice's entry in the Trace's node store, read through one store reader per pass.
#include "profiler/formats/step_stats/node_reader.h"

#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {

NodeReader::NodeReader(const Trace& trace, uint32_t needed_fields) : trace_(trace) {
  if (trace.node_store() != nullptr) reader_ = std::make_unique<NodeStore::Reader>(*trace.node_store(), needed_fields);
}
NodeReader::~NodeReader() = default;

const tf::NodeExecStats* NodeReader::Get(uint32_t slice) {
  if (reader_ == nullptr) return nullptr;
  const uint32_t entry = trace_.node_entry(slice);
  return entry == NodeRef::kNone ? nullptr : reader_->Get(entry);
}

NodeRef NodeReader::Ref(uint32_t slice) {
  if (reader_ == nullptr) return trace_.node_ref(slice);
  const uint32_t entry = trace_.node_entry(slice);
  return entry == NodeRef::kNone ? NodeRef{} : reader_->Ref(entry);
}

std::string_view NodeReader::Bytes(uint32_t slice) {
  if (reader_ == nullptr) return {};
  const uint32_t entry = trace_.node_entry(slice);
  return entry == NodeRef::kNone ? std::string_view() : reader_->Bytes(entry);
}

}  // namespace stepscope::trace
