// The --profile bridge: hooks the runtime's op and allocation observers into a StepCollector on
// profiled steps, adds CUPTI's GPU records where built, and writes each step's RunMetadata.
#include "trainer/main/step_profiler.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include "base/file_io.h"
#include "kernels/sgemm_peak.h"
#include "profiler/formats/step_stats/step_stats_import.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/formats/writer.h"
#include "trainer/runtime/clock.h"
#ifdef STEPSCOPE_WITH_CUPTI
#include "profiler/collect/cupti/cupti_activity_source.h"
#include "profiler/collect/cupti/cupti_stream_ids.h"
#include "profiler/collect/cupti/gpu_step_tracer.h"
#include "profiler/collect/cupti/traced_api.h"
#endif

namespace stepscope::trainer {
namespace {

int TfDataType(runtime::DType dtype) {
  return dtype == runtime::DType::kFloat32 ? tf::DT_FLOAT : tf::DT_INT32;
}

// The CPU's model name as the kernel reports it ("AMD EPYC 7B13"); "CPU" where it says none.
std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    if (begin != std::string::npos) return line.substr(begin);
  }
  return "CPU";
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

#ifdef STEPSCOPE_WITH_CUPTI
// Why records were lost, when any were: each cause calls for a different remedy.
std::string DescribeDrops(const collect::cupti::ConversionStats& s) {
  if (s.dropped_total() == 0) return "";
  return " (" + std::to_string(s.dropped_by_cupti) + " by CUPTI, " +
         std::to_string(s.dropped_buffers) + " buffers refused, " +
         std::to_string(s.dropped_by_record_limit) + " over the record limit)";
}

collect::cupti::TraceLevel ToTraceLevel(ProfileLevel level) {
  switch (level) {
    case ProfileLevel::kAttached: return collect::cupti::TraceLevel::kAttached;
    case ProfileLevel::kActivity: return collect::cupti::TraceLevel::kActivity;
    case ProfileLevel::kAll: return collect::cupti::TraceLevel::kAll;
    case ProfileLevel::kHost:  // never traced
    case ProfileLevel::kLaunches: break;
  }
  return collect::cupti::TraceLevel::kLaunches;
}

// What this run's CUPTI records, and the step's API records per call: "level launches (API
// records: 67 chosen runtime/driver calls, hw trace off, CUPTI detached between steps); api_ids
// runtime:cudaLaunchKernel_v7000=700,driver:cuLaunchKernelEx=120" (no space or ';' in the
// histogram: a log reader takes what follows "api_ids " up to the next ';').
std::string DescribeRecording(const ProfileOptions& options,
                              const collect::cupti::GpuStepTracer& tracer,
                              const collect::cupti::GpuStepSummary& step) {
  const std::string api = tracer.api_records(), hw = tracer.hw_trace();
  return std::string("level ") + ProfileLevelName(options.level) + " (API records: " +
         (api.empty() ? "none" : api) + ", hw trace " + (hw.empty() ? "off" : hw) +
         ", CUPTI " + tracer.between_steps() + " between steps); api_ids " +
         collect::cupti::FormatApiHistogram(step.stats.api_ids);
}

// `recording` goes before the drop count, which scripts/gpu/figures.py reads as the line's end.
std::string DescribeGpuStep(const collect::cupti::GpuStepSummary& step,
                            const std::string& recording) {
  const collect::cupti::ConversionStats& s = step.stats;
  const uint64_t records = s.kernels + s.memcpys + s.memsets + s.api_records +
                           s.external_correlations + s.other_records;
  return "GPU: " + std::to_string(records) + " CUPTI records (" + std::to_string(s.kernels) +
         " kernels, " + std::to_string(s.memcpys) + " copies, " + std::to_string(s.memsets) +
         " memsets, " + std::to_string(s.api_records) + " API calls, " +
         std::to_string(s.other_records) + " other), " +
         std::to_string(s.linked_records) + " linked to " + std::to_string(step.linked_host_ops) +
         " ops, " + std::to_string(s.unlinked_records) + " unlinked; " + recording + "; " +
         std::to_string(s.dropped_total()) + " dropped" + DescribeDrops(s) +
         (step.dropped_between_steps == 0
              ? ""
              : "; " + std::to_string(step.dropped_between_steps) +
                    " dropped between profiled steps, in no step");
}
#endif

}  // namespace

