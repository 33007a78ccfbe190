// The `tf-timeline` flavour of Chrome JSON export: the events TensorFlow's
// tensorflow/python/client/timeline.py generates with show_dataflow=True, show_memory=True,
// reproduced event for event (docs/formats.md §2). Its quirks are kept on purpose:
// lanes from file order with a strict "ends before" test, tensor object ids that repeat when
// a later output reuses a name, frees sorted before allocations at equal times, the memory view
// derived from outputs (not from the allocation records).
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "profiler/formats/common/json_out.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/step_stats/tf_names.h"
#include "profiler/formats/tf_timeline/tf_timeline_writer.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

struct TensorTracker {
  std::string name;
  int64_t object_id = 0;
  int64_t create_time = 0;
  int64_t pid = 0;
  std::string allocator;
  int64_t num_bytes = 0;
  int64_t last_unref = INT64_MIN;
  void AddUnref(int64_t when) { last_unref = std::max(last_unref, when); }
};

class TfTimelineExporter {
 public:
  explicit TfTimelineExporter(const tf::StepStats& step) : step_(step), json_(events_) {}

  std::string Run() {
    AllocatePids();
    AssignLanes();
    AnalyzeTensors();
    ShowCompute();
    ShowMemoryCounters();
    std::string out;
    out.reserve(metadata_.size() + events_.size() + 32);
    out += "{\"traceEvents\":[";
    out += metadata_;
    if (!metadata_.empty() && !events_.empty()) out += ',';
    out += events_;
    out += "]}\n";
    return out;
  }

 private:
  void Metadata(std::string_view name, int64_t pid) {
    std::string& m = metadata_;
    JsonOut json(m);
    if (!m.empty()) m += ',';
    m += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":";
    json.Int(pid);
    m += ",\"args\":{\"name\":";
    json.String(name);
    m += "}}";
  }

  // {"ph":..,"cat":..,"name":..,"pid":..,"tid":..,"ts":..  (left open for more keys)
  void Begin(char ph, std::string_view cat, std::string_view name, int64_t pid, int64_t tid,
             int64_t ts) {
    if (!events_.empty()) events_ += ',';
    events_ += "{\"ph\":\"";
    events_ += ph;
    events_ += "\",\"cat\":";
    json_.String(cat);
    events_ += ",\"name\":";
    json_.String(name);
    events_ += ",\"pid\":";
    json_.Int(pid);
    events_ += ",\"tid\":";
    json_.Int(tid);
    events_ += ",\"ts\":";
    json_.Int(ts);
  }

  static bool IsGpuTrace(const std::string& device) {
    return device.find("/stream:") != std::string::npos ||
           device.find("/memcpy") != std::string::npos;
  }

  void AllocatePids() {
    allocators_pid_ = next_pid_++;
    Metadata("Allocators", allocators_pid_);
    for (const auto& device : step_.dev_stats()) {
      const int64_t device_pid = next_pid_++;
      const int64_t tensors_pid = next_pid_++;
      // A repeated device name maps to its last pids, as in timeline.py's dicts.
      device_pids_[device.device()] = device_pid;
      tensor_pids_[device.device()] = tensors_pid;
      Metadata(device.device() + " Compute", device_pid);
      Metadata(device.device() + " Tensors", tensors_pid);
    }
  }

  // timeline.py overwrites thread_id with a lane: the first lane whose last end is strictly
  // before the node's start, in file order.
  void AssignLanes() {
    lanes_.resize(step_.dev_stats_size());
    for (int d = 0; d < step_.dev_stats_size(); ++d) {
      std::vector<int64_t> lane_ends{0};
      for (const auto& node : step_.dev_stats(d).node_stats()) {
        int64_t lane = -1;
        for (size_t i = 0; i < lane_ends.size(); ++i) {
          if (node.all_start_micros() > lane_ends[i]) {
            lane = static_cast<int64_t>(i);
            lane_ends[i] = node.all_start_micros() + node.all_end_rel_micros();
            break;
          }
        }
        if (lane < 0) {
          lane = static_cast<int64_t>(lane_ends.size());
          lane_ends.push_back(node.all_start_micros() + node.all_end_rel_micros());
        }
        lanes_[d].push_back(lane);
      }
    }
  }

