// The StepStats payload (step_stats_payload.h): the trace's NodeStore behind the model's
// TracePayload interface, the builder's hand-over, and a slice's node as a field-by-field record
// for the details pane.
#include "profiler/formats/step_stats/step_stats_payload.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {

StepStatsPayload::StepStatsPayload(std::shared_ptr<const NodeStore> store, std::vector<uint32_t> entry_of_slice,
                                   size_t slice_count)
    : store_(std::move(store)), entry_of_slice_(std::move(entry_of_slice)), slice_count_(slice_count) {}

size_t StepStatsPayload::memory_bytes() const {
  return store_->memory_bytes() + entry_of_slice_.capacity() * sizeof(uint32_t);
}

NodeRef StepStatsPayload::SourceRef(uint32_t slice) const {
  const uint32_t at = entry(slice);
  if (at == NodeRef::kNone) return {};
  NodeStore::Reader reader(*store_);
  return reader.Ref(at);
}

void SetStepStatsPayload(TraceBuilder& builder, std::shared_ptr<tf::RunMetadata> metadata) {
  builder.SetPayload([metadata = std::move(metadata)](std::span<const NodeRef> refs, size_t slice_count) {
    std::vector<uint32_t> entries;
    std::shared_ptr<const NodeStore> store = NodeStore::Build(*metadata, refs, &entries);
    return std::make_shared<const StepStatsPayload>(std::move(store), std::move(entries), slice_count);
  });
}

void SetStepStatsPayload(TraceBuilder& builder, std::unique_ptr<NodeStoreWriter> store, std::string rest,
                         std::vector<uint32_t> device_first_node) {
  // Shared: a PayloadFactory is copyable and the writer is not.
  std::shared_ptr<NodeStoreWriter> writer = std::move(store);
  builder.SetPayload([writer, rest = std::move(rest), first = std::move(device_first_node)](
                         std::span<const NodeRef> refs, size_t slice_count) mutable {
    std::vector<uint32_t> entries;
    std::shared_ptr<const NodeStore> built = writer->Finish(std::move(rest), first, refs, &entries);
    writer.reset();
    if (built == nullptr) return std::shared_ptr<const StepStatsPayload>();
    return std::make_shared<const StepStatsPayload>(std::move(built), std::move(entries), slice_count);
  });
}

const StepStatsPayload* StepStatsOf(const Trace& trace) {
  return dynamic_cast<const StepStatsPayload*>(trace.payload());
}

std::shared_ptr<tf::RunMetadata> LoadRunMetadata(const Trace& trace) {
  const StepStatsPayload* payload = StepStatsOf(trace);
  return payload == nullptr ? nullptr : payload->store().Rebuild();
}

std::unique_ptr<tf::NodeExecStats> NodeOf(const Trace& trace, uint32_t slice) {
  const StepStatsPayload* payload = StepStatsOf(trace);
  if (payload == nullptr) return nullptr;
  const uint32_t entry = payload->entry(slice);
  if (entry == NodeRef::kNone) return nullptr;
  auto node = std::make_unique<tf::NodeExecStats>();
  NodeStore::Reader reader(payload->store());
  if (!reader.ParseInto(entry, node.get())) return nullptr;
  return node;
}

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string ScalarText(const Message& message, const FieldDescriptor* field, int i) {
  const Reflection* r = message.GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return std::to_string(repeated ? r->GetRepeatedInt32(message, field, i) : r->GetInt32(message, field));
    case FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(repeated ? r->GetRepeatedInt64(message, field, i) : r->GetInt64(message, field));
    case FieldDescriptor::CPPTYPE_UINT32:
      return std::to_string(repeated ? r->GetRepeatedUInt32(message, field, i) : r->GetUInt32(message, field));
    case FieldDescriptor::CPPTYPE_UINT64:
      return std::to_string(repeated ? r->GetRepeatedUInt64(message, field, i) : r->GetUInt64(message, field));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return std::to_string(repeated ? r->GetRepeatedDouble(message, field, i) : r->GetDouble(message, field));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return std::to_string(repeated ? r->GetRepeatedFloat(message, field, i) : r->GetFloat(message, field));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (repeated ? r->GetRepeatedBool(message, field, i) : r->GetBool(message, field)) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return std::string((repeated ? r->GetRepeatedEnum(message, field, i) : r->GetEnum(message, field))->name());
    case FieldDescriptor::CPPTYPE_STRING:
      return repeated ? r->GetRepeatedString(message, field, i) : r->GetString(message, field);
    case FieldDescriptor::CPPTYPE_MESSAGE: break;
  }
  return {};
}

// A one-line digest of a message for its parent row ("dtype: DT_FLOAT, shape: [20, 200]").
std::string Digest(const Message& message);

void DescribeMessage(const Message& message, std::vector<RecordField>* out) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->is_repeated()) {
      const int count = reflection->FieldSize(message, field);
      RecordField list{std::string(field->name()), std::to_string(count) + (count == 1 ? " item" : " items"), {}};
      for (int i = 0; i < count; ++i) {
        RecordField element{"[" + std::to_string(i) + "]", {}, {}};
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          const Message& child = reflection->GetRepeatedMessage(message, field, i);
          element.value = Digest(child);
          DescribeMessage(child, &element.children);
        } else {
          element.value = ScalarText(message, field, i);
        }
        list.children.push_back(std::move(element));
      }
      out->push_back(std::move(list));
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const Message& child = reflection->GetMessage(message, field);
      RecordField item{std::string(field->name()), Digest(child), {}};
      DescribeMessage(child, &item.children);
      out->push_back(std::move(item));
    } else {
      out->push_back(RecordField{std::string(field->name()), ScalarText(message, field, 0), {}});
    }
  }
}

std::string Digest(const Message& message) {
  std::vector<RecordField> fields;
  DescribeMessage(message, &fields);
  std::string text;
  for (const RecordField& field : fields) {
    if (!field.children.empty() && field.value.find("item") == std::string::npos) continue;
    if (text.size() > 80) {
      text += ", ...";
      break;
    }
    if (!text.empty()) text += ", ";
    text += field.key + ": " + field.value;
  }
  return text;
}

}  // namespace

std::vector<RecordField> StepStatsPayload::SourceRecord(const Trace& trace, uint32_t slice,
                                                       std::string* title) const {
  std::vector<RecordField> fields;
  const std::unique_ptr<tf::NodeExecStats> node = NodeOf(trace, slice);
  if (node == nullptr) return fields;
  if (title != nullptr) *title = "NodeExecStats";
  DescribeMessage(*node, &fields);
  return fields;
}

}  // namespace stepscope::trace
