// The efficiency figures of the statistics pane's summary: MFU with the peak it is measured
// against (which and why), and the bus bandwidth of the longest collectives, as
// `stepscope efficiency` reports them (analysis/efficiency.h: the same report, the same numbers).
#pragma once

#include <QString>

#include "profiler/analysis/efficiency.h"

namespace stepscope::viewer {

// Collective rows the summary names (the longest first): more belong in `stepscope collectives`.
inline constexpr size_t kSummaryCollectives = 3;

// "MFU 46.8% over 1 steps against 43.6 GFLOP/s fp32 (measured sgemm peak ...)", or why there is
// none; then, where the trace has collectives with a bus bandwidth, "Bus bandwidth (longest):
// all_reduce 7.63 MiB x1 2.00 GB/s; ..." (a collective every device of a process recorded with the
// same figures named once). Empty for a trace with neither shapes nor collectives.
QString EfficiencySummary(const analysis::EfficiencyReport& report);

// Bytes/s in decimal units with two decimals ("4.34 GB/s", "512.00 MB/s"), as the CLI writes
// link rates.
QString BandwidthText(double bytes_per_s);

}  // namespace stepscope::viewer
