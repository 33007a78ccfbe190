// Stable slice colours: a colour is a function of the op type's text only, so MatMul has the
// same colour in every trace, every run and every screenshot.
#pragma once

#include <cstdint>
#include <string_view>

namespace stepscope::viewer {

// 0xRRGGBB. Hue from an FNV-1a hash of the name; saturation and lightness fixed in a band that
// keeps black labels readable.
uint32_t ColorForName(std::string_view name);

}  // namespace stepscope::viewer
