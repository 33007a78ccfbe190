// The step thumbnail (timeline_thumbnail.h): per lane, the covered pixels as runs of rectangles,
// and the slowest slices of the window labelled.
#include "profiler/report/timeline_thumbnail.h"

#include <algorithm>
#include <vector>

#include "base/units.h"
#include "profiler/report/html_page.h"

namespace stepscope::report {
namespace {

using trace::SliceKind;

// A pixel's class, by what covers it first: 0 none, then the kinds below (colours in kColours).
uint8_t KindClass(SliceKind kind) {
  switch (kind) {
    case SliceKind::kKernel: return 2;
    case SliceKind::kMemcpy:
    case SliceKind::kMemset: return 3;
    case SliceKind::kCollective: return 4;
    case SliceKind::kRuntime: return 5;
    default: return 1;
  }
}
constexpr const char* kColours[] = {"", "#4c78a8", "#54a24b", "#f58518", "#e45756", "#9d755d"};
constexpr const char* kClassNames[] = {"", "ops", "kernels", "copies", "communication", "runtime"};

// Work, not markers: annotations, sync markers and Python frames span the step and hide nothing.
bool Drawn(const trace::Slice& s) {
  return !s.duplicate() && s.kind != SliceKind::kAnnotation && s.kind != SliceKind::kSync &&
         s.kind != SliceKind::kPythonFrame && s.dur_ns > 0;
}

struct Labelled {
  int64_t dur_ns;
  uint32_t slice;  // index in trace.slices()
  size_t row;
};

// Heap order for the longest slices: the shortest kept on top.
bool Longer(const Labelled& a, const Labelled& b) { return a.dur_ns > b.dur_ns; }
constexpr size_t kCandidates = 256;

}  // namespace

std::string TimelineThumbnail(const trace::Trace& trace, int64_t begin_ns, int64_t end_ns,
                              const ThumbnailOptions& options) {
  if (end_ns <= begin_ns) return "";
  const int width = options.width;
  const double span = static_cast<double>(end_ns - begin_ns);
  auto x_of = [&](int64_t t) {
    return static_cast<int>(std::clamp((static_cast<double>(t - begin_ns)) / span * width, 0.0, double(width)));
  };
  struct Row {
    uint32_t track;
    std::vector<uint8_t> pixels;
  };
  std::vector<Row> rows;
  std::vector<Labelled> slowest;
  size_t lanes_with_work = 0;
  const auto& tracks = trace.tracks();
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    const auto slices = trace.track_slices(t);
    std::vector<uint8_t> pixels(static_cast<size_t>(width), 0);
    bool any = false;
    const uint32_t first = trace.track_first_slice(t);
    for (size_t i = 0; i < slices.size(); ++i) {
      const trace::Slice& s = slices[i];
      if (s.start_ns >= end_ns) break;  // sorted by start
      if (s.end_ns() <= begin_ns || !Drawn(s)) continue;
      any = true;
      const int x0 = x_of(s.start_ns), x1 = std::max(x_of(s.end_ns()), x0 + 1);
      for (int x = x0; x < std::min(x1, width); ++x) {
        if (pixels[static_cast<size_t>(x)] == 0) pixels[static_cast<size_t>(x)] = KindClass(s.kind);
      }
      if (rows.size() < options.max_rows) {
        // The longest kCandidates slices of the drawn rows, at any depth (a host op often sits
        // under a Python frame or an annotation): a min-heap on duration.
        const Labelled candidate{s.dur_ns, first + static_cast<uint32_t>(i), rows.size()};
        if (slowest.size() < kCandidates) {
          slowest.push_back(candidate);
          std::push_heap(slowest.begin(), slowest.end(), Longer);
        } else if (s.dur_ns > slowest.front().dur_ns) {
          std::pop_heap(slowest.begin(), slowest.end(), Longer);
          slowest.back() = candidate;
          std::push_heap(slowest.begin(), slowest.end(), Longer);
        }
      }
    }
    if (!any) continue;
    ++lanes_with_work;
    if (rows.size() < options.max_rows) rows.push_back({t, std::move(pixels)});
  }
  if (rows.empty()) return "";
  // Longest first, leaving out a slice inside one already named on its row (an op's own callees
  // span the same time and would name it again).
  std::sort(slowest.begin(), slowest.end(), Longer);
  std::vector<Labelled> named;
  for (const Labelled& c : slowest) {
    if (named.size() == options.labelled) break;
    const trace::Slice& s = trace.slices()[c.slice];
    const bool inside = std::any_of(named.begin(), named.end(), [&](const Labelled& n) {
      const trace::Slice& o = trace.slices()[n.slice];
      return n.row == c.row && s.start_ns < o.end_ns() && o.start_ns < s.end_ns();
    });
    if (!inside) named.push_back(c);
  }
  slowest = std::move(named);

