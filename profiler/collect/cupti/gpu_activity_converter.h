// Turns CUPTI activity records into TensorFlow's GPU step-stats lanes (docs/formats.md §1.4, §5).
//
// The converter is pure: it is fed the activity records CUPTI delivers (the real CUPTI structs of
// the toolkit we build with, activity_records.h) and knows nothing of CUPTI's library, so it is
// tested with synthetic records on machines with no GPU. The real source (cupti_activity_source.h)
// feeds it from CUPTI's buffer-completion callback.
//
// Output, per GPU k (TensorFlow's device id, see "Devices" below), in TensorFlow's layout:
//   /device:GPU:k/stream:S   kernels, memcpys and memsets that ran on stream S
//   /device:GPU:k/stream:all every one of those records once more
//   /device:GPU:k/memcpy     every memcpy once more
// Names and labels:
//   kernel  node_name "<op node>:<OpType>" (the op that launched it, through the external
//           correlation id), else the demangled kernel name; timeline_label
//           "<kernel> regs:R shm:S grid:x,y,z block:x,y,z@@<op node>:<OpType>" (no "@@..." when
//           the kernel is not linked to an op); `kernel` extension filled.
//   memcpy  node_name "<op node>:<OpType>:MEMCPY<kind>" (or "unknown:MEMCPY<kind>"), label
//           "MEMCPY<kind> <bytes> bytes (<src kind> to <dst kind>)"; `memcpy` extension filled.
//   memset  node_name "<op node>:<OpType>:MEMSET" (or "unknown:MEMSET"), label
//           "MEMSET <bytes> bytes (<memory kind>)".
// A linked record carries correlation_id = the op's external correlation id; LinkOps() sets the
// same id on the op's own NodeExecStats so the two can be joined. scheduled_* of a GPU record is
// the host time of the runtime/driver call that launched it, when that record was seen.
//
// Links: CUPTI gives a launch one correlation id, shared by the GPU record, the API record of the
// call that launched it and the EXTERNAL_CORRELATION record naming the op's pushed id. That call
// is a runtime one (cudaLaunchKernel, cudaMemcpyAsync) or, for libraries that launch through the
// driver (cuBLAS/cuBLASLt's cuLaunchKernelEx), a driver one with no runtime record at all: both
// kinds are read alike. Where a runtime call's own driver call is recorded too, it carries the
// same id and starts later; the earliest start is the launch time.
//
// Devices: CUPTI names the CUDA device (its ordinal in this process), but a lane must carry the
// TensorFlow device id of the host lanes: an MPI rank driving CUDA device 1 calls it GPU:0, and
// several virtual GPUs (towers) share one CUDA device. The owner maps each device's streams to
// its TF id (SetStreamDevices, CUPTI's stream ids); a record goes to its stream's device. A
// record on a stream not mapped (a library's own stream) goes to the lowest TF id mapped on its
// CUDA device; with no mapping for that CUDA device at all, to the CUDA ordinal itself.
//
// Times: CUPTI timestamps (ns of CUPTI's clock) are put on the host clock (the collector's
// steady-clock ns) with one offset measured at start (ClockAlignment), then shifted by the same
// `clock_offset_ns` StepCollector::FinishStep takes, so host and GPU lanes share a timeline.
//
// Bounded memory: at most `max_records` kernel/memcpy/memset records are kept per step; past it
// records are dropped and counted, as are the records CUPTI itself dropped and the buffers the
// source refused for lack of budget (reported through OnDropped). API and EXTERNAL_CORRELATION
// records are reduced on arrival to one small entry per correlation id (external id, launch
// start), at most `max_correlations` per step; they arrive in any order relative to the GPU
// records, so entries no GPU record uses (with DRIVER records on, every cuCtxGetCurrent and the
// like) are only let go at Finish.
//
// Threads: OnRecord/OnDropped are serialised by the owner (the CUPTI source calls them under its
// sink lock); RegisterOp may be called from any executor thread: it copies no string and takes
// no lock in the common case (the op goes into a per-step slot indexed by its id, its names are
// interned once per process and found again per thread by address); BeginOps, on the step's
// thread with no op running, says where the step's ids start;
// SetClock, Finish and LinkOps run on the thread that owns the step: SetClock once the source has
// read the alignment for the step (Start/Resume), Finish after the source's last flush of it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/collect/cupti/activity_records.h"
#include "stepscope/tf/step_stats.pb.h"

