// The GPU commands through RunCli (gpu, idle, launches, annotations, kernel-patterns): help,
// their JSON documents on the real AlexNet PyTorch trace and the TensorFlow PTB step, the figures
// the analyses give (gpu_analyses_test recounts them from raw events), text output, and errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using testing::DataPath;
using Json = nlohmann::json;

const char* const kGpuCommands[] = {"gpu", "idle", "launches", "annotations", "kernel-patterns"};

std::string AlexNet() { return DataPath("pytorch_kineto_alexnet_train.json.gz"); }
std::string PtbStep() { return DataPath("ptb_lstm_tf1_gpu_step.pbtxt"); }

Json JsonOf(const std::vector<std::string>& args) {
  const CliResult r = RunStepscope(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return Json::parse(r.out);
}

TEST(GpuCommandsTest, EveryCommandHasHelpAndIsListed) {
  const CliResult top = RunStepscope({"--help"});
  for (const char* command : kGpuCommands) {
    EXPECT_NE(top.out.find(std::string("  ") + command + " "), std::string::npos) << command;
    const CliResult help = RunStepscope({command, "--help"});
    EXPECT_EQ(help.code, 0) << command;
    EXPECT_NE(help.out.find("usage: stepscope " + std::string(command)), std::string::npos);
    EXPECT_NE(help.out.find("--json"), std::string::npos) << command;
    EXPECT_NE(help.out.find("--step"), std::string::npos) << command;
  }
}

TEST(GpuCommandsTest, JsonFiguresOnAlexNet) {
  const Json gpu = JsonOf({"gpu", AlexNet(), "--json"});
  EXPECT_EQ(gpu["schema"], "stepscope.gpu/1");
  ASSERT_EQ(gpu["gpus"].size(), 1u);
  EXPECT_EQ(gpu["gpus"][0]["rank"], 0);
  EXPECT_EQ(gpu["gpus"][0]["busy_ns"], 66141000);
  EXPECT_EQ(gpu["gpus"][0]["streams"].size(), 2u);

  const Json idle = JsonOf({"idle", AlexNet(), "--json", "--rule", "hta"});
  EXPECT_EQ(idle["schema"], "stepscope.idle/1");
  EXPECT_EQ(idle["consecutive_kernel_delay_ns"], 30000);
  EXPECT_EQ(idle["streams"][0]["causes"]["host_wait"]["count"], 34);
  EXPECT_EQ(idle["streams"][0]["causes"]["kernel_wait"]["total_ns"], 104000);
  // Per GPU: the time no stream runs work, its causes adding up to `gpu`'s idle (span - busy),
  // where the two streams' host waits summed (the totals) exceed the span.
  ASSERT_EQ(idle["gpus"].size(), 1u);
  const Json& gpu0 = idle["gpus"][0];
  const int64_t span = gpu["gpus"][0]["span_ns"];
  EXPECT_EQ(gpu0["idle"]["total_ns"], gpu["gpus"][0]["idle_ns"]);
  int64_t causes = 0;
  for (const char* cause : {"host_wait", "kernel_wait", "other"}) {
    const int64_t total = gpu0["causes"][cause]["total_ns"];
    EXPECT_LE(total, span) << cause;
    causes += total;
  }
  EXPECT_EQ(causes, gpu0["idle"]["total_ns"]);
  EXPECT_GT(idle["totals"]["host_wait"]["total_ns"].get<int64_t>(), span);

  const Json launches = JsonOf({"launches", AlexNet(), "--json", "--all"});
  EXPECT_EQ(launches["schema"], "stepscope.launches/1");
  EXPECT_EQ(launches["launches"], 98);
  EXPECT_EQ(launches["all"].size(), 98u);
  EXPECT_EQ(launches["long_delay"]["count"], 43);

  const Json annotations = JsonOf({"annotations", AlexNet(), "--json"});
  EXPECT_EQ(annotations["schema"], "stepscope.annotations/1");
  EXPECT_EQ(annotations["work"], 98);
  EXPECT_EQ(annotations["annotations"][0]["path"], Json::array({"[param|cuda]"}));
  EXPECT_EQ(annotations["annotations"][0]["gpu_ns"], 66203000);

  const Json patterns = JsonOf({"kernel-patterns", AlexNet(), "--json", "--top", "2"});
  EXPECT_EQ(patterns["schema"], "stepscope.kernel_patterns/1");
  EXPECT_EQ(patterns["distinct_patterns"], 23);
  ASSERT_EQ(patterns["patterns"].size(), 2u);
  EXPECT_EQ(patterns["patterns"][0]["count"], 6);
  const Json by_time = JsonOf({"kernel-patterns", AlexNet(), "--json", "--by", "time", "--length", "2"});
  EXPECT_EQ(by_time["length"], 2);
  ASSERT_GE(by_time["patterns"].size(), 2u);
  EXPECT_GE(by_time["patterns"][0]["gpu_ns"], by_time["patterns"][1]["gpu_ns"]);
}

// TensorFlow's GPU step: streams 13-15 of GPU:0, the /stream:all repeats skipped, ops' name
// scopes standing in for annotations.
TEST(GpuCommandsTest, TensorFlowStep) {
  const Json gpu = JsonOf({"gpu", PtbStep(), "--json"});
  ASSERT_EQ(gpu["gpus"].size(), 1u);
  EXPECT_EQ(gpu["gpus"][0]["device"], "GPU:0");
  EXPECT_TRUE(gpu["gpus"][0]["rank"].is_null());  // TensorFlow 1.x records no rank: absent, not -1
  EXPECT_EQ(gpu["gpus"][0]["streams"].size(), 3u);
  const Json annotations = JsonOf({"annotations", PtbStep(), "--json"});
  ASSERT_FALSE(annotations["annotations"].empty());
  EXPECT_EQ(annotations["annotations"][0]["path"], Json::array({"Train"}));
  EXPECT_TRUE(annotations["annotations"][0]["name_scope"]);
  EXPECT_EQ(annotations["work"].get<int64_t>(),
            annotations["annotations"][0]["work"].get<int64_t>() + annotations["unannotated_work"].get<int64_t>() +
                annotations["unlinked_work"].get<int64_t>());
}

// Every command that follows launches says how much GPU work it linked, in text and JSON; a trace
// without flow events links by correlation id (tests/data/kineto_links/alexnet_no_flows.json.gz).
TEST(GpuCommandsTest, LaunchLinksAreReported) {
  const std::string bare = DataPath("kineto_links/alexnet_no_flows.json.gz");
  for (const char* command : {"idle", "launches", "annotations", "kernel-patterns", "critical-path"}) {
    const Json doc = JsonOf({command, bare, "--json"});
    const Json& links = std::string(command) == "critical-path" ? doc["traces"][0]["launch_links"] : doc["launch_links"];
    ASSERT_TRUE(links.is_object()) << command << "\n" << doc.dump(2).substr(0, 400);
    // kernel-patterns counts kernels only: 79 of the 98 pieces of work.
    const int64_t work = std::string(command) == "kernel-patterns" ? 79 : 98;
    EXPECT_EQ(links["work"], work) << command;
    EXPECT_EQ(links["linked"], work) << command;
    EXPECT_DOUBLE_EQ(links["fraction"].get<double>(), 1.0) << command;
    const CliResult text = RunStepscope({command, bare});
    ASSERT_EQ(text.code, 0) << text.err;
    EXPECT_NE(text.out.find(std::string(command) == "launches" ? "98 launches linked of 98" : "launch links: "),
              std::string::npos)
        << command << "\n" << text.out;
  }
  const CliResult partial = RunStepscope({"idle", DataPath("kineto_links/correlation_only.json")});
  EXPECT_NE(partial.out.find("launch links: 4 of 5 pieces of GPU work linked to the call that launched them (80.0%); "
                             "1 without a known launch"),
            std::string::npos)
      << partial.out;
}

TEST(GpuCommandsTest, TextOutput) {
  const CliResult annotations = RunStepscope({"annotations", AlexNet(), "--depth", "2"});
  ASSERT_EQ(annotations.code, 0) << annotations.err;
  EXPECT_NE(annotations.out.find("98 pieces of GPU work"), std::string::npos) << annotations.out;
  EXPECT_NE(annotations.out.find("  [param|pytorch.model.alex_net|0|0|0] "), std::string::npos) << annotations.out;
  EXPECT_EQ(annotations.out.find("measure|forward"), std::string::npos) << "depth 3 shown with --depth 2";
  const CliResult patterns = RunStepscope({"kernel-patterns", AlexNet(), "--top", "1"});
  ASSERT_EQ(patterns.code, 0) << patterns.err;
  EXPECT_NE(patterns.out.find("#1  6 times, gpu 2.288 ms"), std::string::npos) << patterns.out;
  EXPECT_EQ(patterns.out.find("#2"), std::string::npos);
}

TEST(GpuCommandsTest, BadInputIsAClearErrorWithExitTwo) {
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"idle", AlexNet(), "--rule", "fastest"}, "--rule fastest"},
      {{"idle", AlexNet(), "--kernel-delay", "5"}, "--kernel-delay applies to --rule hta only"},
      {{"kernel-patterns", AlexNet(), "--by", "size"}, "--by size"},
      {{"kernel-patterns", AlexNet(), "--length", "0"}, "--length"},
      {{"annotations", AlexNet(), "--steps", "3-1"}, "--steps 3-1"},
      {{"annotations", AlexNet(), "--step", "7"}, "no step 7"},
      {{"gpu", "/nonexistent/trace.json"}, "/nonexistent/trace.json"},
  };
  for (const auto& c : cases) {
    const CliResult r = RunStepscope(c.args);
    EXPECT_EQ(r.code, 2) << c.args[0] << " " << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

// --step numbers steps by one rule in every command: a step's recorded number, else its place
// among all the inputs' steps (the PTB step is step 0, the AlexNet trace, with no step of its
// own, is step 1), as `stepscope steps` lists them.
TEST(StepScopeTest, GpuAndCriticalPathNumberStepsAlike) {
  for (const char* command : {"gpu", "critical-path"}) {
    // Step 1 is all of the AlexNet trace and nothing of the PTB step.
    EXPECT_EQ(JsonOf({command, PtbStep(), AlexNet(), "--step", "1", "--json"}), JsonOf({command, AlexNet(), "--json"}))
        << command;
    const CliResult none = RunStepscope({command, PtbStep(), AlexNet(), "--step", "2"});
    EXPECT_EQ(none.code, 2) << command;
    EXPECT_NE(none.err.find("no step 2 in the traces given"), std::string::npos) << command << ": " << none.err;
  }
}

// A trace with one ProfilerStep#N span is step N for critical-path too (its one path covers the
// whole trace), as for gpu.
TEST(StepScopeTest, OneProfilerStepIsSelectedByItsNumber) {
  const std::string kineto = DataPath("analysis/kineto_small.json");
  for (const char* command : {"gpu", "critical-path"}) {
    const CliResult all = RunStepscope({command, kineto});
    const CliResult five = RunStepscope({command, kineto, "--step", "5"});
    EXPECT_EQ(five.code, 0) << command << ": " << five.err;
    EXPECT_EQ(RunStepscope({command, kineto, "--step", "4"}).code, 2) << command;
    if (std::string(command) == "critical-path") {
      EXPECT_EQ(five.out, all.out);
    }
  }
}

}  // namespace
}  // namespace stepscope::cli
