// The table of device peaks (analysis/device_peaks.h): the compiled-in table parses and cites a
// datasheet on every row, Kineto's deviceProperties reach the trace, and a device picks its row
// by name, by family with SMs and memory, or not at all (said so), with --device and --peak on top.
#include "profiler/analysis/device_peaks.h"

#include <gtest/gtest.h>

#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/writer.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

trace::DeviceProperties Device(std::string name, int32_t sms = -1, int64_t memory_bytes = -1) {
  trace::DeviceProperties device;
  device.id = 0;
  device.name = std::move(name);
  device.sm_count = sms;
  device.memory_bytes = memory_bytes;
  return device;
}

TEST(DevicePeaks, TheCompiledTableHasEveryDeviceAskedForEachWithItsDatasheet) {
  const auto& table = DevicePeakTable();
  for (const char* id : {"a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "h100-sxm", "h100-pcie",
                         "h200-sxm", "b200", "l4", "l40s", "mi250x", "mi300x"}) {
    const DevicePeaks* row = FindDevicePeaks(id);
    ASSERT_NE(row, nullptr) << id;
    EXPECT_FALSE(row->source.empty()) << id;
    EXPECT_GT(row->memory_bytes_per_s, 0) << id;
    EXPECT_GT(row->flops_per_s(Precision::kFp32), 0) << id;
    EXPECT_GT(row->flops_per_s(Precision::kBf16), 0) << id;
  }
  EXPECT_EQ(table.size(), 12u);
  // Figures as the datasheets give them (H100 SXM: 1,979 TFLOP/s bf16 with sparsity, 3.35 TB/s).
  const DevicePeaks* h100 = FindDevicePeaks("NVIDIA H100 80GB HBM3");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->id, "h100-sxm");
  EXPECT_DOUBLE_EQ(h100->flops_per_s(Precision::kBf16), 989.5e12);
  EXPECT_DOUBLE_EQ(h100->sparse_flops_per_s[3], 1979e12);
  EXPECT_DOUBLE_EQ(h100->memory_bytes_per_s, 3350e9);
  EXPECT_DOUBLE_EQ(FindDevicePeaks("a100-sxm4-80gb")->flops_per_s(Precision::kTf32), 156e12);
  // What a datasheet does not give stays unknown: no FP8 on an A100, no int8 column at all.
  EXPECT_EQ(FindDevicePeaks("a100-sxm4-80gb")->flops_per_s(Precision::kFp8), 0);
  EXPECT_EQ(h100->flops_per_s(Precision::kInt8), 0);
  EXPECT_EQ(FindDevicePeaks("NVIDIA GeForce RTX 4090"), nullptr);
}

