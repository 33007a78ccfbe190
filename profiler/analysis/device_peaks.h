// Peak FLOP/s and memory bandwidth of a device, and which one a trace ran on.
//
// The figures are data, not code: device_peaks.tsv (one row a device, each citing its
// datasheet), compiled in. A trace's devices (trace::StepInfo::devices: Kineto's
// `deviceProperties`, our trainer's device record) pick a row by name, or by family, SM count
// and memory when the name is not one the table lists; `--device` and `--peak` override. Every
// choice says which figures it used and why (PeakChoice::source), and an unknown device is said
// to be unknown, never given a neighbour's peak.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profiler/analysis/op_cost.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// The precisions the table gives figures for: Precision (op_cost.h) from kFp64 to kFp8.
inline constexpr size_t kPrecisionCount = 6;
// A precision by its name ("fp64" ... "fp8", as PrecisionName writes it); none when the table has
// no column for it.
std::optional<Precision> PeakPrecisionOfName(std::string_view name);

// One row of the table; FLOP/s and bytes/s (not tera, not giga); 0 where the datasheet gives none.
struct DevicePeaks {
  std::string id;                  // "h100-sxm"
  std::vector<std::string> names;  // device names as traces record them
  std::string family;              // "H100"
  int32_t sm_count = 0;
  double memory_gb = 0;
  std::array<double, kPrecisionCount> dense_flops_per_s{};
  std::array<double, kPrecisionCount> sparse_flops_per_s{};
  double memory_bytes_per_s = 0;
  std::string source;  // the datasheet

  // 0 for a precision the table has no column for (unknown, int8).
  double flops_per_s(Precision p) const;
};

// Parses the table's text (device_peaks.tsv's format); an error names the line and the field.
StatusOr<std::vector<DevicePeaks>> ParseDevicePeaks(std::string_view tsv);
// The compiled-in table.
const std::vector<DevicePeaks>& DevicePeakTable();

// What picks the peak, beyond the trace's devices.
struct PeakOptions {
  double peak_flops_per_s = 0;  // --peak (given in TFLOP/s on the command line); 0: none
  std::string device;           // --device: a row's id or one of its names; empty: none
  std::optional<Precision> precision;  // the precision whose peak MFU divides by; none: fp32/bf16 as the trace's ops say
};

// The peak an efficiency report uses.
struct PeakChoice {
  std::string device;            // the table's id or the trace's device name; empty when none
  double flops_per_s = 0;        // 0: unknown (no MFU)
  double bytes_per_s = 0;        // 0: unknown (no memory roof)
  Precision precision = Precision::kFp32;
  std::string source;            // which figures and why: the row's datasheet, a measured sgemm, --peak
  bool known() const { return flops_per_s > 0; }
};

// The row a device matches: its name one of a row's names; else a row whose family the name
// contains and whose SM count and memory agree with the device's where it gives them (several
// rows left with the same figures count as one). `why` says how it matched, or why none did.
const DevicePeaks* MatchDevice(const trace::DeviceProperties& device, std::string* why);
// A row by id or name (--device); null when none.
const DevicePeaks* FindDevicePeaks(std::string_view id_or_name);

// The peak for `devices` (a trace's): --device, else the first device the table knows, else a
// measured peak the trace records (a CPU's sgemm); --peak replaces the FLOP/s, keeping the
// device's bandwidth. An unknown --device is an InvalidArgument naming the table's ids.
StatusOr<PeakChoice> ChoosePeak(const std::vector<trace::DeviceProperties>& devices, const PeakOptions& options,
                                Precision precision);

}  // namespace stepscope::analysis
