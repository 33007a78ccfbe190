#include "trainer/main/training_loop.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/main/batch_source.h"
#include "trainer/main/resident_data.h"
#include "trainer/main/step_profiler.h"
#include "trainer/main/towers.h"
#include "trainer/parallel/mpi_session.h"
#include "trainer/models/lstm_model.h"
#include "trainer/models/resnet_model.h"
#include "trainer/runtime/clock.h"
#include "trainer/runtime/device.h"
#include "trainer/runtime/transfers.h"

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

std::string FormatDuration(double seconds) {
  char text[32];
  const int s = static_cast<int>(std::lround(seconds));
  if (s >= 3600) std::snprintf(text, sizeof(text), "%dh%02dm", s / 3600, (s / 60) % 60);
  else if (s >= 60) std::snprintf(text, sizeof(text), "%dm%02ds", s / 60, s % 60);
  else std::snprintf(text, sizeof(text), "%ds", s);
  return text;
}

// Appends whole lines: each line reaches the file with one write, so a reader never sees half
// of one, and lines already written stay if the run stops.
class MetricsWriter {
 public:
  Status Open(const std::string& path) {
    if (path.empty()) return Status::Ok();
    path_ = path;
    file_ = std::fopen(path.c_str(), "w");
    if (file_ == nullptr) return IoError("cannot write metrics file " + path);
    return Status::Ok();
  }
  ~MetricsWriter() {
    if (file_ != nullptr) std::fclose(file_);
  }
  Status Write(const nlohmann::json& line) {
    if (file_ == nullptr) return Status::Ok();
    const std::string text = line.dump() + "\n";
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
      return IoError("writing metrics file " + path_ + " failed");
    }
    return Status::Ok();
  }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// SIGINT/SIGTERM end the run after the current step: traces of the steps already profiled are
// complete files (each written to a temporary name and renamed), and nothing is half-written.
std::atomic<bool> stop_requested{false};
extern "C" void RequestStop(int) { stop_requested.store(true); }

class StopSignals {
 public:
  StopSignals() {
    stop_requested.store(false);
    previous_int_ = std::signal(SIGINT, RequestStop);
    previous_term_ = std::signal(SIGTERM, RequestStop);
  }
  ~StopSignals() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

// Every tower's loss (in rank order) and the summed hits of the whole run; without MPI, this
// process's towers.
struct RunStepOutcome {
  std::vector<double> losses;
  int64_t correct = 0;
};

StatusOr<RunStepOutcome> GatherAcrossRanks(const TowerStepResult& mine, int rank,
                                           parallel::MpiSession* mpi) {
  RunStepOutcome outcome{mine.losses, mine.correct};
  if (mpi == nullptr || mpi->world_size() == 1) return outcome;
  const size_t local = mine.losses.size();
  // One sum over a zero-padded vector: every rank fills its own slots and the hit count.
  std::vector<float> slots(local * static_cast<size_t>(mpi->world_size()) + 1, 0.0f);
  for (size_t t = 0; t < local; ++t) {
    slots[static_cast<size_t>(rank) * local + t] = static_cast<float>(mine.losses[t]);
  }
  slots.back() = static_cast<float>(mine.correct);
  RETURN_IF_ERROR(mpi->AllReduceSum(slots));
  outcome.losses.assign(slots.begin(), slots.end() - 1);
  outcome.correct = std::llround(slots.back());
  return outcome;
}

}  // namespace

