// Chrome JSON import: our own export read back, and a real PyTorch profiler (Kineto) trace.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/chrome_json/chrome_json_writer.h"
#include "profiler/formats/reader.h"
#include "profiler/trace/slice_details.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

TEST(ChromeJsonReaderTest, ReadsBackOurPerfettoExport) {
  auto trace = ReadTrace(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(trace.ok());
  const std::string json = ExportPerfettoJson(*trace);
  auto again = ReadTraceFromBytes(json, "export.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->source_format(), SourceFormat::kChromeJson);
  EXPECT_EQ(again->slices().size(), 2087u - 755u);
  EXPECT_EQ(again->span_end_ns() - again->span_begin_ns(),
            trace->span_end_ns() - trace->span_begin_ns());
  EXPECT_EQ(again->import_stats().Get("overlap_moved_to_lane"), 0);
  EXPECT_EQ(again->import_stats().Get("flow_not_bound_skipped"), 0);
  EXPECT_FALSE(again->flows().empty());
}

TEST(ChromeJsonReaderTest, ReadsARealKinetoTrace) {
  auto bytes = ReadFile(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(bytes.ok());
  const auto doc = nlohmann::json::parse(*bytes);
  int64_t complete = 0;
  for (const auto& e : doc["traceEvents"]) complete += e.value("ph", "") == "X" ? 1 : 0;
  auto trace = ReadTraceFromBytes(*bytes, "alexnet.json.gz");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(static_cast<int64_t>(trace->slices().size()), complete);
  int64_t kernels = 0;
  for (const Slice& s : trace->slices()) kernels += s.kind == SliceKind::kKernel ? 1 : 0;
  EXPECT_GT(kernels, 0);
  int64_t launches = 0;
  for (const Flow& f : trace->flows()) launches += f.kind == FlowKind::kLaunch ? 1 : 0;
  EXPECT_GT(launches, 0);
}

// Kernel launch and copy arguments of the real AlexNet trace, kept per slice.
TEST(ChromeJsonReaderTest, KeepsKinetoKernelAndCopyArgs) {
  auto trace = ReadTrace(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->all_kernel_args().size(), 79u);  // every `kernel` event of the file
  // Kernels launched alike share one stored configuration (how the table stays small).
  EXPECT_LT(trace->all_kernel_args().launch_count(), 79u);
  EXPECT_GT(trace->all_kernel_args().launch_count(), 1u);
  auto find = [&](std::string_view prefix, int64_t absolute_us) -> int64_t {
    for (uint32_t i = 0; i < trace->slices().size(); ++i) {
      const Slice& s = trace->slices()[i];
      if (trace->str(trace->slice_name(s)).substr(0, prefix.size()) == prefix &&
          trace->epoch_ns() + s.start_ns == absolute_us * 1000) {
        return i;
      }
    }
    return -1;
  };
  const int64_t kernel = find("void cask_cudnn::computeOffsetsKernel<false, false>", 1695835583881571);
  ASSERT_GE(kernel, 0);
  const std::optional<KernelArgs> launch = trace->kernel_args(static_cast<uint32_t>(kernel));
  ASSERT_TRUE(launch.has_value());
  EXPECT_EQ(launch->grid[0], 12u);
  EXPECT_EQ(launch->grid[1], 1u);
  EXPECT_EQ(launch->grid[2], 1u);
  EXPECT_EQ(launch->block[0], 256u);
  EXPECT_EQ(launch->registers_per_thread, 16);
  EXPECT_EQ(launch->shared_memory_bytes, 0);
  EXPECT_EQ(launch->stream, 7);
  EXPECT_EQ(launch->device, 0);
  EXPECT_EQ(launch->correlation, 5110);
  EXPECT_NEAR(launch->warps_per_sm, 0.8888889f, 1e-6);
  EXPECT_EQ(trace->transfer_args(static_cast<uint32_t>(kernel)), nullptr);

  const int64_t copy = find("Memcpy HtoD (Pageable -> Device)", 1695835572943613);
  ASSERT_GE(copy, 0);
  const TransferArgs* transfer = trace->transfer_args(static_cast<uint32_t>(copy));
  ASSERT_NE(transfer, nullptr);
  EXPECT_EQ(transfer->bytes, 92928);
  EXPECT_NEAR(transfer->bandwidth_gbps, 7.744f, 1e-4);
  EXPECT_EQ(transfer->correlation, 14);
  auto details = GetMemcpyDetails(*trace, static_cast<uint32_t>(copy));
  ASSERT_TRUE(details.has_value());
  EXPECT_EQ(details->kind, "HtoD");
  EXPECT_EQ(details->bytes, 92928);
  EXPECT_EQ(details->src_memory, "Pageable");
  EXPECT_EQ(details->dst_memory, "Device");
  EXPECT_FALSE(trace->kernel_args(static_cast<uint32_t>(copy)).has_value());

  const int64_t memset = find("Memset (Device)", 1695835573847842);
  ASSERT_GE(memset, 0);
  ASSERT_NE(trace->transfer_args(static_cast<uint32_t>(memset)), nullptr);
  EXPECT_EQ(trace->transfer_args(static_cast<uint32_t>(memset))->bytes, 20736);

  // Our perfetto export writes the args under Kineto's names, so they survive a round trip.
  auto again = ReadTraceFromBytes(ExportPerfettoJson(*trace), "export.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->all_kernel_args().size(), trace->all_kernel_args().size());
  int64_t bytes_before = 0, bytes_after = 0;
  for (const TransferArgs& t : trace->all_transfer_args()) bytes_before += std::max<int64_t>(t.bytes, 0);
  for (const TransferArgs& t : again->all_transfer_args()) bytes_after += std::max<int64_t>(t.bytes, 0);
  EXPECT_GT(bytes_before, 0);
  EXPECT_EQ(bytes_after, bytes_before);
}

// The file path (read into the parse buffer) and the in-memory path agree, gzip or not.
TEST(ChromeJsonReaderTest, ReadingAFileMatchesReadingItsBytes) {
  auto bytes = ReadFile(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(bytes.ok());
  const auto dir = testing::ScratchDir("chrome_padded");
  const std::string plain_path = (dir / "alexnet.json").string();
  ASSERT_TRUE(WriteFileAtomically(plain_path, *bytes).ok());
  auto from_bytes = ReadTraceFromBytes(*bytes, "alexnet.json");
  auto from_gz = ReadTrace(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  auto from_plain = ReadTrace(plain_path);
  ASSERT_TRUE(from_bytes.ok() && from_gz.ok() && from_plain.ok());
  for (const Trace* t : {&*from_gz, &*from_plain}) {
    EXPECT_EQ(t->slices().size(), from_bytes->slices().size());
    EXPECT_EQ(t->flows().size(), from_bytes->flows().size());
    EXPECT_EQ(t->all_kernel_args().size(), from_bytes->all_kernel_args().size());
    EXPECT_EQ(t->import_stats().counts(), from_bytes->import_stats().counts());
  }
  auto compressed = Gzip(*bytes);
  ASSERT_TRUE(compressed.ok());
  const std::string cut_path = (dir / "cut.json.gz").string();
  {
    std::FILE* f = std::fopen(cut_path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(compressed->data(), 1, compressed->size() / 2, f);
    std::fclose(f);
  }
  // A .json.gz cut short (a profiler killed while writing) is an error naming the file and that
  // the compressed file ends early; accepted, the events before the cut are kept.
  auto refused = ReadTrace(cut_path);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(refused.status().message().find(cut_path + ": the compressed file ends early: its gzip stream stops at byte "),
            std::string::npos)
      << refused.status().message();
  Truncation truncation;
  auto cut = ReadTrace(cut_path, {.allow_truncated = true, .truncation = &truncation});
  ASSERT_TRUE(cut.ok()) << cut.status().message();
  EXPECT_EQ(truncation.file, cut_path);
  EXPECT_TRUE(truncation.gzip_cut);
  EXPECT_EQ(truncation.events_kept, cut->import_stats().Get("json_truncated_events_kept"));
  EXPECT_EQ(cut->import_stats().Get("gzip_cut_short_read_to_the_cut"), 1);
  EXPECT_GT(cut->import_stats().Get("json_truncated_events_kept"), 0);
  EXPECT_GT(cut->slices().size(), 0u);
  EXPECT_LT(cut->slices().size(), from_bytes->slices().size());
  // A damaged (not cut) gzip stream is an error naming the file.
  std::string damaged = *compressed;
  for (size_t i = damaged.size() / 2; i < damaged.size() / 2 + 64; ++i) damaged[i] = static_cast<char>(~damaged[i]);
  const std::string damaged_path = (dir / "damaged.json.gz").string();
  ASSERT_TRUE(WriteFileAtomically(damaged_path, damaged).ok());
  auto broken = ReadTrace(damaged_path);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find(damaged_path + ": gzip data is corrupt"), std::string::npos)
      << broken.status().message();
  EXPECT_EQ(ReadTrace((dir / "missing.json").string()).status().code(), ReadFile((dir / "missing.json").string()).status().code());
}

TEST(ChromeJsonReaderTest, JsonThatIsNotATrace) {
  auto trace = ReadTraceFromBytes(R"({"hello": "world"})", "config.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(trace.status().message().find("config.json"), std::string::npos);
  EXPECT_NE(trace.status().message().find("not a trace"), std::string::npos);
  trace = ReadTraceFromBytes(R"([1, 2, 3])", "numbers.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("not a trace"), std::string::npos);
  const std::string cut = R"({"traceEvents": [{"ph": "X", "ts": 1)";
  trace = ReadTraceFromBytes(cut, "cut.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().message(),
            "cut.json: the file is cut short at byte " + std::to_string(cut.size()) + " (the file ends inside a value)");
}

std::string KinetoSmall() {
  auto bytes = ReadFile(testing::DataPath("analysis/kineto_small.json"));
  EXPECT_TRUE(bytes.ok());
  return *bytes;
}

TEST(ChromeJsonReaderTest, KinetoConventions) {
  auto trace = ReadTraceFromBytes(KinetoSmall(), "kineto_small.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->step_info().rank, 1);
  EXPECT_EQ(trace->step_info().world_size, 2);
  EXPECT_EQ(trace->slices().size(), 16u);  // 10 host-side, 6 on the GPU
  int64_t launches = 0;
  for (const Flow& f : trace->flows()) launches += f.kind == FlowKind::kLaunch ? 1 : 0;
  EXPECT_EQ(launches, 4);
  // [memory] events become per-device allocator counters of Total Allocated.
  const CounterSeries* cuda = nullptr;
  for (const auto& c : trace->counters()) {
    if (trace->str(c.name) == "cuda:0") cuda = &c;
  }
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->unit, "bytes");
  EXPECT_EQ(cuda->values, (std::vector<int64_t>{1048576, 3145728, 2097152}));
  // Track names from M events that come after the events they name.
  bool named = false;
  for (const Track& t : trace->tracks()) named |= trace->str(t.name) == "stream 20 nccl";
  EXPECT_TRUE(named);
  EXPECT_TRUE(trace->import_stats().empty()) << "nothing to repair in a clean file";
}

TEST(ChromeJsonReaderTest, FractionalMicrosecondsKeepNanoseconds) {
  EXPECT_EQ(MicrosTextToNs("1700000000000000.123"), 1700000000000000123);
  EXPECT_EQ(MicrosTextToNs("1.5"), 1500);
  EXPECT_EQ(MicrosTextToNs("2.0004"), 2000);
  EXPECT_EQ(MicrosTextToNs("2.0005"), 2001);
  EXPECT_EQ(MicrosTextToNs("-3"), -3000);
  EXPECT_EQ(MicrosTextToNs("1e3"), 1000000);
  EXPECT_EQ(MicrosTextToNs("99999999999999999999"), std::nullopt);  // beyond int64 ns
  EXPECT_EQ(MicrosTextToNs("\"12\""), std::nullopt);
  EXPECT_EQ(MicrosTextToNs(""), std::nullopt);
}

TEST(ChromeJsonReaderTest, FilesCutShortAreErrorsOrWithAllowTruncatedKeepTheEventsBeforeTheCut) {
  const std::string full = KinetoSmall();
  auto whole = ReadTraceFromBytes(full, "whole.json");
  ASSERT_TRUE(whole.ok());
  size_t previous_slices = 0;
  // Every cut point from the first event on: an error naming the file and the cut; accepted,
  // either the events before the cut, counted, or a clear error when no event is complete.
  const size_t first_event = full.find("{\"ph\"");
  for (size_t cut = first_event; cut < full.size() - 1; cut += 7) {
    auto refused = ReadTraceFromBytes(std::string_view(full).substr(0, cut), "cut.json");
    ASSERT_FALSE(refused.ok()) << "at " << cut;
    EXPECT_NE(refused.status().message().find("cut.json: the file is cut short at byte " + std::to_string(cut)),
              std::string::npos)
        << refused.status().message();
    auto trace = ReadChromeJson(std::string_view(full).substr(0, cut), "cut.json", {.allow_truncated = true});
    if (!trace.ok()) {
      EXPECT_EQ(trace.status().code(), StatusCode::kInvalidInput);
      EXPECT_NE(trace.status().message().find("cut.json"), std::string::npos);
      continue;
    }
    EXPECT_LE(trace->slices().size(), whole->slices().size());
    EXPECT_GE(trace->slices().size() + 1, previous_slices) << "at " << cut;  // ~monotonic in the cut
    previous_slices = trace->slices().size();
    if (cut + 80 < full.size()) {
      EXPECT_GT(trace->import_stats().Get("json_truncated_events_kept"), 0) << "at " << cut;
    }
  }
  auto half = ReadChromeJson(std::string_view(full).substr(0, full.size() / 2), "half.json", {.allow_truncated = true});
  ASSERT_TRUE(half.ok()) << half.status().message();
  EXPECT_GT(half->slices().size(), 3u);
}

TEST(ChromeJsonReaderTest, InvalidUtf8IsReplacedAndCounted) {
  const std::string json = "[{\"ph\":\"X\",\"name\":\"op\xff\xfe\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2},"
                           "{\"ph\":\"X\",\"name\":\"ok \xe2\x82\xac\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":1},"
                           "{\"ph\":\"X\",\"name\":\"bad escape \\q\",\"pid\":1,\"tid\":1,\"ts\":7,\"dur\":1}]";
  auto trace = ReadTraceFromBytes(json, "utf8.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->slices().size(), 3u);
  EXPECT_EQ(trace->import_stats().Get("invalid_utf8_bytes_replaced"), 2);
  EXPECT_EQ(trace->import_stats().Get("string_unreadable_emptied"), 1);
  EXPECT_EQ(trace->str(trace->slice_name(trace->slices()[0])), "op\xEF\xBF\xBD\xEF\xBF\xBD");  // U+FFFD each
  EXPECT_EQ(trace->str(trace->slice_name(trace->slices()[1])), "ok \xe2\x82\xac");  // valid UTF-8 stays
}

TEST(ChromeJsonReaderTest, HugeIntegersAndNonNumbersAreSkippedAndCounted) {
  const std::string json = R"({"traceEvents":[)"
      R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":99999999999999999999999,"dur":1},)"
      R"({"ph":"X","name":"b","pid":1,"tid":1,"ts":"soon","dur":1},)"
      R"({"ph":"X","name":"c","pid":1,"tid":1,"ts":3,"dur":1,"args":{"big":184467440737095516150000}},)"
      R"({"ph":"C","name":"mem","pid":1,"ts":4,"args":{"v":1e400}},)"
      R"({"ph":"X","name":"d","pid":18446744073709551616,"tid":1,"ts":4,"dur":1}]})";
  auto trace = ReadTraceFromBytes(json, "huge.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->slices().size(), 2u);
  EXPECT_EQ(trace->import_stats().Get("event_bad_time_skipped"), 2);
  EXPECT_EQ(trace->import_stats().Get("counter_value_unreadable_skipped"), 1);
}

// Numbers take two roads (integers of up to 18 digits read directly, the rest by from_chars, what
// neither reads by strtod) and keys two (raw bytes, or unescaped when they hold an escape): each
// road gives what strtod and the unescaped key give.
TEST(ChromeJsonReaderTest, NumbersAndEscapedKeysReadAsWritten) {
  const std::string json = R"({"traceEvents":[)"
      R"({"ph":"C","name":"mem","pid":1,"ts":1,"args":{"v":42}},)"
      R"({"ph":"C","name":"mem","pid":1,"ts":2,"args":{"v":-7}},)"
      R"({"ph":"C","name":"mem","pid":1,"ts":3,"args":{"v":1.5e3}},)"
      R"({"ph":"C","name":"mem","pid":1,"ts":4,"args":{"v":123456789012345678}},)"
      R"({"ph":"C","name":"mem","pid":1,"ts":5,"args":{"v":1234567890123456789}},)"
      R"({"ph":"C","name":"mem","pid":1,"ts":6,"args":{"v":-0}},)"
      R"({"ph":"C","name":"mem","pid":1,"ts":7,"args":{"v":2.75}},)"
      R"({"ph":"C","name":"mem","pid":1,"ts":8,"args":{"v":1e-400}},)"
      R"({"ph":"C","name":"mem","pid":1,"ts":9,"args":{"v":-1e400}},)"
      R"({"p\u0068":"X","n\u0061me":"escaped keys","pid":1,"tid":1,"ts":10,"dur":2},)"
      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":11,"dur":1,)"
      R"("args":{"device":0,"stream":7,"correlation":12345678901,"blocks per SM":0.5,"registers per thread":32}}]})";
  auto trace = ReadTraceFromBytes(json, "numbers.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->counters().size(), 1u);
  // Values are read as doubles (as strtod would), then kept as integers.
  EXPECT_EQ(trace->counters()[0].values,
            (std::vector<int64_t>{42, -7, 1500, 123456789012345680, 1234567890123456768, 0, 2, 0}));
  EXPECT_EQ(trace->import_stats().Get("counter_value_unreadable_skipped"), 1);
  ASSERT_EQ(trace->slices().size(), 2u);
  std::vector<std::string> names;
  std::optional<KernelArgs> args;
  for (uint32_t i = 0; i < trace->slices().size(); ++i) {
    names.emplace_back(trace->str(trace->slice_name(trace->slices()[i])));
    if (names.back() == "k") args = trace->kernel_args(i);
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"escaped keys", "k"}));
  ASSERT_TRUE(args.has_value());
  EXPECT_EQ(args->stream, 7);
  EXPECT_EQ(args->correlation, 12345678901);
  EXPECT_EQ(args->registers_per_thread, 32);
  EXPECT_FLOAT_EQ(args->blocks_per_sm, 0.5f);
}

TEST(ChromeJsonReaderTest, OverlappingSlicesOnOneThreadAreCounted) {
  const std::string json = R"([{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},)"
                           R"({"ph":"X","name":"b","pid":1,"tid":1,"ts":5,"dur":10},)"
                           R"({"ph":"X","name":"c","pid":1,"tid":1,"ts":6,"dur":2}])";
  auto trace = ReadTraceFromBytes(json, "overlap.json");
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->slices().size(), 3u);
  EXPECT_EQ(trace->import_stats().Get("overlap_moved_to_lane"), 1);
}

// Flows bind to the innermost slice around their time on their thread, whatever order the file
// gives: B/E pairs (the inner slice closes, and so is added, first), an `f` written before its
// `s`, an id used again for a later flow, a `t` step that the `f` replaces, a thread whose
// slices overlap partly. Kernel args stay on their kernel although the reader reorders the
// slices to bind.
TEST(ChromeJsonReaderTest, FlowsBindToTheInnermostSliceWhateverTheFileOrder) {
  const std::string json = R"({"traceEvents":[)"
      // Thread 1: outer [0,100) with inner [10,30) as B/E; a second step [200,300) with inner [210,220).
      R"({"ph":"B","name":"outer","pid":1,"tid":1,"ts":0},)"
      R"({"ph":"B","name":"inner","pid":1,"tid":1,"ts":10},)"
      R"({"ph":"E","pid":1,"tid":1,"ts":30},)"
      R"({"ph":"E","pid":1,"tid":1,"ts":100},)"
      R"({"ph":"X","name":"outer2","pid":1,"tid":1,"ts":200,"dur":100},)"
      R"({"ph":"X","name":"inner2","pid":1,"tid":1,"ts":210,"dur":10},)"
      // GPU stream: two kernels, written before the flows that point at them.
      R"({"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":40,"dur":5,"args":{"correlation":1,"stream":7}},)"
      R"({"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":230,"dur":5,"args":{"correlation":2,"stream":7}},)"
      // Flow 1: f before s; s inside `inner`, f on k1.
      R"({"ph":"f","id":1,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":40,"bp":"e"},)"
      R"({"ph":"s","id":1,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":20},)"
      // Flow id 1 again, later: from `inner2` to k2, with a `t` step on the way.
      R"({"ph":"s","id":1,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":215},)"
      R"({"ph":"t","id":1,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":250},)"
      R"({"ph":"f","id":1,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":231,"bp":"e"},)"
      // A dataflow from `outer` (after inner ended) to outer2.
      R"({"ph":"s","id":"d","cat":"data","name":"d","pid":1,"tid":1,"ts":50},)"
      R"({"ph":"f","id":"d","cat":"data","name":"d","pid":1,"tid":1,"ts":250,"bp":"e"},)"
      // Thread 2's slices overlap partly (`b` starts inside `a`, ends after it): at 45 both are
      // open and the shorter, `a`, is the innermost.
      R"({"ph":"X","name":"a","pid":1,"tid":2,"ts":0,"dur":50},)"
      R"({"ph":"X","name":"b","pid":1,"tid":2,"ts":40,"dur":60},)"
      R"({"ph":"s","id":"e","cat":"data","name":"e","pid":1,"tid":2,"ts":45},)"
      R"({"ph":"f","id":"e","cat":"data","name":"e","pid":1,"tid":1,"ts":260,"bp":"e"}]})";
  auto trace = ReadTraceFromBytes(json, "flows.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  auto name = [&](uint32_t slice) { return std::string(trace->str(trace->slice_name(trace->slices()[slice]))); };
  std::vector<std::tuple<std::string, std::string, FlowKind>> flows;
  for (const Flow& f : trace->flows()) flows.emplace_back(name(f.from_slice), name(f.to_slice), f.kind);
  std::sort(flows.begin(), flows.end());
  EXPECT_EQ(flows, (std::vector<std::tuple<std::string, std::string, FlowKind>>{
                       {"a", "outer2", FlowKind::kDataflow},
                       {"inner", "k1", FlowKind::kLaunch},
                       {"inner2", "k2", FlowKind::kLaunch},
                       {"outer", "outer2", FlowKind::kDataflow}}));
  EXPECT_EQ(trace->import_stats().Get("flow_unmatched_skipped"), 0);
  EXPECT_EQ(trace->import_stats().Get("flow_not_bound_skipped"), 0);
  EXPECT_EQ(trace->import_stats().Get("overlap_moved_to_lane"), 1);
  ASSERT_EQ(trace->all_kernel_args().size(), 2u);
  for (const KernelArgs& args : trace->all_kernel_args()) {
    EXPECT_EQ(name(args.slice), args.correlation == 1 ? "k1" : "k2");
  }
}