  TensorTracker& ProduceTensor(const std::string& name, int64_t ts, int64_t pid,
                               const std::string& allocator, int64_t bytes) {
    // object_id = len(self._tensors) before insertion; a reused name keeps its dict slot.
    const int64_t object_id = static_cast<int64_t>(tensor_index_.size());
    auto [it, inserted] = tensor_index_.try_emplace(name, tensors_.size());
    if (inserted) tensors_.emplace_back();
    TensorTracker& tensor = tensors_[it->second];
    tensor = TensorTracker{name, object_id, ts, pid, allocator, bytes, INT64_MIN};
    return tensor;
  }

  void AnalyzeTensors() {
    google::protobuf::TextFormat::Printer printer;
    printer.SetUseUtf8StringEscaping(true);  // as Python prints: UTF-8 raw, not octal escapes
    for (int d = 0; d < step_.dev_stats_size(); ++d) {
      const auto& device = step_.dev_stats(d);
      const int64_t device_pid = device_pids_[device.device()];
      const int64_t tensors_pid = tensor_pids_[device.device()];
      for (int n = 0; n < device.node_stats_size(); ++n) {
        const auto& node = device.node_stats(n);
        const int64_t tid = lanes_[d][n];
        const int64_t start = node.all_start_micros();
        const int64_t end = start + node.all_end_rel_micros();
        for (int index = 0; index < node.output_size(); ++index) {
          const auto& output = node.output(index);
          const std::string name =
              index == 0 ? node.node_name() : node.node_name() + ":" + std::to_string(index);
          const auto& allocation = output.tensor_description().allocation_description();
          TensorTracker& tensor = ProduceTensor(name, start, tensors_pid,
                                                allocation.allocator_name(),
                                                allocation.requested_bytes());
          tensor.AddUnref(end);
          flow_starts_[name] = {end, device_pid, tid};
          Begin('N', "Tensor", name, tensors_pid, tid, start);
          events_ += ",\"id\":";
          json_.Int(tensor.object_id);
          events_ += '}';
          std::string description;
          printer.PrintToString(output.tensor_description(), &description);
          description.erase(std::remove(description.begin(), description.end(), '"'),
                            description.end());
          Begin('O', "Tensor", name, tensors_pid, tid, end - 1);
          events_ += ",\"id\":";
          json_.Int(tensor.object_id);
          events_ += ",\"args\":{\"snapshot\":{\"tensor_description\":";
          json_.String(description);
          events_ += "}}}";
        }
      }
    }
  }