struct StepProfiler::GpuTracing {
#ifdef STEPSCOPE_WITH_CUPTI
  // Started on the first step with a GPU device.
  std::unique_ptr<collect::cupti::GpuStepTracer> tracer;
  bool failed = false;  // could not start, or failed later: host ops only
  bool stream_ids_warned = false;  // CUPTI could not name the devices' streams (said once)
  // This step traces its GPU devices' ops. Set before the devices are hooked, read by the ops.
  std::atomic<bool> in_step{false};
#endif
};

StepProfiler::StepProfiler(ProfileOptions options, std::string model_name)
    : options_(std::move(options)),
      model_name_(std::move(model_name)),
      gpu_(std::make_unique<GpuTracing>()) {
  const int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  clock_offset_ns_ = wall - runtime::NowNanos();
}

StepProfiler::~StepProfiler() { Unhook(); }

void StepProfiler::SetRank(int rank, int world_size) {
  rank_ = rank;
  world_size_ = world_size;
}

void StepProfiler::MarkClockSync() { clock_sync_ns_ = runtime::NowNanos() + clock_offset_ns_; }

void StepProfiler::MeasureCpuPeak(int cpu_devices) {
  const kernels::SgemmPeak peak = kernels::MeasureSgemmPeak(1024, 5, std::max(1, cpu_devices));
  cpu_peak_flops_per_s_ = peak.flops_per_s;
  auto count = [](int n, const char* one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); };
  const std::string threads = count(peak.threads, "thread");
  cpu_peak_by_ = "measured sgemm peak (stepscope-train, " +
                 (peak.callers == 1 ? threads : count(peak.callers, "device") + " at once, " + threads + " each") +
                 "): fastest of " + std::to_string(peak.repeats) + (peak.callers == 1 ? " fp32 GEMMs" : " rounds of fp32 GEMMs") +
                 " of " + std::to_string(peak.n) + "^3";
  cpu_name_ = CpuModelName();
}

void StepProfiler::Unhook() {
  for (runtime::Device* device : devices_) {
    device->set_op_listener(nullptr);
    device->allocator().SetObserver(nullptr);
    if (device->host_allocator() != nullptr) device->host_allocator()->SetObserver(nullptr);
  }
}

void StepProfiler::BeginStep(int64_t step, const std::vector<runtime::Device*>& devices) {
  step_ = step;
  devices_ = devices;
  collector_.BeginStep(step);
  BeginGpuStep();
  for (runtime::Device* device : devices_) {
    device->allocator().SetObserver(this);
    // A GPU's pinned staging buffers ("cuda_host_bfc"), as TensorFlow's GPU steps record them.
    if (device->host_allocator() != nullptr) device->host_allocator()->SetObserver(this);
    device->set_op_listener(this);
  }
}

