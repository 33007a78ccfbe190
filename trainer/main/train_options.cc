// The flag table of `stepscope-train`, and the checks that turn parsed flags into TrainOptions
// (bad values are exit 2 with the flag named).
#include "trainer/main/train_options.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <utility>

namespace stepscope::trainer {
namespace {

// A step number, read as ParsedArgs::GetInt reads integers: std::from_chars over the whole text.
std::optional<int64_t> ParseStepNumber(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// "5" or "10-12" (inclusive); steps count from 1, and a range spans at most a million steps.
std::optional<std::pair<int64_t, int64_t>> ParseStepRange(std::string_view part) {
  const size_t dash = part.find('-');
  const std::optional<int64_t> first = ParseStepNumber(part.substr(0, dash));
  const std::optional<int64_t> last =
      dash == std::string_view::npos ? first : ParseStepNumber(part.substr(dash + 1));
  if (!first || !last || *first < 1 || *last < *first || *last - *first > 1'000'000) {
    return std::nullopt;
  }
  return std::pair{*first, *last};
}

StatusOr<std::set<int64_t>> ParseStepList(const std::string& text) {
  std::set<int64_t> steps;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view part = std::string_view(text).substr(begin, comma - begin);
    const auto range = ParseStepRange(part);
    if (!range) {
      return InvalidInput("--profile_steps " + text + ": '" + std::string(part) +
                          "' is not a step number or range like 5 or 10-12 (steps count from 1)");
    }
    for (int64_t s = range->first; s <= range->second; ++s) steps.insert(s);
    begin = comma + 1;
  }
  return steps;
}

// The writer's names for the formats a profiled step is written in; its tf-timeline flavour is
// not offered here.
std::optional<trace::OutputFormat> ParseTraceFormat(std::string_view name) {
  if (name != "pb" && name != "pbtxt" && name != "chrome") return std::nullopt;
  return trace::ParseOutputFormat(name);
}

// "launches", "activity+hw", "all+stay+hw", ...
Status ParseProfileLevel(const std::string& text, ProfileOptions* o) {
  const auto bad = [&](const std::string& why) {
    return InvalidInput("--profile_level " + text + ": " + why +
                        " (expected host, attached, activity, launches or all, then "
                        "optionally +hw and +stay)");
  };
  size_t plus = text.find('+');
  const std::string name = text.substr(0, plus);
  bool found = false;
  for (ProfileLevel level : {ProfileLevel::kHost, ProfileLevel::kAttached, ProfileLevel::kActivity,
                             ProfileLevel::kLaunches, ProfileLevel::kAll}) {
    if (name == ProfileLevelName(level)) {
      o->level = level;
      found = true;
    }
  }
  if (!found) return bad("unknown level '" + name + "'");
  while (plus != std::string::npos) {
    const size_t next = text.find('+', plus + 1);
    const size_t length = next == std::string::npos ? next : next - plus - 1;
    const std::string option = text.substr(plus + 1, length);
    if (option == "hw") {
      o->hw_trace = true;
    } else if (option == "stay") {
      o->stay_attached = true;
    } else {
      return bad("unknown option '+" + option + "'");
    }
    plus = next;
  }
  if (o->level == ProfileLevel::kHost && (o->hw_trace || o->stay_attached)) {
    return bad("host attaches no CUPTI, so +hw and +stay mean nothing there");
  }
  return Status::Ok();
}

}  // namespace

const std::vector<FlagSpec>& ProfileFlagSpecs() {
  static const std::vector<FlagSpec> specs = {
      {"profile", "", "record per-op step stats (RunMetadata) of the profiled steps"},
      {"profile_steps", "LIST", "steps to profile, e.g. 5,10-12 (default: the first after warm-up)"},
      {"profile_every", "K", "also profile every K-th step"},
      {"profile_dir", "DIR", "where traces go (default traces/)"},
      {"trace_format", "FORMAT", "pb (default), pbtxt, or chrome (Perfetto-ready JSON)"},
      {"profile_level", "LEVEL",
       "GPU recording of profiled steps: host, attached, activity, launches (default) or all; "
       "+hw for the hardware trace, +stay to keep CUPTI attached between profiled steps"},
  };
  return specs;
}

const char* ProfileLevelName(ProfileLevel level) {
  switch (level) {
    case ProfileLevel::kHost: return "host";
    case ProfileLevel::kAttached: return "attached";
    case ProfileLevel::kActivity: return "activity";
    case ProfileLevel::kLaunches: return "launches";
    case ProfileLevel::kAll: return "all";
  }
  return "?";
}

StatusOr<ProfileOptions> ParseProfileOptions(const ParsedArgs& args) {
  ProfileOptions o;
  o.enabled = args.Has("profile");
  if (auto steps = args.Get("profile_steps")) {
    ASSIGN_OR_RETURN(o.steps, ParseStepList(*steps));
  }
  ASSIGN_OR_RETURN(o.every, args.GetInt("profile_every", 0, 1));
  o.dir = args.GetOr("profile_dir", o.dir);
  const std::string format = args.GetOr("trace_format", "pb");
  const std::optional<trace::OutputFormat> parsed_format = ParseTraceFormat(format);
  if (!parsed_format) {
    return InvalidInput("--trace_format " + format + ": expected pb, pbtxt or chrome");
  }
  o.format = *parsed_format;
  if (!o.enabled && (args.Has("profile_steps") || args.Has("profile_every"))) {
    return InvalidInput("--profile_steps and --profile_every need --profile");
  }
  if (auto level = args.Get("profile_level")) {
    if (!o.enabled) return InvalidInput("--profile_level needs --profile");
    RETURN_IF_ERROR(ParseProfileLevel(*level, &o));
  }
  return o;
}

bool IsProfiledStep(const ProfileOptions& options, int64_t step, int warmup_steps) {
  if (!options.enabled) return false;
  if (options.steps.empty() && options.every == 0) return step == warmup_steps + 1;
  return options.steps.count(step) != 0 || (options.every > 0 && step % options.every == 0);
}


const std::vector<FlagSpec>& TrainFlagSpecs() {
  static const std::vector<FlagSpec> specs = {
      {"model", "MODEL", "lstm (PTB word LSTM, default) or resnet50"},
      {"config", "NAME", "LSTM config: small (default), medium, large"},
      {"devices", "SPEC", "cpu (default), cpu:N, or gpu:0,1,... in GPU builds"},
      {"virtual_gpus_per_gpu", "V", "GPU builds: V towers on each GPU of --devices gpu:..., "
                                    "TensorFlow's virtual GPUs /device:GPU:p*V..p*V+V-1, each with "
                                    "its own streams and 1/V of the GPU's memory (default 1)"},
      {"batch_size", "N", "examples per device and step (LSTM: the config's, ResNet: 32; ResNet "
                          "refuses batch x (image_size/32)^2 < 2 and warns below 4)"},
      {"steps", "N", "training steps (default 100 when --epochs is not given)"},
      {"epochs", "N", "training epochs over the data"},
      {"learning_rate", "LR", "initial learning rate (LSTM: 1.0; ResNet: 0.1 x batch / 256)"},
      {"seed", "N", "seed for initial weights and built-in data (default 1)"},
      {"data_dir", "DIR", "ptb.{train,valid,test}.txt or CIFAR-10 binary batches; default: built-in data"},
      {"image_size", "N", "ResNet input size, a multiple of 32 (default 224)"},
      {"depth", "N", "ResNet depth: 14, 26, 38, 50 (default), 101, 152"},
      {"num_classes", "N", "ResNet classes (default 10)"},
      {"metrics", "FILE", "write JSON lines: one per step, then a summary line"},
      {"warmup_steps", "N", "steps left out of throughput figures (default 2)"},
      {"variable_update", "MODE",
       "with several devices: replicated (default; loss x 1/N, gradients summed), "
       "parameter_server (gradients averaged through one place), independent (no communication)"},
      {"allreduce_spec", "SPEC", "all-reduce algorithms by size, e.g. ring, pscpu, ring#2, "
                                 "pscpu:32k:ring (sizes in elements); default ring. GPU towers: "
                                 "nccl reduces in device memory (GPU builds with NCCL); the others "
                                 "reduce host copies"},
      {"agg_small_grads_max_bytes", "N", "pack gradients of at most N bytes before reducing (0: off)"},
      {"agg_small_grads_max_group", "N", "at most N gradients per pack (default 10)"},
      {"fusion_threshold_bytes", "N",
       "Horovod tensor fusion: all-reduce gradients during backward through a buffer of N bytes "
       "(Horovod's default is 67108864 = 64 MiB). Default 0 = off (reduce after backward, with "
       "packing): CPU devices share the cores, so the overlapped reduction competes with backward "
       "and measured slower. Within one process only (ranks would have to agree on each fused "
       "group)"},
      {"cycle_time_ms", "MS", "fusion: how long a ready gradient waits for others (default 5)"},
      {"resident_batches", "R",
       "resident data (RLlib's LocalSyncParallelOptimizer): split R global batches across the "
       "devices once, keep them there and train on them for --sgd_epochs passes, each in a new "
       "shuffled order of per-device minibatches of --batch_size rows (default 0: off). The "
       "LSTM's state restarts for every minibatch (they are not consecutive)"},
      {"sgd_epochs", "K", "passes over the resident batches before loading new ones (default 1)"},
  };
  return specs;
}

// Training and profiling flags: one list for parsing and --help.
static std::vector<FlagSpec> AllFlagSpecs() {
  std::vector<FlagSpec> specs = TrainFlagSpecs();
  specs.insert(specs.end(), ProfileFlagSpecs().begin(), ProfileFlagSpecs().end());
  return specs;
}

std::string TrainUsage() {
  return "usage: stepscope-train [flags]\n\n"
         "Trains the PTB word LSTM or ResNet on CPU devices (data parallel over --devices cpu:N:\n"
         "one replica per device, the global batch = N x --batch_size) and reports loss,\n"
         "perplexity or accuracy, and throughput (examples/sec +- standard error after warm-up\n"
         "steps). Gradient reduction: replicated scales each tower's loss by 1/N and sums the\n"
         "gradients; parameter_server averages them; both then apply the same update on every\n"
         "device (the LSTM clips by global norm first, as the PTB model does; ResNet does not clip),\n"
         "so replicas stay bit-identical.\n"

         "Without --data_dir it trains on built-in deterministic data.\n\n"
         "flags:\n" +
         FlagHelp(AllFlagSpecs()) +
         "\nexit codes: 0 success, 1 failure while training, 2 bad flags or data.\n";
}

StatusOr<TrainOptions> ParseTrainOptions(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(const ParsedArgs parsed, ParseFlags(args, AllFlagSpecs()));
  TrainOptions o;
  o.help = parsed.help;
  if (!parsed.positional.empty()) {
    return InvalidInput("unexpected argument '" + parsed.positional[0] + "' (see --help)");
  }
  o.model = parsed.GetOr("model", o.model);
  if (o.model != "lstm" && o.model != "resnet50" && o.model != "resnet") {
    return InvalidInput("--model " + o.model + ": expected lstm or resnet50");
  }
  if (o.model == "resnet") o.model = "resnet50";
  o.config = parsed.GetOr("config", o.config);
  o.devices = parsed.GetOr("devices", o.devices);
  ASSIGN_OR_RETURN(const int64_t virtual_gpus, parsed.GetInt("virtual_gpus_per_gpu", 1, 1, 64));
  o.virtual_gpus_per_gpu = static_cast<int>(virtual_gpus);
  ASSIGN_OR_RETURN(const int64_t batch, parsed.GetInt("batch_size", 0, 1, 1 << 20));
  o.batch_size = static_cast<int>(batch);
  ASSIGN_OR_RETURN(o.steps, parsed.GetInt("steps", 0, 1, int64_t{1} << 40));
  ASSIGN_OR_RETURN(const int64_t epochs, parsed.GetInt("epochs", 0, 1, 100000));
  o.epochs = static_cast<int>(epochs);
  ASSIGN_OR_RETURN(o.learning_rate, parsed.GetDouble("learning_rate", 0, 1e-12, 1e6));
  ASSIGN_OR_RETURN(const int64_t seed, parsed.GetInt("seed", 1, 0));
  o.seed = static_cast<uint64_t>(seed);
  o.data_dir = parsed.GetOr("data_dir", "");
  ASSIGN_OR_RETURN(const int64_t image_size, parsed.GetInt("image_size", 224, 32, 4096));
  if (image_size % 32 != 0) {
    return InvalidInput("--image_size " + std::to_string(image_size) + ": must be a multiple of 32");
  }
  o.image_size = static_cast<int>(image_size);
  ASSIGN_OR_RETURN(const int64_t depth, parsed.GetInt("depth", 50, 1, 1000));
  o.depth = static_cast<int>(depth);
  ASSIGN_OR_RETURN(const int64_t classes, parsed.GetInt("num_classes", 0, 2, 100000));
  o.num_classes = static_cast<int>(classes);
  o.metrics_path = parsed.GetOr("metrics", "");
  ASSIGN_OR_RETURN(const int64_t warmup, parsed.GetInt("warmup_steps", 2, 0, 1 << 20));
  o.warmup_steps = static_cast<int>(warmup);
  ASSIGN_OR_RETURN(o.profile, ParseProfileOptions(parsed));
  o.variable_update = parsed.GetOr("variable_update", o.variable_update);
  o.allreduce_spec = parsed.GetOr("allreduce_spec", o.allreduce_spec);
  ASSIGN_OR_RETURN(o.agg_small_grads_max_bytes, parsed.GetInt("agg_small_grads_max_bytes", 0, 0));
  ASSIGN_OR_RETURN(const int64_t group, parsed.GetInt("agg_small_grads_max_group", 10, 1, 1 << 20));
  o.agg_small_grads_max_group = static_cast<int>(group);
  ASSIGN_OR_RETURN(o.fusion_threshold_bytes,
                   parsed.GetInt("fusion_threshold_bytes", o.fusion_threshold_bytes, 0,
                                 int64_t{1} << 40));
  ASSIGN_OR_RETURN(o.cycle_time_ms, parsed.GetDouble("cycle_time_ms", o.cycle_time_ms, 0, 60000));
  ASSIGN_OR_RETURN(const int64_t resident, parsed.GetInt("resident_batches", 0, 0, 1 << 16));
  o.resident_batches = static_cast<int>(resident);
  ASSIGN_OR_RETURN(const int64_t sgd_epochs, parsed.GetInt("sgd_epochs", 1, 1, 1 << 16));
  o.sgd_epochs = static_cast<int>(sgd_epochs);
  if (o.steps == 0 && o.epochs == 0) o.steps = 100;
  return o;
}

}  // namespace stepscope::trainer
