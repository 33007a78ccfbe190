// Launch links of Kineto JSON traces: GPU work joined to its runtime call by correlation id, the
// flow events (ac2g, async_cpu_to_gpu) as a cross-check, on hand-made files whose links are known
// by construction (tests/data/kineto_links) and on the real AlexNet trace against a recount of its
// raw events; and our own Chrome JSON export read back with the links it carried.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "base/file_io.h"
#include "profiler/analysis/gpu_analyses.h"
#include "profiler/formats/chrome_json/chrome_json_writer.h"
#include "profiler/formats/reader.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

Trace Read(const std::string& name) {
  auto read = ReadTrace(stepscope::testing::DataPath("kineto_links/" + name));
  EXPECT_TRUE(read.ok()) << read.status().message();
  return std::move(read).value();
}

// The launch links of a trace by name: GPU work name -> the launching slice's name.
std::multimap<std::string, std::string> Links(const Trace& trace) {
  std::multimap<std::string, std::string> links;
  for (const Flow& flow : trace.flows()) {
    if (flow.kind != FlowKind::kLaunch) continue;
    links.emplace(std::string(trace.str(trace.slice_name(trace.slices()[flow.to_slice]))),
                  std::string(trace.str(trace.slice_name(trace.slices()[flow.from_slice]))));
  }
  return links;
}

// The same by times (from the trace's start, ns) and lanes: what our export keeps exactly (it
// names a slice by its op type, args.name holding the node name).
// `work_only`: links to GPU work only (not to sync markers).
std::multiset<std::tuple<int64_t, int64_t, std::string, int64_t, std::string>> LinkTimes(const Trace& trace,
                                                                                         bool work_only = false) {
  std::multiset<std::tuple<int64_t, int64_t, std::string, int64_t, std::string>> links;
  const int64_t base = trace.span_begin_ns();
  for (const Flow& flow : trace.flows()) {
    if (flow.kind != FlowKind::kLaunch) continue;
    const Slice& work = trace.slices()[flow.to_slice];
    if (work_only && !IsDeviceWork(work.kind)) continue;
    const Slice& call = trace.slices()[flow.from_slice];
    links.emplace(work.start_ns - base, work.dur_ns, std::string(trace.str(trace.tracks()[work.track].name)),
                  call.start_ns - base, std::string(trace.str(trace.tracks()[call.track].name)));
  }
  return links;
}

analysis::LaunchLinks LinksOf(const Trace& trace) { return analysis::CountLaunchLinks({analysis::GpuInput{&trace, {}}}); }