  constexpr int kRow = 14, kLabels = 230, kAxis = 18;
  const int total_width = kLabels + width;
  const int height = static_cast<int>(rows.size()) * kRow + kAxis + 22 + static_cast<int>(slowest.size()) * kRow;
  std::string out = "<svg role=\"img\" viewBox=\"0 0 " + std::to_string(total_width) + " " + std::to_string(height) +
                    "\" width=\"" + std::to_string(total_width) + "\" height=\"" + std::to_string(height) + "\">\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    const int y = static_cast<int>(r) * kRow;
    std::string lane = trace.TrackPath(rows[r].track);
    const std::string shown = lane.size() > 38 ? "…" + lane.substr(lane.size() - 37) : lane;
    out += "<text x=\"" + std::to_string(kLabels - 6) + "\" y=\"" + std::to_string(y + 10) +
           "\" text-anchor=\"end\"><title>" + Escape(lane) + "</title>" + Escape(shown) + "</text>\n";
    const auto& pixels = rows[r].pixels;
    for (int x = 0; x < width;) {
      const uint8_t c = pixels[static_cast<size_t>(x)];
      int run = x + 1;
      while (run < width && pixels[static_cast<size_t>(run)] == c) ++run;
      if (c != 0) {
        out += "<rect x=\"" + std::to_string(kLabels + x) + "\" y=\"" + std::to_string(y + 2) + "\" width=\"" +
               std::to_string(run - x) + "\" height=\"" + std::to_string(kRow - 4) + "\" fill=\"" + kColours[c] +
               "\"/>";
      }
      x = run;
    }
    out += "\n";
  }
  // The slowest slices: outlined and numbered on the picture, named in a list under it (names
  // run long and would cover each other on the rows).
  for (size_t k = 0; k < slowest.size(); ++k) {
    const trace::Slice& s = trace.slices()[slowest[k].slice];
    const int x = kLabels + x_of(s.start_ns);
    const int y = static_cast<int>(slowest[k].row) * kRow;
    out += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y + 1) + "\" width=\"" +
           std::to_string(std::max(x_of(s.end_ns()) + kLabels - x, 2)) + "\" height=\"" + std::to_string(kRow - 2) +
           "\" fill=\"none\" stroke=\"#e45756\" stroke-width=\"1.5\"/><text x=\"" +
           std::to_string(std::min(x + 3, total_width - 10)) + "\" y=\"" + std::to_string(y + 11) +
           "\" font-weight=\"700\">" + std::to_string(k + 1) + "</text>\n";
  }
  const int axis_y = static_cast<int>(rows.size()) * kRow + 4;
  out += "<line class=\"axis\" x1=\"" + std::to_string(kLabels) + "\" x2=\"" + std::to_string(total_width) + "\" y1=\"" +
         std::to_string(axis_y) + "\" y2=\"" + std::to_string(axis_y) + "\" stroke=\"#8d96a0\"/>\n";
  out += "<text x=\"" + std::to_string(kLabels) + "\" y=\"" + std::to_string(axis_y + 13) + "\">0</text><text x=\"" +
         std::to_string(total_width) + "\" y=\"" + std::to_string(axis_y + 13) + "\" text-anchor=\"end\">" +
         Escape(FormatDuration(end_ns - begin_ns)) + "</text>\n";
  int legend_x = kLabels + 80;
  for (int c = 1; c <= 5; ++c) {
    out += "<rect x=\"" + std::to_string(legend_x) + "\" y=\"" + std::to_string(axis_y + 4) +
           "\" width=\"10\" height=\"10\" fill=\"" + kColours[c] + "\"/><text x=\"" + std::to_string(legend_x + 14) +
           "\" y=\"" + std::to_string(axis_y + 13) + "\">" + kClassNames[c] + "</text>";
    legend_x += 110;
  }
  if (lanes_with_work > rows.size()) {
    out += "<text x=\"0\" y=\"" + std::to_string(axis_y + 13) + "\">" + std::to_string(lanes_with_work - rows.size()) +
           " more lanes</text>";
  }
  for (size_t k = 0; k < slowest.size(); ++k) {
    const trace::Slice& s = trace.slices()[slowest[k].slice];
    const std::string name(trace.str(trace.slice_name(s)));
    const std::string shown = name.size() > 120 ? name.substr(0, 119) + "…" : name;
    out += "<text x=\"" + std::to_string(kLabels) + "\" y=\"" + std::to_string(axis_y + 30 + static_cast<int>(k) * kRow) +
           "\"><title>" + Escape(name) + "</title>" + std::to_string(k + 1) + "  " + Escape(FormatDuration(s.dur_ns)) +
           "  " + Escape(shown) + "</text>\n";
  }
  return out + "</svg>\n";
}

}  // namespace stepscope::report
