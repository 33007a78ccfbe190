// The Perfetto-ready flavour of Chrome JSON export (see chrome_json_writer.h).
#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "profiler/formats/chrome_json/chrome_json_writer.h"
#include "profiler/formats/common/json_out.h"
#include "profiler/trace/kernel_arg_fields.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::trace {
namespace {

class PerfettoExporter {
 public:
  explicit PerfettoExporter(const Trace& trace) : trace_(trace), json_(out_) {}

  std::string Run() {
    out_.reserve(trace_.slices().size() * 160 + 4096);
    AssignIds();
    LaunchCorrelations();
    // otherData first: our own import reads the session (and the clock's epoch, which moves every
    // event's time) before the events.
    json_.Raw("{\"otherData\":{");
    EmitSession();
    json_.Raw("},\"traceEvents\":[");
    EmitMetadata();
    EmitSlices();
    EmitCounters();
    EmitFlows();
    json_.Raw("]");
    EmitDeviceProperties();
    json_.Raw("}\n");
    return std::move(out_);
  }

 private:
  // The session as stepscope's model holds it (docs/formats.md, "stepscope's keys"): other tools
  // skip these keys; our import takes them back, so a round trip keeps step, rank and clock.
  void EmitSession() {
    const StepInfo& info = trace_.step_info();
    json_.Key("stepscope_epoch_ns");
    json_.Int(trace_.epoch_ns() + trace_.span_begin_ns());
    json_.Raw(",");
    json_.Key("source_format");
    json_.String(SourceFormatName(trace_.source_format()));
    auto text = [&](std::string_view key, const std::string& value) {
      if (value.empty()) return;
      json_.Raw(",");
      json_.Key(key);
      json_.String(value);
    };
    auto number = [&](std::string_view key, int64_t value, int64_t unset) {
      if (value == unset) return;
      json_.Raw(",");
      json_.Key(key);
      json_.Int(value);
    };
    text("producer", info.producer);  // which formulas cost its ops (stepscope-train's)
    number("stepscope_step", info.step, -1);
    number("stepscope_rank", info.rank, -1);
    number("stepscope_world_size", info.world_size, -1);
    text("stepscope_host", info.host);
    number("stepscope_clock_sync_ns", info.clock_sync_ns, 0);
    number("stepscope_dropped_records", static_cast<int64_t>(info.dropped_records), 0);
    // How each counter's curve was obtained (allocation records, the allocator's own figures),
    // by its events' name.
    std::map<std::string, std::string> origins;
    for (const CounterSeries& counter : trace_.counters()) {
      if (!counter.origin.empty()) origins.emplace(CounterEventName(counter), counter.origin);
    }
    if (origins.empty()) return;
    json_.Raw(",");
    json_.Key("stepscope_counter_origins");
    json_.Raw("{");
    for (auto it = origins.begin(); it != origins.end(); ++it) {
      if (it != origins.begin()) json_.Raw(",");
      json_.Key(it->first);
      json_.String(it->second);
    }
    json_.Raw("}");
  }

  std::string CounterEventName(const CounterSeries& counter) const {
    return std::string(trace_.str(counter.name)) + " " + counter.unit;
  }

  // The trace's devices as Kineto writes them (a top-level "deviceProperties"), so the device
  // and its peak survive a conversion; a peak measured on the device (our trainer's CPU sgemm)
  // goes in stepscope's own keys, which other tools skip.
  void EmitDeviceProperties() {
    const auto& devices = trace_.step_info().devices;
    if (devices.empty()) return;
    json_.Raw(",");
    json_.Key("deviceProperties");
    json_.Raw("[");
    for (size_t d = 0; d < devices.size(); ++d) {
      const DeviceProperties& device = devices[d];
      json_.Raw(d == 0 ? "{" : ",{");
      json_.Key("id");
      json_.Int(device.id);
      json_.Raw(",");
      json_.Key("name");
      json_.String(device.name);
      auto optional = [&](std::string_view key, int64_t value) {
        if (value < 0) return;
        json_.Raw(",");
        json_.Key(key);
        json_.Int(value);
      };
      optional("numSms", device.sm_count);
      optional("totalGlobalMem", device.memory_bytes);
      optional("computeMajor", device.compute_major);
      optional("computeMinor", device.compute_minor);
      optional("clockRate", device.clock_khz);
      if (device.measured_flops_per_s > 0) {
        json_.Raw(",");
        json_.Key("stepscopeMeasuredFlopsPerSecond");
        json_.Double(device.measured_flops_per_s);
        json_.Raw(",");
        json_.Key("stepscopeMeasuredBy");
        json_.String(device.measured_by);
      }
      json_.Raw("}");
    }
    json_.Raw("]");
  }

