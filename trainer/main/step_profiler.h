// `--profile` for the trainer: which steps to profile, and the bridge from the runtime's hooks
// (OpScope's OpListener, the allocators' AllocationObserver) to profiler/collect's StepCollector.
// Each profiled step becomes one RunMetadata file, written to a temporary name and renamed.
// In GPU builds with CUPTI, a profiled step with a GPU device also gets what its GPU ran: the
// CUPTI tracer (GpuStepTracer) is made on the first such step and traces only those steps (CUPTI
// is off in between, so unprofiled steps run and are timed without it); when it cannot start (no
// driver), one warning goes to stderr and the traces hold host ops only.
// Every trace describes its devices (TraceSession.devices): a CPU device with the sgemm peak
// measured on it, a GPU device with what CUDA says of its GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "profiler/collect/step_collector.h"
#include "trainer/parallel/collective_event.h"
#include "trainer/runtime/allocator.h"
#include "trainer/runtime/device.h"
#include "trainer/runtime/op_scope.h"
#include "trainer/main/train_options.h"

namespace stepscope::trainer {

class StepProfiler final : public runtime::OpListener,
                           public runtime::AllocationObserver,
                           public parallel::CollectiveObserver {
 public:
  StepProfiler(ProfileOptions options, std::string model_name);
  ~StepProfiler() override;

  // This process's place in an MPI run: written into every trace, and `_rank<R>` in file names
  // when there are several ranks.
  void SetRank(int rank, int world_size);
  // Records now (in the traces' epoch clock) as the clock sync point: called by every rank right
  // after a barrier, it lets `stepscope merge` align ranks on different hosts.
  void MarkClockSync();
  // Measures this CPU's sgemm peak (kernels/sgemm_peak.h) once, as `cpu_devices` devices run
  // their GEMMs (at once, with the BLAS threads the devices set), and records it with every CPU
  // device of the traces (TraceSession.devices): the peak `stepscope efficiency` measures a CPU
  // run's MFU against, the whole process's. Call after the devices are made.
  void MeasureCpuPeak(int cpu_devices);

  // Hooks every device's op scopes and allocator for one step.
  void BeginStep(int64_t step, const std::vector<runtime::Device*>& devices);
  // Unhooks, builds the step's RunMetadata and writes it; returns the path written.
  StatusOr<std::string> EndStep();
  // What the last EndStep's GPU trace held ("GPU: 1203 CUPTI records, 310 kernels, ..."), empty
  // when that step traced no GPU: the figures a user checks first (records per step, drops).
  const std::string& last_gpu_note() const { return last_gpu_note_; }

  void OnOpStart(const runtime::Device& device, const runtime::Node& node, int64_t start_ns) override;
  void OnOpInputs(const runtime::Device& device, const runtime::Node& node,
                  std::span<const runtime::Tensor> inputs) override;
  void OnOpEnd(const runtime::Device& device, const runtime::Node& node, int64_t start_ns,
               int64_t end_ns, std::span<const runtime::Tensor> outputs) override;
  void OnAllocation(const runtime::Allocator& allocator,
                    const runtime::AllocationEvent& event) override;
  // A copy goes on its destination device's memcpy lane.
  void OnCopy(const runtime::Device& device, const runtime::CopyEvent& copy) override;
  // Each collective goes on the communication lane of every device that took part, named
  // `tower_<d>/<name>` as the towers' ops are; a fusion-buffer copy is also a MEMCPYDtoD on each
  // device's memcpy lane with that participant's own copy time. Participant d is the d-th device
  // of BeginStep's list.
  void OnCollective(const parallel::CollectiveEvent& event) override;

 private:
  void Unhook();
  // GPU builds with CUPTI: makes the GPU tracer on the first step with a GPU device and turns
  // tracing on for this step; on failure warns once and leaves GPU tracing off for the run.
  void BeginGpuStep();
  void GpuTracingFailed(const Status& status);
  // Records each GPU device's properties (name, SMs, clock, memory) in the step's session.
  void DescribeGpus(tf::TraceSession* session) const;

  // The GPU tracer's state; empty in builds without CUPTI (defined in step_profiler.cc so this
  // header needs no CUDA header).
  struct GpuTracing;

  ProfileOptions options_;
  std::string model_name_;
  collect::StepCollector collector_;
  std::vector<runtime::Device*> devices_;
  int64_t step_ = 0;
  int64_t clock_offset_ns_ = 0;  // wall clock minus steady clock, so traces carry epoch times
  int64_t clock_sync_ns_ = 0;    // epoch time of the sync point; 0 = none recorded
  int rank_ = 0, world_size_ = 1;
  double cpu_peak_flops_per_s_ = 0;  // 0: not measured
  std::string cpu_peak_by_;          // how it was measured, for the trace
  std::string cpu_name_;             // the CPU's model name
  std::string last_gpu_note_;
  std::unique_ptr<GpuTracing> gpu_;
};

}  // namespace stepscope::trainer
