// Figures of the protobuf formats (docs/formats.md §7, §8):
//  - Perfetto protobuf against our Chrome JSON for the same trace: size plain and gzipped
//    (counters proto_bytes, json_bytes, ratio, gz_ratio) and write speed (MB/s of output);
//  - XSpace import speed (MB/s of input) and memory per event (heap bytes the Trace holds per
//    event, counter bytes/event), on a generated XSpace shaped like a GPU step (host threads
//    with TraceMe ops, streams with kernels and stats) and on the real TensorFlow fixture.
// Run: build/<preset>/tests/trace/stepscope_formats_benchmark
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <map>

#include "base/file_io.h"
#include "profiler/formats/chrome_json/chrome_json_writer.h"
#include "profiler/formats/perfetto/perfetto_proto.h"
#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/xspace/xspace_reader.h"

namespace stepscope::trace {
namespace {

const Trace& Load(const std::string& name) {
  static std::map<std::string, Trace*> cache;
  auto& slot = cache[name];
  if (slot == nullptr) slot = new Trace(ReadTrace(std::string(STEPSCOPE_TEST_DATA) + "/" + name).value());
  return *slot;
}

const char* const kTraces[] = {"ptb_lstm_tf1_gpu_step.pbtxt", "pytorch_kineto_alexnet_train.json.gz",
                               "xspace/tf2_keras_mlp_cpu.xplane.pb.gz", "xspace/jax_mlp_cpu.xplane.pb.gz"};

void BM_PerfettoProtoExport(benchmark::State& state) {
  const Trace& trace = Load(kTraces[state.range(0)]);
  state.SetLabel(kTraces[state.range(0)]);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string proto = ExportPerfettoProto(trace);
    bytes = proto.size();
    benchmark::DoNotOptimize(proto);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  const std::string proto = ExportPerfettoProto(trace);
  const std::string json = ExportPerfettoJson(trace);
  const double proto_gz = static_cast<double>(Gzip(proto).value().size());
  const double json_gz = static_cast<double>(Gzip(json).value().size());
  state.counters["proto_bytes"] = static_cast<double>(proto.size());
  state.counters["json_bytes"] = static_cast<double>(json.size());
  state.counters["ratio"] = static_cast<double>(proto.size()) / static_cast<double>(json.size());
  state.counters["gz_ratio"] = proto_gz / json_gz;
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations() * trace.slices().size()),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PerfettoProtoExport)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

void BM_ChromeJsonExport(benchmark::State& state) {
  const Trace& trace = Load(kTraces[state.range(0)]);
  state.SetLabel(kTraces[state.range(0)]);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string json = ExportPerfettoJson(trace);
    bytes = json.size();
    benchmark::DoNotOptimize(json);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_ChromeJsonExport)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

void BM_PerfettoProtoRead(benchmark::State& state) {
  const std::string proto = ExportPerfettoProto(Load(kTraces[state.range(0)]));
  state.SetLabel(kTraces[state.range(0)]);
  for (auto _ : state) benchmark::DoNotOptimize(ReadPerfettoProto(proto, "bench.pftrace"));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * proto.size()));
}
BENCHMARK(BM_PerfettoProtoRead)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

