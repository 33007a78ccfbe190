// The details tree of one slice (slice_details_model.h): the slice's own fields, then its
// source record's.
#include "viewer/models/slice_details_model.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "base/units.h"
#include "profiler/trace/slice_details.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "viewer/models/roles.h"
#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {
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

void DescribeMessage(const Message& message, std::vector<DetailItem>* out) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->is_repeated()) {
      const int count = reflection->FieldSize(message, field);
      DetailItem list{std::string(field->name()), std::to_string(count) + (count == 1 ? " item" : " items"), {}};
      for (int i = 0; i < count; ++i) {
        DetailItem element{"[" + std::to_string(i) + "]", {}, {}};
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
      DetailItem item{std::string(field->name()), Digest(child), {}};
      DescribeMessage(child, &item.children);
      out->push_back(std::move(item));
    } else {
      out->push_back(DetailItem{std::string(field->name()), ScalarText(message, field, 0), {}});
    }
  }
}

std::string Digest(const Message& message) {
  std::vector<DetailItem> fields;
  DescribeMessage(message, &fields);
  std::string text;
  for (const DetailItem& field : fields) {
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

std::string SliceLabel(const trace::Trace& trace, uint32_t slice) {
  const trace::Slice& s = trace.slices()[slice];
  return std::string(trace.str(trace.slice_name(s))) + " (" + trace.TrackPath(s.track) + ")";
}

}  // namespace

std::vector<DetailItem> DescribeSlice(const TraceDocument& document, uint32_t slice_index) {
  const trace::Trace& trace = document.trace();
  const trace::Slice& slice = trace.slices()[slice_index];
  std::vector<DetailItem> items;
  auto add = [&](std::string key, std::string value) {
    items.push_back(DetailItem{std::move(key), std::move(value), {}});
  };
  add("name", std::string(trace.str(trace.slice_name(slice))));
  add("op type", std::string(trace.str(trace.slice_op_type(slice))));
  add("kind", std::string(trace::SliceKindName(slice.kind)));
  add("track", trace.TrackPath(slice.track));
  add("start", FormatDurationSignificant(static_cast<double>(slice.start_ns)) + " (" +
                   std::to_string(slice.start_ns) + " ns after the trace start)");
  add("duration", FormatDurationSignificant(static_cast<double>(slice.dur_ns)) + " (" +
                      std::to_string(slice.dur_ns) + " ns)");
  add("end", FormatDurationSignificant(static_cast<double>(slice.end_ns())));
  add("absolute start", std::to_string(trace.epoch_ns() + slice.start_ns) +
                            (trace.clock_is_unix_time() ? " ns since the Unix epoch" : " ns on the trace's own clock"));
  add("depth", std::to_string(slice.depth));
  if (slice.duplicate()) add("duplicate", "also recorded on a stream lane (TensorFlow aggregate lane)");
  add("slice index", std::to_string(slice_index));
  if (auto memcpy = trace::GetMemcpyDetails(trace, slice_index)) {
    DetailItem item{"memcpy", memcpy->kind, {}};
    item.children.push_back({"bytes", std::to_string(memcpy->bytes), {}});
    if (!memcpy->src_memory.empty()) item.children.push_back({"source memory", memcpy->src_memory, {}});
    if (!memcpy->dst_memory.empty()) item.children.push_back({"destination memory", memcpy->dst_memory, {}});
    if (memcpy->bytes > 0 && slice.dur_ns > 0) {
      item.children.push_back({"bandwidth", std::to_string(static_cast<double>(memcpy->bytes) /
                                                           static_cast<double>(slice.dur_ns)) + " GB/s", {}});
    }
    if (memcpy->bandwidth_gbps >= 0) {
      item.children.push_back({"reported bandwidth", std::to_string(memcpy->bandwidth_gbps) + " GB/s", {}});
    }
    items.push_back(std::move(item));
  }
  if (const trace::TransferArgs* transfer = trace.transfer_args(slice_index);
      transfer != nullptr && slice.kind == trace::SliceKind::kMemset) {
    DetailItem item{"memset", transfer->bytes >= 0 ? std::to_string(transfer->bytes) + " bytes" : "", {}};
    if (transfer->bytes >= 0) item.children.push_back({"bytes", std::to_string(transfer->bytes), {}});
    if (transfer->bandwidth_gbps >= 0) {
      item.children.push_back({"reported bandwidth", std::to_string(transfer->bandwidth_gbps) + " GB/s", {}});
    }
    items.push_back(std::move(item));
  }
  if (const std::optional<trace::KernelArgs> kernel = trace.kernel_args(slice_index)) {
    auto triple = [](const uint32_t* v) {
      return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]);
    };
    DetailItem item{"kernel launch", kernel->has_grid() ? "grid " + triple(kernel->grid) + " block " + triple(kernel->block) : "", {}};
    if (kernel->has_grid()) {
      item.children.push_back({"grid", triple(kernel->grid), {}});
      item.children.push_back({"block", triple(kernel->block), {}});
    }
    auto integer = [&](const char* key, int64_t value) {
      if (value >= 0) item.children.push_back({key, std::to_string(value), {}});
    };
    auto real = [&](const char* key, float value) {
      if (value >= 0) item.children.push_back({key, std::to_string(value), {}});
    };
    integer("registers per thread", kernel->registers_per_thread);
    integer("shared memory (bytes)", kernel->shared_memory_bytes);
    real("blocks per SM", kernel->blocks_per_sm);
    real("warps per SM", kernel->warps_per_sm);
    real("est. achieved occupancy %", kernel->occupancy_percent);
    integer("device", kernel->device);
    integer("stream", kernel->stream);
    integer("correlation", kernel->correlation);
    items.push_back(std::move(item));
  }
  // Free-form arguments (the PyTorch profiler's event args, XSpace stats, Perfetto debug
  // annotations), in the source's order; JSON values as written.
  if (const std::span<const trace::SliceArg> args = trace.slice_args(slice_index); !args.empty()) {
    DetailItem item{"args", std::to_string(args.size()), {}};
    for (const trace::SliceArg& arg : args) {
      item.children.push_back({std::string(trace.str(arg.key)), arg.Text(trace.strings()), {}});
    }
    items.push_back(std::move(item));
  }
  auto add_flows = [&](const char* key, const std::vector<uint32_t>& flows, bool incoming) {
    if (flows.empty()) return;
    DetailItem item{key, std::to_string(flows.size()), {}};
    for (uint32_t f : flows) {
      const trace::Flow& flow = trace.flows()[f];
      const uint32_t other = incoming ? flow.from_slice : flow.to_slice;
      DetailItem link{flow.kind == trace::FlowKind::kLaunch ? "launch" : "dataflow", SliceLabel(trace, other), {}};
      link.slice = other;
      item.children.push_back(std::move(link));
    }
    items.push_back(std::move(item));
  };
  add_flows("flows in", document.FlowsTo(slice_index), true);
  add_flows("flows out", document.FlowsFrom(slice_index), false);
  if (const std::unique_ptr<tf::NodeExecStats> node = trace.node(slice_index)) {
    DetailItem record{"source record", "NodeExecStats of " + std::string(trace.str(trace.tracks()[slice.track].full_name)), {}};
    DescribeMessage(*node, &record.children);
    items.push_back(std::move(record));
  }
  return items;
}

SliceDetailsModel::SliceDetailsModel(QObject* parent) : QStandardItemModel(parent) {
  setHorizontalHeaderLabels({tr("Field"), tr("Value")});
}

void SliceDetailsModel::ShowNothing() {
  removeRows(0, rowCount());
}

void SliceDetailsModel::ShowSlice(const TraceDocument& document, uint32_t slice) {
  ShowNothing();
  std::function<void(QStandardItem*, const std::vector<DetailItem>&)> append =
      [&](QStandardItem* parent, const std::vector<DetailItem>& items) {
        for (const DetailItem& item : items) {
          auto* key = new QStandardItem(QString::fromStdString(item.key));
          auto* value = new QStandardItem(QString::fromStdString(item.value));
          key->setEditable(false);
          value->setEditable(false);
          value->setToolTip(value->text());
          if (item.slice != UINT32_MAX) {
            key->setData(QVariant::fromValue(item.slice), kSliceRole);
            value->setData(QVariant::fromValue(item.slice), kSliceRole);
          }
          append(key, item.children);
          parent->appendRow({key, value});
        }
      };
  append(invisibleRootItem(), DescribeSlice(document, slice));
}

}  // namespace stepscope::viewer
