// SearchMarks (search_marks.h): the matches grouped by lane and level, and their marks.
#include "viewer/timeline/search_marks.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace stepscope::viewer {

void SearchMarks::Set(const trace::Trace& trace, std::vector<uint32_t> matches) {
  const auto& slices = trace.slices();
  std::erase_if(matches, [&](uint32_t s) { return s >= slices.size(); });
  matches_ = std::move(matches);
  by_level_ = matches_;
  std::sort(by_level_.begin(), by_level_.end(), [&](uint32_t a, uint32_t b) {
    const trace::Slice& x = slices[a];
    const trace::Slice& y = slices[b];
    // By value: track and depth are bit-fields.
    return std::make_tuple(static_cast<uint32_t>(x.track), static_cast<int>(x.depth), x.start_ns, a) <
           std::make_tuple(static_cast<uint32_t>(y.track), static_cast<int>(y.depth), y.start_ns, b);
  });
}

std::pair<const uint32_t*, const uint32_t*> SearchMarks::Window(const trace::Trace& trace, uint32_t track, int depth,
                                                                const TimeMapping& map) const {
  const auto& slices = trace.slices();
  const auto key = std::make_pair(track, depth);
  auto level_of = [&](uint32_t s) {
    return std::make_pair(static_cast<uint32_t>(slices[s].track), static_cast<int>(slices[s].depth));
  };
  const uint32_t* begin = by_level_.data();
  const uint32_t* end = begin + by_level_.size();
  const uint32_t* first = std::partition_point(begin, end, [&](uint32_t s) { return level_of(s) < key; });
  const uint32_t* last = std::partition_point(first, end, [&](uint32_t s) { return level_of(s) == key; });
  // Slices of one level do not overlap, so their ends rise with their starts.
  first = std::partition_point(first, last, [&](uint32_t s) { return static_cast<double>(slices[s].end_ns()) < map.begin_ns(); });
  last = std::partition_point(first, last, [&](uint32_t s) { return static_cast<double>(slices[s].start_ns) <= map.end_ns(); });
  return {first, last};
}

std::vector<uint32_t> SearchMarks::OnRow(const trace::Trace& trace, uint32_t track, int depth,
                                         const TimeMapping& map) const {
  const auto [first, last] = Window(trace, track, depth, map);
  return std::vector<uint32_t>(first, last);
}

void SearchMarks::PaintRow(QPainter& painter, const trace::Trace& trace, const TimeMapping& map, uint32_t track,
                           int depth, double left, double top, double height) const {
  if (by_level_.empty()) return;
  const auto& slices = trace.slices();
  const QColor outline = QColor::fromRgba(kOutline);
  const QColor tint = QColor::fromRgba(kTint);
  // Marks that touch are one run, drawn once: a zoomed-out row of a million matches is a handful
  // of rectangles. Only fills (a stroked outline costs several times more): a narrow run solid,
  // a wider one tinted inside a 2-pixel frame.
  double run_x0 = 0, run_x1 = -1e18;
  auto flush = [&] {
    if (run_x1 <= run_x0) return;
    const QRectF box(left + run_x0, top, run_x1 - run_x0, height);
    if (box.width() < 6) {
      painter.fillRect(box, outline);
      return;
    }
    painter.fillRect(box.adjusted(2, 2, -2, -2), tint);
    painter.fillRect(QRectF(box.left(), box.top(), box.width(), 2), outline);
    painter.fillRect(QRectF(box.left(), box.bottom() - 2, box.width(), 2), outline);
    painter.fillRect(QRectF(box.left(), box.top(), 2, box.height()), outline);
    painter.fillRect(QRectF(box.right() - 2, box.top(), 2, box.height()), outline);
  };
  auto [it, last] = Window(trace, track, depth, map);
  while (it != last) {
    const trace::Slice& s = slices[*it];
    const double x0 = std::max(-2.0, map.NsToPx(static_cast<double>(s.start_ns)));
    const double x1 = std::max(x0 + 2, std::min(map.width_px() + 2, map.NsToPx(static_cast<double>(s.end_ns()))));
    if (x0 > run_x1 + 1) {
      flush();
      run_x0 = x0;
    }
    run_x1 = std::max(run_x1, x1);
    // Matches within the pixels just marked add nothing: skipped by a galloping search, whose
    // probes stay near `it` (the slices of a level lie together, so they stay in cache).
    const double next_ns = map.PxToNs(run_x1);
    auto before_next = [&](uint32_t k) { return static_cast<double>(slices[k].end_ns()) < next_ns; };
    const uint32_t* low = it + 1;
    size_t step = 1;
    while (low + step < last && before_next(low[step])) {
      low += step;
      step *= 2;
    }
    it = std::partition_point(low, std::min(low + step + 1, last), before_next);
  }
  flush();
}

}  // namespace stepscope::viewer
