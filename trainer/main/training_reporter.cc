// The training log, the --metrics JSON lines and the TrainingReport of training_reporter.h:
// throughput statistics over the steps after warm-up, progress lines with an ETA.
#include "trainer/main/training_reporter.h"

#include <algorithm>
#include <cmath>
#include <iomanip>

#include <nlohmann/json.hpp>

#include "base/units.h"
#include "trainer/main/training_setup.h"
#include "trainer/runtime/clock.h"

namespace stepscope::trainer {
namespace {

// Throughput over the steps after warm-up, as tf_cnn_benchmarks' get_perf_timing: the mean of
// per-step speeds, its standard error, and the jitter (1.4826 × median absolute deviation).
void FillThroughput(const std::vector<double>& step_seconds, int64_t examples_per_step,
                    TrainingReport& report) {
  if (step_seconds.empty()) return;
  std::vector<double> speeds;
  double total_seconds = 0;
  for (double s : step_seconds) {
    speeds.push_back(static_cast<double>(examples_per_step) / s);
    total_seconds += s;
  }
  const double n = static_cast<double>(speeds.size());
  double mean = 0;
  for (double v : speeds) mean += v;
  mean /= n;
  double var = 0;
  for (double v : speeds) var += (v - mean) * (v - mean);
  var /= n;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  };
  const double med = median(speeds);
  std::vector<double> deviations;
  for (double v : speeds) deviations.push_back(std::abs(v - med));
  report.examples_per_sec = mean;
  report.examples_per_sec_stderr = std::sqrt(var) / std::sqrt(n);
  report.examples_per_sec_jitter = 1.4826 * median(deviations);
  report.mean_step_ms = 1e3 * total_seconds / n;
}

}  // namespace

MetricsWriter::~MetricsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Status MetricsWriter::Open(const std::string& path) {
  if (path.empty()) return Status::Ok();
  path_ = path;
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) return IoError("cannot write metrics file " + path);
  return Status::Ok();
}

Status MetricsWriter::Write(const nlohmann::json& line) {
  if (file_ == nullptr) return Status::Ok();
  const std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    return IoError("writing metrics file " + path_ + " failed");
  }
  return Status::Ok();
}

TrainingReporter::TrainingReporter(const TrainingSetup& setup, std::ostream& log,
                                   bool interactive, int64_t total_steps, int warmup_steps)
    : setup_(setup),
      workload_(setup.workload()),
      rank_log_(log),
      log_(setup.rank() == 0 ? log : quiet_),
      interactive_(interactive && setup.rank() == 0),
      total_steps_(total_steps),
      warmup_steps_(warmup_steps) {
  report_.unit = workload_.unit();
}

void TrainingReporter::LogStart(const TrainOptions& options) {
  // Towers on GPUs take their inputs from a CPU device: its threads are the host's share.
  const runtime::Device& input = setup_.input_device();
  const runtime::Device& tower = *setup_.tower_devices().front();
  const bool gpu_towers = tower.kind() == runtime::DeviceKind::kGpu;
  const int world = setup_.world_size();
  log_ << "stepscope-train: " << workload_.title() << " on "
       << (setup_.run_towers() == 1
               ? tower.name()
               : (world > 1 ? std::to_string(world) + " ranks x " : std::string()) +
                     std::to_string(setup_.tower_devices().size()) + " devices (" +
                     options.variable_update + ", all-reduce " + options.allreduce_spec + ")")
       << " (" << input.num_threads()
       << (gpu_towers ? " input threads on " + input.name() : std::string(" threads each"))
       << "), " << workload_.data().Describe()
       << "; " << total_steps_ << " steps, " << workload_.data().batches_per_epoch()
       << " batches per epoch\n";
  if (const std::string warning = workload_.Warning(); !warning.empty()) {
    log_ << "stepscope-train: warning: " << warning << "\n";
  }
  if (options.resident_batches > 0) {
    log_ << "resident data: " << options.resident_batches << " global batches per load, "
         << options.sgd_epochs << " SGD epoch(s) over them, minibatches of "
         << workload_.rows_per_tower() << " rows per device\n";
  }
}

Status TrainingReporter::Start(const std::string& metrics_path) {
  if (setup_.rank() == 0) RETURN_IF_ERROR(metrics_.Open(metrics_path));
  run_start_ns_ = runtime::NowNanos();
  op_counts_.clear();
  for (const runtime::Device* d : setup_.tower_devices()) op_counts_.push_back(d->op_counts());
  return Status::Ok();
}

void TrainingReporter::RecordTrace(int64_t step, const std::string& path,
                                   const std::string& note) {
  if (interactive_) log_ << "\n";
  rank_log_ << "trace of step " << step << ": " << path;
  if (!note.empty()) rank_log_ << " (" << note << ")";
  rank_log_ << "\n";
  report_.trace_paths.push_back(path);
}

