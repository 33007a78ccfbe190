// stepscope-train end to end (in-process): flags and data errors with their exit codes, a short
// real run with metrics, --profile traces that load and hold the model's ops with consistent
// memory records, and a run stopped by SIGINT leaving only whole trace files.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "profiler/collect/step_collector.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"
#include "trainer/main/training_loop.h"
#include "trainer/main/workload.h"
#include "trainer/runtime/device.h"

namespace stepscope::trainer {
namespace {

StatusOr<TrainOptions> Parse(std::vector<std::string> args) { return ParseTrainOptions(args); }

// --profile_level LEVEL[+hw][+stay]: the profiler's cost taken apart on a GPU.
TEST(TrainOptions, ProfileLevelParsesLevelsAndOptions) {
  auto plain = Parse({"--profile"});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->profile.level, ProfileLevel::kLaunches);
  EXPECT_FALSE(plain->profile.hw_trace);
  EXPECT_FALSE(plain->profile.stay_attached);
  for (ProfileLevel level : {ProfileLevel::kHost, ProfileLevel::kAttached, ProfileLevel::kActivity,
                             ProfileLevel::kLaunches, ProfileLevel::kAll}) {
    auto parsed = Parse({"--profile", "--profile_level", ProfileLevelName(level)});
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(parsed->profile.level, level);
  }
  auto both = Parse({"--profile", "--profile_level", "activity+stay+hw"});
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_EQ(both->profile.level, ProfileLevel::kActivity);
  EXPECT_TRUE(both->profile.hw_trace);
  EXPECT_TRUE(both->profile.stay_attached);
  for (const auto& [value, message] : std::vector<std::pair<std::string, std::string>>{
           {"everything", "unknown level 'everything'"},
           {"all+fast", "unknown option '+fast'"},
           {"host+hw", "host attaches no CUPTI"},
           {"launches+", "unknown option '+'"}}) {
    auto bad = Parse({"--profile", "--profile_level", value});
    ASSERT_FALSE(bad.ok()) << value;
    EXPECT_EQ(ExitCodeFor(bad.status()), 2) << value;
    EXPECT_NE(bad.status().message().find("--profile_level " + value + ": " + message),
              std::string::npos)
        << bad.status().message();
  }
  auto alone = Parse({"--profile_level", "all"});
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("--profile_level needs --profile"), std::string::npos);
}

TEST(TrainOptions, BadFlagsAreInvalidInputNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--model", "vgg"}, "--model vgg"},
      {{"--image_size", "33"}, "multiple of 32"},
      {{"--steps", "-3"}, "--steps"},
      {{"--batch_size", "x"}, "not an integer"},
      {{"--profile", "--profile_steps", "3-1"}, "--profile_steps 3-1"},
      {{"--profile", "--trace_format", "xml"}, "--trace_format xml"},
      {{"--profile_every", "2"}, "need --profile"},
      {{"--frobnicate"}, "unknown flag --frobnicate"},
      {{"stray"}, "unexpected argument 'stray'"},
      {{"--fusion_threshold_bytes", "-1"}, "--fusion_threshold_bytes"},
      {{"--cycle_time_ms", "-0.5"}, "--cycle_time_ms"},
      {{"--cycle_time_ms", "fast"}, "--cycle_time_ms"},
  };
  for (const auto& [args, message] : cases) {
    auto options = Parse(args);
    ASSERT_FALSE(options.ok()) << args[0];
    EXPECT_EQ(ExitCodeFor(options.status()), 2) << args[0];
    EXPECT_NE(options.status().message().find(message), std::string::npos)
        << options.status().message();
  }
  auto ok = Parse({"--profile", "--profile_steps", "5,10-12", "--profile_every", "50"});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->profile.steps, (std::set<int64_t>{5, 10, 11, 12}));
  EXPECT_TRUE(IsProfiledStep(ok->profile, 11, 2));
  EXPECT_TRUE(IsProfiledStep(ok->profile, 100, 2));
  EXPECT_FALSE(IsProfiledStep(ok->profile, 6, 2));
  // Fusion is off unless asked for (see --help); the cycle is ours (see docs/parallel.md).
  EXPECT_EQ(ok->fusion_threshold_bytes, 0);
  EXPECT_EQ(ok->cycle_time_ms, 5.0);
  auto fusion = Parse({"--fusion_threshold_bytes", "67108864", "--cycle_time_ms", "0.5"});
  ASSERT_TRUE(fusion.ok()) << fusion.status().message();
  EXPECT_EQ(fusion->fusion_threshold_bytes, int64_t{64} << 20);
  EXPECT_EQ(fusion->cycle_time_ms, 0.5);
  auto default_step = Parse({"--profile"});
  EXPECT_TRUE(IsProfiledStep(default_step->profile, 3, 2));  // the first step after warm-up
  EXPECT_FALSE(IsProfiledStep(default_step->profile, 2, 2));
}

