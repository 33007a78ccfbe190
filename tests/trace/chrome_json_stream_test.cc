// The streaming Chrome JSON import: the pieces the input is parsed in must never show in the
// result. Every input is read with pieces from 64 bytes (smaller than one event, so pieces grow
// and batches are a single event) to the default, and must give the same trace: the same
// export, the same repairs counted.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "analysis/kineto_generator.h"
#include "base/file_io.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/chrome_json/chrome_json_writer.h"
#include "profiler/formats/reader.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

const std::vector<size_t> kPieceSizes = {64, 100, 257, 1000, 4096, 65536};

std::string Read(const std::string& name) {
  auto bytes = ReadFile(testing::DataPath(name));
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? *bytes : std::string();
}

// The same Trace, column by column: strings (same ids), tracks, slices, flows, counters, args,
// import stats.
void ExpectSameTrace(const Trace& a, const Trace& b, const std::string& what) {
  ASSERT_EQ(a.strings().size(), b.strings().size()) << what;
  for (StringId id = 0; id < a.strings().size(); ++id) ASSERT_EQ(a.str(id), b.str(id)) << what << " string " << id;
  ASSERT_EQ(a.tracks().size(), b.tracks().size()) << what;
  for (size_t t = 0; t < a.tracks().size(); ++t) {
    EXPECT_EQ(a.tracks()[t].name, b.tracks()[t].name) << what << " track " << t;
    EXPECT_EQ(a.tracks()[t].full_name, b.tracks()[t].full_name) << what << " track " << t;
    EXPECT_EQ(a.tracks()[t].parent, b.tracks()[t].parent) << what << " track " << t;
    EXPECT_EQ(a.tracks()[t].kind, b.tracks()[t].kind) << what << " track " << t;
    EXPECT_EQ(a.tracks()[t].sort_index, b.tracks()[t].sort_index) << what << " track " << t;
  }
  ASSERT_EQ(a.slices().size(), b.slices().size()) << what;
  // memcmp only when there is something to compare: an empty vector's data() may be null.
  if (!a.slices().empty()) {
    EXPECT_EQ(std::memcmp(a.slices().data(), b.slices().data(), a.slices().size() * sizeof(Slice)), 0) << what;
  }
  ASSERT_EQ(a.flows().size(), b.flows().size()) << what;
  for (size_t f = 0; f < a.flows().size(); ++f) {
    EXPECT_EQ(a.flows()[f].from_slice, b.flows()[f].from_slice) << what << " flow " << f;
    EXPECT_EQ(a.flows()[f].to_slice, b.flows()[f].to_slice) << what << " flow " << f;
    EXPECT_EQ(a.flows()[f].kind, b.flows()[f].kind) << what << " flow " << f;
  }
  ASSERT_EQ(a.counters().size(), b.counters().size()) << what;
  for (size_t c = 0; c < a.counters().size(); ++c) {
    EXPECT_EQ(a.counters()[c].name, b.counters()[c].name) << what;
    EXPECT_EQ(a.counters()[c].ts_ns, b.counters()[c].ts_ns) << what;
    EXPECT_EQ(a.counters()[c].values, b.counters()[c].values) << what;
  }
  ASSERT_EQ(a.all_kernel_args().size(), b.all_kernel_args().size()) << what;
  for (size_t i = 0; i < a.all_kernel_args().size(); ++i) {
    const KernelArgs x = a.all_kernel_args()[i], y = b.all_kernel_args()[i];
    EXPECT_EQ(std::memcmp(&x, &y, sizeof(KernelArgs)), 0) << what << " kernel args " << i;
  }
  ASSERT_EQ(a.all_transfer_args().size(), b.all_transfer_args().size()) << what;
  for (size_t i = 0; i < a.all_transfer_args().size(); ++i) {
    EXPECT_EQ(a.all_transfer_args()[i].slice, b.all_transfer_args()[i].slice) << what;
    EXPECT_EQ(a.all_transfer_args()[i].bytes, b.all_transfer_args()[i].bytes) << what;
    EXPECT_EQ(a.all_transfer_args()[i].correlation, b.all_transfer_args()[i].correlation) << what;
  }
  EXPECT_EQ(a.import_stats().counts(), b.import_stats().counts()) << what;
  EXPECT_EQ(a.step_info().rank, b.step_info().rank) << what;
  EXPECT_EQ(a.step_info().world_size, b.step_info().world_size) << what;
  EXPECT_EQ(a.epoch_ns(), b.epoch_ns()) << what;
  EXPECT_TRUE(ExportPerfettoJson(a) == ExportPerfettoJson(b)) << what;
}