// What a pending flow cannot hold is counted, not wrapped: an end on a thread past the first
// 2^16, and one more than 4.9 hours from the first flow event. The flows within both bind.
TEST(ChromeJsonReaderTest, FlowsPastThePendingLimitsAreCountedNotWrapped) {
  std::string json = R"({"traceEvents":[)"
                     R"({"ph":"X","name":"from","pid":1,"tid":0,"ts":0,"dur":10},)"
                     R"({"ph":"X","name":"to","pid":1,"tid":1,"ts":0,"dur":10},)"
                     R"({"ph":"s","id":1,"cat":"data","name":"d","pid":1,"tid":0,"ts":5},)"
                     R"({"ph":"f","id":1,"cat":"data","name":"d","pid":1,"tid":1,"ts":5,"bp":"e"},)";
  // 5 hours later (in microseconds): both ends of flow 2.
  json += R"({"ph":"s","id":2,"cat":"data","name":"d","pid":1,"tid":0,"ts":18000000000},)"
          R"({"ph":"f","id":2,"cat":"data","name":"d","pid":1,"tid":1,"ts":18000000001,"bp":"e"},)";
  // Threads up to slot 2^16 (the two above hold slots 0 and 1), then a flow from the next one.
  for (int tid = 2; tid <= 65536; ++tid) {
    json += R"({"ph":"X","name":"t","pid":1,"tid":)" + std::to_string(tid) + R"(,"ts":0,"dur":10},)";
  }
  json += R"({"ph":"s","id":3,"cat":"data","name":"d","pid":1,"tid":65536,"ts":5},)"
          R"({"ph":"f","id":3,"cat":"data","name":"d","pid":1,"tid":1,"ts":6,"bp":"e"},)"
          R"({"ph":"s","id":4,"cat":"data","name":"d","pid":1,"tid":65535,"ts":5},)"
          R"({"ph":"f","id":4,"cat":"data","name":"d","pid":1,"tid":1,"ts":7,"bp":"e"}]})";
  auto trace = ReadTraceFromBytes(json, "limits.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->flows().size(), 2u);  // flows 1 and 4
  EXPECT_EQ(trace->import_stats().Get("flow_past_time_limit_skipped"), 2);
  EXPECT_EQ(trace->import_stats().Get("flow_past_thread_limit_skipped"), 1);
  // Flow 3 lost its start: its end alone is unmatched.
  EXPECT_EQ(trace->import_stats().Get("flow_unmatched_skipped"), 1);
}

// A flow whose time falls in a slice after many of its children have ended: found by walking the
// parents once the scan back over the siblings gives up (past 256), as near the first child as
// past the last; a time before the parent and one in a gap of the top level bind to nothing.
TEST(ChromeJsonReaderTest, FlowsBindToAParentPastManyEndedChildren) {
  std::string json = R"({"traceEvents":[)"
                     R"({"ph":"X","name":"parent","pid":1,"tid":1,"ts":1000,"dur":10000},)"
                     R"({"ph":"X","name":"after","pid":1,"tid":1,"ts":12000,"dur":10},)";
  for (int i = 0; i < 1000; ++i) {
    json += R"({"ph":"X","name":"child","pid":1,"tid":1,"ts":)" + std::to_string(1000 + 5 * i) + R"(,"dur":2},)";
  }
  json += R"({"ph":"X","name":"target","pid":1,"tid":2,"ts":0,"dur":20000},)";
  const auto flow = [&](const std::string& id, int ts) {
    json += R"({"ph":"s","id":")" + id + R"(","cat":"data","name":"d","pid":1,"tid":1,"ts":)" + std::to_string(ts) + "},";
    json += R"({"ph":"f","id":")" + id + R"(","cat":"data","name":"d","pid":1,"tid":2,"ts":10,"bp":"e"},)";
  };
  flow("late", 8000);   // after all 1000 children: the scan gives up
  flow("early", 1004);  // in the gap after the first child: the parent too
  flow("inside", 1501);  // inside child 100
  flow("before", 500);  // before anything on the thread
  flow("gap", 11500);   // between `parent` and `after`
  json.back() = ']';
  json += "}";
  auto trace = ReadTraceFromBytes(json, "many_children.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  std::vector<std::string> from;
  for (const Flow& f : trace->flows()) from.push_back(std::string(trace->str(trace->slice_name(trace->slices()[f.from_slice]))));
  std::sort(from.begin(), from.end());
  EXPECT_EQ(from, (std::vector<std::string>{"child", "parent", "parent"}));
  EXPECT_EQ(trace->import_stats().Get("flow_not_bound_skipped"), 2);
}

}  // namespace
}  // namespace stepscope::trace