TEST(DevicePeaks, ParseErrorsNameTheLineAndTheField) {
  const std::string header =
      "id\tnames\tfamily\tsms\tmemory_gb\tfp64\tfp32\ttf32\ttf32_sparse\tbf16\tbf16_sparse\tfp16\tfp16_sparse\tfp8\t"
      "fp8_sparse\tmemory_gbps\tsource\n";
  auto short_row = ParseDevicePeaks("# a comment\n" + header + "x\ty\n");
  ASSERT_FALSE(short_row.ok());
  EXPECT_NE(short_row.status().message().find("line 3: 2 fields, expected 17"), std::string::npos)
      << short_row.status().message();
  auto bad_figure = ParseDevicePeaks(header + "x\tX\tX\t1\t1\t1\tlots\t-\t-\t-\t-\t-\t-\t-\t-\t1\tsheet\n");
  ASSERT_FALSE(bad_figure.ok());
  EXPECT_NE(bad_figure.status().message().find("line 2 (x): the fp32 figures"), std::string::npos)
      << bad_figure.status().message();
  auto ok = ParseDevicePeaks(header + "x\tX|Y\tX\t1\t1\t1\t2\t-\t-\t-\t-\t-\t-\t-\t-\t1.5\tsheet\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->front().names, (std::vector<std::string>{"X", "Y"}));
  EXPECT_DOUBLE_EQ(ok->front().flops_per_s(Precision::kFp32), 2e12);
  EXPECT_DOUBLE_EQ(ok->front().memory_bytes_per_s, 1.5e9);
}

TEST(DevicePeaks, ADevicePicksItsRowByNameOrByFamilySmsAndMemory) {
  std::string why;
  EXPECT_EQ(MatchDevice(Device("NVIDIA H100 PCIe"), &why)->id, "h100-pcie");
  EXPECT_NE(why.find("device name"), std::string::npos) << why;
  // A name the table does not list: the family, SMs and memory decide (an H100 with 114 SMs is
  // the PCIe card, 132 the SXM).
  EXPECT_EQ(MatchDevice(Device("NVIDIA H100 NVL-ish", 114), &why)->id, "h100-pcie");
  EXPECT_EQ(MatchDevice(Device("NVIDIA H100 something", 132, 85'000'000'000), &why)->id, "h100-sxm");
  EXPECT_NE(why.find("by family H100, 132 SMs and its memory"), std::string::npos) << why;
  // Two rows with different figures left: none is guessed.
  EXPECT_EQ(MatchDevice(Device("NVIDIA H100"), &why), nullptr);
  EXPECT_NE(why.find("2 rows could"), std::string::npos) << why;
  EXPECT_EQ(MatchDevice(Device("NVIDIA GeForce RTX 4090", 128), &why), nullptr);
  EXPECT_EQ(MatchDevice(Device(""), &why), nullptr);
}

TEST(DevicePeaks, KinetoDevicePropertiesPickThePeakOfTheRealAlexNetTrace) {
  // The committed AlexNet trace ran on "NVIDIA A100-PG509-200" (an A100 SXM4 40GB board under
  // another name): 108 SMs, 42,297,524,224 bytes.
  auto trace = trace::ReadTrace(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const auto& devices = trace->step_info().devices;
  ASSERT_EQ(devices.size(), 8u);
  EXPECT_EQ(devices[0].name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(devices[0].sm_count, 108);
  EXPECT_EQ(devices[0].memory_bytes, 42297524224);
  EXPECT_EQ(devices[0].compute_major, 8);
  EXPECT_EQ(devices[7].id, 7);
  EXPECT_EQ(trace->import_stats().Get("device_properties_unreadable"), 0);
  auto peak = ChoosePeak(devices, {}, Precision::kFp32);
  ASSERT_TRUE(peak.ok());
  EXPECT_EQ(peak->device, "a100-sxm4-40gb");
  EXPECT_DOUBLE_EQ(peak->flops_per_s, 19.5e12);
  EXPECT_DOUBLE_EQ(peak->bytes_per_s, 1555e9);
  EXPECT_NE(peak->source.find("fp32 dense peak of a100-sxm4-40gb"), std::string::npos) << peak->source;
  EXPECT_NE(peak->source.find("A100-PG509-200"), std::string::npos) << peak->source;
}

TEST(DevicePeaks, OverridesAndUnknownDevices) {
  const std::vector<trace::DeviceProperties> rtx = {Device("NVIDIA GeForce RTX 4090", 128)};
  auto unknown = ChoosePeak(rtx, {}, Precision::kBf16);
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->known());
  EXPECT_EQ(unknown->bytes_per_s, 0);
  EXPECT_NE(unknown->source.find("no row of the device table matches"), std::string::npos) << unknown->source;
  EXPECT_FALSE(ChoosePeak({}, {}, Precision::kBf16)->known());

  PeakOptions device;
  device.device = "h200-sxm";
  auto h200 = ChoosePeak(rtx, device, Precision::kBf16);
  ASSERT_TRUE(h200.ok());
  EXPECT_DOUBLE_EQ(h200->flops_per_s, 989.5e12);
  EXPECT_DOUBLE_EQ(h200->bytes_per_s, 4800e9);
  EXPECT_NE(h200->source.find("--device h200-sxm"), std::string::npos) << h200->source;

  PeakOptions peak;
  peak.peak_flops_per_s = 100e12;
  peak.device = "NVIDIA L4";
  auto given = ChoosePeak(rtx, peak, Precision::kBf16);
  ASSERT_TRUE(given.ok());
  EXPECT_DOUBLE_EQ(given->flops_per_s, 100e12);
  EXPECT_DOUBLE_EQ(given->bytes_per_s, 300e9);  // the L4's bandwidth stays
  EXPECT_NE(given->source.find("--peak 100 TFLOP/s"), std::string::npos) << given->source;

  PeakOptions nonsense;
  nonsense.device = "tpu-v9";
  auto refused = ChoosePeak(rtx, nonsense, Precision::kBf16);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(refused.status().message().find("h100-sxm"), std::string::npos);

  // A CPU that measured its own peak (the trainer's sgemm) uses it.
  trace::DeviceProperties cpu = Device("Intel Xeon");
  cpu.measured_flops_per_s = 1.5e12;
  cpu.measured_by = "measured sgemm peak (stepscope-train, 4 threads): fastest of 5 fp32 GEMMs of 1024^3";
  auto measured = ChoosePeak({cpu}, {}, Precision::kFp32);
  ASSERT_TRUE(measured.ok());
  EXPECT_DOUBLE_EQ(measured->flops_per_s, 1.5e12);
  EXPECT_EQ(measured->source,
            "measured sgemm peak (stepscope-train, 4 threads): fastest of 5 fp32 GEMMs of 1024^3 on \"Intel Xeon\"");
  // An unreadable deviceProperties entry is counted, the readable ones kept.
  auto odd = trace::ReadTraceFromBytes(
      R"({"deviceProperties": [{"id": 0, "name": "NVIDIA L4", "numSms": "many"}, 7],
          "traceEvents": [{"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})",
      "odd.json");
  ASSERT_TRUE(odd.ok()) << odd.status().message();
  ASSERT_EQ(odd->step_info().devices.size(), 1u);
  EXPECT_EQ(odd->step_info().devices[0].name, "NVIDIA L4");
  EXPECT_EQ(odd->import_stats().Get("device_properties_unreadable"), 2);
}

// A trace's devices, a measured peak included, survive conversion to Chrome JSON and to
// RunMetadata and back, so a converted trace keeps its peak.
TEST(DevicePeaks, DevicesSurviveConversion) {
  auto kineto = trace::ReadTraceFromBytes(
      R"json({"deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "numSms": 108,
            "totalGlobalMem": 85198045184, "computeMajor": 8, "computeMinor": 0, "clockRate": 1410000},
           {"id": 1, "name": "AMD EPYC", "stepscopeMeasuredFlopsPerSecond": 4.35e10,
            "stepscopeMeasuredBy": "measured sgemm peak (stepscope-train, 2 threads)"}],
          "traceEvents": [{"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})json",
      "devices.json");
  ASSERT_TRUE(kineto.ok()) << kineto.status().message();
  const auto& devices = kineto->step_info().devices;
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].sm_count, 108);
  EXPECT_EQ(devices[0].clock_khz, 1410000);
  EXPECT_DOUBLE_EQ(devices[1].measured_flops_per_s, 4.35e10);
  EXPECT_EQ(devices[1].measured_by, "measured sgemm peak (stepscope-train, 2 threads)");
  for (trace::OutputFormat format : {trace::OutputFormat::kPerfettoJson, trace::OutputFormat::kRunMetadataBinary}) {
    auto bytes = trace::Serialize(*kineto, format);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    auto back = trace::ReadTraceFromBytes(*bytes, format == trace::OutputFormat::kPerfettoJson ? "back.json" : "back.pb");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->step_info().devices, devices) << static_cast<int>(format);
  }
}

}  // namespace
}  // namespace stepscope::analysis