StatusOr<TrainingReport> RunTraining(const TrainOptions& options, std::ostream& rank_log,
                                     bool interactive) {
  // Under mpirun every rank runs this with its own devices; rank 0 speaks for the run.
  std::unique_ptr<parallel::MpiSession> mpi;
  if (parallel::MpiSession::LaunchedByMpi()) {
    ASSIGN_OR_RETURN(mpi, parallel::MpiSession::Create());
  }
  const int rank = mpi != nullptr ? mpi->rank() : 0;
  const int world = mpi != nullptr ? mpi->world_size() : 1;
  std::ostringstream quiet;  // other ranks' progress goes nowhere; their errors still surface
  std::ostream& log = rank == 0 ? rank_log : quiet;
  interactive = interactive && rank == 0;

  ASSIGN_OR_RETURN(const runtime::DeviceSpec spec, runtime::ParseDeviceSpec(options.devices));
  runtime::DeviceOptions device_options;
  device_options.placement = runtime::DevicePlacement::ForRank(rank, world);
  if (mpi != nullptr) {
    device_options.local_rank = mpi->local_rank();
    device_options.local_size = mpi->local_size();
  }
  // Ranks sharing a host share its cores.
  device_options.total_threads =
      world > 1 ? runtime::ProcessThreadBudget(
                      static_cast<int>(std::thread::hardware_concurrency()),
                      parallel::MpiSession::LocalRanks())
                : 0;
  ASSIGN_OR_RETURN(auto devices, runtime::CreateDevices(spec, device_options));
  const int num_devices = static_cast<int>(devices.size());
  // Towers across the whole run: the data source serves all of them and this rank takes its
  // share, so N ranks of M devices train exactly as one process of N·M devices would.
  const int run_towers = num_devices * world;
  std::vector<runtime::Device*> device_list;
  for (auto& d : devices) device_list.push_back(d.get());
  // The input pipeline fills host memory: GPU runs give it a CPU device of its own, as TF has a
  // CPU device beside the GPUs; CPU runs use the first tower's device.
  std::vector<std::unique_ptr<runtime::Device>> input_devices;
  if (spec.kind == runtime::DeviceKind::kGpu) {
    runtime::DeviceOptions input_options = device_options;
    input_options.total_threads = 1;
    ASSIGN_OR_RETURN(input_devices,
                     runtime::CreateDevices(runtime::DeviceSpec{runtime::DeviceKind::kCpu, {0}},
                                            input_options));
  }
  const runtime::Device& device = input_devices.empty() ? *devices[0] : *input_devices[0];
  const bool lstm = options.model == "lstm";

  // One replica per device, built from the same seed; the data source serves the global batch.
  std::unique_ptr<BatchSource> data;
  std::vector<std::unique_ptr<models::Model>> replicas;
  models::LstmConfig lstm_config;
  int64_t examples_per_step = 0;
  int64_t per_tower_rows = 0;  // rows of one tower's batch (sequences or images)
  float base_lr = 0;  // ResNet's; the LSTM follows its config's schedule
  if (lstm) {
    ASSIGN_OR_RETURN(lstm_config, models::LstmConfigByName(options.config));
    lstm_config.seed = options.seed;
    if (options.batch_size > 0) lstm_config.batch_size = options.batch_size;
    if (options.learning_rate > 0) lstm_config.learning_rate = static_cast<float>(options.learning_rate);
    int vocab = 0;
    ASSIGN_OR_RETURN(data, MakePtbSource(options.data_dir, lstm_config.batch_size * run_towers,
                                         lstm_config.num_steps, lstm_config.vocab_size,
                                         options.seed, &vocab));
    lstm_config.vocab_size = vocab;
    for (auto& d : devices) {
      ASSIGN_OR_RETURN(auto model, models::MakeLstm(*d, lstm_config));
      replicas.push_back(std::move(model));
    }
    examples_per_step = int64_t{lstm_config.batch_size} * lstm_config.num_steps * run_towers;
    per_tower_rows = lstm_config.batch_size;
  } else {
    models::ResNetConfig config;
    config.depth = options.depth;
    config.image_size = options.image_size;
    config.num_classes = options.num_classes > 0 ? options.num_classes : 10;
    config.seed = options.seed;
    const int batch = options.batch_size > 0 ? options.batch_size : 32;
    ASSIGN_OR_RETURN(data, MakeImageSource(options.data_dir, batch * run_towers, options.image_size,
                                           config.num_classes, options.seed));
    for (auto& d : devices) {
      ASSIGN_OR_RETURN(auto model, models::MakeResNet(*d, config));
      replicas.push_back(std::move(model));
    }
    examples_per_step = int64_t{batch} * run_towers;
    per_tower_rows = batch;
    // Default: the linear scaling rule, 0.1 per 256 images of global batch (Goyal et al.).
    base_lr = options.learning_rate > 0 ? static_cast<float>(options.learning_rate)
                                        : 0.1f * static_cast<float>(examples_per_step) / 256.0f;
  }
  if (world > 1) {
    // Replicas start from rank 0's parameters (Horovod's broadcast_global_variables).
    for (auto& replica : replicas) {
      for (models::Variable& variable : replica->variables()) {
        if (variable.value.dtype() != runtime::DType::kFloat32) continue;
        // Through host memory: MPI moves host buffers, and a GPU's variables are on the GPU.
        ASSIGN_OR_RETURN(std::vector<float> values,
                         runtime::ToHostVector<float>(replica->device(), variable.value));
        RETURN_IF_ERROR(mpi->Broadcast(std::span<float>(values), 0));
        RETURN_IF_ERROR(runtime::CopyFromHost<float>(replica->device(), values, variable.value));
      }
    }
  }
  std::unique_ptr<StepProfiler> profiler;
  if (options.profile.enabled) {
    profiler = std::make_unique<StepProfiler>(
        options.profile, lstm ? "lstm_" + lstm_config.name : "resnet" + std::to_string(options.depth));
  }
  if (profiler != nullptr) {
    profiler->SetRank(rank, world);
    if (mpi != nullptr) RETURN_IF_ERROR(mpi->Barrier());  // every rank's clock at one moment
    profiler->MarkClockSync();
  }
  TowerOptions tower_options;
  ASSIGN_OR_RETURN(tower_options.update, ParseVariableUpdate(options.variable_update));
  tower_options.allreduce_spec = options.allreduce_spec;
  tower_options.agg_small_grads_max_bytes = options.agg_small_grads_max_bytes;
  tower_options.agg_small_grads_max_group = options.agg_small_grads_max_group;
  tower_options.fusion_threshold_bytes = options.fusion_threshold_bytes;
  tower_options.cycle_time_ms = options.cycle_time_ms;
  tower_options.observer = profiler.get();
  tower_options.mpi = mpi.get();
  ASSIGN_OR_RETURN(auto towers, Towers::Create(std::move(replicas), tower_options));
  const int64_t per_epoch = data->batches_per_epoch();
  const int64_t total_steps = options.steps > 0 ? options.steps : per_epoch * options.epochs;
  const char* unit = lstm ? "words/sec" : "images/sec";
  log << "stepscope-train: " << options.model << (lstm ? " " + lstm_config.name : "") << " on "
      << (run_towers == 1 ? device.name()
                          : (world > 1 ? std::to_string(world) + " ranks x " : std::string()) +
                                std::to_string(num_devices) + " devices (" +
                                options.variable_update + ", all-reduce " +
                                options.allreduce_spec + ")")
      << " (" << device.num_threads() << " threads each), "
      << data->Describe() << "; " << total_steps << " steps, " << per_epoch
      << " batches per epoch\n";

  const bool resident_mode = options.resident_batches > 0;
  const int64_t resident_batches = options.resident_batches;
  std::optional<ResidentData> resident;
  std::vector<int64_t> resident_order;
  int64_t batches_read = 0;
  if (resident_mode) {
    log << "resident data: " << resident_batches << " global batches per load, "
        << options.sgd_epochs << " SGD epoch(s) over them, minibatches of " << per_tower_rows
        << " rows per device\n";
  }

  StopSignals stop_signals;
  MetricsWriter metrics;
  if (rank == 0) RETURN_IF_ERROR(metrics.Open(options.metrics_path));

  TrainingReport report;
  report.unit = unit;
  std::vector<double> timed_steps;
  double epoch_cost = 0;
  int64_t epoch_batches = 0;
  int epoch = -1;
  const int64_t run_start = runtime::NowNanos();
  for (int64_t step = 0; step < total_steps; ++step) {
    if (stop_requested.load()) {
      if (interactive) log << "\n";
      log << "stepscope-train: stopped by a signal after step " << step << "\n";
      return Status(StatusCode::kCancelled, "interrupted after step " + std::to_string(step));
    }
    // The data source's next batch index, advancing its epochs (before the learning rate, which
    // follows the epoch); then that global batch, this rank's share of it.
    auto next_index = [&]() {
      const int64_t index = batches_read++ % per_epoch;
      if (index == 0) {
        ++epoch;
        data->StartEpoch(epoch);
        towers->ResetState();
        epoch_cost = 0;
        epoch_batches = 0;
      }
      return index;
    };
    auto fetch = [&](int64_t index) -> StatusOr<models::Batch> {
      ASSIGN_OR_RETURN(models::Batch batch, data->Get(device, index));
      if (world == 1) return batch;
      const int64_t rows = batch.inputs.shape()[0] / world;
      return BatchRows(batch, rank * rows, rows, device);
    };
    const int64_t cycle_pos = resident_mode ? step % (resident_batches * options.sgd_epochs) : 0;
    if (resident_mode && cycle_pos == 0) {  // RLlib's load_data: once per cycle, before its steps
      std::vector<models::Batch> loaded;
      for (int64_t r = 0; r < resident_batches; ++r) {
        ASSIGN_OR_RETURN(models::Batch batch, fetch(next_index()));
        loaded.push_back(std::move(batch));
      }
      ASSIGN_OR_RETURN(const models::Batch train_batch, ConcatBatches(loaded, device));
      ASSIGN_OR_RETURN(resident, ResidentData::Load(train_batch, device_list, per_tower_rows));
    }
    const int64_t index = resident_mode ? -1 : next_index();
    const float lr = lstm ? models::LstmLearningRate(lstm_config, epoch) : base_lr;
    const bool profiled = IsProfiledStep(options.profile, step + 1, options.warmup_steps);
    if (profiled) profiler->BeginStep(step + 1, device_list);
    const int64_t t0 = runtime::NowNanos();
    TowerStepResult tower_result;
    if (resident_mode) {
      // RLlib's optimize(batch_index): a new shuffled order for every pass over the data.
      if (cycle_pos % resident_batches == 0) {
        resident_order = resident->EpochOrder(options.seed, step / resident_batches);
      }
      towers->ResetState();  // minibatches are not consecutive text
      ASSIGN_OR_RETURN(tower_result,
                       towers->StepResident(*resident, resident_order[static_cast<size_t>(
                                                           cycle_pos % resident_batches)], lr));
    } else {
      ASSIGN_OR_RETURN(const models::Batch batch, fetch(index));
      ASSIGN_OR_RETURN(tower_result, towers->Step(batch, lr));
    }
    ASSIGN_OR_RETURN(const RunStepOutcome outcome, GatherAcrossRanks(tower_result, rank, mpi.get()));
    models::StepResult result;  // every tower's mean loss, their summed hits
    for (double loss : outcome.losses) result.loss += loss / run_towers;
    result.correct = outcome.correct;
    const double seconds = static_cast<double>(runtime::NowNanos() - t0) * 1e-9;
    if (profiled) {
      ASSIGN_OR_RETURN(const std::string path, profiler->EndStep());
      if (interactive) log << "\n";
      rank_log << "trace of step " << step + 1 << ": " << path << "\n";  // every rank's own
      report.trace_paths.push_back(path);
    }
    if (!std::isfinite(result.loss)) {
      return Internal("step " + std::to_string(step + 1) + ": the loss is not finite; lower --learning_rate");
    }
    if (step >= options.warmup_steps) timed_steps.push_back(seconds);

    nlohmann::json line = {{"step", step + 1}, {"device_losses", outcome.losses}, {"epoch", epoch}, {"loss", result.loss},
                           {"learning_rate", lr}, {"step_time_ms", seconds * 1e3},
                           {"throughput", static_cast<double>(examples_per_step) / seconds},
                           {"unit", unit}};
    // Each tower device's allocator after the step: a level that climbs from step to step is a
    // leak (on a GPU, device memory that never comes back).
    std::vector<int64_t> bytes_in_use;
    for (const runtime::Device* d : device_list) bytes_in_use.push_back(d->allocator().Stats().bytes_in_use);
    line["device_bytes_in_use"] = bytes_in_use;
    std::ostringstream progress;
    progress << "step " << step + 1 << "/" << total_steps << "  loss " << std::fixed
             << std::setprecision(4) << result.loss;
    if (lstm) {
      const double perplexity = std::exp(result.loss / lstm_config.num_steps);
      epoch_cost += result.loss;
      ++epoch_batches;
      report.epoch_perplexity =
          std::exp(epoch_cost / static_cast<double>(epoch_batches * lstm_config.num_steps));
      line["perplexity"] = perplexity;
      progress << "  perplexity " << std::setprecision(1) << perplexity;
      if (step == 0) report.first_perplexity = perplexity;
      report.final_perplexity = perplexity;
    } else {
      const double accuracy = static_cast<double>(result.correct) / static_cast<double>(examples_per_step);
      line["accuracy"] = accuracy;
      progress << "  accuracy " << std::setprecision(3) << accuracy;
      report.final_accuracy = accuracy;
    }
    const double elapsed = static_cast<double>(runtime::NowNanos() - run_start) * 1e-9;
    const double eta = elapsed / static_cast<double>(step + 1) * static_cast<double>(total_steps - step - 1);
    progress << "  " << std::setprecision(0) << static_cast<double>(examples_per_step) / seconds << " "
             << unit << "  ETA " << FormatDuration(eta);
    RETURN_IF_ERROR(metrics.Write(line));
    if (step == 0) report.first_loss = result.loss;
    report.final_loss = result.loss;
    report.steps = step + 1;
    const int64_t log_every = std::max<int64_t>(1, total_steps / 20);
    if (interactive) {
      log << "\r" << progress.str() << "\033[K" << std::flush;
    } else if ((step + 1) % log_every == 0 || step + 1 == total_steps) {
      log << progress.str() << "\n";
    }
  }
  if (interactive) log << "\n";
  FillThroughput(timed_steps, examples_per_step, report);

  log << std::fixed << std::setprecision(2) << "total " << unit << ": " << report.examples_per_sec
      << " +/- " << report.examples_per_sec_stderr << " (jitter = " << report.examples_per_sec_jitter
      << ") over " << timed_steps.size() << " steps after " << options.warmup_steps
      << " warm-up steps; mean step " << std::setprecision(1) << report.mean_step_ms << " ms\n";
  if (lstm) {
    log << "perplexity: first batch " << std::setprecision(1) << report.first_perplexity
        << ", last batch " << report.final_perplexity << ", last epoch so far "
        << report.epoch_perplexity << " (vocabulary " << lstm_config.vocab_size << ")\n";
  } else {
    log << "loss: first " << std::setprecision(4) << report.first_loss << ", last "
        << report.final_loss << "; accuracy on the last batch " << std::setprecision(3)
        << report.final_accuracy << "\n";
  }
  nlohmann::json summary = {{"summary", true}, {"steps", report.steps},
                            {"first_loss", report.first_loss}, {"final_loss", report.final_loss},
                            {"throughput", report.examples_per_sec},
                            {"throughput_stderr", report.examples_per_sec_stderr},
                            {"throughput_jitter", report.examples_per_sec_jitter},
                            {"mean_step_time_ms", report.mean_step_ms}, {"unit", unit}};
  if (lstm) {
    summary["final_perplexity"] = report.final_perplexity;
    summary["epoch_perplexity"] = report.epoch_perplexity;
  } else {
    summary["final_accuracy"] = report.final_accuracy;
  }
  RETURN_IF_ERROR(metrics.Write(summary));
  return report;
}

}  // namespace stepscope::trainer