// Reads `json` with every piece size, on one thread and in parallel, and checks each against
// the default pieces on one thread.
void ExpectSameWhateverThePieces(const std::string& json, const std::string& name) {
  auto whole = ReadChromeJson(json, name, ChromeJsonReadOptions{.threads = 1});
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  for (const int threads : {1, 2, 3}) {
    auto parallel = ReadChromeJson(json, name, ChromeJsonReadOptions{.threads = threads});
    ASSERT_TRUE(parallel.ok()) << threads << ": " << parallel.status().message();
    ExpectSameTrace(*parallel, *whole, name + " on " + std::to_string(threads) + " threads");
    for (const size_t piece : kPieceSizes) {
      auto trace = ReadChromeJson(json, name, ChromeJsonReadOptions{piece, threads});
      ASSERT_TRUE(trace.ok()) << piece << ": " << trace.status().message();
      ExpectSameTrace(*trace, *whole, name + " in pieces of " + std::to_string(piece) + " on " +
                                          std::to_string(threads) + " threads");
    }
  }
}

TEST(ChromeJsonStreamTest, RealKinetoTraceInPiecesOfAnySize) {
  // The AlexNet trace has kernel names with `},` inside strings ("{lambda()#1}, at::..."), where
  // a cut between events must not fall.
  const std::string json = Read("pytorch_kineto_alexnet_train.json.gz");
  ASSERT_NE(json.find("}, at::"), std::string::npos);
  ExpectSameWhateverThePieces(json, "alexnet.json");
  auto trace = ReadChromeJson(json, "alexnet.json", ChromeJsonReadOptions{64});
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->slices().size(), 868u);
}

TEST(ChromeJsonStreamTest, HandMadeAndExportedTracesInPiecesOfAnySize) {
  ExpectSameWhateverThePieces(Read("analysis/kineto_small.json"), "kineto_small.json");
  auto tf = ReadTrace(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(tf.ok());
  ExpectSameWhateverThePieces(ExportPerfettoJson(*tf), "export.json");
}

// Everything that looks like the end of an event but is not: `},` in strings and in nested args
// (objects in objects, arrays of objects), keys before and after the events, the array form.
TEST(ChromeJsonStreamTest, CutsNeverFallInsideAnEvent) {
  std::string events;
  const int kEvents = 40;
  for (int i = 0; i < kEvents; ++i) {
    if (i > 0) events += ",\n";
    events += R"({"ph": "X", "name": "op},{\"x\"}, {)" + std::to_string(i) + R"(", "pid": 1, "tid": 2, "ts": )" +
              std::to_string(10 * i) + R"(, "dur": 5, "args": {"frames": [{"f": 1}, {"f": [2, {"g": "},"}]}], )" +
              R"("nested": {"a": {"b": {}}, "c": [[], {}]}, "s": "]}]}"}})";
  }
  const std::string object_form = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0}, {"id": 1}],)"
                                  "\n\"traceEvents\": [\n" + events + "\n],\n" +
                                  R"("distributedInfo": {"rank": 3, "world_size": 4}, "more": [{"a": 1}, {"b": "},"}]})";
  auto trace = ReadChromeJson(object_form, "cuts.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->slices().size(), static_cast<size_t>(kEvents));
  EXPECT_EQ(trace->str(trace->slice_name(trace->slices()[7])), "op},{\"x\"}, {7");
  EXPECT_EQ(trace->step_info().rank, 3);  // distributedInfo after the events
  EXPECT_EQ(trace->step_info().world_size, 4);
  EXPECT_TRUE(trace->import_stats().empty());
  ExpectSameWhateverThePieces(object_form, "cuts.json");
  const std::string array_form = "[" + events + "]";
  ExpectSameWhateverThePieces(array_form, "cuts_array.json");
  auto array_trace = ReadChromeJson(array_form, "cuts_array.json", ChromeJsonReadOptions{64});
  ASSERT_TRUE(array_trace.ok());
  EXPECT_EQ(array_trace->slices().size(), static_cast<size_t>(kEvents));
}

