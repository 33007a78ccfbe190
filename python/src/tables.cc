// The Python `Trace` class: a read trace's facts and its tables (slices, tracks, flows, counters
// and the detail tables) as dicts of numpy columns. Plain structs' fields are views into the
// trace (columns.h: no copy, read-only, alive while any view is); the packed Slice and Flow
// fields, the compressed kernel launches and the per-op memory (decoded from a payload for
// StepStats inputs) are copied into new arrays, with the GIL released.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profiler/trace/slice_details.h"
#include "python/src/columns.h"
#include "python/src/py_trace.h"

namespace stepscope::python {
namespace {

using trace::Trace;

// Slices unpacked into columns: times relative to the epoch; names and op types as string ids
// (the trace's string table is their categories).
nb::dict SliceColumns(const PyTrace& self) {
  const Trace& trace = self.trace;
  const auto slices = trace.slices();
  const size_t n = slices.size();
  NewColumn<int64_t> start(n), dur(n);
  NewColumn<uint32_t> track(n), label(n), name(n), op_type(n);
  NewColumn<uint16_t> depth(n);
  NewColumn<uint8_t> kind(n), flags(n);
  {
    nb::gil_scoped_release release;
    const trace::LabelTable& labels = trace.labels();
    for (size_t i = 0; i < n; ++i) {
      const trace::Slice& s = slices[i];
      start[i] = s.start_ns;
      dur[i] = s.dur_ns;
      track[i] = static_cast<uint32_t>(s.track);
      depth[i] = static_cast<uint16_t>(s.depth);
      kind[i] = static_cast<uint8_t>(s.kind);
      flags[i] = s.flags;
      label[i] = s.label;
      const trace::SliceLabel& pair = labels[s.label];
      name[i] = pair.name;
      op_type[i] = pair.op_type;
    }
  }
  nb::dict columns;
  columns["start_ns"] = std::move(start).Release();
  columns["dur_ns"] = std::move(dur).Release();
  columns["track"] = std::move(track).Release();
  columns["depth"] = std::move(depth).Release();
  columns["kind"] = std::move(kind).Release();
  columns["flags"] = std::move(flags).Release();
  columns["name"] = std::move(name).Release();
  columns["op_type"] = std::move(op_type).Release();
  columns["label"] = std::move(label).Release();
  return columns;
}

nb::dict TrackColumns(const PyTrace& self) {
  const auto& tracks = self.trace.tracks();
  const size_t n = tracks.size();
  std::vector<uint32_t> name(n), full_name(n);
  std::vector<int32_t> parent(n), sort_index(n), lane(n);
  std::vector<uint8_t> kind(n), concurrent(n);
  std::vector<int64_t> thread_id(n);
  for (size_t i = 0; i < n; ++i) {
    name[i] = tracks[i].name;
    full_name[i] = tracks[i].full_name;
    parent[i] = tracks[i].parent;
    kind[i] = static_cast<uint8_t>(tracks[i].kind);
    sort_index[i] = tracks[i].sort_index;
    lane[i] = tracks[i].lane;
    thread_id[i] = tracks[i].thread_id;
    concurrent[i] = tracks[i].concurrent ? 1 : 0;
  }
  nb::dict columns;
  columns["name"] = OwnedColumn(std::move(name));
  columns["full_name"] = OwnedColumn(std::move(full_name));
  columns["parent"] = OwnedColumn(std::move(parent));
  columns["kind"] = OwnedColumn(std::move(kind));
  columns["sort_index"] = OwnedColumn(std::move(sort_index));
  columns["lane"] = OwnedColumn(std::move(lane));
  columns["thread_id"] = OwnedColumn(std::move(thread_id));
  columns["concurrent"] = OwnedColumn(std::move(concurrent));
  return columns;
}

nb::dict FlowColumns(nb::handle owner, const PyTrace& self) {
  const auto& flows = self.trace.flows();
  std::vector<uint32_t> to(flows.size());
  std::vector<uint8_t> kind(flows.size());
  for (size_t i = 0; i < flows.size(); ++i) {
    to[i] = flows[i].to_slice;
    kind[i] = static_cast<uint8_t>(flows[i].kind);
  }
  nb::dict columns;
  columns["from_slice"] = STEPSCOPE_FIELD(flows, trace::Flow, from_slice, owner);  // a view
  columns["to_slice"] = OwnedColumn(std::move(to));
  columns["kind"] = OwnedColumn(std::move(kind));
  return columns;
}

// Each counter: its facts and its times (relative to the epoch) and values as views.
nb::list Counters(nb::handle owner, const PyTrace& self) {
  nb::list list;
  for (const trace::CounterSeries& series : self.trace.counters()) {
    nb::dict counter;
    counter["name"] = std::string(self.trace.str(series.name));
    counter["track"] = series.track;
    counter["unit"] = series.unit;
    counter["origin"] = series.origin;
    counter["ts_ns"] = FieldView<int64_t, int64_t>(series.ts_ns.data(), series.ts_ns.size(), 0, owner);
    counter["values"] = FieldView<int64_t, int64_t>(series.values.data(), series.values.size(), 0, owner);
    list.append(counter);
  }
  return list;
}

nb::dict TransferColumns(nb::handle owner, const PyTrace& self) {
  using trace::TransferArgs;
  const auto& rows = self.trace.all_transfer_args();
  nb::dict columns;
  columns["slice"] = STEPSCOPE_FIELD(rows, TransferArgs, slice, owner);
  columns["device"] = STEPSCOPE_FIELD(rows, TransferArgs, device, owner);
  columns["stream"] = STEPSCOPE_FIELD(rows, TransferArgs, stream, owner);
  columns["bandwidth_gbps"] = STEPSCOPE_FIELD(rows, TransferArgs, bandwidth_gbps, owner);
  columns["bytes"] = STEPSCOPE_FIELD(rows, TransferArgs, bytes, owner);
  columns["correlation"] = STEPSCOPE_FIELD(rows, TransferArgs, correlation, owner);
  return columns;
}

// Kernel launches: the table stores them compressed (a launch configuration shared by many
// kernels), so these are copies.
nb::dict KernelColumns(const PyTrace& self) {
  const trace::KernelArgsTable& table = self.trace.all_kernel_args();
  const size_t n = table.size();
  std::vector<uint32_t> slice(n), grid_x(n), grid_y(n), grid_z(n), block_x(n), block_y(n), block_z(n);
  std::vector<int64_t> correlation(n);
  std::vector<int32_t> registers(n), shared(n), device(n), stream(n);
  std::vector<float> occupancy(n);
  {
    nb::gil_scoped_release release;
    for (size_t i = 0; i < n; ++i) {
      const trace::KernelArgs args = table[i];
      slice[i] = args.slice;
      correlation[i] = args.correlation;
      grid_x[i] = args.grid[0], grid_y[i] = args.grid[1], grid_z[i] = args.grid[2];
      block_x[i] = args.block[0], block_y[i] = args.block[1], block_z[i] = args.block[2];
      registers[i] = args.registers_per_thread;
      shared[i] = args.shared_memory_bytes;
      device[i] = args.device;
      stream[i] = args.stream;
      occupancy[i] = args.occupancy_percent;
    }
  }
  nb::dict columns;
  columns["slice"] = OwnedColumn(std::move(slice));
  columns["correlation"] = OwnedColumn(std::move(correlation));
  columns["grid_x"] = OwnedColumn(std::move(grid_x));
  columns["grid_y"] = OwnedColumn(std::move(grid_y));
  columns["grid_z"] = OwnedColumn(std::move(grid_z));
  columns["block_x"] = OwnedColumn(std::move(block_x));
  columns["block_y"] = OwnedColumn(std::move(block_y));
  columns["block_z"] = OwnedColumn(std::move(block_z));
  columns["registers_per_thread"] = OwnedColumn(std::move(registers));
  columns["shared_memory_bytes"] = OwnedColumn(std::move(shared));
  columns["device"] = OwnedColumn(std::move(device));
  columns["stream"] = OwnedColumn(std::move(stream));
  columns["occupancy_percent"] = OwnedColumn(std::move(occupancy));
  return columns;
}

// Texts as codes into a list of distinct texts (a categorical's codes and categories).
class TextCodes {
 public:
  uint32_t Code(std::string_view text) {
    auto [it, added] = codes_.try_emplace(std::string(text), static_cast<uint32_t>(texts_.size()));
    if (added) texts_.emplace_back(text);
    return it->second;
  }
  std::vector<std::string> texts() && { return std::move(texts_); }

