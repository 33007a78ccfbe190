// Golden tests: each analysis command on small real-format inputs (the TensorFlow sample, our own
// rank traces, a hand-made Kineto file) against expected text and JSON in
// tests/data/analysis/golden. On a mismatch the actual output is written next to the expected
// file as `<name>.actual` and the differing lines are printed. To accept new output:
//   STEPSCOPE_UPDATE_GOLDEN=1 build/<dir>/tests/analysis/stepscope_analysis_golden_tests
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "base/file_io.h"
#include "profiler/cli/cli.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

struct GoldenCase {
  std::string name;                 // golden file name (without directory)
  std::vector<std::string> args;    // inputs are relative to tests/data
};

std::vector<GoldenCase> Cases() {
  const std::string ptb = "ptb_lstm_tf1_gpu_step.pbtxt";
  const std::string kineto = "analysis/kineto_small.json";
  const std::string rank0 = "analysis/ranks/rank0.pbtxt";
  const std::string rank1 = "analysis/ranks/rank1.pbtxt";
  const std::string ranks = "analysis/ranks";
  std::vector<GoldenCase> cases = {
      {"ptb.ops.txt", {"ops", ptb, "--top", "10"}},
      {"ptb.kernels.txt", {"kernels", ptb, "--top", "10"}},
      {"ptb.memory.txt", {"memory", ptb, "--top", "8"}},
      {"ptb.memcpy.txt", {"memcpy", ptb}},
      {"ptb.streams.txt", {"streams", ptb, "--top", "6"}},
      {"ptb.overlap.txt", {"overlap", ptb}},
      {"ptb.critical-path.txt", {"critical-path", ptb, "--top", "12"}},
      {"ptb.step-breakdown.txt", {"step-breakdown", ptb}},
      // One run's four step traces opened as one run: a row per step.
      {"lstm_run.step-breakdown.txt", {"step-breakdown", "trainer/lstm_run_steps"}},
      {"memory_labels.memory.txt", {"memory", "corner/memory_labels.pbtxt"}},
      {"zero_and_missing.memory.txt", {"memory", "corner/zero_and_missing.pbtxt"}},
      {"ranks.merge.txt", {"merge", ranks, "--align=barrier"}},
      {"ranks.merge.json", {"merge", ranks, "--json", "--align=barrier"}},
      {"ranks.overlap.txt", {"overlap", ranks}},
      {"ranks.ops.txt", {"ops", ranks}},
      {"ranks.streams.txt", {"streams", ranks}},
      {"rank0.memory.txt", {"memory", rank0}},
      {"rank0.memcpy.txt", {"memcpy", rank0}},
      {"rank0.critical-path.json", {"critical-path", rank0, "--json"}},
      {"rank0.kernels.json", {"kernels", rank0, "--json"}},
      // The real PyTorch profiler trace: launch geometry, registers, copy bytes from event args.
      // Checked by hand against the JSON: ProfilerStep#5 1 ms, self 1000 - 100 - 100 - 20 - 20 us;
      // cudaLaunchKernel 3 calls, 10 + 10 + 5 us of self time under three callers.
      {"kineto.call-tree.txt", {"call-tree", kineto}},
      {"kineto.call-tree-bottom-up.json", {"call-tree", kineto, "--bottom-up", "--json"}},
      {"alexnet.kernels.txt", {"kernels", "pytorch_kineto_alexnet_train.json.gz", "--top", "12"}},
      {"alexnet.memcpy.txt", {"memcpy", "pytorch_kineto_alexnet_train.json.gz"}},
      {"rank0-rank1.diff.txt", {"diff", rank0, rank1}},
      {"rank0-rank1.diff.json", {"diff", rank0, rank1, "--json"}},
  };
  for (const char* command :
       {"ops", "kernels", "memory", "memcpy", "streams", "overlap", "critical-path", "step-breakdown"}) {
    cases.push_back({std::string("kineto.") + command + ".txt", {command, kineto}});
    cases.push_back({std::string("kineto.") + command + ".json", {command, kineto, "--json"}});
  }
  return cases;
}

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

std::string Normalise(std::string text) {
  // Inputs are named relative to the data directory, so the goldens do not depend on the checkout.
  const std::string prefix = std::string(STEPSCOPE_TEST_DATA) + "/";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) text.erase(at, prefix.size());
  return text;
}

std::string LineDiff(const std::string& expected, const std::string& actual) {
  std::istringstream e(expected), a(actual);
  std::string le, la, out;
  int line = 0, shown = 0;
  while (shown < 20) {
    const bool more_e = static_cast<bool>(std::getline(e, le));
    const bool more_a = static_cast<bool>(std::getline(a, la));
    if (!more_e && !more_a) break;
    ++line;
    if (more_e && more_a && le == la) continue;
    out += "line " + std::to_string(line) + ":\n  - " + (more_e ? le : "<missing>") + "\n  + " +
           (more_a ? la : "<missing>") + "\n";
    ++shown;
  }
  return out;
}

TEST_P(GoldenTest, OutputMatches) {
  const GoldenCase& c = GetParam();
  std::vector<std::string> args = c.args;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i].rfind("--", 0) != 0 && args[i - 1] != "--top") args[i] = testing::DataPath(args[i]);
  }
  std::ostringstream out, err;
  const int code = cli::RunCli(args, out, err);
  ASSERT_EQ(code, 0) << err.str();
  const std::string actual = Normalise(out.str());
  const std::string path = testing::DataPath("analysis/golden/" + c.name);
  if (std::getenv("STEPSCOPE_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(WriteFileAtomically(path, actual).ok());
    return;
  }
  auto expected = ReadFileAllowEmpty(path);
  ASSERT_TRUE(expected.ok()) << path << ": " << expected.status().message()
                             << " (STEPSCOPE_UPDATE_GOLDEN=1 creates it)";
  if (*expected != actual) {
    ASSERT_TRUE(WriteFileAtomically(path + ".actual", actual).ok());
    ADD_FAILURE() << c.name << " differs from " << path << " (actual output in " << path << ".actual)\n"
                  << LineDiff(*expected, actual);
  } else {
    std::error_code ignored;
    std::filesystem::remove(path + ".actual", ignored);
  }
}

INSTANTIATE_TEST_SUITE_P(Commands, GoldenTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& param) {
                           std::string name = param.param.name;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace stepscope::analysis
