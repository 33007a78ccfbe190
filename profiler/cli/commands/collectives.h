// The collectives report's JSON and text, shared by `stepscope collectives` and the `collectives`
// part of `stepscope efficiency` (analysis/collective_bandwidth.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/flags.h"
#include "base/status.h"
#include "profiler/analysis/collective_bandwidth.h"

namespace stepscope::cli {

// The rows as the efficiency schema's "collectives" array: rank, device, name, source, algorithm,
// dtype, group_size, count, bytes (per call), total_bytes, time_ns, exposed_ns, algbw_bytes_per_s,
// busbw_bytes_per_s, busbw_share_of_peak (unknown values null).
nlohmann::ordered_json CollectiveRowsJson(const analysis::CollectiveBandwidth& result);
// {"bytes_per_s": ..., "source": ...}: the link peak the rows are compared with.
nlohmann::ordered_json LinkPeakJson(const analysis::LinkPeak& link);
// The table of rows, the totals and the notes, for people.
std::string CollectivesText(const analysis::CollectiveBandwidth& result, size_t top);

// --link-peak GBPS (GB/s, 10^9 bytes a second, per direction as nccl-tests' busbw): bytes/s, or
// nullopt when absent; InvalidInput for anything but a positive finite number.
StatusOr<std::optional<double>> LinkPeakFlag(const ParsedArgs& args);
FlagSpec LinkPeakFlagSpec();

}  // namespace stepscope::cli