// A file cut anywhere keeps the same events, and counts the same repairs, whatever the pieces.
TEST(ChromeJsonStreamTest, FilesCutShortGiveTheSameResultInPieces) {
  const std::string full = Read("analysis/kineto_small.json");
  for (size_t cut = full.find("{\"ph\""); cut < full.size(); cut += 13) {
    const std::string_view part = std::string_view(full).substr(0, cut);
    // Refused alike in pieces; accepted (--allow-truncated), the same trace.
    auto refused = ReadChromeJson(part, "cut.json", ChromeJsonReadOptions{.threads = 1});
    ASSERT_FALSE(refused.ok()) << "at " << cut;
    auto whole = ReadChromeJson(part, "cut.json", ChromeJsonReadOptions{.threads = 1, .allow_truncated = true});
    for (ChromeJsonReadOptions options : {ChromeJsonReadOptions{64, 1}, ChromeJsonReadOptions{64, 2},
                                          ChromeJsonReadOptions{256, 3}}) {
      EXPECT_EQ(ReadChromeJson(part, "cut.json", options).status().message(), refused.status().message()) << "at " << cut;
      options.allow_truncated = true;
      auto pieces = ReadChromeJson(part, "cut.json", options);
      ASSERT_EQ(whole.ok(), pieces.ok()) << "at " << cut;
      if (!whole.ok()) {
        EXPECT_EQ(whole.status().message(), pieces.status().message()) << "at " << cut;
        continue;
      }
      ExpectSameTrace(*pieces, *whole, "cut at " + std::to_string(cut) + " on " + std::to_string(options.threads));
    }
  }
}

// Damage in the middle of a long file: an error naming the byte; accepted (--allow-truncated),
// the events before it are kept, the bytes from the end of the last whole event on are counted
// as dropped, and nothing after the damage is read as events.
TEST(ChromeJsonStreamTest, DamageInTheMiddleIsAnErrorOrKeepsTheEventsBeforeIt) {
  std::string json = "{\"traceEvents\": [";
  size_t damage_at = 0, last_good_end = 0;
  const int kEvents = 2000;
  for (int i = 0; i < kEvents; ++i) {
    if (i > 0) json += ", ";
    if (i == 1200) {
      damage_at = json.size();
      json += "{\"ph\": \"X\" \"name\": \"missing comma\"},";  // damage
      json += " ";
    }
    json += R"({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": )" + std::to_string(i * 10) + R"(, "dur": 5})";
    if (i == 1199) last_good_end = json.size();
  }
  json += "]}";
  for (ChromeJsonReadOptions options :
       {ChromeJsonReadOptions{256, 1}, ChromeJsonReadOptions{4096, 1}, ChromeJsonReadOptions{size_t{4} << 20, 1},
        ChromeJsonReadOptions{256, 2}, ChromeJsonReadOptions{1024, 2}, ChromeJsonReadOptions{4096, 4}}) {
    const size_t piece = options.chunk_bytes;
    auto refused = ReadChromeJson(json, "damaged.json", options);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("damaged.json: invalid JSON at byte "), std::string::npos)
        << refused.status().message();
    EXPECT_NE(refused.status().message().find("; 1200 whole events before it"), std::string::npos)
        << refused.status().message();
    Truncation cut;
    options.allow_truncated = true;
    options.truncation = &cut;
    auto trace = ReadChromeJson(json, "damaged.json", options);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    EXPECT_EQ(trace->slices().size(), 1200u) << "pieces of " << piece;
    EXPECT_EQ(trace->import_stats().Get("json_truncated_events_kept"), 1200) << "pieces of " << piece;
    EXPECT_EQ(trace->import_stats().Get("json_truncated_bytes_dropped"),
              static_cast<int64_t>(json.size() - last_good_end)) << "pieces of " << piece;
    EXPECT_EQ(cut.events_kept, 1200);
    EXPECT_GE(cut.offset, static_cast<int64_t>(damage_at));
    EXPECT_LT(cut.offset, static_cast<int64_t>(json.size()));
  }
  EXPECT_GT(damage_at, last_good_end);
  // Damage before any event is an error naming the file and the byte.
  auto broken = ReadChromeJson(R"({"traceEvents": [{"ph" "X"}]})", "broken.json", ChromeJsonReadOptions{64});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(broken.status().message().find("broken.json: invalid JSON at byte "), std::string::npos)
      << broken.status().message();
}

