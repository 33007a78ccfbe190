// The analysis commands through RunCli: help, JSON documents, directories, and clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "profiler/cli/cli.h"
#include "profiler/formats/reader.h"
#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using Result = CliResult;

using testing::DataPath;

const char* const kCommands[] = {"ops", "kernels", "memory", "memcpy", "streams",
                                 "call-tree", "overlap", "critical-path", "diff", "merge"};

TEST(AnalysisCommandsTest, EveryCommandHasHelpAndIsListed) {
  const Result top = RunStepscope({"--help"});
  for (const char* command : kCommands) {
    EXPECT_NE(top.out.find(std::string("  ") + command + " "), std::string::npos) << command;
    const Result help = RunStepscope({command, "--help"});
    EXPECT_EQ(help.code, 0) << command;
    EXPECT_NE(help.out.find("usage: stepscope " + std::string(command)), std::string::npos);
    EXPECT_NE(help.out.find("--json"), std::string::npos) << command;
  }
}

// call-tree --step N on a directory of step traces is that step's own file's tree; bad scopes
// are usage errors naming what is wrong.
TEST(AnalysisCommandsTest, CallTreeOfAStepIsThatStepsTree) {
  auto tree = [](std::vector<std::string> args) {
    const Result r = RunStepscope(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto step = tree({"call-tree", DataPath("trainer/lstm_run_steps"), "--step", "8", "--json"});
  const auto file = tree({"call-tree", DataPath("trainer/lstm_run_steps/lstm_small_step8.pb.gz"), "--json"});
  EXPECT_EQ(step["schema"], "stepscope.call-tree/1");
  EXPECT_EQ(step["scope"], "step 8");
  EXPECT_GT(step["slices"].get<int64_t>(), 100);
  EXPECT_EQ(step["slices"], file["slices"]);
  EXPECT_EQ(step["root"]["total_ns"], file["root"]["total_ns"]);
  EXPECT_EQ(step["window_ns"], file["window_ns"]);
  // The root's children add up to it.
  int64_t sum = 0;
  for (const auto& child : step["root"]["children"]) sum += child["total_ns"].get<int64_t>();
  EXPECT_EQ(sum, step["root"]["total_ns"].get<int64_t>());

  Result r = RunStepscope({"call-tree", DataPath("trainer/lstm_run_steps"), "--step", "99"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no step 99"), std::string::npos) << r.err;
  r = RunStepscope({"call-tree", DataPath("analysis/kineto_small.json"), "--track", "no-such-lane"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--track no-such-lane: no track of"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GPU 0 / stream 7"), std::string::npos) << r.err;  // the tracks there are
  r = RunStepscope({"call-tree", DataPath("analysis/kineto_small.json"), "--track", "("});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not a regular expression"), std::string::npos) << r.err;
  r = RunStepscope({"call-tree", DataPath("analysis/kineto_small.json"), "--depth", "0"});
  EXPECT_EQ(r.code, 2);
  // --track picks the GPU stream: its two kernels, copy and memset (the JSON's tid 7 events),
  // each at the top: 200 + 200 + 40 + 5 us.
  const auto stream = tree({"call-tree", DataPath("analysis/kineto_small.json"), "--track", "stream 7$", "--json"});
  EXPECT_EQ(stream["levels"], 1);
  EXPECT_EQ(stream["slices"], 4);
  EXPECT_EQ(stream["root"]["total_ns"], 445'000);
}

TEST(AnalysisCommandsTest, JsonDocumentsOnAFileAndOnADirectory) {
  for (const char* command : {"ops", "kernels", "memory", "memcpy", "streams", "overlap", "critical-path"}) {
    for (const std::string& input : {DataPath("analysis/ranks/rank0.pbtxt"), DataPath("analysis/ranks")}) {
      const Result r = RunStepscope({command, input, "--json"});
      ASSERT_EQ(r.code, 0) << command << " " << input << ": " << r.err;
      const auto doc = nlohmann::json::parse(r.out);
      EXPECT_EQ(doc["schema"], std::string("stepscope.") + command + "/1");
    }
  }
  const auto ops = nlohmann::json::parse(RunStepscope({"ops", DataPath("analysis/ranks"), "--json"}).out);
  int64_t count = 0;
  for (const auto& row : ops["by_op_type"]) count += row["count"].get<int64_t>();
  EXPECT_EQ(count, 18);  // 9 slices per rank, both ranks
  const auto overlap = nlohmann::json::parse(RunStepscope({"overlap", DataPath("analysis/ranks"), "--json"}).out);
  ASSERT_EQ(overlap["traces"].size(), 2u);  // one per step and rank
  EXPECT_EQ(overlap["traces"][1]["rank"], 1);
}

// The kernel names of a text table: the first column of the rows under "Kernels by total time".
std::vector<std::string> KernelColumn(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream lines(text.substr(text.find("Kernels by total time")));
  std::string line;
  std::getline(lines, line);  // the title
  std::getline(lines, line);  // the column heads
  while (std::getline(lines, line) && !line.empty()) {
    // Cells are padded to 48 columns: the name ends where two spaces start.
    names.push_back(line.substr(2, line.find("  ", 2) - 2));
  }
  return names;
}

TEST(AnalysisCommandsTest, KernelTablesShowShortNamesUnlessFullNamesIsGiven) {
  // The PyTorch profiler's AlexNet training step: 16 kernels, two of them fft2d_r2c_32x32 with
  // different template arguments.
  const std::string sample = DataPath("pytorch_kineto_alexnet_train.json.gz");
  const std::string whole =
      "void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, int, int, int, int, int, int, int, "
      "int, cudnn::reduced_divisor, bool, int2, int, int)";
  const Result short_names = RunStepscope({"kernels", sample, "--top", "16"});
  ASSERT_EQ(short_names.code, 0) << short_names.err;
  const std::vector<std::string> shown = KernelColumn(short_names.out);
  ASSERT_EQ(shown.size(), 16u);
  for (const char* name : {"vectorized_elementwise_kernel<…>", "max_pool_forward_nchw<…>",
                           "fft2d_r2c_32x32<float, false, 0u, false>", "fft2d_r2c_32x32<float, false, 5u, true>",
                           "ampere_sgemm_32x32_sliced1x4_tn"}) {
    EXPECT_NE(std::find(shown.begin(), shown.end(), name), shown.end()) << name;
  }
  EXPECT_EQ(short_names.out.find("void "), std::string::npos);
  // Rows that are different kernels read differently.
  EXPECT_EQ(std::set<std::string>(shown.begin(), shown.end()).size(), shown.size());

  const Result full_names = RunStepscope({"kernels", sample, "--top", "16", "--full-names"});
  ASSERT_EQ(full_names.code, 0) << full_names.err;
  EXPECT_NE(full_names.out.find("\n  " + whole + " "), std::string::npos);

  // JSON keeps the whole name.
  const auto doc = nlohmann::json::parse(RunStepscope({"kernels", sample, "--json"}).out);
  bool found = false;
  for (const auto& k : doc["kernels"]) found = found || k["name"] == whole;
  EXPECT_TRUE(found);
}

TEST(AnalysisCommandsTest, MergeWritesAChromeTraceThatReadsBack) {
  const std::string out = (testing::ScratchDir("merge") / "merged.json.gz").string();
  const Result r = RunStepscope({"merge", DataPath("analysis/ranks"), "-o", out, "--align", "barrier"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("rank 1 (host-b) step 5 finished 60.0 us after"), std::string::npos) << r.out;
  auto merged = trace::ReadTrace(out);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->slices().size(), 18u);
  EXPECT_EQ(merged->span_end_ns() - merged->span_begin_ns(), 510000);
}

// The merged trace goes through the writer table, as convert's output does: every format reads
// back with both ranks' slices and the same span.
TEST(AnalysisCommandsTest, MergeWritesEveryOutputFormatByExtension) {
  for (const char* name : {"merged.json", "merged.pftrace", "merged.pftrace.gz", "merged.pb", "merged.pbtxt"}) {
    SCOPED_TRACE(name);
    const std::string out = (testing::ScratchDir("merge_formats") / name).string();
    const Result r = RunStepscope({"merge", DataPath("analysis/ranks"), "-o", out, "--align", "barrier"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("wrote " + out), std::string::npos) << r.out;
    auto merged = trace::ReadTrace(out);
    ASSERT_TRUE(merged.ok()) << merged.status().message();
    EXPECT_EQ(merged->slices().size(), 18u);
    EXPECT_EQ(merged->span_end_ns() - merged->span_begin_ns(), 510000);
  }
  // --format wins over the extension.
  const std::string forced = (testing::ScratchDir("merge_formats") / "merged.out").string();
  const Result r = RunStepscope({"merge", DataPath("analysis/ranks"), "-o", forced, "--format", "pftrace", "--align", "barrier"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto merged = trace::ReadTrace(forced);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->source_format(), trace::SourceFormat::kPerfettoProto);
  EXPECT_EQ(merged->slices().size(), 18u);
}

TEST(AnalysisCommandsTest, BadInputIsAClearErrorNamingIt) {
  Result r = RunStepscope({"ops", "/no/such/trace.pb"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/no/such/trace.pb"), std::string::npos);
  const auto empty = testing::ScratchDir("empty_dir");
  r = RunStepscope({"kernels", empty.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no trace files"), std::string::npos);
  r = RunStepscope({"merge", DataPath("analysis/ranks"), "-o", "out.txt"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot tell the output format"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists("out.txt"));
  r = RunStepscope({"merge", DataPath("analysis/ranks"), "-o", "out.txt", "--format", "xspace"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown format"), std::string::npos) << r.err;
  r = RunStepscope({"ops", DataPath("analysis/ranks"), "--top", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--top"), std::string::npos);
  r = RunStepscope({"diff", DataPath("analysis/ranks/rank0.pbtxt")});
  EXPECT_EQ(r.code, 2);
  const std::string garbage = (testing::ScratchDir("garbage") / "bad.json").string();
  ASSERT_TRUE(WriteFileAtomically(garbage, "[{\"ph\": \"X\", \"ts\": }]").ok());
  r = RunStepscope({"streams", garbage});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.json"), std::string::npos);
  EXPECT_NE(r.err.find("invalid JSON at byte"), std::string::npos);
}

// Nothing is dropped silently: every repair and skip an import counts (here a partial overlap
// moved to a lane, an end without a begin, an instant, a flow without id, an event without ts,
// an unreadable counter value, a file cut short) is in `summary`, as text and as JSON.
TEST(AnalysisCommandsTest, SummaryShowsEveryImportCount) {
  const std::string path = (testing::ScratchDir("import_counts") / "damaged.json").string();
  const std::string json =
      R"({"traceEvents": [)"
      R"({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},)"
      R"({"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 10},)"
      R"({"ph": "E", "pid": 1, "tid": 2, "ts": 3},)"
      R"({"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 4},)"
      R"({"ph": "s", "cat": "ac2g", "name": "f", "pid": 1, "tid": 1, "ts": 4},)"
      R"({"ph": "X", "name": "no time", "pid": 1, "tid": 1, "dur": 1},)"
      R"({"ph": "C", "name": "c", "pid": 1, "ts": 1, "args": {"v": 1e999}},)"
      R"({"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 20, "dur": 1}, {"ph": "X", "na)";
  ASSERT_TRUE(WriteFileAtomically(path, json).ok());
  // Cut short: refused unless --allow-truncated, which then heads the output with the cut.
  const Result refused = RunStepscope({"summary", path});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find(path + ": the file is cut short at byte " + std::to_string(json.size())), std::string::npos)
      << refused.err;
  auto trace = trace::ReadTrace(path, {.allow_truncated = true});
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const auto& counts = trace->import_stats().counts();
  for (const char* name : {"overlap_moved_to_lane", "end_without_begin_skipped", "instant_event_ignored",
                           "flow_without_id_skipped", "event_without_ts_skipped", "counter_value_unreadable_skipped",
                           "json_truncated_events_kept", "json_truncated_bytes_dropped"}) {
    EXPECT_TRUE(counts.count(name)) << name;
  }
  const Result text = RunStepscope({"summary", path, "--allow-truncated"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("TRUNCATED INPUT: " + path + ": read to byte " + std::to_string(json.size()), 0), 0u)
      << text.out;
  const Result json_result = RunStepscope({"summary", path, "--json", "--allow-truncated"});
  ASSERT_EQ(json_result.code, 0) << json_result.err;
  const auto doc = nlohmann::json::parse(json_result.out);
  EXPECT_EQ(doc["truncated"][0]["file"], path);
  EXPECT_EQ(doc["truncated"][0]["events_kept"], 8);
  for (const auto& [name, count] : counts) {
    const size_t at = text.out.find("  " + name + " ");
    ASSERT_NE(at, std::string::npos) << name << " missing from:\n" << text.out;
    const std::string line = text.out.substr(at, text.out.find('\n', at) - at);
    EXPECT_NE(line.find(" " + std::to_string(count)), std::string::npos) << line;
    EXPECT_EQ(doc["import"][name], count) << name;
  }
  EXPECT_EQ(doc["import"].size(), counts.size());
}

TEST(AnalysisCommandsTest, DiffMarksOpsOnOneSideOnly) {
  const Result r = RunStepscope({"diff", DataPath("analysis/ranks/rank0.pbtxt"), DataPath("analysis/kineto_small.json"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  bool only_a = false, only_b = false;
  for (const auto& row : doc["by_op_type"]) {
    only_a |= row["presence"] == "only_a";
    only_b |= row["presence"] == "only_b";
  }
  EXPECT_TRUE(only_a);
  EXPECT_TRUE(only_b);
}

}  // namespace
}  // namespace stepscope::cli
