// The PyTorch profiler's event args kept on import (tests/data/kineto_args): every arg of every
// event reachable from its slice with its exact value, checked against the raw JSON read
// independently (nlohmann), on real CPU traces and a hand-made GPU one with NCCL args; carried
// out by our Chrome JSON export and back; and python_function spans kept out of op time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <tuple>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/file_io.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/summary.h"
#include "profiler/formats/chrome_json/chrome_json_writer.h"
#include "profiler/formats/reader.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

using nlohmann::json;

std::string ArgsData(const std::string& name) { return stepscope::testing::DataPath("kineto_args/" + name); }

Trace ReadArgsTrace(const std::string& path) {
  auto read = ReadTrace(path);
  EXPECT_TRUE(read.ok()) << read.status().message();
  return std::move(read).value();
}

json RawJson(const std::string& name) {
  auto bytes = ReadFile(ArgsData(name));
  EXPECT_TRUE(bytes.ok());
  return json::parse(*bytes);
}

// A slice's free-form args as one JSON object (numbers as numbers, JSON text parsed).
json ArgsOf(const Trace& trace, uint32_t slice) {
  json args = json::object();
  for (const SliceArg& arg : trace.slice_args(slice)) {
    const std::string key(trace.str(arg.key));
    if (arg.is_number) {
      args[key] = arg.number;
    } else if (arg.is_json) {
      args[key] = json::parse(trace.str(arg.value));
    } else {
      args[key] = std::string(trace.str(arg.value));
    }
  }
  return args;
}

// (name, args) of every slice, and of every X event of the raw file: each event's args, all of
// them (the file's X events carry none that the trace keeps in a typed table).
std::multiset<std::pair<std::string, std::string>> SliceArgSets(const Trace& trace) {
  std::multiset<std::pair<std::string, std::string>> sets;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    sets.insert({std::string(trace.str(trace.slice_name(trace.slices()[i]))), ArgsOf(trace, i).dump()});
  }
  return sets;
}
std::multiset<std::pair<std::string, std::string>> EventArgSets(const json& file) {
  std::multiset<std::pair<std::string, std::string>> sets;
  for (const json& e : file["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    sets.insert({e.value("name", ""), e.contains("args") ? e["args"].dump() : json::object().dump()});
  }
  return sets;
}

TEST(KinetoArgsTest, EveryArgOfEveryEventOfRealCpuTracesIsKept) {
  for (const char* name : {"pytorch_cpu_tiny_stack.json.gz", "pytorch_cpu_gloo_allreduce_rank0.json.gz"}) {
    SCOPED_TRACE(name);
    const Trace trace = ReadArgsTrace(ArgsData(name));
    const json file = RawJson(name);
    EXPECT_EQ(SliceArgSets(trace), EventArgSets(file));
    EXPECT_FALSE(trace.all_slice_args().empty());
  }
}

// Named args read back with their exact values.
const SliceArg* FindArg(const Trace& trace, uint32_t slice, std::string_view key) {
  for (const SliceArg& arg : trace.slice_args(slice)) {
    if (trace.str(arg.key) == key) return &arg;
  }
  return nullptr;
}
uint32_t FindSlice(const Trace& trace, std::string_view name, size_t nth = 0) {
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    if (trace.str(trace.slice_name(trace.slices()[i])) == name && nth-- == 0) return i;
  }
  ADD_FAILURE() << "no slice " << name;
  return 0;
}