  // pid per device (or per host track that holds slices itself), tid per lane.
  void AssignIds() {
    const auto& tracks = trace_.tracks();
    pid_.assign(tracks.size(), -1);
    tid_.assign(tracks.size(), -1);
    emitted_.assign(tracks.size(), false);
    // Which lanes hold something to show.
    for (uint32_t t = 0; t < tracks.size(); ++t) {
      for (const Slice& s : trace_.track_slices(t)) {
        if (!s.duplicate()) {
          emitted_[t] = true;
          break;
        }
      }
    }
    // Order of processes: host sort, then device sort; order of threads: lane sort.
    std::vector<uint32_t> order(tracks.size());
    std::iota(order.begin(), order.end(), 0u);
    auto sort_path = [&](uint32_t t) {
      std::vector<std::pair<int32_t, uint32_t>> path;
      for (int32_t x = static_cast<int32_t>(t); x >= 0; x = tracks[x].parent) {
        path.insert(path.begin(), {tracks[x].sort_index, static_cast<uint32_t>(x)});
      }
      return path;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return sort_path(a) < sort_path(b); });
    int32_t next_pid = 1;
    for (uint32_t t : order) {
      if (!emitted_[t]) continue;
      // The process is the device the lane belongs to (or the lane's own root).
      int32_t process = trace_.DeviceOf(t);
      if (process < 0) process = tracks[t].parent >= 0 ? tracks[t].parent : static_cast<int32_t>(t);
      if (pid_[process] < 0) {
        pid_[process] = next_pid++;
        processes_.push_back(static_cast<uint32_t>(process));
      }
      pid_[t] = pid_[process];
      tid_[t] = static_cast<int32_t>(++threads_in_process_[pid_[t]]);
      lanes_.push_back(t);
    }
  }

  void MetadataEvent(std::string_view name, int32_t pid, int32_t tid) {
    Separator();
    json_.Raw("{\"ph\":\"M\",\"name\":");
    json_.String(name);
    json_.Raw(",\"pid\":");
    json_.Int(pid);
    if (tid >= 0) {
      json_.Raw(",\"tid\":");
      json_.Int(tid);
    }
    json_.Raw(",\"args\":{");
  }

  void EmitMetadata() {
    const auto& tracks = trace_.tracks();
    int32_t sort = 0;
    for (uint32_t process : processes_) {
      const int32_t pid = pid_[process];
      const int32_t host = trace_.HostOf(process);
      std::string name(trace_.str(tracks[process].name));
      if (host >= 0 && static_cast<uint32_t>(host) != process) {
        name = std::string(trace_.str(tracks[host].name)) + " " + name;
      }
      MetadataEvent("process_name", pid, -1);
      json_.Key("name");
      json_.String(name);
      json_.Raw("}}");
      MetadataEvent("process_sort_index", pid, -1);
      json_.Key("sort_index");
      json_.Int(sort++);
      json_.Raw("}}");
      ProcessModel(pid, process, host);
      if (host >= 0) {
        MetadataEvent("process_labels", pid, -1);
        json_.Key("labels");
        std::string labels(trace_.str(tracks[host].full_name));
        if (trace_.step_info().rank >= 0) labels += ",rank " + std::to_string(trace_.step_info().rank);
        json_.String(labels);
        json_.Raw("}}");
      }
    }
    for (uint32_t lane : lanes_) {
      MetadataEvent("thread_name", pid_[lane], tid_[lane]);
      json_.Key("name");
      json_.String(trace_.str(tracks[lane].name));
      json_.Raw("}}");
      MetadataEvent("thread_sort_index", pid_[lane], tid_[lane]);
      json_.Key("sort_index");
      json_.Int(tid_[lane]);
      json_.Raw("}}");
      // What the lane is, as stepscope names it (Perfetto and Chrome skip metadata they do not
      // know): a reader need not guess it from the lane's first event.
      MetadataEvent("stepscope_lane_kind", pid_[lane], tid_[lane]);
      json_.Key("name");
      json_.String(TrackKindName(tracks[lane].kind));
      json_.Raw("}}");
      NameEvent("stepscope_lane_full_name", pid_[lane], tid_[lane], trace_.str(tracks[lane].full_name));
    }
  }

