// The GPU half of a step profiler (the trainer's `--profile` in GPU builds with CUPTI): drives a
// CUPTI activity source and the converter for profiled steps, as TensorFlow's GPU tracer does for
// its session runs. The step profiler owns one for the run once a profiled step has a GPU device.
//
// Tracing is on only inside profiled steps, so the steps in between (the timed ones) run without
// CUPTI's overhead: Start() starts the source and pauses it at once; BeginStep resumes it (CUPTI's
// kinds enabled, the clock alignment read afresh for this step's records) and EndStep pauses it
// again after the last flush. The buffer callbacks stay registered for the whole run.
//
// Per op on a GPU device, on the thread that launches its kernels, inside a step: OnOpStart
// registers the op with the converter under a fresh external id and pushes that id as CUPTI's
// external correlation, so every kernel, copy and memset launched until OnOpEnd (which pops it)
// is linked to the op. Outside a step both do nothing (no CUPTI call, no registration). At the
// step's end, EndStep pauses the source (which flushes CUPTI), converts the records on the
// collector's clock, appends the `/device:GPU:k/stream:S`, `/stream:all` and `/memcpy` lanes to
// the step's RunMetadata, writes each launching host op's correlation id, and records the GPU
// records lost in TraceSession.dropped_gpu_records. Records delivered outside a step are
// discarded, so a step's lanes hold only that step's work.
// The runtime's own copy lane of a traced GPU (`/job:.../device:GPU:k/memcpy`: host-observed
// copy times, which include waiting for the stream and for CUPTI) gives way to CUPTI's
// `/device:GPU:k/memcpy`, the GPU's own copies, as in TensorFlow's GPU traces; without CUPTI it
// stays, the only record of the copies.
// The source is an interface so tests drive the tracer with synthetic CUPTI records.
//
// Threads and locks: OnOpStart/OnOpEnd run on executor threads (RegisterOp fills the op's slot,
// no lock; the push/pop are CUPTI's per-thread stack). BeginStep/EndStep run on the thread
// that owns the step, with no op running. CUPTI delivers records on its own threads under the
// source's sink lock, then this tracer's `records_mu_`; BeginStep/EndStep call the source's
// Resume/Pause without holding `records_mu_` (Pause flushes, waiting for those deliveries) and
// take it only afterwards.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "profiler/collect/cupti/cupti_activity_source.h"
#include "profiler/collect/cupti/gpu_activity_converter.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::collect::cupti {

// What one profiled step's GPU trace added.
struct GpuStepSummary {
  ConversionStats stats;
  size_t linked_host_ops = 0;  // host ops given the correlation id of the GPU work they launched
  // Records CUPTI dropped while tracing was off, over the run so far: in no step's records.
  uint64_t dropped_between_steps = 0;
};

// Removes from `step_stats` the runtime copy lanes of the GPUs that `gpu_lanes` (CUPTI's) cover.
void DropRuntimeCopyLanesOfTracedGpus(const tf::StepStats& gpu_lanes, tf::StepStats* step_stats);

class GpuStepTracer final : private ActivityRecordSink {
 public:
  // Starts `source` with this tracer as its sink, then pauses it until BeginStep. When it
  // cannot start (no driver, a CUPTI error, another tracer running), kUnavailable whose message
  // names CUPTI and the reason.
  static StatusOr<std::unique_ptr<GpuStepTracer>> Start(
      std::unique_ptr<CuptiActivitySource> source,
      ConverterOptions options = {});
  ~GpuStepTracer() override;  // stops the source
  GpuStepTracer(const GpuStepTracer&) = delete;
  GpuStepTracer& operator=(const GpuStepTracer&) = delete;

  // Resumes the source (tracing on, clock alignment read again) and keeps its records for this
  // step. On failure tracing stays off and the step has no GPU lanes.
  Status BeginStep();

  // Which TF device owns each CUPTI stream, for the lanes' names (the converter's
  // SetStreamDevices); kept until replaced. On the step's thread, after BeginStep.
  void SetStreamDevices(std::vector<StreamDevice> streams);

  // Hot path, on the thread launching the op's GPU work; ops on one thread do not nest.
  // `host_start_ns` is the op's start on the collector's (steady) clock. No-ops outside a step.
  void OnOpStart(const std::string& node_name, const std::string& op_type, int64_t host_start_ns);
  void OnOpEnd();

  // Pauses the source (flushing CUPTI, tracing off), converts the step's records with
  // `clock_offset_ns` (the one the host RunMetadata was built with), links `metadata`'s host ops
  // to their GPU work, appends the GPU lanes and records the drops in its TraceSession. On a
  // flush error tracing is off all the same and `metadata` is unchanged.
  StatusOr<GpuStepSummary> EndStep(int64_t clock_offset_ns, tf::RunMetadata* metadata);

  // Correlation pushes/pops CUPTI refused since the tracer started (their ops stay unlinked).
  uint64_t correlation_errors() const {
    return correlation_errors_.load(std::memory_order_relaxed);
  }
  // What the source records, for the log (CuptiActivitySource::api_records, hw_trace).
  std::string api_records() const { return source_->api_records(); }
  std::string hw_trace() const { return source_->hw_trace(); }
  std::string between_steps() const { return source_->between_steps(); }

 private:
  GpuStepTracer(std::unique_ptr<CuptiActivitySource> source,
                ConverterOptions options);

  // ActivityRecordSink, called on CUPTI's threads (serialised by the source).
  void OnRecord(const CUpti_Activity& record) override;
  void OnDropped(DropReason reason, uint64_t count) override;

  std::unique_ptr<CuptiActivitySource> source_;
  std::mutex records_mu_;  // guards converter_'s records and keeping_; after the source's lock
  GpuActivityConverter converter_;
  // The source records links (its kinds include EXTERNAL_CORRELATION): ops push their ids.
  const bool links_ops_;
  bool keeping_ = false;   // inside a profiled step: records go to the converter
  // Between BeginStep's resume and EndStep: ops push correlation ids and register with the
  // converter. Set on the step's thread before the executors run its ops.
  std::atomic<bool> in_step_{false};
  std::atomic<uint64_t> next_external_id_{1};
  std::atomic<uint64_t> correlation_errors_{0};
};

}  // namespace stepscope::collect::cupti