TEST(KinetoArgsTest, NamedArgsHaveTheirExactValues) {
  const Trace gloo = ReadArgsTrace(ArgsData("pytorch_cpu_gloo_allreduce_rank0.json.gz"));
  const uint32_t allreduce = FindSlice(gloo, "c10d::allreduce_");
  EXPECT_EQ(ArgsOf(gloo, allreduce),
            json::parse(R"({"External id": 1, "Sequence number": 0, "Fwd thread id": 0, "Record function id": 0,
                            "Concrete Inputs": ["", "", "", "", "False", "-1"],
                            "Input type": ["TensorList", "", "", "", "Scalar", "Scalar"],
                            "Input Strides": [[[1]], [], [], [], [], []], "Input Dims": [[[256]], [], [], [], [], []],
                            "Ev Idx": 1})"));
  const SliceArg* dims = FindArg(gloo, allreduce, "Input Dims");
  ASSERT_NE(dims, nullptr);
  EXPECT_TRUE(dims->is_json);
  EXPECT_EQ(gloo.str(dims->value), "[[[256]], [], [], [], [], []]");  // the text as written

  const Trace nccl = ReadArgsTrace(ArgsData("nccl_args.json"));
  const uint32_t comms = FindSlice(nccl, "record_param_comms");
  const json expected_comms = json::parse(R"({"External id": 12, "Record function id": 0, "Ev Idx": 11,
      "Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1048576, "Out msg nelems": 1048576,
      "In split size": "[]", "Out split size": "[]", "Global rank start": 0, "Global rank stride": 1,
      "Group size": 2, "Process Group Name": "0", "Process Group Description": "default_pg",
      "Process Group Ranks": "[0, 1]", "Rank": 0})");
  EXPECT_EQ(ArgsOf(nccl, comms), expected_comms);
  // The kernel: its launch configuration typed (KernelArgs), every other arg free-form.
  const uint32_t kernel = FindSlice(nccl, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  const std::optional<KernelArgs> launch = nccl.kernel_args(kernel);
  ASSERT_TRUE(launch.has_value());
  EXPECT_EQ(launch->correlation, 340);
  EXPECT_EQ(launch->grid[0], 2u);
  EXPECT_EQ(launch->block[0], 544u);
  EXPECT_EQ(launch->registers_per_thread, 96);
  EXPECT_EQ(ArgsOf(nccl, kernel), json::parse(R"({"External id": 12, "queued": 0, "context": 1,
      "Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": 2,
      "dtype": "Float", "In split size": "[]", "Out split size": "[]", "Process Group Name": "0",
      "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]"})"));
  EXPECT_EQ(ArgsOf(nccl, FindSlice(nccl, "cudaLaunchKernel")),
            json::parse(R"({"External id": 12, "cbid": 211, "correlation": 340})"));
  const uint32_t copy = FindSlice(nccl, "Memcpy HtoD (Pageable -> Device)");
  ASSERT_NE(nccl.transfer_args(copy), nullptr);
  EXPECT_EQ(nccl.transfer_args(copy)->bytes, 4096);
  EXPECT_EQ(ArgsOf(nccl, copy), json::parse(R"({"External id": 13, "context": 1})"));
  // Every JSON type: integers exact (negative too), fractions, booleans, null, objects and
  // integers past 18 digits as written, strings unescaped; in the event's order.
  const uint32_t add = FindSlice(nccl, "aten::add");
  EXPECT_EQ(ArgsOf(nccl, add), json::parse(R"({"External id": 14, "Sequence number": -3,
      "Input Dims": [[4, 16], [4, 16], []], "Input type": ["float", "float", "Scalar"],
      "Concrete Inputs": ["", "", "1"], "alpha": 0.5, "flag": true, "nothing": null, "nested": {"a": [1, 2]},
      "big": 123456789012345678901, "text": "a \"quoted\" caf\u00e9"})"));
  std::vector<std::string> order;
  for (const SliceArg& arg : nccl.slice_args(add)) order.emplace_back(nccl.str(arg.key));
  EXPECT_EQ(order, (std::vector<std::string>{"External id", "Sequence number", "Input Dims", "Input type",
                                             "Concrete Inputs", "alpha", "flag", "nothing", "nested", "big", "text"}));
  EXPECT_EQ(nccl.str(FindArg(nccl, add, "big")->value), "123456789012345678901");
  EXPECT_EQ(nccl.str(FindArg(nccl, add, "alpha")->value), "0.5");
  // A B/E pair keeps its B event's args.
  EXPECT_EQ(ArgsOf(nccl, FindSlice(nccl, "step")), json::parse(R"({"Step": 7})"));
}

TEST(KinetoArgsTest, ATraceWithoutArgsHoldsNone) {
  const std::string json_text = R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
      {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {}}]})";
  auto trace = ReadTraceFromBytes(json_text, "no_args.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->slices().size(), 2u);
  EXPECT_TRUE(trace->all_slice_args().empty());
}