  // A metadata event whose one arg is "name" (the only arg every Chrome JSON reader reads).
  void NameEvent(std::string_view event, int32_t pid, int32_t tid, std::string_view name) {
    MetadataEvent(event, pid, tid);
    json_.Key("name");
    json_.String(name);
    json_.Raw("}}");
  }

  // The tracks a process stands for in the model: its own (a device, or a host holding lanes
  // itself) and the host above it, by kind, short and full name, so that an import rebuilds the
  // host -> device -> lane tree instead of one process per pid.
  void ProcessModel(int32_t pid, uint32_t process, int32_t host) {
    const auto& tracks = trace_.tracks();
    NameEvent("stepscope_process_kind", pid, -1, TrackKindName(tracks[process].kind));
    NameEvent("stepscope_process_short_name", pid, -1, trace_.str(tracks[process].name));
    NameEvent("stepscope_process_full_name", pid, -1, trace_.str(tracks[process].full_name));
    if (host < 0 || static_cast<uint32_t>(host) == process) return;
    NameEvent("stepscope_host_name", pid, -1, trace_.str(tracks[host].name));
    NameEvent("stepscope_host_full_name", pid, -1, trace_.str(tracks[host].full_name));
  }

  void EmitSlices() {
    const int64_t base = trace_.span_begin_ns();
    // Lanes in the model's order (a reader makes a lane at its first event, so it keeps the
    // source's order of lanes; viewers order them by the sort indices above).
    std::vector<uint32_t> in_model_order = lanes_;
    std::sort(in_model_order.begin(), in_model_order.end());
    for (uint32_t lane : in_model_order) {
      const uint32_t first = trace_.track_first_slice(lane);
      const auto lane_slices = trace_.track_slices(lane);
      for (uint32_t k = 0; k < lane_slices.size(); ++k) {
        const Slice& s = lane_slices[k];
        if (s.duplicate()) continue;
        const uint32_t index = first + k;
        Separator();
        json_.Raw("{\"ph\":\"X\",\"pid\":");
        json_.Int(pid_[lane]);
        json_.Raw(",\"tid\":");
        json_.Int(tid_[lane]);
        json_.Raw(",\"ts\":");
        json_.NanosAsMicros(s.start_ns - base);
        json_.Raw(",\"dur\":");
        json_.NanosAsMicros(s.dur_ns);
        json_.Raw(",\"name\":");
        const SliceLabel& label = trace_.labels()[s.label];
        json_.String(trace_.str(label.op_type != 0 ? label.op_type : label.name));
        json_.Raw(",\"cat\":");
        json_.String(SliceKindName(s.kind));
        json_.Raw(",\"args\":{\"name\":");
        json_.String(trace_.str(label.name));
        // The op type where it differs from the event's name (TensorFlow's timeline key "op"),
        // empty where the model has none, so the import takes back name and type apart.
        if (label.op_type != label.name) {
          json_.Raw(",\"op\":");
          json_.String(trace_.str(label.op_type));
        }
        SliceArgs(index, s);
        json_.Raw("}}");
      }
    }
  }

  void SliceArgs(uint32_t index, const Slice& s) {
    const size_t args_begin = out_.size();
    if (s.kind == SliceKind::kMemcpy) {
      if (auto memcpy = details_.Copy(index)) {
        json_.Raw(",\"kind\":");
        json_.String(memcpy->kind);
        json_.Raw(",\"bytes\":");
        json_.Int(memcpy->bytes);
        if (!memcpy->src_memory.empty()) {
          json_.Raw(",\"memory\":");
          json_.String(memcpy->src_memory + " to " + memcpy->dst_memory);
        }
        if (s.dur_ns > 0 && memcpy->bytes > 0) {
          json_.Raw(",\"bandwidth (GB/s)\":");
          json_.Double(static_cast<double>(memcpy->bytes) / static_cast<double>(s.dur_ns));
        }
      }
    }
    ShapeArgsJson(index, s);
    KernelArgsJson(index);
    TransferArgsJson(index, s);
    LauncherCorrelationJson(index);
    FreeArgsJson(index, args_begin);
    if (const std::string_view label = details_.Label(index); !label.empty()) {
      json_.Raw(",\"label\":");
      json_.String(label);
    }
    if (const std::optional<LaunchRecord> k = details_.Launch(index)) {
      json_.Raw(",\"grid\":[");
      json_.UInt(k->grid[0]); json_.Char(','); json_.UInt(k->grid[1]); json_.Char(','); json_.UInt(k->grid[2]);
      json_.Raw("],\"block\":[");
      json_.UInt(k->block[0]); json_.Char(','); json_.UInt(k->block[1]); json_.Char(','); json_.UInt(k->block[2]);
      json_.Raw("],\"registers per thread\":");
      json_.UInt(k->registers_per_thread);
      json_.Raw(",\"shared memory\":");
      json_.UInt(k->static_shared_bytes + k->dynamic_shared_bytes);
      json_.Raw(",\"stream\":");
      json_.UInt(k->stream);
    }
    if (const std::optional<CollectiveDetails> c = details_.Collective(index)) {
      json_.Raw(",\"collective\":");
      json_.String(c->kind);
      json_.Raw(",\"algorithm\":");
      json_.String(c->algorithm);
      json_.Raw(",\"bytes\":");
      json_.Int(c->bytes);
      json_.Raw(",\"group size\":");
      json_.Int(c->group_size);
    }
    if (const uint64_t correlation = details_.Correlation(index); correlation != 0) {
      json_.Raw(",\"correlation\":");
      json_.UInt(correlation);
    }
  }