// Invalid UTF-8 across pieces: repaired and counted once, whatever the pieces.
TEST(ChromeJsonStreamTest, InvalidUtf8IsCountedOnceInPieces) {
  std::string json = "[";
  for (int i = 0; i < 300; ++i) {
    if (i > 0) json += ",";
    json += R"({"ph":"X","name":"op)" + std::string(i % 7 == 0 ? "\xff" : "") + R"(","pid":1,"tid":1,"ts":)" +
            std::to_string(i) + R"(,"dur":1})";
  }
  json += "]";
  ExpectSameWhateverThePieces(json, "utf8.json");
  auto trace = ReadChromeJson(json, "utf8.json", ChromeJsonReadOptions{100});
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->import_stats().Get("invalid_utf8_bytes_replaced"), 43);  // i = 0, 7, ..., 294
  EXPECT_EQ(trace->str(trace->slice_name(trace->slices()[7])), "op\xEF\xBF\xBD");
}

// Generated Kineto traces (ops, runtime launches, kernels, copies, ac2g flows whose start and end
// land in different pieces, [memory] counters): parallel import gives the one-thread Trace.
TEST(ChromeJsonStreamTest, GeneratedKinetoTraceInParallelIsTheSerialTrace) {
  const auto generated = analysis::testing::GenerateKinetoJson(size_t{3} << 20);
  auto serial = ReadChromeJson(generated.json, "generated.json", ChromeJsonReadOptions{.threads = 1});
  ASSERT_TRUE(serial.ok()) << serial.status().message();
  EXPECT_EQ(static_cast<int64_t>(serial->slices().size()), generated.slices);
  EXPECT_GT(serial->flows().size(), 1000u);
  for (const ChromeJsonReadOptions& options :
       {ChromeJsonReadOptions{.threads = 2}, ChromeJsonReadOptions{.threads = 4},
        ChromeJsonReadOptions{4096, 2}, ChromeJsonReadOptions{65536, 3}}) {
    auto parallel = ReadChromeJson(generated.json, "generated.json", options);
    ASSERT_TRUE(parallel.ok()) << parallel.status().message();
    ExpectSameTrace(*parallel, *serial,
                    "pieces of " + std::to_string(options.chunk_bytes) + " on " + std::to_string(options.threads));
  }
}