void StepProfiler::BeginGpuStep() {
#ifdef STEPSCOPE_WITH_CUPTI
  gpu_->in_step.store(false, std::memory_order_relaxed);
  const bool has_gpu = std::any_of(devices_.begin(), devices_.end(), [](const runtime::Device* d) {
    return d->kind() == runtime::DeviceKind::kGpu;
  });
  // --profile_level host: CUPTI is never attached, the traces hold host ops only.
  if (!has_gpu || gpu_->failed || options_.level == ProfileLevel::kHost) return;
  if (gpu_->tracer == nullptr) {
    collect::cupti::CuptiSourceOptions source_options =
        collect::cupti::SourceOptionsFor(ToTraceLevel(options_.level));
    source_options.hw_trace = options_.hw_trace;
    source_options.detach_when_paused = !options_.stay_attached;
    auto tracer = collect::cupti::GpuStepTracer::Start(
        collect::cupti::MakeCuptiActivitySource(std::move(source_options)));
    if (!tracer.ok()) {
      GpuTracingFailed(tracer.status());
      return;
    }
    gpu_->tracer = std::move(tracer).value();
  }
  const Status ready = gpu_->tracer->BeginStep();
  if (!ready.ok()) {
    GpuTracingFailed(ready);
    return;
  }
  // CUPTI applies newly enabled kinds at a context's next CUDA call, which then takes
  // milliseconds (2.7 ms seen on an H100): one call per GPU here, before the step's clock starts,
  // keeps that out of the step's first op.
  for (const runtime::Device* device : devices_) {
    if (device->gpu() == nullptr) continue;
    if (const Status synced = device->gpu()->Synchronize(); !synced.ok()) {
      GpuTracingFailed(synced);
      return;
    }
  }
  // Lanes by TF device id: each GPU device's streams, looked up while CUPTI is attached.
  std::vector<collect::cupti::DeviceStream> streams;
  for (const runtime::Device* device : devices_) {
    if (device->gpu() == nullptr) continue;
    for (void* stream : device->gpu()->streams()) {
      streams.push_back({stream, static_cast<uint32_t>(device->gpu()->ordinal()), device->index()});
    }
  }
  auto mapped = collect::cupti::CuptiStreamDevices(streams);
  if (mapped.ok()) {
    gpu_->tracer->SetStreamDevices(std::move(mapped).value());
  } else if (!std::exchange(gpu_->stream_ids_warned, true)) {
    std::cerr << "stepscope-train: warning: " << mapped.status().message()
              << "; GPU lanes are named by CUDA device number" << std::endl;
  }
  gpu_->in_step.store(true, std::memory_order_relaxed);  // published by set_op_listener
#endif
}

void StepProfiler::GpuTracingFailed(const Status& status) {
#ifdef STEPSCOPE_WITH_CUPTI
  gpu_->failed = true;
  gpu_->in_step.store(false, std::memory_order_relaxed);
  // The tracer, if any, stays until the profiler goes: an op still ending may be using it.
#endif
  std::cerr << "stepscope-train: warning: " << status.message()
            << "; --profile records host ops only (no GPU kernels or copies)" << std::endl;
}

// Each GPU device its own record, a virtual GPU too (its TF name and id, its GPU's properties),
// as Kineto's deviceProperties: `stepscope efficiency` picks the GPU's peak from it.
void StepProfiler::DescribeGpus(tf::TraceSession* session) const {
  for (const runtime::Device* device : devices_) {
    if (device->gpu() == nullptr) continue;
    const runtime::GpuProperties& gpu = device->gpu()->properties();
    if (gpu.name.empty()) continue;  // a stand-in that gives none
    tf::DeviceDescription* described = session->add_devices();
    described->set_device(device->name());
    described->set_id(device->index());
    described->set_name(gpu.name);
    described->set_sm_count(gpu.sm_count);
    described->set_memory_bytes(gpu.memory_bytes);
    described->set_clock_khz(gpu.clock_khz);
    described->set_compute_major(gpu.compute_major);
    described->set_compute_minor(gpu.compute_minor);
  }
}