TEST(TrainRun, MissingDataAndGpuRequestsAreClearErrors) {
  std::ostringstream log;
  TrainOptions options = *Parse({"--data_dir", "/nonexistent/ptb", "--steps", "1"});
  auto report = RunTraining(options, log, false);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(ExitCodeFor(report.status()), 2);
  EXPECT_NE(report.status().message().find("/nonexistent/ptb"), std::string::npos);

  // A GPU no machine has: unavailable wherever the test runs, with or without GPUs or CUDA.
  options = *Parse({"--devices", "gpu:999", "--steps", "1"});
  report = RunTraining(options, log, false);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(ExitCodeFor(report.status()), 1);
  const std::string& why = report.status().message();
  EXPECT_NE(why.find(runtime::GpuSupportCompiledIn() ? "GPU 999" : "no CUDA support"),
            std::string::npos)
      << why;

  options = *Parse({"--devices", "tpu:1"});
  report = RunTraining(options, log, false);
  EXPECT_EQ(ExitCodeFor(report.status()), 2);
}

// At 32 pixels conv5 is 1x1, so its BatchNorm normalises one value per channel and image: a
// batch of 1 makes the logits independent of the image (loss ln 10 at every step), a batch of 2
// diverges (docs/trainers.md §6). The first is refused, the second trains with a warning; at 64
// pixels (2x2) a batch of 1 is fine.
TEST(TrainRun, ResNetBatchNormOverTooFewValuesIsRefusedOrWarned) {
  const std::vector<std::string> small = {"--model", "resnet50", "--depth", "14", "--steps", "1"};
  auto run = [&](std::vector<std::string> extra, std::string* log_text) {
    std::vector<std::string> args = small;
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream log;
    auto report = RunTraining(*Parse(args), log, false);
    *log_text = log.str();
    return report.status();
  };
  std::string log;
  const Status one = run({"--image_size", "32", "--batch_size", "1"}, &log);
  EXPECT_EQ(ExitCodeFor(one), 2) << one.message();
  EXPECT_NE(one.message().find("--batch_size 1 per device at --image_size 32"), std::string::npos)
      << one.message();
  EXPECT_NE(one.message().find("at least 4"), std::string::npos) << one.message();

  const std::string kWarning = "stepscope-train: warning: --batch_size 2 per device at --image_size 32";
  const Status two = run({"--image_size", "32", "--batch_size", "2"}, &log);
  ASSERT_TRUE(two.ok()) << two.message();
  EXPECT_NE(log.find(kWarning), std::string::npos) << log;
  EXPECT_NE(log.find("only 2 values per channel"), std::string::npos) << log;
  // Per device: two devices of 2 images each are two BatchNorms over 2 values.
  const Status towers = run({"--image_size", "32", "--batch_size", "2", "--devices", "cpu:2"}, &log);
  ASSERT_TRUE(towers.ok()) << towers.message();
  EXPECT_NE(log.find(kWarning), std::string::npos) << log;

  for (const auto& fine : std::vector<std::vector<std::string>>{
           {"--image_size", "32", "--batch_size", "4"}, {"--image_size", "64", "--batch_size", "1"}}) {
    const Status status = run(fine, &log);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(log.find("warning"), std::string::npos) << log;
  }
}