 private:
  std::unordered_map<std::string, uint32_t> codes_;
  std::vector<std::string> texts_;
};

// The per-op memory details, whatever the format keeps them in (the model's tables, or a
// StepStats payload that decodes them on demand: trace::DetailReader), as copied columns:
// tensor outputs, allocator figures per op, op memory. Text columns are codes into
// "categories"[column].
nb::dict MemoryTables(const PyTrace& self) {
  std::vector<uint32_t> out_slice, out_slot, out_dtype, out_allocator, al_slice, al_allocator, op_slice;
  std::vector<int64_t> requested, allocated, allocation_id, total, peak, live, in_use, temp, persistent;
  std::vector<uint8_t> has_allocation;
  TextCodes dtypes, allocators;
  {
    nb::gil_scoped_release release;
    trace::DetailReader reader(self.trace, trace::kDetailOutputs | trace::kDetailShapes | trace::kDetailAllocators |
                                               trace::kDetailOpMemory);
    const uint32_t n = static_cast<uint32_t>(self.trace.slices().size());
    for (uint32_t i = 0; i < n; ++i) {
      for (const trace::TensorOutput& output : reader.Outputs(i)) {
        out_slice.push_back(i);
        out_slot.push_back(static_cast<uint32_t>(output.slot));
        out_dtype.push_back(dtypes.Code(output.dtype));
        out_allocator.push_back(allocators.Code(output.allocator));
        has_allocation.push_back(output.has_allocation ? 1 : 0);
        requested.push_back(output.requested_bytes);
        allocated.push_back(output.allocated_bytes);
        allocation_id.push_back(output.allocation_id);
      }
      for (const trace::AllocatorUse& use : reader.Allocators(i)) {
        al_slice.push_back(i);
        al_allocator.push_back(allocators.Code(use.allocator));
        total.push_back(use.total_bytes);
        peak.push_back(use.peak_bytes);
        live.push_back(use.live_bytes);
        in_use.push_back(use.bytes_in_use);
      }
      if (const auto memory = reader.Memory(i)) {
        op_slice.push_back(i);
        temp.push_back(memory->temp_bytes);
        persistent.push_back(memory->persistent_bytes);
      }
    }
  }
  nb::dict out, alloc, op, categories;
  out["slice"] = OwnedColumn(std::move(out_slice));
  out["slot"] = OwnedColumn(std::move(out_slot));
  out["dtype"] = OwnedColumn(std::move(out_dtype));
  out["allocator"] = OwnedColumn(std::move(out_allocator));
  out["has_allocation"] = OwnedColumn(std::move(has_allocation));
  out["requested_bytes"] = OwnedColumn(std::move(requested));
  out["allocated_bytes"] = OwnedColumn(std::move(allocated));
  out["allocation_id"] = OwnedColumn(std::move(allocation_id));
  alloc["slice"] = OwnedColumn(std::move(al_slice));
  alloc["allocator"] = OwnedColumn(std::move(al_allocator));
  alloc["total_bytes"] = OwnedColumn(std::move(total));
  alloc["peak_bytes"] = OwnedColumn(std::move(peak));
  alloc["live_bytes"] = OwnedColumn(std::move(live));
  alloc["bytes_in_use"] = OwnedColumn(std::move(in_use));
  op["slice"] = OwnedColumn(std::move(op_slice));
  op["temp_bytes"] = OwnedColumn(std::move(temp));
  op["persistent_bytes"] = OwnedColumn(std::move(persistent));
  categories["dtype"] = std::move(dtypes).texts();
  categories["allocator"] = std::move(allocators).texts();
  nb::dict all;
  all["outputs"] = out;
  all["allocators"] = alloc;
  all["op_memory"] = op;
  all["categories"] = categories;
  return all;
}

// Every string of the trace by id: the categories of the name columns.
nb::list Strings(const PyTrace& self) {
  const trace::StringTable& strings = self.trace.strings();
  nb::list list;
  for (size_t i = 0; i < strings.size(); ++i) {
    const std::string_view text = strings.Get(static_cast<trace::StringId>(i));
    // Decoded leniently: a trace's names are whatever its producer wrote.
    list.append(nb::steal(PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace")));
  }
  return list;
}

// What allow_truncated cut, as the CLI's --json lists it under "truncated"; None when whole.
nb::object Truncation(const PyTrace& self) {
  const trace::Truncation& cut = self.truncation;
  if (cut.file.empty()) return nb::none();
  nb::dict dict;
  dict["file"] = cut.file;
  dict["offset"] = cut.offset;
  dict["gzip_cut"] = cut.gzip_cut;
  dict["events_kept"] = cut.events_kept;
  dict["reason"] = cut.reason;
  return dict;
}

nb::dict ImportStats(const PyTrace& self) {
  nb::dict stats;
  for (const auto& [name, count] : self.trace.import_stats().counts()) stats[name.c_str()] = count;
  return stats;
}

// The names of the slice and track kinds, by value (the `kind` columns' categories).
std::vector<std::string> SliceKindNames() {
  std::vector<std::string> names;
  for (int i = 0; i <= static_cast<int>(trace::SliceKind::kPythonFrame); ++i) {
    names.emplace_back(trace::SliceKindName(static_cast<trace::SliceKind>(i)));
  }
  return names;
}
std::vector<std::string> TrackKindNames() {
  std::vector<std::string> names;
  for (int i = 0; i <= static_cast<int>(trace::TrackKind::kOther); ++i) {
    names.emplace_back(trace::TrackKindName(static_cast<trace::TrackKind>(i)));
  }
  return names;
}

}  // namespace

void BindTrace(nb::module_& m) {
  nb::class_<PyTrace>(m, "Trace", "A trace read by stepscope (the C++ model; see stepscope.Trace).")
      .def_ro("input", &PyTrace::input, "The file or directory it was read from.")
      .def("truncation", &Truncation)
      .def_prop_ro("source", [](const PyTrace& t) { return t.trace.source_path(); })
      .def_prop_ro("format", [](const PyTrace& t) { return std::string(trace::SourceFormatName(t.trace.source_format())); })
      .def_prop_ro("epoch_ns", [](const PyTrace& t) { return t.trace.epoch_ns(); })
      .def_prop_ro("span_begin_ns", [](const PyTrace& t) { return t.trace.span_begin_ns(); })
      .def_prop_ro("span_end_ns", [](const PyTrace& t) { return t.trace.span_end_ns(); })
      .def_prop_ro("clock_is_unix_time", [](const PyTrace& t) { return t.trace.clock_is_unix_time(); })
      .def_prop_ro("step", [](const PyTrace& t) { return t.trace.step_info().step; })
      .def_prop_ro("rank", [](const PyTrace& t) { return t.trace.step_info().rank; })
      .def_prop_ro("world_size", [](const PyTrace& t) { return t.trace.step_info().world_size; })
      .def_prop_ro("host", [](const PyTrace& t) { return t.trace.step_info().host; })
      .def_prop_ro("producer", [](const PyTrace& t) { return t.trace.step_info().producer; })
      .def_prop_ro("slice_count", [](const PyTrace& t) { return t.trace.slices().size(); })
      .def("import_stats", &ImportStats)
      .def("strings", &Strings)
      .def("track_paths", [](const PyTrace& t) {
        std::vector<std::string> paths;
        for (uint32_t i = 0; i < t.trace.tracks().size(); ++i) paths.push_back(t.trace.TrackPath(i));
        return paths;
      })
      .def("slice_columns", &SliceColumns)
      .def("track_columns", &TrackColumns)
      .def("flow_columns", [](nb::handle self) { return FlowColumns(self, nb::cast<const PyTrace&>(self)); })
      .def("counters", [](nb::handle self) { return Counters(self, nb::cast<const PyTrace&>(self)); })
      .def("transfer_columns", [](nb::handle self) { return TransferColumns(self, nb::cast<const PyTrace&>(self)); })
      .def("kernel_columns", &KernelColumns)
      .def("memory_tables", &MemoryTables);
  m.attr("slice_kinds") = SliceKindNames();
  m.attr("track_kinds") = TrackKindNames();
}

}  // namespace stepscope::python