namespace stepscope::collect::cupti {

// One reading of both clocks taken together at start: host_ns = cupti_ns + offset().
struct ClockAlignment {
  int64_t cupti_ns = 0;  // cuptiGetTimestamp()
  int64_t host_ns = 0;   // the host clock the collector uses (steady clock ns)
  int64_t offset() const { return host_ns - cupti_ns; }
  bool operator==(const ClockAlignment&) const = default;
};

enum class DropReason {
  kCupti,         // CUPTI's own count (cuptiActivityGetNumDroppedRecords): its buffer was full
  kBufferBudget,  // CUPTI asked for a buffer and the byte budget was spent: records lost
  kRecordLimit,   // the converter's own bound on records per step
};

// How many API records of one runtime or driver call a step held.
struct ApiIdCount {
  CUpti_ActivityKind kind = CUPTI_ACTIVITY_KIND_RUNTIME;  // RUNTIME or DRIVER
  uint32_t cbid = 0;                                       // CUPTI's callback id of the call
  uint64_t count = 0;
  bool operator==(const ApiIdCount&) const = default;
};

// Counts a converted step reports; the dropped ones are written next to the trace.
struct ConversionStats {
  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  uint64_t api_records = 0;              // runtime/driver API records (launch times)
  uint64_t external_correlations = 0;    // EXTERNAL_CORRELATION records
  uint64_t linked_records = 0;           // GPU records tied to an op
  uint64_t unlinked_records = 0;         // GPU records with no external correlation
  uint64_t other_records = 0;            // kinds we enable but do not put on a lane
  uint64_t dropped_by_cupti = 0;
  uint64_t dropped_buffers = 0;          // buffer requests refused (budget)
  uint64_t dropped_by_record_limit = 0;
  // API/link records past max_correlations: GPU records they were for may be left unlinked
  // (counted there), none is lost, so they are not part of dropped_total().
  uint64_t dropped_correlations = 0;
  // API records per call, most first (ties by kind, then id): what the profiler's cost is
  // spent on. Sums to api_records.
  std::vector<ApiIdCount> api_ids;
  uint64_t dropped_total() const {
    return dropped_by_cupti + dropped_buffers + dropped_by_record_limit;
  }
  bool operator==(const ConversionStats&) const = default;
};

// Where activity records go: the converter, or a test double.
class ActivityRecordSink {
 public:
  virtual ~ActivityRecordSink() = default;
  virtual void OnRecord(const CUpti_Activity& record) = 0;
  virtual void OnDropped(DropReason reason, uint64_t count) = 0;
};

struct ConverterOptions {
  size_t max_records = 1 << 20;  // TF caps a step at 2^20 node stats
  size_t max_correlations = 1 << 20;  // correlation ids of API/link records kept per step
  // Device name prefix; lanes are "<prefix><device id>/stream:S" etc.
  std::string device_prefix = "/device:GPU:";
};

// The TF device whose work runs on one CUPTI stream.
struct StreamDevice {
  uint32_t cuda_device = 0;  // CUPTI's deviceId: the CUDA ordinal in this process
  uint32_t stream_id = 0;    // CUPTI's stream id (cuptiGetStreamIdEx), unique within a context
  int tf_device = 0;         // k of /device:GPU:k
  bool operator==(const StreamDevice&) const = default;
};

// An op that launched GPU work in the step, for LinkOps.
struct LaunchedOp {
  uint64_t external_id = 0;
  std::string node_name;
  int64_t start_nanos = 0;  // registered host start shifted by clock_offset_ns; 0 if unknown
  bool operator==(const LaunchedOp&) const = default;
};

struct ConvertedStep {
  tf::StepStats step_stats;  // the GPU lanes only, sorted by device name, records by start
  std::vector<LaunchedOp> launched_ops;  // sorted by external id
  ConversionStats stats;
};

class GpuActivityConverter : public ActivityRecordSink {
 public:
  explicit GpuActivityConverter(ClockAlignment clock, ConverterOptions options = {});
  GpuActivityConverter(const GpuActivityConverter&) = delete;
  GpuActivityConverter& operator=(const GpuActivityConverter&) = delete;

  // The source reads the alignment at each Start()/Resume(), after the converter exists as its
  // sink; the alignment set when Finish runs applies to all the step's records.
  void SetClock(ClockAlignment clock) { clock_ = clock; }
  const ClockAlignment& clock() const { return clock_; }

  ~GpuActivityConverter() override;

  // The step's external ids start at `first_external_id` (the tracer hands out consecutive
  // ids): ids from there on have a slot each; others (or past about 10^6 in a step) go to a
  // locked map, with the same result. Called with no op registering; 1 until called.
  void BeginOps(uint64_t first_external_id);

  // Which TF device each stream's records belong to (see "Devices" above); kept across steps,
  // replaced by the next call. Called by the step's thread between steps or before Finish.
  void SetStreamDevices(std::vector<StreamDevice> streams);