  // A StepStats op's tensors as the PyTorch profiler's record_shapes writes inputs ("Input Dims",
  // "Input type") and under the same pattern its outputs ("Output Dims", "Output type"), so its
  // cost survives the conversion. A trace read from JSON keeps its own as free args.
  void ShapeArgsJson(uint32_t index, const Slice& s) {
    if (s.kind != SliceKind::kOp || trace_.payload() == nullptr) return;
    auto dims = [&](std::span<const int64_t> shape) {
      json_.Char('[');
      for (size_t d = 0; d < shape.size(); ++d) {
        if (d > 0) json_.Char(',');
        json_.Int(shape[d]);
      }
      json_.Char(']');
    };
    auto lists = [&](std::string_view dims_key, std::string_view type_key, const auto& tensors) {
      json_.Raw(",");
      json_.Key(dims_key);
      json_.Char('[');
      for (size_t k = 0; k < tensors.size(); ++k) {
        if (k > 0) json_.Char(',');
        dims(tensors[k].shape);
      }
      json_.Raw("],");
      json_.Key(type_key);
      json_.Char('[');
      for (size_t k = 0; k < tensors.size(); ++k) {
        if (k > 0) json_.Char(',');
        json_.String(tensors[k].dtype);
      }
      json_.Char(']');
    };
    if (const std::span<const TensorInput> inputs = details_.InputShapes(index); !inputs.empty()) {
      lists("Input Dims", "Input type", inputs);
    }
    // Outputs by slot, as the op's inputs name them ("op:1"); a slot without a record is empty.
    const std::span<const TensorOutput> outputs = details_.Outputs(index);
    if (outputs.empty()) return;
    output_shapes_.assign(outputs.size(), TensorInput{});
    for (const TensorOutput& out : outputs) {
      if (out.slot < 0 || static_cast<size_t>(out.slot) >= outputs.size() || out.unknown_rank) continue;
      output_shapes_[out.slot].dtype = out.dtype;
      output_shapes_[out.slot].shape = out.shape;
    }
    lists("Output Dims", "Output type", output_shapes_);
  }

  // The PyTorch profiler's kernel args, under the names it uses (so our own import reads them).
  void KernelArgsJson(uint32_t index) {
    const std::optional<KernelArgs> args = trace_.kernel_args(index);
    if (!args) return;
    struct Fields {
      PerfettoExporter& exporter;
      void Key(KernelArgField field) {
        exporter.json_.Raw(",\"");
        exporter.json_.Raw(KernelArgKey(field));
        exporter.json_.Raw("\":");
      }
      void Triple(KernelArgField field, const uint32_t* v) {
        Key(field);
        exporter.json_.Char('[');
        exporter.json_.UInt(v[0]), exporter.json_.Char(','), exporter.json_.UInt(v[1]), exporter.json_.Char(',');
        exporter.json_.UInt(v[2]);
        exporter.json_.Char(']');
      }
      void Integer(KernelArgField field, int64_t value) {
        Key(field);
        exporter.json_.Int(value);
      }
      void Real(KernelArgField field, float value) {
        Key(field);
        exporter.Float(value);
      }
    };
    VisitKernelArgs(*args, Fields{*this});
  }

