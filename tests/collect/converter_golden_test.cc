// The converter's output for one synthetic step, byte for byte, against the output the converter
// gave before ops were registered into per-step slots with interned names: any change in how ops
// are kept must leave the lanes, names, labels, links, launched ops and counts as they were.
// The step: 3 GPUs' worth of streams, kernels (runtime and driver launches), copies, memsets,
// ops registered from several threads, one node run twice, unregistered and unlinked ids.
// tests/data/cupti/converter_step.golden holds the serialized StepStats, then the launched ops
// and counts as text; STEPSCOPE_UPDATE_GOLDEN=1 rewrites it (only from a converter known good).
#include "profiler/collect/cupti/gpu_activity_converter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/collect/cupti_records.h"
#include "tests/test_util.h"

namespace stepscope::collect::cupti {
namespace {


using testing::Feed;
using testing::kCuptiStart;
using testing::kHostStart;

const char* const kKernels[] = {"_Z10add_kernelPfS_i", "sm90_xmma_gemm_f32f32_f32f32_f32_nn",
                                "_ZN9stepscope7kernels8internal13ForEachKernelIZ4ReluE_EEvlT_",
                                "column_partial_sums"};

// 80 ops: op i on GPU i % 3, stream 7 + i % 2, launching 1-3 kernels and sometimes a copy or a
// memset; ops 5, 6 (mod 40) unregistered; correlation ids 9000+ unlinked; op 17's node runs
// twice (two external ids, two starts).
std::string ConvertSyntheticStep() {
  GpuActivityConverter converter(ClockAlignment{kCuptiStart, kHostStart});
  constexpr int kOps = 80;
  std::vector<std::string> names, types;
  for (int i = 0; i < kOps; ++i) {
    names.push_back(i == 57 ? "tower_1/lstm/cell_17/MatMul" :
                    "tower_" + std::to_string(i % 3) + "/lstm/cell_" + std::to_string(i) +
                        (i % 4 == 0 ? "/MatMul" : "/Add"));
    types.push_back(i % 4 == 0 ? "MatMul" : "Add");
  }
  names[17] = "tower_1/lstm/cell_17/MatMul";
  // Registered from four threads, as executors do.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kOps; i += 4) {
        if (i % 40 == 5 || i % 40 == 6) continue;
        converter.RegisterOp(static_cast<uint64_t>(i + 1), names[i], types[i],
                             kHostStart + 1'000 * i);
      }
    });
  }
  for (auto& thread : threads) thread.join();

  uint32_t correlation = 1;
  for (int i = 0; i < kOps; ++i) {
    const uint32_t device = static_cast<uint32_t>(i % 3), stream = 7 + static_cast<uint32_t>(i % 2);
    const uint64_t t0 = static_cast<uint64_t>(kCuptiStart + 1'000 * i + 300);
    for (int k = 0; k < 1 + i % 3; ++k) {
      const uint32_t id = correlation++;
      auto kernel = testing::KernelRecord(device, stream, id, t0 + 100 * k, t0 + 100 * k + 80 + i,
                                          kKernels[(i + k) % 4]);
      kernel.registersPerThread = static_cast<uint16_t>(32 + i % 5 * 16);
      kernel.staticSharedMemory = 1024 * (i % 3);
      kernel.dynamicSharedMemory = 512 * k;
      Feed(converter, kernel);
      Feed(converter, testing::ExternalCorrelationRecord(id, static_cast<uint64_t>(i + 1)));
      Feed(converter, testing::ApiRecord(k == 1 ? CUPTI_ACTIVITY_KIND_DRIVER
                                                : CUPTI_ACTIVITY_KIND_RUNTIME,
                                         id, t0 - 200 + 10 * k, t0 - 150 + 10 * k));
    }
    if (i % 5 == 0) {
      const uint32_t id = correlation++;
      Feed(converter, testing::MemcpyRecord(
                          static_cast<uint8_t>(i % 10 == 0 ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
                                                           : CUPTI_ACTIVITY_MEMCPY_KIND_DTOD),
                          CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                          4096u * static_cast<uint64_t>(i + 1), device, 20 + device, id,
                          t0 + 500, t0 + 900));
      Feed(converter, testing::ExternalCorrelationRecord(id, static_cast<uint64_t>(i + 1)));
      Feed(converter, testing::ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, id, t0 - 90, t0 - 40));
    }
    if (i % 11 == 0) {
      MemsetActivity m{};
      m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
      m.deviceId = device;
      m.streamId = stream;
      m.correlationId = correlation++;
      m.start = t0 + 950;
      m.end = t0 + 990;
      m.bytes = 256;
      m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      Feed(converter, m);
      Feed(converter, testing::ExternalCorrelationRecord(m.correlationId,
                                                         static_cast<uint64_t>(i + 1)));
    }
  }
  // Kernels no op launched (no link record), and API calls that launched nothing.
  for (uint32_t id = 9000; id < 9006; ++id) {
    Feed(converter, testing::KernelRecord(id % 3, 7, id, kCuptiStart + 5'000 + id,
                                          kCuptiStart + 5'100 + id, kKernels[id % 4]));
    Feed(converter, testing::ApiRecord(CUPTI_ACTIVITY_KIND_DRIVER, id + 100, kCuptiStart + id,
                                       kCuptiStart + id + 5));
  }
  converter.OnDropped(DropReason::kCupti, 3);

  const ConvertedStep step = converter.Finish(/*clock_offset_ns=*/1'700'000'000'000'000'000);
  std::ostringstream out;
  std::string bytes;
  EXPECT_TRUE(step.step_stats.SerializeToString(&bytes));
  out << bytes.size() << "\n" << bytes << "\n";
  for (const LaunchedOp& op : step.launched_ops) {
    out << op.external_id << " " << op.node_name << " " << op.start_nanos << "\n";
  }
  const ConversionStats& s = step.stats;
  out << s.kernels << " " << s.memcpys << " " << s.memsets << " " << s.api_records << " "
      << s.external_correlations << " " << s.linked_records << " " << s.unlinked_records << " "
      << s.other_records << " " << s.dropped_by_cupti << " " << s.dropped_buffers << " "
      << s.dropped_by_record_limit << " " << s.dropped_correlations << "\n";
  return out.str();
}

TEST(ConverterGoldenTest, SyntheticStepIsByteIdenticalToTheGolden) {
  const std::string path = testing::DataPath("cupti/converter_step.golden");
  const std::string actual = ConvertSyntheticStep();
  EXPECT_EQ(ConvertSyntheticStep(), actual) << "the output depends on thread timing";
  if (std::getenv("STEPSCOPE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << path;
  const std::string expected((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  ASSERT_EQ(actual.size(), expected.size());
  EXPECT_TRUE(actual == expected) << "the converter's output changed";
}

// Ids in the slots (across a chunk boundary, from several threads), below the step's first id,
// and far above it all link to their ops; names passed as temporaries (whose storage the next
// call reuses) keep their own text.
TEST(ConverterGoldenTest, OpsInSlotsAndOutsideThemLinkAlike) {
  GpuActivityConverter converter(ClockAlignment{kCuptiStart, kHostStart});
  constexpr uint64_t kFirst = 1'000'000;
  converter.BeginOps(kFirst);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 5'000; i += 97) ids.push_back(kFirst + i);  // chunks 0 and 1
  ids.push_back(kFirst - 1);                                         // below: overflow
  ids.push_back(kFirst + (uint64_t{1} << 21));                       // past the slots
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < ids.size(); i += 3) {
        converter.RegisterOp(ids[i], "op_" + std::to_string(ids[i]), i % 2 ? "Add" : "MatMul",
                             kHostStart + static_cast<int64_t>(i));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  uint32_t correlation = 1;
  for (uint64_t id : ids) {
    const uint64_t t = static_cast<uint64_t>(kCuptiStart) + correlation * 1'000;
    Feed(converter, testing::KernelRecord(0, 7, correlation, t, t + 10, "k"));
    Feed(converter, testing::ExternalCorrelationRecord(correlation, id));
    ++correlation;
  }
  const ConvertedStep step = converter.Finish();
  EXPECT_EQ(step.stats.linked_records, ids.size());
  EXPECT_EQ(step.stats.unlinked_records, 0u);
  ASSERT_EQ(step.launched_ops.size(), ids.size());
  for (const LaunchedOp& op : step.launched_ops) {
    EXPECT_EQ(op.node_name, "op_" + std::to_string(op.external_id));
  }
  // Finish forgot the ops: the same ids link to nothing in the next step.
  Feed(converter, testing::KernelRecord(0, 7, 1, kCuptiStart + 10, kCuptiStart + 20, "k"));
  Feed(converter, testing::ExternalCorrelationRecord(1, ids.front()));
  EXPECT_EQ(converter.Finish().stats.unlinked_records, 1u);
}

}  // namespace
}  // namespace stepscope::collect::cupti
