// The details tree of one slice (slice_details_model.h): its fields, its typed details (copy,
// memset, kernel launch), arguments, flows and its source record.
#include "viewer/models/slice_details_model.h"

#include <functional>

#include "base/units.h"
#include "profiler/trace/kernel_arg_fields.h"
#include "profiler/trace/slice_details.h"
#include "viewer/models/roles.h"
#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {
namespace {

std::vector<DetailItem> Items(std::vector<trace::RecordField> fields) {
  std::vector<DetailItem> items;
  items.reserve(fields.size());
  for (trace::RecordField& field : fields) {
    items.push_back(DetailItem{std::move(field.key), std::move(field.value), Items(std::move(field.children))});
  }
  return items;
}

std::string Shape(std::span<const int64_t> dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    text += (i > 0 ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  }
  return text + "]";
}

// Inputs, outputs, allocators and op memory, from whichever source the trace came.
void AddMemoryDetails(trace::DetailReader& details, uint32_t slice, std::vector<DetailItem>& items) {
  if (const auto inputs = details.Inputs(slice); !inputs.empty()) {
    DetailItem item{"inputs", std::to_string(inputs.size()), {}};
    for (size_t i = 0; i < inputs.size(); ++i) {
      item.children.push_back({"[" + std::to_string(i) + "]", std::string(inputs[i]), {}});
    }
    items.push_back(std::move(item));
  }
  if (const auto outputs = details.Outputs(slice); !outputs.empty()) {
    DetailItem item{"outputs", std::to_string(outputs.size()), {}};
    for (const trace::TensorOutput& out : outputs) {
      DetailItem tensor{out.TensorName(), std::string(out.dtype) + " " + Shape(out.shape), {}};
      if (out.has_allocation) {
        tensor.children.push_back({"allocator", std::string(out.allocator), {}});
        tensor.children.push_back({"requested bytes", std::to_string(out.requested_bytes), {}});
        tensor.children.push_back({"allocated bytes", std::to_string(out.allocated_bytes), {}});
        tensor.children.push_back({"allocation id", std::to_string(out.allocation_id), {}});
      }
      item.children.push_back(std::move(tensor));
    }
    items.push_back(std::move(item));
  }
  if (const auto uses = details.Allocators(slice); !uses.empty()) {
    DetailItem item{"allocators", std::to_string(uses.size()), {}};
    for (const trace::AllocatorUse& use : uses) {
      DetailItem a{std::string(use.allocator), "peak " + std::to_string(use.peak_bytes) + " bytes", {}};
      a.children.push_back({"total bytes", std::to_string(use.total_bytes), {}});
      a.children.push_back({"live bytes", std::to_string(use.live_bytes), {}});
      a.children.push_back({"allocator bytes in use", std::to_string(use.bytes_in_use), {}});
      for (const trace::AllocationRecord& r : use.records) {
        a.children.push_back({r.bytes < 0 ? "free" : "allocation",
                              std::to_string(r.bytes) + " bytes at " + std::to_string(r.ns) + " ns", {}});
      }
      item.children.push_back(std::move(a));
    }
    items.push_back(std::move(item));
  }
  if (const auto memory = details.Memory(slice)) {
    DetailItem item{"op memory", {}, {}};
    item.children.push_back({"temporary bytes", std::to_string(memory->temp_bytes), {}});
    item.children.push_back({"persistent bytes", std::to_string(memory->persistent_bytes), {}});
    items.push_back(std::move(item));
  }
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
  trace::DetailReader details(trace, trace::kDetailKernel | trace::kDetailInputs | trace::kDetailOutputs |
                                          trace::kDetailShapes | trace::kDetailAllocators | trace::kDetailOpMemory);
  AddMemoryDetails(details, slice_index, items);
  if (const std::optional<trace::KernelArgs> kernel = details.Kernel(slice_index)) {
    auto triple = [](const uint32_t* v) {
      return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]);
    };
    DetailItem item{"kernel launch", kernel->has_grid() ? "grid " + triple(kernel->grid) + " block " + triple(kernel->block) : "", {}};
    // The profiler's names, but that the pane says the unit of the shared memory.
    struct Fields {
      DetailItem& item;
      decltype(triple)& text;
      static std::string Name(trace::KernelArgField field) {
        return field == trace::KernelArgField::kSharedMemory ? "shared memory (bytes)"
                                                             : std::string(trace::KernelArgKey(field));
      }
      void Triple(trace::KernelArgField field, const uint32_t* v) { item.children.push_back({Name(field), text(v), {}}); }
      void Integer(trace::KernelArgField field, int64_t value) {
        item.children.push_back({Name(field), std::to_string(value), {}});
      }
      void Real(trace::KernelArgField field, float value) {
        item.children.push_back({Name(field), std::to_string(value), {}});
      }
    };
    trace::VisitKernelArgs(*kernel, Fields{item, triple});
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
  std::string record_kind;
  if (std::vector<trace::RecordField> fields = trace::SourceRecord(trace, slice_index, &record_kind); !fields.empty()) {
    const std::string device(trace.str(trace.tracks()[slice.track].full_name));
    items.push_back({"source record", record_kind + " of " + device, Items(std::move(fields))});
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