// Our Chrome JSON export writes them back under their keys, JSON values as JSON: read back, every
// slice has the same args (twice round: nothing added on the way).
TEST(KinetoArgsTest, ChromeJsonExportCarriesThemBack) {
  for (const char* name : {"pytorch_cpu_tiny_stack.json.gz", "nccl_args.json"}) {
    SCOPED_TRACE(name);
    const Trace source = ReadArgsTrace(ArgsData(name));
    auto once = ReadTraceFromBytes(ExportPerfettoJson(source), "once.json");
    ASSERT_TRUE(once.ok()) << once.status().message();
    EXPECT_EQ(SliceArgSets(*once), SliceArgSets(source));
    auto twice = ReadTraceFromBytes(ExportPerfettoJson(*once), "twice.json");
    ASSERT_TRUE(twice.ok()) << twice.status().message();
    EXPECT_EQ(SliceArgSets(*twice), SliceArgSets(source));
    if (std::string(name) == "nccl_args.json") {
      EXPECT_EQ(once->str(FindArg(*once, FindSlice(*once, "aten::add"), "Input Dims")->value), "[[4, 16], [4, 16], []]");
      const std::optional<KernelArgs> launch =
          once->kernel_args(FindSlice(*once, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
      ASSERT_TRUE(launch.has_value());
      EXPECT_EQ(launch->correlation, 340);
      EXPECT_EQ(launch->grid[0], 2u);
      EXPECT_EQ(launch->registers_per_thread, 96);
    }
  }
}

// Every arg of every event of the real AlexNet trace (GPU: kernels, copies, memsets, syncs) is in
// our export of it, typed ones included; floats kept as floats compare to 6 digits.
TEST(KinetoArgsTest, ExportOfTheRealGpuTraceHasEveryArg) {
  auto canonical = [](const json& events) {
    std::multiset<std::tuple<std::string, std::string, std::string>> args;
    for (const json& e : events) {
      if (e.value("ph", "") != "X" || !e.contains("args")) continue;
      for (const auto& [key, value] : e["args"].items()) {
        std::string text = value.dump();
        if (value.is_number_float()) {
          char buffer[32];
          std::snprintf(buffer, sizeof buffer, "%.6g", value.get<double>());
          text = buffer;
        }
        args.insert({e.value("name", ""), key, text});
      }
    }
    return args;
  };
  const std::string path = stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz");
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  const auto source = canonical(json::parse(*bytes)["traceEvents"]);
  const auto exported = canonical(json::parse(ExportPerfettoJson(ReadArgsTrace(path)))["traceEvents"]);
  ASSERT_EQ(source.size(), 3548u);
  std::vector<std::tuple<std::string, std::string, std::string>> missing;
  std::set_difference(source.begin(), source.end(), exported.begin(), exported.end(), std::back_inserter(missing));
  EXPECT_TRUE(missing.empty()) << missing.size() << " missing, first: " << std::get<0>(missing.front()) << " "
                               << std::get<1>(missing.front()) << " = " << std::get<2>(missing.front());
}

// Arrays are kept as written without the import reading inside them; one that is not valid JSON
// is written back as a string, so the export stays valid JSON.
TEST(KinetoArgsTest, ExportWritesBrokenJsonArgsAsText) {
  const std::string text = R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5,
       "args": {"bad": [1, tru], "good": [1, true]}}]})";
  auto trace = ReadTraceFromBytes(text, "broken_args.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->slices().size(), 1u);
  const std::string exported = ExportPerfettoJson(*trace);
  ASSERT_TRUE(json::accept(exported)) << exported;
  const json document = json::parse(exported);  // kept: a range-for over a temporary's member dangles
  for (const json& e : document["traceEvents"]) {
    if (e.value("name", "") != "a") continue;
    if (e["args"].contains("bad")) {
      EXPECT_EQ(e["args"]["bad"], "[1, tru]");
    }
    EXPECT_EQ(e["args"]["good"], json::parse("[1, true]"));
  }
}

// python_function spans (recorded with_stack) are Python frames, not ops: op time and host busy
// time count the cpu_op events alone, recounted here from the raw JSON (tiny trace: cpu_op total
// 108.192 ms, union 49.761 ms; python_function 477.625 ms more, which `ops` counted before).
TEST(KinetoArgsTest, PythonFramesAreNotOps) {
  const std::string name = "pytorch_cpu_tiny_stack.json.gz";
  const Trace trace = ReadArgsTrace(ArgsData(name));
  const json file = RawJson(name);
  int64_t op_total = 0;
  int64_t python_frames = 0;
  std::vector<std::pair<int64_t, int64_t>> op_intervals;
  for (const json& e : file["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const int64_t ts = std::llround(e["ts"].get<double>() * 1000);
    const int64_t dur = std::llround(e["dur"].get<double>() * 1000);
    if (e["cat"] == "cpu_op") {
      op_total += dur;
      op_intervals.emplace_back(ts, ts + dur);
    }
    python_frames += e["cat"] == "python_function";
  }
  ASSERT_GT(python_frames, 400);
  int64_t kind_python = 0;
  for (const Slice& s : trace.slices()) kind_python += s.kind == SliceKind::kPythonFrame;
  EXPECT_EQ(kind_python, python_frames);

  const analysis::OpStats ops = analysis::ComputeOpStats(trace);
  EXPECT_EQ(ops.host_total_ns, op_total);
  EXPECT_EQ(ops.host_busy_ns, analysis::UnionLength(op_intervals));
  for (const analysis::OpStatsRow& row : ops.by_op_type) EXPECT_NE(row.kind, "python") << row.name;
  int64_t python_rows = 0;
  for (const analysis::OpStatsRow& row : ops.annotations) python_rows += row.kind == "python";
  EXPECT_GT(python_rows, 0);  // listed apart, as annotations are

  const analysis::Summary summary = analysis::Summarize(trace);
  int64_t host_busy = -1;
  for (const analysis::DeviceUsage& usage : summary.usage) {
    if (usage.lanes == "ops") host_busy = usage.busy_ns;
  }
  EXPECT_EQ(host_busy, analysis::UnionLength(op_intervals));
}

}  // namespace
}  // namespace stepscope::trace