  // The executor names the op behind an external correlation id it pushed. `host_start_ns`
  // (collector clock, 0 if unknown) tells apart several runs of one node in LinkOps. The names
  // are interned (copied once per process per distinct name), so they need not outlive the call.
  void RegisterOp(uint64_t external_id, const std::string& node_name, const std::string& op_type,
                  int64_t host_start_ns = 0);

  // ActivityRecordSink. Records of any kind may arrive in any order across buffers; linking is
  // resolved in Finish.
  void OnRecord(const CUpti_Activity& record) override;
  void OnDropped(DropReason reason, uint64_t count) override;

  // Builds the step's GPU lanes and clears the records (registered ops and counts too), keeping
  // the clock alignment.
  ConvertedStep Finish(int64_t clock_offset_ns = 0);

  // Sets correlation_id on the host ops (StepCollector output built with the same
  // clock_offset_ns) that launched GPU work: matched by node name and, when the start is known,
  // by all_start_nanos. Returns how many host ops were marked.
  static size_t LinkOps(const std::vector<LaunchedOp>& launched_ops, tf::StepStats* host_stats);

 private:
  enum class RecordKind { kKernel, kMemcpy, kMemset };
  // One GPU record in our own words (CUPTI's pointers, such as kernel names, are copied).
  struct GpuRecord {
    RecordKind kind;
    uint32_t device_id = 0, stream_id = 0, correlation_id = 0;
    uint64_t start = 0, end = 0;  // CUPTI ns
    uint64_t bytes = 0;
    uint8_t copy_kind = 0, src_kind = 0, dst_kind = 0;  // memcpy; src_kind = memory kind (memset)
    tf::KernelLaunch launch;      // kernels
    std::string kernel_name;      // demangled
  };
  // A registered op: interned names (nullptr: no op in this slot).
  struct OpInfo {
    const std::string* node_name = nullptr;
    const std::string* op_type = nullptr;
    int64_t host_start_ns = 0;
  };
  static constexpr size_t kOpsPerChunk = 4096;
  static constexpr size_t kOpChunks = 256;  // 2^20 ids per step in slots, as max_records
  // The op registered under `external_id`, or nullptr. Finish's thread, ops done.
  const OpInfo* FindOp(uint64_t external_id) const;
  void ClearOps();

  void AddGpuRecord(GpuRecord record);
  // CUPTI's device and peer-to-peer memcpy records carry the same fields.
  template <typename CuptiMemcpy>
  static GpuRecord MemcpyRecord(const CuptiMemcpy& m);
  tf::NodeExecStats ToNodeStats(const GpuRecord& record, int64_t clock_offset_ns,
                                uint64_t* external_id_out) const;

  // What the API and EXTERNAL_CORRELATION records said about one CUPTI correlation id.
  struct Correlation {
    uint64_t external_id = 0;  // the op's id; 0 = no link record
    uint64_t api_start = 0;    // CUPTI ns of the earliest API call; 0 = no API record
  };
  // The entry of `correlation_id`, or nullptr (counted) once max_correlations are in use.
  Correlation* CorrelationEntry(uint32_t correlation_id);

  // The TF device id of a record's lane (SetStreamDevices' rules).
  uint32_t TfDeviceOf(uint32_t cuda_device, uint32_t stream_id) const;

  ClockAlignment clock_;
  ConverterOptions options_;
  // (CUDA device, stream id) -> TF id, and per CUDA device the lowest TF id mapped on it.
  std::unordered_map<uint64_t, int> stream_devices_;
  std::unordered_map<uint32_t, int> default_devices_;
  std::vector<GpuRecord> records_;
  std::unordered_map<uint32_t, Correlation> correlations_;
  std::unordered_map<uint64_t, uint64_t> api_counts_;  // (kind << 32 | cbid) -> records
  // Slots of the step's ops by external id - first_op_id_, in chunks made on first use (a
  // registering thread installs a chunk with one compare-and-swap) and kept across steps.
  uint64_t first_op_id_ = 1;
  std::array<std::atomic<OpInfo*>, kOpChunks> op_chunks_{};
  std::mutex overflow_mu_;  // guards overflow_ops_: ids outside the slots
  std::unordered_map<uint64_t, OpInfo> overflow_ops_;
  ConversionStats stats_;
};

// TF's names for CUPTI's enums: "HtoD", ..., "PtoP"; "Pageable", "Pinned", "Device", ...
std::string MemcpyKindName(uint8_t copy_kind);
std::string MemoryKindName(uint8_t memory_kind);

}  // namespace stepscope::collect::cupti