  // Free-form arguments (XSpace stats, Perfetto debug annotations, the PyTorch profiler's event
  // args), under their own names, JSON values as they were written; one called "name" would
  // repeat the node name's key, so it becomes "name (arg)". A key the typed args above already
  // wrote for this slice (`args_begin`: where its args object starts) is not written twice.
  void FreeArgsJson(uint32_t index, size_t args_begin) {
    const size_t typed_end = out_.size();
    for (const SliceArg& arg : trace_.slice_args(index)) {
      const std::string_view key = trace_.str(arg.key);
      const size_t key_begin = out_.size() + 1;
      json_.Raw(",");
      json_.Key(key == "name" ? std::string_view("name (arg)") : key);
      const std::string_view written(out_.data() + key_begin, out_.size() - key_begin);
      if (std::string_view(out_.data() + args_begin, typed_end - args_begin).find(written) != std::string_view::npos) {
        out_.resize(key_begin - 1);
        continue;
      }
      if (arg.is_number) {
        json_.Int(arg.number);
      } else if (arg.is_json && IsValidJson(arg.value)) {
        json_.Raw(trace_.str(arg.value));
      } else {
        json_.String(trace_.str(arg.value));
      }
    }
  }

  // Memsets' bytes (copies have theirs written with the memcpy details); the correlation id of
  // both, as the PyTorch profiler writes it.
  void TransferArgsJson(uint32_t index, const Slice& s) {
    const TransferArgs* args = trace_.transfer_args(index);
    if (args == nullptr) return;
    if (s.kind == SliceKind::kMemset && args->bytes >= 0) {
      json_.Raw(",\"bytes\":");
      json_.Int(args->bytes);
    }
    if (args->bandwidth_gbps >= 0) {
      json_.Raw(",\"memory bandwidth (GB/s)\":");
      Float(args->bandwidth_gbps);
    }
    if (args->device >= 0) {
      json_.Raw(",\"device\":");
      json_.Int(args->device);
    }
    if (args->stream >= 0) {
      json_.Raw(",\"stream\":");
      json_.Int(args->stream);
    }
    if (args->correlation >= 0) {
      json_.Raw(",\"correlation\":");
      json_.Int(args->correlation);
    }
  }

  // The correlation id of the work a slice launched, on the launching slice (Kineto's runtime
  // call), so that a reader joins them by id as well as by the flow: from the launch flows' work.
  // A call launching several pieces of work (a graph) has one id for all; a slice whose work
  // carries several ids (an executor op launching kernels one by one) gets none: the flows link it.
  void LaunchCorrelations() {
    for (const Flow& flow : trace_.flows()) {
      if (flow.kind != FlowKind::kLaunch) continue;
      int64_t correlation = -1;
      if (const std::optional<KernelArgs> args = trace_.kernel_args(flow.to_slice)) correlation = args->correlation;
      if (const TransferArgs* args = trace_.transfer_args(flow.to_slice)) correlation = args->correlation;
      if (const uint64_t own = details_.Correlation(flow.to_slice); correlation < 0 && own != 0) {
        correlation = static_cast<int64_t>(own);
      }
      if (correlation > 0) launcher_correlation_.emplace_back(flow.from_slice, correlation);
    }
    std::sort(launcher_correlation_.begin(), launcher_correlation_.end());
    launcher_correlation_.erase(std::unique(launcher_correlation_.begin(), launcher_correlation_.end()),
                                launcher_correlation_.end());
    // Slices left with two ids or more: none.
    for (size_t i = 0; i + 1 < launcher_correlation_.size(); ++i) {
      if (launcher_correlation_[i].first == launcher_correlation_[i + 1].first) {
        launcher_correlation_[i].second = launcher_correlation_[i + 1].second = -1;
      }
    }
  }
  void LauncherCorrelationJson(uint32_t index) {
    auto it = std::lower_bound(launcher_correlation_.begin(), launcher_correlation_.end(), index,
                               [](const auto& entry, uint32_t slice) { return entry.first < slice; });
    if (it == launcher_correlation_.end() || it->first != index || it->second < 0) return;
    if (details_.Correlation(index) != 0) return;
    json_.Raw(",\"correlation\":");
    json_.Int(it->second);
  }