// An XSpace like a GPU step's: a host plane with 8 threads of nested TraceMe ops (node:OpType
// names, 2 stats each) and a GPU plane with 4 streams of kernels (correlation_id, tf_op and
// kernel_details stats), `events` events in all.
std::string MakeXSpace(int64_t events) {
  using namespace wire;
  std::string space;
  const int64_t base_ns = int64_t{1700000000} * 1000000000;
  for (int plane = 0; plane < 2; ++plane) {
    Scope p(space, 1);
    Varint(space, 1, static_cast<uint64_t>(plane));
    Bytes(space, 2, plane == 0 ? "/host:CPU" : "/device:GPU:0");
    const int lines = plane == 0 ? 8 : 4;
    const int64_t per_line = events / 2 / lines;
    for (int l = 0; l < lines; ++l) {
      Scope line(space, 3);
      Varint(space, 1, static_cast<uint64_t>(1000 + l));
      Bytes(space, 2, plane == 0 ? "tf_Compute/" + std::to_string(l) : "Stream #" + std::to_string(l));
      Varint(space, 3, static_cast<uint64_t>(base_ns));
      for (int64_t e = 0; e < per_line; ++e) {
        Scope event(space, 4);
        Varint(space, 1, static_cast<uint64_t>(1 + e % 500));
        Varint(space, 2, static_cast<uint64_t>(e * 2'000'000));
        Varint(space, 3, 1'500'000);
        {
          Scope stat(space, 4);
          Varint(space, 1, 1);
          Varint(space, 3, static_cast<uint64_t>(e + 1));  // correlation_id / step id
        }
        Scope stat(space, 4);
        Varint(space, 1, plane == 0 ? 2 : 3);
        if (plane == 0) {
          Varint(space, 4, static_cast<uint64_t>(e % 7));
        } else {
          Bytes(space, 5, "regs:64 static_shared:0 dynamic_shared:0 grid:80,1,1 block:256,1,1 occ_pct:50.0");
        }
      }
    }
    for (int m = 1; m <= 500; ++m) {
      Scope entry(space, 4);
      Varint(space, 1, static_cast<uint64_t>(m));
      Scope meta(space, 2);
      Varint(space, 1, static_cast<uint64_t>(m));
      Bytes(space, 2, plane == 0 ? "model/layer_" + std::to_string(m) + "/MatMul:MatMul"
                                 : "volta_sgemm_" + std::to_string(m) + "_nn");
    }
    const char* stats[] = {"correlation_id", plane == 0 ? "step_id" : "tf_op", "kernel_details"};
    for (int s = 1; s <= 3; ++s) {
      Scope entry(space, 5);
      Varint(space, 1, static_cast<uint64_t>(s));
      Scope meta(space, 2);
      Varint(space, 1, static_cast<uint64_t>(s));
      Bytes(space, 2, stats[s - 1]);
    }
  }
  Bytes(space, 4, "benchhost");
  return space;
}

size_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

void XSpaceImport(benchmark::State& state, const std::string& bytes) {
  size_t events = 0;
  for (auto _ : state) {
    auto trace = ReadXSpace(bytes, "bench.xplane.pb");
    if (!trace.ok()) {
      state.SkipWithError(trace.status().message().c_str());
      return;
    }
    events = trace->slices().size();
    benchmark::DoNotOptimize(trace);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
  state.counters["events"] = static_cast<double>(events);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations() * events),
                                                  benchmark::Counter::kIsRate);
  // Memory the imported Trace keeps, per event (slices, tracks, names, arguments, tables).
  const size_t before = HeapInUse();
  auto trace = ReadXSpace(bytes, "bench.xplane.pb");
  const size_t after = HeapInUse();
  state.counters["bytes/event"] =
      events == 0 ? 0.0 : static_cast<double>(after > before ? after - before : 0) / static_cast<double>(events);
  state.counters["input_bytes/event"] = events == 0 ? 0.0 : static_cast<double>(bytes.size()) / static_cast<double>(events);
}

void BM_XSpaceImportGenerated(benchmark::State& state) {
  static const std::string bytes = MakeXSpace(1'000'000);
  XSpaceImport(state, bytes);
}
BENCHMARK(BM_XSpaceImportGenerated)->Unit(benchmark::kMillisecond);

void BM_XSpaceImportTensorFlowFixture(benchmark::State& state) {
  static const std::string bytes =
      ReadFile(std::string(STEPSCOPE_TEST_DATA) + "/xspace/tf2_keras_mlp_cpu.xplane.pb.gz").value();
  XSpaceImport(state, bytes);
}
BENCHMARK(BM_XSpaceImportTensorFlowFixture)->Unit(benchmark::kMillisecond);

// Writing a large trace: the generated XSpace's million events as Perfetto protobuf.
void BM_PerfettoProtoExportLarge(benchmark::State& state) {
  static const Trace* trace = new Trace(ReadXSpace(MakeXSpace(1'000'000), "bench.xplane.pb").value());
  size_t bytes = 0;
  for (auto _ : state) {
    std::string proto = ExportPerfettoProto(*trace);
    bytes = proto.size();
    benchmark::DoNotOptimize(proto);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  const std::string json = ExportPerfettoJson(*trace);
  state.counters["proto_bytes"] = static_cast<double>(bytes);
  state.counters["json_bytes"] = static_cast<double>(json.size());
  state.counters["ratio"] = static_cast<double>(bytes) / static_cast<double>(json.size());
}
BENCHMARK(BM_PerfettoProtoExportLarge)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stepscope::trace