// A preview of a big file: the events read whole within the first bytes, counted as a preview
// (not as a truncation); every slice of it starts as early as the full trace's first ones do.
TEST(ChromeJsonStreamTest, PreviewReadsTheFirstBytesOnly) {
  const auto generated = analysis::testing::GenerateKinetoJson(size_t{4} << 20);
  const std::string path = (testing::ScratchDir("json_preview") / "big.json").string();
  ASSERT_TRUE(WriteFileAtomically(path, generated.json).ok());
  auto full = ReadTrace(path);
  ASSERT_TRUE(full.ok()) << full.status().message();
  {
    auto preview = ReadTrace(path, {.preview_bytes = int64_t{1} << 20});
    ASSERT_TRUE(preview.ok()) << preview.status().message();
    const int64_t kept = preview->import_stats().Get("json_preview_bytes_read");
    EXPECT_GT(kept, (int64_t{1} << 20) - 4096);
    EXPECT_LE(kept, int64_t{1} << 20);
    EXPECT_EQ(preview->import_stats().Get("json_truncated_events_kept"), 0);
    // A quarter of the bytes holds about a quarter of the slices (the generator's events repeat).
    const double share = static_cast<double>(preview->slices().size()) / static_cast<double>(full->slices().size());
    EXPECT_GT(share, 0.2);
    EXPECT_LT(share, 0.3);
    // The same events, from the start: the preview's last slice starts within the full trace.
    EXPECT_EQ(preview->epoch_ns(), full->epoch_ns());
    EXPECT_LT(preview->span_end_ns(), full->span_end_ns());
  }
  // A file smaller than the budget is read whole, as without one.
  auto whole = ReadTrace(path, {.preview_bytes = int64_t{64} << 20});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->slices().size(), full->slices().size());
  EXPECT_EQ(whole->import_stats().Get("json_preview_bytes_read"), 0);
  // Other formats have no preview and say so before reading.
  auto pb = ReadTrace(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"), {.preview_bytes = 1024});
  EXPECT_EQ(pb.status().code(), StatusCode::kUnavailable);
}

// Progress is told as the file streams, in order, up to its size; a false answer cancels.
TEST(ChromeJsonStreamTest, ProgressIsToldAndCanCancel) {
  const auto generated = analysis::testing::GenerateKinetoJson(size_t{4} << 20);
  const std::string path = (testing::ScratchDir("json_progress") / "big.json").string();
  ASSERT_TRUE(WriteFileAtomically(path, generated.json).ok());
  std::vector<ReadProgress> seen;
  auto trace = ReadTrace(path, {.on_progress = [&](const ReadProgress& p) {
                                  seen.push_back(p);
                                  return true;
                                }});
  ASSERT_TRUE(trace.ok());
  ASSERT_GT(seen.size(), 2u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].bytes_read, seen[i - 1].bytes_read);
  EXPECT_EQ(seen.back().bytes_read, static_cast<int64_t>(generated.json.size()));
  EXPECT_EQ(seen.back().disk_bytes, static_cast<int64_t>(generated.json.size()));
  EXPECT_EQ(seen.back().disk_bytes_read, seen.back().disk_bytes);

  int calls = 0;
  auto cancelled = ReadTrace(path, {.on_progress = [&](const ReadProgress&) { return ++calls < 2; }});
  EXPECT_EQ(cancelled.status().code(), StatusCode::kCancelled);
  EXPECT_NE(cancelled.status().message().find("big.json"), std::string::npos);
  EXPECT_EQ(calls, 2);

  // Gzip: progress on disk is the compressed bytes.
  const std::string gz = path + ".gz";
  ASSERT_TRUE(WriteFileAtomically(gz, generated.json, /*gzip=*/true).ok());
  seen.clear();
  ASSERT_TRUE(ReadTrace(gz, {.on_progress = [&](const ReadProgress& p) {
                          seen.push_back(p);
                          return true;
                        }})
                  .ok());
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().bytes_read, static_cast<int64_t>(generated.json.size()));
  EXPECT_LT(seen.back().disk_bytes, seen.back().bytes_read / 2);
  EXPECT_EQ(seen.back().disk_bytes_read, seen.back().disk_bytes);
}

}  // namespace
}  // namespace stepscope::trace