  // Counters are process-scoped: each allocator goes on its device's process.
  void EmitCounters() {
    const int64_t base = trace_.span_begin_ns();
    for (const CounterSeries& counter : trace_.counters()) {
      int32_t pid = counter.track >= 0 ? pid_[counter.track] : -1;
      if (pid < 0 && !processes_.empty()) pid = pid_[processes_.front()];
      if (pid < 0) continue;
      const std::string name = CounterEventName(counter);
      for (size_t i = 0; i < counter.ts_ns.size(); ++i) {
        Separator();
        json_.Raw("{\"ph\":\"C\",\"pid\":");
        json_.Int(pid);
        json_.Raw(",\"name\":");
        json_.String(name);
        json_.Raw(",\"ts\":");
        json_.NanosAsMicros(counter.ts_ns[i] - base);
        json_.Raw(",\"args\":{\"value\":");
        json_.Int(counter.values[i]);
        json_.Raw("}}");
      }
    }
  }

  // A flow point strictly inside its slice when the slice is long enough (Perfetto binds a flow
  // to the slice enclosing its timestamp).
  static int64_t InsideEnd(const Slice& s) { return s.dur_ns >= 2 ? s.end_ns() - 1 : s.start_ns; }
  static int64_t InsideStart(const Slice& s) { return s.dur_ns >= 2 ? s.start_ns + 1 : s.start_ns; }

  void EmitFlows() {
    const auto& slices = trace_.slices();
    const int64_t base = trace_.span_begin_ns();
    int64_t id = 0;
    for (const Flow& flow : trace_.flows()) {
      const Slice& from = slices[flow.from_slice];
      const Slice& to = slices[flow.to_slice];
      if (from.track == to.track || from.duplicate() || to.duplicate()) continue;
      if (!emitted_[from.track] || !emitted_[to.track]) continue;
      // A flow must not go back in time: dataflow into an op that started before its producer
      // ended (TF µs rounding) is drawn from the producer's start instead.
      const int64_t from_ts = std::min(InsideEnd(from), std::max(InsideStart(to), from.start_ns));
      // Launch flows under Kineto's category, which readers (ours, HTA, Perfetto) take as launches.
      const char* cat = flow.kind == FlowKind::kLaunch ? "ac2g" : "dataflow";
      ++id;
      for (int end = 0; end < 2; ++end) {
        const Slice& s = end == 0 ? from : to;
        Separator();
        json_.Raw(end == 0 ? "{\"ph\":\"s\"" : "{\"ph\":\"f\",\"bp\":\"e\"");
        json_.Raw(",\"name\":");
        json_.String(cat);
        json_.Raw(",\"cat\":");
        json_.String(cat);
        json_.Raw(",\"id\":");
        json_.Int(id);
        json_.Raw(",\"pid\":");
        json_.Int(pid_[s.track]);
        json_.Raw(",\"tid\":");
        json_.Int(tid_[s.track]);
        json_.Raw(",\"ts\":");
        json_.NanosAsMicros((end == 0 ? from_ts : InsideStart(to)) - base);
        json_.Raw("}");
      }
    }
  }

  void Separator() {
    if (first_event_) {
      first_event_ = false;
    } else {
      out_.push_back(',');
    }
  }

  // A value kept as a float, in the shortest text that reads back as the same float (as a double
  // it would gain digits the source never had: 0.0189 -> 0.018899999558925629).
  void Float(float value) {
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    json_.Raw(std::string_view(buffer, static_cast<size_t>(end - buffer)));
  }

  // Whether a JSON-text argument value is whole, valid JSON (the import keeps arrays and objects
  // as written without reading inside them): one that is not is written as a string. Each
  // distinct value is checked once (by a reader that takes integers of any length, as real
  // Kineto files hold).
  bool IsValidJson(StringId value) {
    auto [it, inserted] = json_valid_.try_emplace(value, false);
    if (inserted) it->second = nlohmann::json::accept(trace_.str(value));
    return it->second;
  }

  const Trace& trace_;
  std::unordered_map<StringId, bool> json_valid_;
  // What the writer carries beyond the compact slices, whatever the source format.
  DetailReader details_{trace_, kDetailCopy | kDetailLabel | kDetailKernel | kDetailCollective | kDetailCorrelation |
                                    kDetailOutputs | kDetailShapes | kDetailInputShapes};
  std::vector<TensorInput> output_shapes_;
  std::string out_;
  JsonOut json_;
  bool first_event_ = true;
  std::vector<int32_t> pid_, tid_;
  std::vector<bool> emitted_;
  std::vector<std::pair<uint32_t, int64_t>> launcher_correlation_;  // (launching slice, id), by slice
  std::vector<uint32_t> processes_, lanes_;
  std::map<int32_t, int32_t> threads_in_process_;
};

}  // namespace

std::string ExportPerfettoJson(const Trace& trace) { return PerfettoExporter(trace).Run(); }

}  // namespace stepscope::trace
