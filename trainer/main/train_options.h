// The flags of `stepscope-train`, parsed and checked into TrainOptions.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/flags.h"
#include "base/status.h"
#include "profiler/formats/writer.h"

namespace stepscope::trainer {

// --profile_level: how much of a GPU's work the profiled steps record, each level adding to the
// one before, so that a GPU run can take the profiler's cost apart (docs/gpu.md).
enum class ProfileLevel {
  kHost,      // host ops only: CUPTI is never attached
  kAttached,  // CUPTI attached in profiled steps, nothing enabled
  kActivity,  // kernels, copies and memsets, not linked to ops
  kLaunches,  // + op links, and the API records of the launches, copies, syncs, allocations
  kAll,       // + every runtime and driver call's API record
};
const char* ProfileLevelName(ProfileLevel level);

struct ProfileOptions {
  bool enabled = false;
  ProfileLevel level = ProfileLevel::kLaunches;
  bool hw_trace = false;       // "+hw": kernel times from the GPU's hardware trace where it has one
  bool stay_attached = false;  // "+stay": CUPTI stays attached between profiled steps
  std::set<int64_t> steps;    // 1-based step numbers; empty with every==0: one step after warm-up
  int64_t every = 0;          // also every K-th step
  std::string dir = "traces";
  // --trace_format pb | pbtxt | chrome.
  trace::OutputFormat format = trace::OutputFormat::kRunMetadataBinary;
};

const std::vector<FlagSpec>& ProfileFlagSpecs();
// Parses --profile, --profile_steps 5,10-12, --profile_every K, --profile_dir, --trace_format,
// --profile_level LEVEL[+hw][+stay].
StatusOr<ProfileOptions> ParseProfileOptions(const ParsedArgs& args);

// Whether 1-based `step` is profiled, given the warm-up steps of the run.
bool IsProfiledStep(const ProfileOptions& options, int64_t step, int warmup_steps);

struct TrainOptions {
  std::string model = "lstm";       // lstm | resnet50
  std::string config = "small";     // LSTM: small | medium | large
  std::string devices = "cpu:1";
  int virtual_gpus_per_gpu = 1;     // TF's logical GPUs: towers per GPU of --devices gpu:...
  int batch_size = 0;               // per device; 0: the model's default (LSTM config, ResNet 32)
  int64_t steps = 0;                // 0: run `epochs` epochs (or 100 steps if neither is given)
  int epochs = 0;
  double learning_rate = 0;         // 0: the model's default
  uint64_t seed = 1;
  std::string data_dir;             // PTB text files or CIFAR-10 binaries; empty: built-in data
  int image_size = 224;
  int depth = 50;
  int num_classes = 0;              // 0: 10 (CIFAR-10 or built-in images)
  std::string metrics_path;         // JSON lines, one per step, then a summary line
  int warmup_steps = 2;             // steps left out of the throughput figures
  ProfileOptions profile;
  // Data parallelism over the devices (see towers.h for the reduction semantics).
  std::string variable_update = "replicated";  // replicated | parameter_server | independent
  std::string allreduce_spec = "ring";
  int64_t agg_small_grads_max_bytes = 0;
  int agg_small_grads_max_group = 10;
  // Horovod's tensor fusion during backward (towers.h): HOROVOD_FUSION_THRESHOLD and
  // HOROVOD_CYCLE_TIME. A threshold of 0 reduces after backward.
  int64_t fusion_threshold_bytes = 0;  // off: see --help
  double cycle_time_ms = 5.0;
  // Resident-data mode (RLlib's LocalSyncParallelOptimizer): load this many global batches onto
  // the devices at once, then run `sgd_epochs` passes over them in shuffled minibatch order.
  int resident_batches = 0;  // 0: off, every step reads a fresh batch
  int sgd_epochs = 1;
  bool help = false;
};

const std::vector<FlagSpec>& TrainFlagSpecs();
// kInvalidInput naming the flag for anything out of range.
StatusOr<TrainOptions> ParseTrainOptions(const std::vector<std::string>& args);
std::string TrainUsage();

}  // namespace stepscope::trainer