  void ShowCompute() {
    for (int d = 0; d < step_.dev_stats_size(); ++d) {
      const auto& device = step_.dev_stats(d);
      const int64_t device_pid = device_pids_[device.device()];
      const bool gpu_trace = IsGpuTrace(device.device());
      for (int n = 0; n < device.node_stats_size(); ++n) {
        const auto& node = device.node_stats(n);
        const int64_t tid = lanes_[d][n];
        const int64_t start = node.all_start_micros();
        const int64_t end = start + node.all_end_rel_micros();
        std::string_view name = node.node_name();
        std::string_view op;
        TfOpLabel label;
        if (gpu_trace) {
          const TfKernelName kernel = ParseTfKernelName(node.node_name(), node.timeline_label());
          name = kernel.name;
          op = kernel.op;
        } else if (node.node_name() == "RecvTensor") {
          op = "RecvTensor";
        } else {
          label = ParseTfOpLabel(node.timeline_label());
          op = label.matched ? label.op : std::string_view("unknown");
        }
        Begin('X', "Op", op, device_pid, tid, start);
        events_ += ",\"dur\":";
        json_.Int(node.all_end_rel_micros());
        events_ += ",\"args\":{\"name\":";
        json_.String(name);
        events_ += ",\"op\":";
        json_.String(op);
        for (size_t i = 0; i < label.inputs.size(); ++i) {
          events_ += ",\"input" + std::to_string(i) + "\":";
          json_.String(label.inputs[i]);
        }
        events_ += "}}";
        if (gpu_trace || node.node_name() == "RecvTensor") continue;
        for (std::string_view input : label.inputs) {
          std::string input_name(input);
          if (tensor_index_.count(input_name) == 0) {
            const size_t index = input_name.rfind("/_");
            if (index != std::string::npos && index > 0) input_name.resize(index);
          }
          auto it = tensor_index_.find(input_name);
          if (it == tensor_index_.end()) continue;
          tensors_[it->second].AddUnref(end - 1);
          const auto& [create_time, create_pid, create_tid] = flow_starts_[input_name];
          if (create_pid == device_pid && create_tid == tid) continue;
          const int64_t flow_id = next_flow_id_++;
          Begin('s', "DataFlow", input_name, create_pid, create_tid, create_time);
          events_ += ",\"id\":";
          json_.Int(flow_id);
          events_ += '}';
          Begin('t', "DataFlow", input_name, device_pid, tid, start);
          events_ += ",\"id\":";
          json_.Int(flow_id);
          events_ += '}';
        }
      }
    }
  }

  void ShowMemoryCounters() {
    std::vector<std::string> allocator_order;
    std::unordered_map<std::string, std::vector<std::tuple<int64_t, int64_t, std::string>>>
        allocations;
    for (const TensorTracker& tensor : tensors_) {
      Begin('D', "Tensor", tensor.name, tensor.pid, 0, tensor.last_unref);
      events_ += ",\"id\":";
      json_.Int(tensor.object_id);
      events_ += '}';
      auto [it, inserted] = allocations.try_emplace(tensor.allocator);
      if (inserted) allocator_order.push_back(tensor.allocator);
      it->second.emplace_back(tensor.create_time, tensor.num_bytes, tensor.name);
      it->second.emplace_back(tensor.last_unref, -tensor.num_bytes, tensor.name);
    }
    for (const std::string& allocator : allocator_order) {
      auto& list = allocations[allocator];
      std::sort(list.begin(), list.end());  // (time, bytes, name): frees first at equal times
      int64_t total = 0;
      for (const auto& [time, bytes, name] : list) {
        total += bytes;
        Begin('C', "Memory", allocator, allocators_pid_, 0, time);
        events_ += ",\"args\":{";
        json_.Key(allocator);
        json_.Int(total);
        events_ += "}}";
      }
    }
  }

  const tf::StepStats& step_;
  std::string metadata_;
  std::string events_;
  JsonOut json_;
  int64_t next_pid_ = 0;
  int64_t allocators_pid_ = 0;
  int64_t next_flow_id_ = 0;
  std::unordered_map<std::string, int64_t> device_pids_, tensor_pids_;
  std::vector<std::vector<int64_t>> lanes_;
  std::vector<TensorTracker> tensors_;                    // dict order of timeline.py
  std::unordered_map<std::string, size_t> tensor_index_;  // name -> tensors_ slot
  std::unordered_map<std::string, std::tuple<int64_t, int64_t, int64_t>> flow_starts_;
};

}  // namespace

StatusOr<std::string> ExportTfTimelineJson(const Trace& trace) {
  const auto metadata = LoadRunMetadata(trace);
  if (metadata == nullptr) {
    return InvalidInput(trace.source_path() +
                        ": the tf-timeline flavour needs a step stats input (RunMetadata or "
                        "StepStats); this trace is " +
                        std::string(SourceFormatName(trace.source_format())));
  }
  return TfTimelineExporter(metadata->step_stats()).Run();
}

}  // namespace stepscope::trace