Status TrainingReporter::RecordStep(const StepRecord& step) {
  if (step.step > warmup_steps_) timed_steps_.push_back(step.seconds);
  const double throughput = static_cast<double>(workload_.examples_per_step()) / step.seconds;
  nlohmann::json line = {{"step", step.step}, {"device_losses", step.device_losses},
                         {"epoch", step.epoch}, {"loss", step.loss},
                         {"learning_rate", step.learning_rate},
                         {"step_time_ms", step.seconds * 1e3}, {"throughput", throughput},
                         {"unit", workload_.unit()}};
  // Each tower device's allocator after the step: a level that climbs from step to step is a
  // leak (on a GPU, device memory that never comes back).
  std::vector<int64_t> bytes_in_use;
  for (const runtime::Device* d : setup_.tower_devices()) {
    bytes_in_use.push_back(d->allocator().Stats().bytes_in_use);
  }
  line["device_bytes_in_use"] = bytes_in_use;
  // Each tower device's operations in the step (docs/gpu.md "Operations per step"): kernels,
  // copies within the device, memsets and the host's reads and writes, as a GPU would make them.
  nlohmann::json device_ops = nlohmann::json::array();
  for (size_t d = 0; d < setup_.tower_devices().size(); ++d) {
    const runtime::DeviceOpCounts now = setup_.tower_devices()[d]->op_counts();
    const runtime::DeviceOpCounts step_ops = now - op_counts_[d];
    op_counts_[d] = now;
    if (d == 0) last_step_ops_ = step_ops;
    device_ops.push_back({{"kernel_calls", step_ops.kernel_calls},
                          {"device_copies", step_ops.device_copies},
                          {"memsets", step_ops.memsets},
                          {"host_reads", step_ops.host_reads},
                          {"host_writes", step_ops.host_writes}});
  }
  line["device_ops"] = std::move(device_ops);
  std::ostringstream progress;
  progress << "step " << step.step << "/" << total_steps_ << "  loss " << std::fixed
           << std::setprecision(4) << step.loss;
  workload_.RecordStep(step, line, progress);
  const double elapsed = static_cast<double>(runtime::NowNanos() - run_start_ns_) * 1e-9;
  const double eta =
      elapsed / static_cast<double>(step.step) * static_cast<double>(total_steps_ - step.step);
  progress << "  " << std::setprecision(0) << throughput << " " << workload_.unit() << "  ETA "
           << FormatClockDuration(eta);
  RETURN_IF_ERROR(metrics_.Write(line));
  if (step.step == 1) report_.first_loss = step.loss;
  report_.final_loss = step.loss;
  report_.steps = step.step;
  const int64_t log_every = std::max<int64_t>(1, total_steps_ / 20);
  if (interactive_) {
    log_ << "\r" << progress.str() << "\033[K" << std::flush;
  } else if (step.step % log_every == 0 || step.step == total_steps_) {
    log_ << progress.str() << "\n";
  }
  return Status::Ok();
}

void TrainingReporter::Stopped(int64_t steps_done) {
  if (interactive_) log_ << "\n";
  log_ << "stepscope-train: stopped by a signal after step " << steps_done << "\n";
}

StatusOr<TrainingReport> TrainingReporter::Finish() {
  if (interactive_) log_ << "\n";
  FillThroughput(timed_steps_, workload_.examples_per_step(), report_);
  const char* unit = workload_.unit();
  log_ << std::fixed << std::setprecision(2) << "total " << unit << ": "
       << report_.examples_per_sec << " +/- " << report_.examples_per_sec_stderr
       << " (jitter = " << report_.examples_per_sec_jitter << ") over " << timed_steps_.size()
       << " steps after " << warmup_steps_ << " warm-up steps; mean step "
       << std::setprecision(1) << report_.mean_step_ms << " ms\n";
  if (report_.steps > 0) {
    const runtime::DeviceOpCounts& ops = last_step_ops_;
    log_ << "device operations in the last step (" << setup_.tower_devices()[0]->name()
         << "): " << ops.kernel_calls << " kernel calls, " << ops.device_copies
         << " copies within the device, " << ops.memsets << " memsets, " << ops.host_reads
         << " reads into the host, " << ops.host_writes << " writes from the host\n";
  }
  nlohmann::json summary = {{"summary", true}, {"steps", report_.steps},
                            {"first_loss", report_.first_loss},
                            {"final_loss", report_.final_loss},
                            {"throughput", report_.examples_per_sec},
                            {"throughput_stderr", report_.examples_per_sec_stderr},
                            {"throughput_jitter", report_.examples_per_sec_jitter},
                            {"mean_step_time_ms", report_.mean_step_ms}, {"unit", unit}};
  workload_.Summarise(log_, summary, report_);
  RETURN_IF_ERROR(metrics_.Write(summary));
  return report_;
}

}  // namespace stepscope::trainer
