// The shared time window (time_axis.h): kept on the trace's span; `changed` only when it moves.
#include "viewer/timeline/time_axis.h"

#include <algorithm>

namespace stepscope::viewer {

TimeAxis::TimeAxis(double limit_begin_ns, double limit_end_ns, QObject* parent)
    : QObject(parent), limit_begin_ns_(limit_begin_ns),
      limit_end_ns_(std::max(limit_end_ns, limit_begin_ns + TimeMapping::kMinSpanNs)) {
  FitAll();
}

void TimeAxis::SetRange(double begin_ns, double end_ns) {
  TimeMapping mapping(begin_ns, end_ns, 1000);
  mapping.ClampTo(limit_begin_ns_, limit_end_ns_);
  if (mapping.begin_ns() == begin_ns_ && mapping.end_ns() == end_ns_) return;
  begin_ns_ = mapping.begin_ns();
  end_ns_ = mapping.end_ns();
  emit changed();
}

void TimeAxis::FitAll() {
  TimeMapping mapping;
  mapping.Fit(limit_begin_ns_, limit_end_ns_);
  SetRange(mapping.begin_ns(), mapping.end_ns());
}

}  // namespace stepscope::viewer
