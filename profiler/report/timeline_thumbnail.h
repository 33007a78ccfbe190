// A thumbnail of one step's timeline as inline SVG, drawn here from the trace: one row per lane
// with work in the window, each row decimated to the pixel (the runs of covered pixels, coloured by
// what covers them first: ops, kernels, copies, communication), and the slowest slices labelled.
// Its size is bounded by rows x width whatever the trace's size.
#pragma once

#include <cstdint>
#include <string>

#include "profiler/trace/trace.h"

namespace stepscope::report {

struct ThumbnailOptions {
  int width = 900;         // pixels of time
  size_t max_rows = 28;    // lanes drawn; the others are counted under the picture
  size_t labelled = 5;     // the slowest slices named under the picture (none inside another)
};

// The lanes' work in [begin_ns, end_ns) (relative to the trace's epoch, as slices are); "" when
// nothing happens there. Aggregate duplicates (TensorFlow's /stream:all, /memcpy) are left out.
std::string TimelineThumbnail(const trace::Trace& trace, int64_t begin_ns, int64_t end_ns,
                              const ThumbnailOptions& options = {});

}  // namespace stepscope::report
