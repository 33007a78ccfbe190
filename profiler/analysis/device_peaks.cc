// The table of device peaks (device_peaks.tsv, compiled in as text) parsed once, and how a trace's
// device picks its row: by name, else by family, SM count and memory.
#include "profiler/analysis/device_peaks.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/check.h"

namespace stepscope::analysis {
namespace {

// The table's text: a raw string literal CMake writes from device_peaks.tsv.
constexpr std::string_view kTableText =
#include "device_peaks_tsv.inc"
    ;

constexpr std::array<std::string_view, kPrecisionCount> kPrecisionNames = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8"};
constexpr size_t kColumns = 17;

// The table's precision columns are Precision's kFp64 .. kFp8, in that order.
Precision ColumnPrecision(size_t column) { return static_cast<Precision>(static_cast<size_t>(Precision::kFp64) + column); }
std::optional<size_t> PrecisionColumn(Precision p) {
  const size_t value = static_cast<size_t>(p), first = static_cast<size_t>(Precision::kFp64);
  if (value < first || value - first >= kPrecisionCount) return std::nullopt;
  return value - first;
}
static_assert(static_cast<size_t>(Precision::kFp8) - static_cast<size_t>(Precision::kFp64) + 1 == kPrecisionCount);
// The precision's column name ("fp32"), "unknown"/"int8" where the table has none.
std::string ColumnName(Precision p) {
  const auto column = PrecisionColumn(p);
  return column ? std::string(kPrecisionNames[*column]) : p == Precision::kInt8 ? "int8" : "unknown";
}

std::vector<std::string_view> SplitOn(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

// A non-negative number, or 0 for "-" (no figure published).
bool ParseFigure(std::string_view text, double* value) {
  if (text == "-") return *value = 0, true;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size() && std::isfinite(*value) && *value > 0;
}

// Lower case, without a leading vendor, spaces and hyphens alike: "NVIDIA A100-SXM4-80GB" and
// "a100 sxm4 80gb" compare equal.
std::string NormalName(std::string_view name) {
  std::string out;
  for (char c : name) out += c == '-' || c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view vendor : {"nvidia ", "amd "}) {
    if (out.starts_with(vendor)) out.erase(0, vendor.size());
  }
  return out;
}

bool SameFigures(const DevicePeaks& a, const DevicePeaks& b) {
  return a.dense_flops_per_s == b.dense_flops_per_s && a.sparse_flops_per_s == b.sparse_flops_per_s &&
         a.memory_bytes_per_s == b.memory_bytes_per_s;
}

// Marketing sizes are GiB-ish ("80GB" holds 79.2 GiB once the driver's share is taken): 15 %.
bool MemoryAgrees(const DevicePeaks& row, int64_t memory_bytes) {
  if (memory_bytes <= 0) return true;
  const double gib = static_cast<double>(memory_bytes) / (1024.0 * 1024.0 * 1024.0);
  return std::abs(gib - row.memory_gb) <= 0.15 * row.memory_gb;
}

std::string TeraText(double flops_per_s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", flops_per_s / 1e12);
  return text;
}

}  // namespace

std::optional<Precision> PeakPrecisionOfName(std::string_view name) {
  for (size_t i = 0; i < kPrecisionCount; ++i) {
    if (kPrecisionNames[i] == name) return ColumnPrecision(i);
  }
  return std::nullopt;
}

double DevicePeaks::flops_per_s(Precision p) const {
  const auto column = PrecisionColumn(p);
  return column ? dense_flops_per_s[*column] : 0;
}

StatusOr<std::vector<DevicePeaks>> ParseDevicePeaks(std::string_view tsv) {
  std::vector<DevicePeaks> rows;
  bool header_seen = false;
  size_t line_number = 0;
  for (std::string_view line : SplitOn(tsv, '\n')) {
    ++line_number;
    if (line.empty() || line.starts_with('#')) continue;
    const std::vector<std::string_view> fields = SplitOn(line, '\t');
    const std::string where = "device peaks line " + std::to_string(line_number);
    if (fields.size() != kColumns) {
      return InvalidInput(where + ": " + std::to_string(fields.size()) + " fields, expected " + std::to_string(kColumns));
    }
    if (!header_seen) {  // the column names
      if (fields[0] != "id" || fields[16] != "source") return InvalidInput(where + ": expected the header (id ... source)");
      header_seen = true;
      continue;
    }
    DevicePeaks row;
    row.id = std::string(fields[0]);
    for (std::string_view name : SplitOn(fields[1], '|')) row.names.emplace_back(name);
    row.family = std::string(fields[2]);
    double sms = 0;
    if (!ParseFigure(fields[3], &sms) || !ParseFigure(fields[4], &row.memory_gb)) {
      return InvalidInput(where + " (" + row.id + "): sms and memory_gb must be positive numbers");
    }
    row.sm_count = static_cast<int32_t>(sms);
    // fp64 fp32 tf32 tf32_sparse bf16 bf16_sparse fp16 fp16_sparse fp8 fp8_sparse: columns 5..14.
    const size_t dense_column[kPrecisionCount] = {5, 6, 7, 9, 11, 13};
    for (size_t p = 0; p < kPrecisionCount; ++p) {
      const size_t c = dense_column[p];
      double dense = 0, sparse = 0;
      if (!ParseFigure(fields[c], &dense) || (p >= 2 && !ParseFigure(fields[c + 1], &sparse))) {
        return InvalidInput(where + " (" + row.id + "): the " + std::string(kPrecisionNames[p]) +
                            " figures must be positive numbers of TFLOP/s or '-'");
      }
      row.dense_flops_per_s[p] = dense * 1e12;
      row.sparse_flops_per_s[p] = sparse * 1e12;
    }
    double gbps = 0;
    if (!ParseFigure(fields[15], &gbps) || gbps == 0) {
      return InvalidInput(where + " (" + row.id + "): memory_gbps must be a positive number");
    }
    row.memory_bytes_per_s = gbps * 1e9;
    row.source = std::string(fields[16]);
    if (row.id.empty() || row.names.empty() || row.family.empty() || row.source.empty()) {
      return InvalidInput(where + ": id, names, family and source may not be empty");
    }
    rows.push_back(std::move(row));
  }
  if (!header_seen) return InvalidInput("device peaks: no header line");
  return rows;
}

const std::vector<DevicePeaks>& DevicePeakTable() {
  // Parsed once; the table is part of the program, so a malformed one is our bug (the unit tests
  // parse it).
  static const std::vector<DevicePeaks>* const table = [] {
    StatusOr<std::vector<DevicePeaks>> rows = ParseDevicePeaks(kTableText);
    if (!rows.ok()) std::fprintf(stderr, "%s\n", rows.status().message().c_str());
    STEPSCOPE_CHECK(rows.ok());
    return new std::vector<DevicePeaks>(std::move(rows).value());
  }();
  return *table;
}

const DevicePeaks* FindDevicePeaks(std::string_view id_or_name) {
  const std::string wanted = NormalName(id_or_name);
  for (const DevicePeaks& row : DevicePeakTable()) {
    if (NormalName(row.id) == wanted) return &row;
    for (const std::string& name : row.names) {
      if (NormalName(name) == wanted) return &row;
    }
  }
  return nullptr;
}

const DevicePeaks* MatchDevice(const trace::DeviceProperties& device, std::string* why) {
  if (device.name.empty()) {
    *why = "the trace gives no device name";
    return nullptr;
  }
  for (const DevicePeaks& row : DevicePeakTable()) {
    for (const std::string& name : row.names) {
      if (NormalName(name) == NormalName(device.name)) {
        *why = "the trace's device name \"" + device.name + "\"";
        return &row;
      }
    }
  }
  std::vector<const DevicePeaks*> candidates;
  const std::string normal = NormalName(device.name);
  for (const DevicePeaks& row : DevicePeakTable()) {
    if (normal.find(NormalName(row.family)) == std::string::npos) continue;
    if (device.sm_count > 0 && device.sm_count != row.sm_count) continue;
    if (!MemoryAgrees(row, device.memory_bytes)) continue;
    candidates.push_back(&row);
  }
  const bool one = !candidates.empty() && std::all_of(candidates.begin(), candidates.end(), [&](const DevicePeaks* row) {
    return SameFigures(*row, *candidates.front());
  });
  if (!one) {
    *why = "no row of the device table matches \"" + device.name + "\"" +
           (device.sm_count > 0 ? " with " + std::to_string(device.sm_count) + " SMs" : "") +
           (candidates.size() > 1 ? " alone (" + std::to_string(candidates.size()) + " rows could)" : "");
    return nullptr;
  }
  *why = "the trace's device \"" + device.name + "\" by family " + candidates.front()->family +
         (device.sm_count > 0 ? ", " + std::to_string(device.sm_count) + " SMs" : "") +
         (device.memory_bytes > 0 ? " and its memory" : "");
  return candidates.front();
}

StatusOr<PeakChoice> ChoosePeak(const std::vector<trace::DeviceProperties>& devices, const PeakOptions& options,
                                Precision precision) {
  PeakChoice choice;
  choice.precision = precision;
  const DevicePeaks* row = nullptr;
  std::string why;
  if (!options.device.empty()) {
    row = FindDevicePeaks(options.device);
    if (row == nullptr) {
      std::string ids;
      for (const DevicePeaks& known : DevicePeakTable()) ids += (ids.empty() ? "" : ", ") + known.id;
      return InvalidInput("--device " + options.device + ": not in the table of device peaks (" + ids + ")");
    }
    why = "--device " + options.device;
  } else {
    std::string first_why;
    for (const trace::DeviceProperties& device : devices) {
      std::string device_why;
      row = MatchDevice(device, &device_why);
      if (first_why.empty()) first_why = device_why;
      if (row != nullptr) {
        why = device_why;
        break;
      }
      // A device that measured its own peak (our trainer's CPU sgemm, an fp32 figure) is its
      // own table; measured_by says how ("measured sgemm peak (stepscope-train, 2 threads): ...").
      if (device.measured_flops_per_s > 0) {
        choice.device = device.name.empty() ? "device " + std::to_string(device.id) : device.name;
        choice.flops_per_s = device.measured_flops_per_s;
        choice.source = (device.measured_by.empty() ? "a peak measured on the device" : device.measured_by) +
                        " on \"" + choice.device + "\"";
        if (precision != Precision::kFp32 && precision != Precision::kUnknown) {
          choice.source += "; measured in fp32, the ops run in " + ColumnName(precision);
        }
        break;
      }
    }
    if (row == nullptr && choice.flops_per_s == 0) why = devices.empty() ? "the trace describes no device" : first_why;
  }
  if (row != nullptr) {
    choice.device = row->id;
    choice.flops_per_s = row->flops_per_s(precision);
    choice.bytes_per_s = row->memory_bytes_per_s;
    choice.source = ColumnName(precision) + " dense peak of " + row->id + " (" + row->source + "), matched by " + why;
    if (choice.flops_per_s == 0) choice.source += "; its datasheet gives no " + ColumnName(precision) + " figure";
  } else if (choice.flops_per_s == 0) {
    choice.source = why;
  }
  if (options.peak_flops_per_s > 0) {
    choice.flops_per_s = options.peak_flops_per_s;
    choice.source = "--peak " + TeraText(options.peak_flops_per_s) + " TFLOP/s" +
                    (row != nullptr ? "; memory bandwidth of " + row->id + " (" + row->source + ")" : "");
  }
  return choice;
}

}  // namespace stepscope::analysis
