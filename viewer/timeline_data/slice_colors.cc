// Stable slice colours (slice_colors.h): an FNV-1a hash of the op type turned into a hue.
#include "viewer/timeline_data/slice_colors.h"

#include <cmath>

namespace stepscope::viewer {

uint32_t ColorForName(std::string_view name) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  const double hue = static_cast<double>(hash % 360);
  const double saturation = 0.45 + static_cast<double>((hash >> 16) % 20) / 100.0;  // 0.45..0.64
  const double lightness = 0.62 + static_cast<double>((hash >> 32) % 12) / 100.0;   // 0.62..0.73
  // HSL -> RGB.
  const double chroma = (1 - std::fabs(2 * lightness - 1)) * saturation;
  const double h = hue / 60.0;
  const double x = chroma * (1 - std::fabs(std::fmod(h, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (h < 1) { r = chroma; g = x; }
  else if (h < 2) { r = x; g = chroma; }
  else if (h < 3) { g = chroma; b = x; }
  else if (h < 4) { g = x; b = chroma; }
  else if (h < 5) { r = x; b = chroma; }
  else { r = chroma; b = x; }
  const double m = lightness - chroma / 2;
  auto channel = [&](double v) { return static_cast<uint32_t>(std::lround((v + m) * 255)) & 0xff; };
  return channel(r) << 16 | channel(g) << 8 | channel(b);
}

}  // namespace stepscope::viewer