StatusOr<std::string> StepProfiler::EndStep() {
  Unhook();
  last_gpu_note_.clear();
  tf::RunMetadata metadata = collector_.FinishStep(clock_offset_ns_);
#ifdef STEPSCOPE_WITH_CUPTI
  if (gpu_->in_step.exchange(false, std::memory_order_relaxed)) {
    // The same offset as the host ops, so GPU lanes share their timeline.
    auto gpu_step = gpu_->tracer->EndStep(clock_offset_ns_, &metadata);
    if (gpu_step.ok()) {
      last_gpu_note_ =
          DescribeGpuStep(*gpu_step, DescribeRecording(options_, *gpu_->tracer, *gpu_step));
    } else {
      GpuTracingFailed(gpu_step.status());
    }
  }
#endif
  tf::TraceSession* session = metadata.mutable_stepscope_session();
  session->set_producer("stepscope-train " STEPSCOPE_VERSION);
  session->set_rank(rank_);
  session->set_world_size(world_size_);
  session->set_host(HostName());
  session->set_model(model_name_);
  session->set_clock_sync_nanos(clock_sync_ns_);
  for (auto& dev : *metadata.mutable_step_stats()->mutable_dev_stats()) {
    dev.set_host(session->host());
    dev.set_rank(rank_);
  }
  DescribeGpus(session);
  if (cpu_peak_flops_per_s_ > 0) {
    for (const runtime::Device* device : devices_) {
      if (device->kind() != runtime::DeviceKind::kCpu) continue;
      tf::DeviceDescription* described = session->add_devices();
      described->set_device(device->name());
      described->set_id(device->index());
      described->set_name(cpu_name_);
      described->set_measured_flops_per_s(cpu_peak_flops_per_s_);
      described->set_measured_by(cpu_peak_by_);
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  if (ec) return IoError("cannot create trace directory " + options_.dir + ": " + ec.message());
  std::string base = options_.dir + "/" + model_name_ + "_step" + std::to_string(step_) +
                     (world_size_ > 1 ? "_rank" + std::to_string(rank_) : "");
  for (char& c : base) {
    if (c == ' ') c = '_';
  }
  if (options_.format == trace::OutputFormat::kPerfettoJson) {
    auto shared = std::make_shared<tf::RunMetadata>(std::move(metadata));
    const trace::Trace trace = trace::ImportRunMetadata(shared, trace::SourceFormat::kRunMetadataBinary,
                                                        base, {});
    const std::string path = base + ".json.gz";
    RETURN_IF_ERROR(trace::WriteTrace(trace, path, trace::OutputFormat::kPerfettoJson));
    return path;
  }
  const bool text = options_.format == trace::OutputFormat::kRunMetadataText;
  ASSIGN_OR_RETURN(const std::string bytes,
                   trace::SerializeRunMetadata(metadata, text ? trace::StepStatsEncoding::kText
                                                              : trace::StepStatsEncoding::kBinary));
  const std::string path = base + (text ? ".pbtxt" : ".pb");
  RETURN_IF_ERROR(WriteFileAtomically(path, bytes));
  return path;
}

void StepProfiler::OnOpStart(const runtime::Device& device, const runtime::Node& node,
                             int64_t start_ns) {
  collector_.BeginOp(&device.name(), &node.name, &node.op_type, &node.inputs, start_ns);
#ifdef STEPSCOPE_WITH_CUPTI
  // Last, so the correlation covers only the op's own launches.
  if (device.kind() == runtime::DeviceKind::kGpu && gpu_->in_step.load(std::memory_order_relaxed)) {
    gpu_->tracer->OnOpStart(node.name, node.op_type, start_ns);
  }
#endif
}

// Shapes only: an input's allocation is its producer's output's, recorded there.
void StepProfiler::OnOpInputs(const runtime::Device& /*device*/, const runtime::Node& /*node*/,
                              std::span<const runtime::Tensor> inputs) {
  for (const runtime::Tensor& tensor : inputs) {
    collect::TensorRecord record;
    if (!tensor.empty()) {
      record.dtype = TfDataType(tensor.dtype());
      record.rank = tensor.shape().rank;
      for (int d = 0; d < record.rank; ++d) record.dims[static_cast<size_t>(d)] = tensor.shape()[d];
    }
    collector_.AddInput(record);
  }
}

void StepProfiler::OnOpEnd(const runtime::Device& device, const runtime::Node& /*node*/,
                           int64_t /*start_ns*/, int64_t end_ns,
                           std::span<const runtime::Tensor> outputs) {
#ifdef STEPSCOPE_WITH_CUPTI
  // Pops only what this thread's OnOpStart pushed.
  if (device.kind() == runtime::DeviceKind::kGpu && gpu_->tracer != nullptr) {
    gpu_->tracer->OnOpEnd();
  }
#else
  (void)device;
#endif
  for (const runtime::Tensor& tensor : outputs) {
    if (tensor.empty()) continue;
    collect::TensorRecord record;
    record.dtype = TfDataType(tensor.dtype());
    record.rank = tensor.shape().rank;
    for (int d = 0; d < record.rank; ++d) record.dims[static_cast<size_t>(d)] = tensor.shape()[d];
    const runtime::TensorBuffer& buffer = *tensor.buffer();
    const runtime::Allocator& allocator = buffer.allocator();
    record.requested_bytes = buffer.requested_bytes();
    record.allocated_bytes = allocator.AllocatedSize(buffer.data());
    record.allocation_id = allocator.AllocationId(buffer.data());
    record.ptr = reinterpret_cast<uint64_t>(buffer.data());
    record.allocator = &allocator.Name();
    collector_.AddOutput(record);
  }
  collector_.EndOp(end_ns);
}

void StepProfiler::OnAllocation(const runtime::Allocator& allocator,
                                const runtime::AllocationEvent& event) {
  collect::AllocationRecord record;
  record.allocator = &allocator.Name();
  record.time_ns = event.time_ns;
  record.delta_bytes = event.delta_bytes;
  record.bytes_in_use_after = event.bytes_in_use_after;
  record.allocation_id = event.allocation_id;
  collector_.RecordAllocation(record);
}

void StepProfiler::OnCopy(const runtime::Device& device, const runtime::CopyEvent& copy) {
  if (!collector_.recording()) return;
  collect::CopyRecord record;
  record.device = &device.name();
  record.annotation = std::string(copy.annotation);
  record.kind = std::string(runtime::CopyKindName(copy.kind));
  record.src_memory = std::string(runtime::CopySourceMemory(copy.kind, device.kind()));
  record.dst_memory = "Device";
  record.bytes = copy.bytes;
  record.start_ns = copy.start_ns;
  record.end_ns = copy.end_ns;
  collector_.RecordCopy(std::move(record));
}

void StepProfiler::OnCollective(const parallel::CollectiveEvent& event) {
  if (!collector_.recording()) return;
  const bool fusion_copy = event.phase == parallel::CollectivePhase::kMemcpyInFusionBuffer ||
                           event.phase == parallel::CollectivePhase::kMemcpyOutFusionBuffer;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const runtime::Device* device = devices_[d];
    const std::string op_name = "tower_" + std::to_string(d) + "/" + event.name;
    if (fusion_copy && d < event.participant_times.size()) {
      // `<op>:<OpType>:MEMCPYDtoD`, as TF names a copy an op made.
      runtime::CopyEvent copy;
      const std::string annotation =
          op_name + ":" + std::string(parallel::CollectivePhaseName(event.phase));
      copy.annotation = annotation;
      copy.kind = runtime::CopyKind::kDeviceToDevice;
      copy.bytes = event.bytes;
      copy.start_ns = event.participant_times[d].first;
      copy.end_ns = event.participant_times[d].second;
      OnCopy(*device, copy);
    }
    collect::CollectiveRecord record;
    record.device = &device->name();
    record.name = op_name;
    record.op_type = std::string(parallel::CollectivePhaseName(event.phase));
    record.algorithm = event.algorithm;
    record.bytes = event.bytes;
    record.group_size = event.peers;
    record.fused_tensors = static_cast<int64_t>(event.tensors.size());
    record.start_ns = event.start_ns;
    record.end_ns = event.end_ns;
    collector_.RecordCollective(std::move(record));
  }
}

}  // namespace stepscope::trainer