// Our ResNet-50's first step against PyTorch's (float64) from the same initial variables and
// batch (tests/data/trainer/README.md): the loss, and every trainable variable's gradient norm
// (BatchNorm over 32 values per channel at conv5, where float32 implementations agree: ours and
// PyTorch's float32 are within 1.2 % and 0.6 % (L2) of float64; the norms within 0.2 %). The
// finite-difference test in resnet_model_test.cc checks single entries.
TEST(TrainRun, ResNet50FirstStepMatchesPyTorch) {
  const auto text = ReadFile(testing::DataPath("trainer/resnet50_first_step_torch.json"));
  ASSERT_TRUE(text.ok()) << text.status().message();
  const nlohmann::json torch = nlohmann::json::parse(*text);
  TrainOptions options =
      *Parse({"--model", "resnet50", "--image_size", "64", "--batch_size", "8", "--seed", "1"});
  auto workload = MakeWorkload(options, 1);
  ASSERT_TRUE(workload.ok()) << workload.status().message();
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:1"));
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  auto model = (*workload)->MakeReplica(*(*devices)[0]);
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto batch = (*workload)->data().Get(*(*devices)[0], 0);
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  auto step = (*model)->ComputeGradients(*batch);
  ASSERT_TRUE(step.ok()) << step.status().message();

  EXPECT_NEAR(step->loss, torch["loss"].get<double>(), 1e-5 * torch["loss"].get<double>());
  const auto& norms = torch["gradient_l2"];
  int compared = 0;
  for (const models::Gradient& g : step->gradients) {
    const std::string& name = (*model)->variables()[static_cast<size_t>(g.variable)].name;
    if (!norms.contains(name)) continue;
    double sum = 0;
    for (int64_t i = 0; i < g.values.num_elements(); ++i) {
      sum += static_cast<double>(g.values.data<float>()[i]) * g.values.data<float>()[i];
    }
    const double expected = norms[name].get<double>();
    EXPECT_NEAR(std::sqrt(sum), expected, 0.01 * expected) << name;
    ++compared;
  }
  // Every trainable variable but the 53 conv biases: 53 kernels, 53 γ, 53 β, the dense pair.
  EXPECT_EQ(compared, 161);
}