TEST(LaunchLinksTest, CorrelationIdsLinkWithoutFlowEvents) {
  const Trace trace = Read("correlation_only.json");
  const auto links = Links(trace);
  EXPECT_EQ(links, (std::multimap<std::string, std::string>{{"gemm", "cudaLaunchKernel"},
                                                            {"relu", "cudaLaunchKernel"},
                                                            {"Memcpy HtoD (Pageable -> Device)", "cudaMemcpyAsync"},
                                                            {"Memset (Device)", "cudaMemsetAsync"}}));
  // The two kernels go to their own calls: gemm's starts at 1010 µs, relu's at 1030 µs.
  std::map<std::string, int64_t> call_start;
  for (const Flow& flow : trace.flows()) {
    call_start[std::string(trace.str(trace.slice_name(trace.slices()[flow.to_slice])))] =
        trace.slices()[flow.from_slice].start_ns;
  }
  EXPECT_EQ(call_start["relu"] - call_start["gemm"], 20'000);
  const analysis::LaunchLinks counted = LinksOf(trace);
  EXPECT_EQ(counted.work, 5);
  EXPECT_EQ(counted.linked, 4);  // "orphan" carries an id no call has
}

TEST(LaunchLinksTest, AsyncCpuToGpuFlowsAreLaunches) {
  const Trace trace = Read("async_cpu_to_gpu.json");
  EXPECT_EQ(Links(trace), (std::multimap<std::string, std::string>{{"add_kernel", "cudaLaunchKernel"},
                                                                   {"mul_kernel", "cudaLaunchKernel"}}));
  EXPECT_EQ(LinksOf(trace).linked, 2);
}

TEST(LaunchLinksTest, AGraphLaunchLinksEveryKernelOfItsGraph) {
  const Trace trace = Read("graph_launch.json");
  const auto links = Links(trace);
  ASSERT_EQ(links.size(), 4u);  // the flow to graph_k0 agrees with its id and adds nothing
  for (const auto& [work, call] : links) EXPECT_EQ(call, "cudaGraphLaunch") << work;
  EXPECT_EQ(LinksOf(trace).linked, 4);
  const analysis::LaunchReport report = analysis::ComputeLaunches({analysis::GpuInput{&trace, {}}});
  EXPECT_EQ(report.linked, 4);
  EXPECT_EQ(report.cpu.count, 1);  // one call
  EXPECT_EQ(trace.import_stats().Get("launch_flow_other_than_correlation_dropped"), 0);
}

TEST(LaunchLinksTest, AFlowBoundToAPeekAtLastErrorGivesWayToTheCorrelation) {
  const Trace trace = Read("peek_memset.json");
  EXPECT_EQ(Links(trace), (std::multimap<std::string, std::string>{{"Memset (Device)", "cudaMemsetAsync"}}));
  EXPECT_EQ(trace.import_stats().Get("launch_flow_other_than_correlation_dropped"), 1);
}

// The real AlexNet trace: its 98 pieces of GPU work each carry the id of a cuda_runtime call
// (a recount of the raw events), and the links are the same with its flow events removed or
// renamed to async_cpu_to_gpu.
class AlexNetLinksTest : public ::testing::Test {
 protected:
  // Work events (kernel, gpu_memcpy, gpu_memset) whose correlation a cuda_runtime or cuda_driver
  // event carries, counted from the raw JSON.
  static int64_t RecountByCorrelation(const std::string& path) {
    auto text = ReadFile(path);  // inflated
    EXPECT_TRUE(text.ok());
    const auto doc = nlohmann::json::parse(*text);
    std::set<int64_t> calls;
    for (const auto& e : doc["traceEvents"]) {
      const std::string cat = e.value("cat", "");
      if ((cat == "cuda_runtime" || cat == "cuda_driver") && e.contains("args") && e["args"].contains("correlation")) {
        calls.insert(e["args"]["correlation"].get<int64_t>());
      }
    }
    int64_t linked = 0;
    for (const auto& e : doc["traceEvents"]) {
      const std::string cat = e.value("cat", "");
      if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
      if (e.contains("args") && e["args"].contains("correlation") &&
          calls.count(e["args"]["correlation"].get<int64_t>()) > 0) {
        ++linked;
      }
    }
    return linked;
  }
};

TEST_F(AlexNetLinksTest, LinksAsManyWithoutFlowsAsWithThemAsTheRecount) {
  const std::string original = stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz");
  const int64_t recount = RecountByCorrelation(original);
  EXPECT_EQ(recount, 98);
  auto with_flows = ReadTrace(original);
  ASSERT_TRUE(with_flows.ok());
  const Trace without_flows = Read("alexnet_no_flows.json.gz");
  const Trace renamed = Read("alexnet_async_cpu_to_gpu.json.gz");
  for (const Trace* trace : {static_cast<const Trace*>(&*with_flows), &without_flows, &renamed}) {
    const analysis::LaunchLinks links = LinksOf(*trace);
    EXPECT_EQ(links.work, 98);
    EXPECT_EQ(links.linked, recount);
  }
  // Same pairs in all three (sync markers included: a cuda_sync carries its call's id). The flow
  // events agree with every id but one: the flow of a cudaStreamWaitEvent (0 µs) starts in the µs
  // where a 0-µs cudaEventRecord starts too, and binds by time to that one.
  EXPECT_EQ(Links(*with_flows), Links(without_flows));
  EXPECT_EQ(Links(*with_flows), Links(renamed));
  EXPECT_EQ(with_flows->import_stats().Get("launch_flow_other_than_correlation_dropped"), 1);
  EXPECT_EQ(without_flows.import_stats().Get("launch_flow_other_than_correlation_dropped"), 0);
  const auto bare_links = Links(without_flows);
  const auto waits = bare_links.equal_range("Stream Wait Event");
  ASSERT_NE(waits.first, waits.second);
  for (auto it = waits.first; it != waits.second; ++it) EXPECT_EQ(it->second, "cudaStreamWaitEvent");
}

// Our Chrome JSON export keeps the launch links: read back, the same work is linked to the same
// calls, on our H100 LSTM step (launches from executor ops) and on the AlexNet Kineto trace.
TEST(LaunchLinksTest, OwnChromeExportReadsBackWithTheSameLinks) {
  for (const std::string& path : {stepscope::testing::SamplePath("h100_lstm_small_step3.pb.gz"),
                                  stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz")}) {
    auto trace = ReadTrace(path);
    ASSERT_TRUE(trace.ok()) << path;
    const std::string json = ExportPerfettoJson(*trace);
    auto back = ReadTraceFromBytes(json, path + ".json");
    ASSERT_TRUE(back.ok()) << back.status().message();
    const analysis::LaunchLinks before = LinksOf(*trace), after = LinksOf(*back);
    EXPECT_GT(before.linked, 0) << path;
    EXPECT_EQ(after.work, before.work) << path;
    EXPECT_EQ(after.linked, before.linked) << path;
    EXPECT_EQ(LinkTimes(*back), LinkTimes(*trace)) << path;
    // No conflict of its own: only those of the source, whose ids the export keeps (AlexNet's one
    // flow from a 0-µs cudaEventRecord starting in the µs of the cudaStreamWaitEvent its sync
    // marker's id names).
    EXPECT_EQ(back->import_stats().Get("launch_flow_other_than_correlation_dropped"),
              trace->import_stats().Get("launch_flow_other_than_correlation_dropped"))
        << path;
    // The correlation ids alone carry the launches: the export without its flow events reads back
    // with the same links to GPU work (sync markers apart).
    auto doc = nlohmann::json::parse(json);
    auto& events = doc["traceEvents"];
    const size_t all = events.size();
    events.erase(std::remove_if(events.begin(), events.end(),
                                [](const nlohmann::json& e) { return e.value("ph", "") == "s" || e.value("ph", "") == "f"; }),
                 events.end());
    EXPECT_LT(events.size(), all);
    auto bare = ReadTraceFromBytes(doc.dump(), path + ".noflows.json");
    ASSERT_TRUE(bare.ok()) << bare.status().message();
    EXPECT_EQ(LinkTimes(*bare, true), LinkTimes(*trace, true)) << path;
  }
}

}  // namespace
}  // namespace stepscope::trace
