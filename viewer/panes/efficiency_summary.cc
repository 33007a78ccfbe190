// The statistics pane's efficiency summary (efficiency_summary.h): MFU and its peak, and the bus
// bandwidth of the longest collectives, written from the report `stepscope efficiency` prints.
#include "viewer/panes/efficiency_summary.h"

#include <QObject>
#include <QStringList>
#include <algorithm>
#include <vector>

#include "base/units.h"

namespace stepscope::viewer {
namespace {

QString Percent(double share) { return QString::number(100 * share, 'f', 1) + "%"; }

// 4.36e10 -> "43.6 GFLOP/s": three significant digits, as the roofline pane writes rates.
QString FlopRate(double flops_per_s) {
  static const char* const kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  while (flops_per_s >= 1000 && p < 6) {
    flops_per_s /= 1000;
    ++p;
  }
  return QString::number(flops_per_s, 'g', 3) + " " + kPrefix[p] + "FLOP/s";
}

QString MfuText(const analysis::EfficiencyReport& r) {
  const QString peak = r.peak.known() ? QString("%1 %2 (%3)")
                                            .arg(FlopRate(r.peak.flops_per_s),
                                                 QString::fromUtf8(analysis::PrecisionName(r.peak.precision).data()),
                                                 QString::fromStdString(r.peak.source))
                                      : QString();
  if (!r.has_shapes) return QObject::tr("MFU unknown: the trace records no shapes or FLOPs.");
  if (r.total.mfu) {
    return QObject::tr("MFU %1 over %2 steps against %3.").arg(Percent(*r.total.mfu)).arg(r.total.steps).arg(peak);
  }
  if (!r.peak.known()) {
    return QObject::tr("MFU unknown, peak unknown: %1 (stepscope efficiency --peak gives one).")
        .arg(QString::fromStdString(r.peak.source));
  }
  return QObject::tr("MFU unknown: no step's FLOPs are known (peak %1).").arg(peak);
}

QString CollectivesText(const analysis::CollectiveBandwidth& collectives) {
  std::vector<const analysis::CollectiveRow*> rows;
  for (const analysis::CollectiveRow& row : collectives.rows) {
    if (!row.busbw_bytes_per_s) continue;
    // Every device of one process records the same collective (the trainer's towers): its row is
    // repeated per device with the same figures, and is one figure here.
    const bool seen = std::any_of(rows.begin(), rows.end(), [&](const analysis::CollectiveRow* kept) {
      return kept->name == row.name && kept->bytes == row.bytes && kept->count == row.count &&
             kept->time_ns == row.time_ns && kept->busbw_bytes_per_s == row.busbw_bytes_per_s;
    });
    if (!seen) rows.push_back(&row);
  }
  if (rows.empty()) return {};
  std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) { return a->time_ns > b->time_ns; });
  QStringList parts;
  for (size_t i = 0; i < rows.size() && i < kSummaryCollectives; ++i) {
    const analysis::CollectiveRow& row = *rows[i];
    parts << QString("%1 %2 x%3 %4")
                 .arg(QString::fromStdString(row.name), QString::fromStdString(FormatBytes(row.bytes)))
                 .arg(row.count)
                 .arg(BandwidthText(*row.busbw_bytes_per_s));
  }
  QString text = QObject::tr("Bus bandwidth (longest): %1").arg(parts.join("; "));
  if (rows.size() > kSummaryCollectives) {
    text += QObject::tr("; %1 more in stepscope collectives").arg(rows.size() - kSummaryCollectives);
  }
  if (collectives.link.bytes_per_s) text += QObject::tr(" (link %1)").arg(BandwidthText(*collectives.link.bytes_per_s));
  return text + ".";
}

}  // namespace

QString BandwidthText(double bytes_per_s) {
  if (bytes_per_s >= 1e9) return QString::number(bytes_per_s / 1e9, 'f', 2) + " GB/s";
  if (bytes_per_s >= 1e6) return QString::number(bytes_per_s / 1e6, 'f', 2) + " MB/s";
  return QString::number(bytes_per_s / 1e3, 'f', 2) + " kB/s";
}

QString EfficiencySummary(const analysis::EfficiencyReport& report) {
  const QString collectives = CollectivesText(report.collectives);
  if (!report.has_shapes && collectives.isEmpty()) return {};
  QString text = MfuText(report);
  if (!collectives.isEmpty()) text += " " + collectives;
  return text;
}

}  // namespace stepscope::viewer