TEST(TrainRun, ProfiledLstmStepHasTheModelsOpsAndConsistentMemory) {
  const auto dir = testing::ScratchDir("train_profile");
  TrainOptions options = *Parse({"--steps", "3", "--profile", "--profile_dir", dir.string(),
                                 "--metrics", (dir / "metrics.jsonl").string()});
  std::ostringstream log;
  auto report = RunTraining(options, log, false);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->trace_paths.size(), 1u);
  EXPECT_NE(log.str().find("trace of step 3: "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("words/sec"), std::string::npos);

  // Metrics: one line per step and a summary line.
  std::ifstream metrics(dir / "metrics.jsonl");
  int lines = 0;
  std::string line;
  std::vector<std::string> levels;  // the device allocator's bytes in use after each step
  std::vector<nlohmann::json> device_ops;  // each step's operations on its one device
  while (std::getline(metrics, line)) {
    ++lines;
    const size_t at = line.find("\"device_bytes_in_use\":[");
    if (at != std::string::npos) levels.push_back(line.substr(at, line.find(']', at) - at));
    const nlohmann::json parsed = nlohmann::json::parse(line);
    if (parsed.contains("device_ops")) device_ops.push_back(parsed["device_ops"]);
  }
  EXPECT_EQ(lines, 3 + 1);
  // The small config's step: 286 kernel calls, no copy within the device (slices, splits and
  // concatenations are views), one memset (and the zero state's on the first step), the loss as
  // the one read into the host, the batch's inputs and labels written; profiled or not.
  ASSERT_EQ(device_ops.size(), 3u);
  for (size_t s = 0; s < device_ops.size(); ++s) {
    ASSERT_EQ(device_ops[s].size(), 1u);
    const nlohmann::json& ops = device_ops[s][0];
    EXPECT_EQ(ops["kernel_calls"], 286) << s;
    EXPECT_EQ(ops["device_copies"], 0) << s;
    EXPECT_EQ(ops["memsets"], s == 0 ? 2 : 1) << s;
    EXPECT_EQ(ops["host_reads"], 1) << s;
    EXPECT_EQ(ops["host_writes"], 2) << s;
  }
  EXPECT_NE(log.str().find("device operations in the last step"), std::string::npos) << log.str();
  // Variables, optimizer state and the carried LSTM state stay; everything a step allocates
  // goes back, so the level after each step is the same.
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_NE(levels[0], "\"device_bytes_in_use\":[0");
  EXPECT_EQ(levels[1], levels[0]);
  EXPECT_EQ(levels[2], levels[0]);

  auto bytes = ReadFile(report->trace_paths[0]);
  ASSERT_TRUE(bytes.ok());
  auto parsed = trace::ParseStepStats(*bytes, report->trace_paths[0]);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const tf::RunMetadata& metadata = *parsed->run_metadata;
  EXPECT_EQ(metadata.stepscope_session().step(), 3);
  // The executor lane and its memcpy lane (the staging of the batch onto the device).
  ASSERT_EQ(metadata.step_stats().dev_stats_size(), 2);
  const tf::DeviceStepStats& dev = metadata.step_stats().dev_stats(0);
  EXPECT_EQ(dev.device(), "/job:localhost/replica:0/task:0/device:CPU:0");
  const tf::DeviceStepStats& memcpy = metadata.step_stats().dev_stats(1);
  EXPECT_EQ(memcpy.device(), "/job:localhost/replica:0/task:0/device:CPU:0/memcpy");
  ASSERT_EQ(memcpy.node_stats_size(), 2);  // word ids and targets, (20, 20) int32 each
  for (const auto& node : memcpy.node_stats()) {
    EXPECT_EQ(node.node_name(), "tower_0/TrainInput/split:Slice:MEMCPYHtoD");
    EXPECT_EQ(node.timeline_label(), "MEMCPYHtoD 1600 bytes (Pageable to Device)");
    ASSERT_TRUE(node.has_memcpy());
    EXPECT_EQ(node.memcpy().bytes(), 1600);
  }
  std::map<std::string, int> op_counts;
  for (const auto& node : dev.node_stats()) ++op_counts[node.op_type()];
  EXPECT_EQ(op_counts["LSTMBlockCell"], 40);
  EXPECT_EQ(op_counts["LSTMBlockCellGrad"], 40);
  EXPECT_EQ(op_counts["ApplyGradientDescent"], 6);
  EXPECT_EQ(op_counts["ScatterSub"], 1);
  EXPECT_EQ(op_counts["L2Loss"], 7);

  // Replaying the allocation records in order reproduces every op's allocator_bytes_in_use, and
  // every output's allocation is described with the allocator's id and sizes.
  int64_t in_use = -1, peak = 0, checked = 0;
  for (const auto& node : dev.node_stats()) {
    for (const auto& memory : node.memory()) {
      ASSERT_EQ(memory.allocator_name(), "cpu");
      int64_t sum = 0;
      for (const auto& record : memory.allocation_records()) sum += record.alloc_bytes();
      if (in_use < 0) in_use = memory.allocator_bytes_in_use() - sum;  // before the first record
      int64_t running = in_use;
      for (const auto& record : memory.allocation_records()) {
        running += record.alloc_bytes();
        peak = std::max(peak, running);
      }
      in_use = running;
      EXPECT_EQ(in_use, memory.allocator_bytes_in_use()) << node.node_name();
      ++checked;
    }
    for (const auto& output : node.output()) {
      const auto& alloc = output.tensor_description().allocation_description();
      EXPECT_GT(alloc.allocation_id(), 0) << node.node_name();
      EXPECT_GE(alloc.allocated_bytes(), alloc.requested_bytes());
      EXPECT_EQ(alloc.allocator_name(), "cpu");
    }
    EXPECT_EQ(node.timeline_label().find(node.node_name() + " = " + node.op_type() + "("),
              node.memory_size() ? node.timeline_label().find("] ") + 2 : 0)
        << node.timeline_label();
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(peak, 10 << 20);  // the (400, 10000) logits and their gradient

  // It loads as a Trace, as every front end reads it.
  auto trace = trace::ReadTrace(report->trace_paths[0]);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->slices().size(),
            static_cast<size_t>(dev.node_stats_size() + memcpy.node_stats_size()));
  int memcpy_slices = 0;
  for (const trace::Slice& slice : trace->slices()) {
    memcpy_slices += slice.kind == trace::SliceKind::kMemcpy;
  }
  EXPECT_EQ(memcpy_slices, 2);
}

TEST(TrainRun, TwoDeviceProfiledStepHasCollectivesOnEveryDevice) {
  const auto dir = testing::ScratchDir("train_two_devices");
  TrainOptions options = *Parse({"--devices", "cpu:2", "--batch_size", "4", "--steps", "3",
                                 "--profile", "--profile_dir", dir.string()});
  std::ostringstream log;
  auto report = RunTraining(options, log, false);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->trace_paths.size(), 1u);
  auto parsed = trace::ParseStepStats(*ReadFile(report->trace_paths[0]), "two devices");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const auto& step_stats = parsed->run_metadata->step_stats();
  ASSERT_EQ(step_stats.dev_stats_size(), 4);  // two executors, two memcpy lanes
  for (const auto& dev : step_stats.dev_stats()) {
    if (dev.device().ends_with("/memcpy")) {
      // Staging (HtoD) and the embedding gradient's gather (DtoD): both towers' rows in one copy.
      int staging = 0, gathers = 0;
      for (const auto& node : dev.node_stats()) {
        ASSERT_TRUE(node.has_memcpy()) << node.node_name();
        staging += node.memcpy().kind() == "HtoD";
        gathers += node.node_name().ends_with("/gradients/AllGather:AllGather:MEMCPYDtoD");
      }
      EXPECT_EQ(staging, 2) << dev.device();
      EXPECT_EQ(gathers, 1) << dev.device();
      continue;
    }
    int cells = 0, collectives = 0;
    for (const auto& node : dev.node_stats()) {
      if (node.op_type() == "LSTMBlockCell") ++cells;
      if (node.has_collective()) {
        ++collectives;
        EXPECT_EQ(node.collective().group_size(), 2);
        if (node.op_type() == "ALLREDUCE") {
          EXPECT_EQ(node.collective().algorithm(), "ring");
        }
        EXPECT_GT(node.collective().bytes(), 0);
      }
    }
    EXPECT_EQ(cells, 40) << dev.device();
    EXPECT_GT(collectives, 0) << dev.device();  // the dense gradients' all-reduce
    EXPECT_EQ(dev.thread_names().at(collect::kCollectiveLaneThreadId), "collectives");
  }
}

