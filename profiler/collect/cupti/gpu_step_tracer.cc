// The step profiler's CUPTI bridge; see the header for the step protocol, threads and locks.
#include "profiler/collect/cupti/gpu_step_tracer.h"

#include <functional>
#include <set>
#include <string_view>

#include <utility>

namespace stepscope::collect::cupti {
namespace {

// Whether this thread's running op pushed an external correlation id (ops on a thread do not
// nest), so OnOpEnd pops only what OnOpStart pushed.
thread_local bool t_correlation_pushed = false;

// Whatever CUPTI answered, for the caller the GPU tracer is not there.
Status NotAvailable(const Status& status) {
  const bool names_cupti = status.message().find("CUPTI") != std::string::npos;
  return Unavailable((names_cupti ? "" : "CUPTI: ") + status.message());
}

}  // namespace

StatusOr<std::unique_ptr<GpuStepTracer>> GpuStepTracer::Start(
    std::unique_ptr<CuptiActivitySource> source, ConverterOptions options) {
  if (source == nullptr) return Unavailable("CUPTI GPU tracer: no activity source");
  std::unique_ptr<GpuStepTracer> tracer(new GpuStepTracer(std::move(source), std::move(options)));
  const Status started = tracer->source_->Start(tracer.get());
  if (!started.ok()) return NotAvailable(started);
  // Off until the first BeginStep (the destructor stops the source when this fails).
  const Status paused = tracer->source_->Pause();
  if (!paused.ok()) return NotAvailable(paused);
  return tracer;
}

GpuStepTracer::GpuStepTracer(std::unique_ptr<CuptiActivitySource> source,
                             ConverterOptions options)
    : source_(std::move(source)),
      converter_(ClockAlignment{}, std::move(options)),
      links_ops_(source_->links_ops()) {}

GpuStepTracer::~GpuStepTracer() { (void)source_->Stop(); }

namespace {
// "/device:GPU:k" of a lane name ("/device:GPU:0/stream:7", "/job:.../device:GPU:0/memcpy"), and
// where it starts; npos when the lane is no GPU's.
std::pair<std::string_view, size_t> GpuOfLane(std::string_view lane) {
  static constexpr std::string_view kGpu = "/device:GPU:";
  const size_t at = lane.find(kGpu);
  if (at == std::string_view::npos) return {{}, at};
  const size_t end = lane.find('/', at + kGpu.size());
  return {lane.substr(at, end == std::string_view::npos ? end : end - at), at};
}
}  // namespace

void DropRuntimeCopyLanesOfTracedGpus(const tf::StepStats& gpu_lanes, tf::StepStats* step_stats) {
  std::set<std::string, std::less<>> traced;
  for (const tf::DeviceStepStats& lane : gpu_lanes.dev_stats()) {
    const auto [gpu, at] = GpuOfLane(lane.device());
    if (at != std::string_view::npos) traced.emplace(gpu);
  }
  auto* lanes = step_stats->mutable_dev_stats();
  for (int i = lanes->size() - 1; i >= 0; --i) {
    const std::string& name = lanes->Get(i).device();
    const auto [gpu, at] = GpuOfLane(name);
    // The runtime's lanes carry the executor's prefix (at > 0); CUPTI's start with the GPU.
    if (at == 0 || at == std::string_view::npos || !name.ends_with("/memcpy")) continue;
    if (traced.contains(gpu)) lanes->DeleteSubrange(i, 1);
  }
}

Status GpuStepTracer::BeginStep() {
  {
    std::lock_guard<std::mutex> lock(records_mu_);
    (void)converter_.Finish();  // anything left over from a step whose EndStep never came
  }
  // Not under records_mu_: CUPTI may be delivering records meanwhile, which takes it.
  const Status resumed = source_->Resume();
  if (!resumed.ok()) return resumed.WithContext("resuming the CUPTI GPU tracer");
  {
    std::lock_guard<std::mutex> lock(records_mu_);
    // This step's records are put on the host clock with the alignment read as it resumed.
    converter_.SetClock(source_->clock_alignment());
    // This step's ops get slots from the next id on (published to the executors by in_step_).
    converter_.BeginOps(next_external_id_.load(std::memory_order_relaxed));
    keeping_ = true;
  }
  in_step_.store(true, std::memory_order_release);
  return Status::Ok();
}

void GpuStepTracer::SetStreamDevices(std::vector<StreamDevice> streams) {
  std::lock_guard<std::mutex> lock(records_mu_);
  converter_.SetStreamDevices(std::move(streams));
}

void GpuStepTracer::OnOpStart(const std::string& node_name, const std::string& op_type,
                              int64_t host_start_ns) {
  // Unprofiled steps pay nothing: no CUPTI call, no registration.
  if (!in_step_.load(std::memory_order_acquire)) return;
  if (!links_ops_) return;  // nothing would record the link (--profile_level attached/activity)
  const uint64_t external_id = next_external_id_.fetch_add(1, std::memory_order_relaxed);
  converter_.RegisterOp(external_id, node_name, op_type, host_start_ns);
  t_correlation_pushed = source_->PushExternalCorrelation(external_id).ok();
  if (!t_correlation_pushed) correlation_errors_.fetch_add(1, std::memory_order_relaxed);
}

void GpuStepTracer::OnOpEnd() {
  if (!t_correlation_pushed) return;
  t_correlation_pushed = false;
  if (!source_->PopExternalCorrelation().ok()) {
    correlation_errors_.fetch_add(1, std::memory_order_relaxed);
  }
}

StatusOr<GpuStepSummary> GpuStepTracer::EndStep(int64_t clock_offset_ns,
                                                 tf::RunMetadata* metadata) {
  in_step_.store(false, std::memory_order_release);
  // No lock of ours is held: Pause flushes, which waits for deliveries that take records_mu_.
  // Every record of the step reaches the converter before tracing goes off.
  const Status paused = source_->Pause();
  ConvertedStep step;
  {
    std::lock_guard<std::mutex> lock(records_mu_);
    keeping_ = false;
    step = converter_.Finish(clock_offset_ns);
  }
  if (!paused.ok()) return paused.WithContext("flushing the CUPTI GPU tracer");

  GpuStepSummary summary;
  summary.stats = step.stats;
  summary.dropped_between_steps = source_->dropped_while_off();
  tf::StepStats* step_stats = metadata->mutable_step_stats();
  // Before the GPU lanes are added: only host ops take the launch ids.
  summary.linked_host_ops = GpuActivityConverter::LinkOps(step.launched_ops, step_stats);
  DropRuntimeCopyLanesOfTracedGpus(step.step_stats, step_stats);
  for (tf::DeviceStepStats& lane : *step.step_stats.mutable_dev_stats()) {
    *step_stats->add_dev_stats() = std::move(lane);
  }
  tf::TraceSession* session = metadata->mutable_stepscope_session();
  session->set_dropped_gpu_records(session->dropped_gpu_records() + step.stats.dropped_total());
  return summary;
}

void GpuStepTracer::OnRecord(const CUpti_Activity& record) {
  std::lock_guard<std::mutex> lock(records_mu_);
  if (keeping_) converter_.OnRecord(record);
}

void GpuStepTracer::OnDropped(DropReason reason, uint64_t count) {
  std::lock_guard<std::mutex> lock(records_mu_);
  if (keeping_) converter_.OnDropped(reason, count);
}

}  // namespace stepscope::collect::cupti
