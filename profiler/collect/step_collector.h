// Run-time collection of per-op step stats (docs/design.md "profiler/collect"). The executor
// reports each op's start and end, its outputs and the allocations it made or freed; the
// collector keeps them in per-thread buffers with no lock and no allocation on the hot path
// (buffers keep their capacity from step to step), and turns a finished step into a TensorFlow
// RunMetadata.
//
// Strings are passed as pointers to names that outlive the step (graph node names, device and
// allocator names), so recording copies no string. This library knows nothing of the trainer.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::collect {

// One output tensor of an op (TensorDescription + AllocationDescription).
struct TensorRecord {
  int dtype = 0;  // tf::DataType value
  int rank = 0;
  std::array<int64_t, 4> dims{};
  int64_t requested_bytes = 0, allocated_bytes = 0, allocation_id = 0;
  uint64_t ptr = 0;
  const std::string* allocator = nullptr;
  bool single_reference = true;
};

// One allocate (+bytes) or free (−bytes) seen by a device allocator.
struct AllocationRecord {
  const std::string* allocator = nullptr;
  int64_t time_ns = 0;
  int64_t delta_bytes = 0;
  int64_t bytes_in_use_after = 0;
  int64_t allocation_id = 0;
};

struct OpRecord {
  const std::string* device = nullptr;
  const std::string* node_name = nullptr;
  const std::string* op_type = nullptr;
  const std::vector<std::string>* inputs = nullptr;
  uint32_t thread_id = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t first_output = 0, num_outputs = 0;          // into the thread's tensor records
  uint32_t first_allocation = 0, num_allocations = 0;  // into the thread's allocation records
  uint32_t first_input = 0, num_inputs = 0;            // into the thread's input records
};

// A collective (all-reduce of a gradient bucket, fusion-buffer copy) one device took part in;
// it goes on that device's communication lane with its CollectiveInfo. Few per step, so it
// owns its strings.
struct CollectiveRecord {
  const std::string* device = nullptr;
  std::string name;       // e.g. "AllReduce/Model/softmax_w"
  std::string op_type;    // e.g. "ALLREDUCE", "MEMCPY_IN_FUSION_BUFFER"
  std::string algorithm;  // e.g. "ring#2"
  int64_t bytes = 0;
  int group_size = 0;
  std::string reduction;  // "sum", "mean"
  int64_t fused_tensors = 0;
  int64_t start_ns = 0, end_ns = 0;
};

// A copy between memories (input staging, a cross-device gather, a fusion-buffer copy) onto
// `device`. It goes on the device's memcpy lane (`<device>/memcpy`, as TF's GPU tracer puts its
// copies) named `<annotation>:MEMCPY<kind>` with the label "MEMCPY<kind> <bytes> bytes (<src>
// to <dst>)" and a MemcpyInfo. Few per step, so it owns its strings.
struct CopyRecord {
  const std::string* device = nullptr;  // the destination device
  std::string annotation;  // e.g. "tower_0/TrainInput/split:Slice"
  std::string kind;        // "HtoD", "DtoD", ...
  std::string src_memory;  // "Pageable", "Device", ...
  std::string dst_memory;
  int64_t bytes = 0;
  int64_t start_ns = 0, end_ns = 0;
};

// The thread id of the communication lane in DeviceStepStats (its thread_names say so).
inline constexpr uint32_t kCollectiveLaneThreadId = 0x7fff0000u;

struct CollectorOptions {
  // Per-thread bound on records per step; past it, records are dropped and counted.
  size_t max_ops_per_thread = 1 << 20;
  size_t max_allocations_per_thread = 1 << 22;
};

class StepCollector {
 public:
  explicit StepCollector(CollectorOptions options = {});
  ~StepCollector();
  StepCollector(const StepCollector&) = delete;
  StepCollector& operator=(const StepCollector&) = delete;

  // Start recording (clears the previous step's records; keeps buffer capacity).
  void BeginStep(int64_t step);
  bool recording() const { return recording_.load(std::memory_order_acquire); }

  // Hot path, on the thread running the op. Ops on one thread do not nest. The strings are kept
  // by address until FinishStep (the graph owns them in the trainer): they must outlive the step.
  void BeginOp(const std::string* device, const std::string* node_name,
               const std::string* op_type, const std::vector<std::string>* inputs,
               int64_t start_ns);
  void AddOutput(const TensorRecord& tensor);
  // An input's dtype and shape (its allocation fields are not written), in input order.
  void AddInput(const TensorRecord& tensor);
  void EndOp(int64_t end_ns);
  // Any thread: attributed to the op running on that thread, else to the op it ran last
  // (a tensor freed after its op returned), else kept as the thread's unattributed records.
  void RecordAllocation(const AllocationRecord& record);
  // Any thread, outside ops.
  void RecordCollective(CollectiveRecord record);
  // Any thread, inside or outside ops (takes the registry lock: copies are few per step).
  void RecordCopy(CopyRecord record);

  // Stop recording and build the step's RunMetadata: one DeviceStepStats per device with
  // node_stats sorted by start (and one `<device>/memcpy` per device that received copies), times relative to nothing (absolute µs/ns of the steady clock
  // shifted by `clock_offset_ns`, so different processes can share a timeline).
  tf::RunMetadata FinishStep(int64_t clock_offset_ns = 0);

  uint64_t dropped_records() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct ThreadBuffer;
  ThreadBuffer& ThisThread();

  CollectorOptions options_;
  std::atomic<bool> recording_{false};
  std::atomic<uint64_t> dropped_{0};
  int64_t step_ = 0;
  std::atomic<uint64_t> generation_{0};  // bumps per step so thread buffers clear themselves
  std::mutex registry_mu_;   // guards buffers_ (taken once per thread, not per op)
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
  std::vector<CollectiveRecord> collectives_;  // guarded by registry_mu_
  std::vector<CopyRecord> copies_;             // guarded by registry_mu_
  const uint64_t id_;        // distinguishes collectors in the thread-local cache
};

// TensorFlow's timeline label: "name = Op(in0, in1)".
std::string TimelineLabel(const std::string& node_name, const std::string& op_type,
                          const std::vector<std::string>* inputs);

}  // namespace stepscope::collect