// Resident data: two global batches stay on the devices for four SGD epochs; the passes over
// the same images fit them better and better.
TEST(TrainRun, ResidentDataEpochsFitTheLoadedBatches) {
  const auto dir = testing::ScratchDir("train_resident");
  const std::string metrics = (dir / "metrics.jsonl").string();
  TrainOptions options = *Parse({"--model", "resnet50", "--depth", "14", "--image_size", "32",
                                 "--batch_size", "4", "--devices", "cpu:2", "--resident_batches",
                                 "2", "--sgd_epochs", "4", "--steps", "8", "--metrics", metrics});
  EXPECT_EQ(options.resident_batches, 2);
  EXPECT_EQ(options.sgd_epochs, 4);
  std::ostringstream log;
  auto report = RunTraining(options, log, false);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_NE(log.str().find("resident data: 2 global batches per load, 4 SGD epoch(s)"),
            std::string::npos) << log.str();
  std::vector<double> losses;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("\"loss\":");
    if (line.find("\"summary\"") == std::string::npos && at != std::string::npos) {
      losses.push_back(std::stod(line.substr(at + 7)));
    }
  }
  ASSERT_EQ(losses.size(), 8u);
  const double first_pass = (losses[0] + losses[1]) / 2, last_pass = (losses[6] + losses[7]) / 2;
  EXPECT_LT(last_pass, 0.6 * first_pass) << "first pass " << first_pass << ", last " << last_pass;
  auto bad = Parse({"--resident_batches", "-1"});
  EXPECT_FALSE(bad.ok());
}

TEST(TrainRun, SigintStopsAfterTheCurrentStepWithOnlyWholeTraces) {
  const auto dir = testing::ScratchDir("train_sigint");
  TrainOptions options = *Parse({"--steps", "200", "--profile", "--profile_every", "1",
                                 "--profile_dir", dir.string(), "--trace_format", "pbtxt"});
  std::thread interrupter([&] {
    for (int i = 0; i < 600; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (std::filesystem::exists(dir / "lstm_small_step2.pbtxt")) break;
    }
    std::raise(SIGINT);
  });
  std::ostringstream log;
  auto report = RunTraining(options, log, false);
  interrupter.join();
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kCancelled);
  int traces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    ASSERT_EQ(entry.path().extension(), ".pbtxt") << "left behind: " << name;
    auto bytes = ReadFile(entry.path().string());
    ASSERT_TRUE(bytes.ok());
    EXPECT_TRUE(trace::ParseStepStats(*bytes, name).ok()) << name << " is not a whole trace";
    ++traces;
  }
  EXPECT_GE(traces, 2);
  EXPECT_LT(traces, 200);
}

// --virtual_gpus_per_gpu: 1 by default, 1..64, refused on CPU devices when the devices are made
// (device_test.cc) since only then is the kind known for sure.
TEST(TrainOptions, VirtualGpusPerGpuIsParsedAndBounded) {
  auto plain = Parse({});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->virtual_gpus_per_gpu, 1);
  auto two = Parse({"--devices", "gpu:0", "--virtual_gpus_per_gpu", "2"});
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(two->virtual_gpus_per_gpu, 2);
  for (const char* bad : {"0", "65", "two"}) {
    auto refused = Parse({"--virtual_gpus_per_gpu", bad});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(ExitCodeFor(refused.status()), 2);
    EXPECT_NE(refused.status().message().find("--virtual_gpus_per_gpu"), std::string::npos)
        << refused.status().message();
  }
}

}  // namespace
}  // namespace stepscope::trainer
