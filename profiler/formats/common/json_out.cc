// The JSON emitter of the Chrome writers: numbers and escaped, UTF-8-repaired strings appended to
// one buffer (json_out.h).
#include "profiler/formats/common/json_out.h"

namespace stepscope::trace {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not valid.
size_t ValidUtf8Length(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  size_t length;
  uint32_t min;
  if (c >= 0xc2 && c <= 0xdf) {
    length = 2, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    length = 3, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    length = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  uint32_t code = c & (0xff >> (length + 1));
  for (size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xc0) != 0x80) return 0;
    code = (code << 6) | (next & 0x3f);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return length;
}

}  // namespace

void JsonOut::String(std::string_view text) {
  out_.push_back('"');
  size_t run_start = 0;
  auto flush = [&](size_t upto) {
    if (upto > run_start) out_.append(text.data() + run_start, upto - run_start);
  };
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const size_t length = ValidUtf8Length(text, i);
      if (length != 0) {
        i += length;
        continue;
      }
      flush(i);
      out_.append("\xEF\xBF\xBD");  // U+FFFD for a byte that is not UTF-8
      run_start = ++i;
      continue;
    }
    flush(i);
    switch (c) {
      case '"': out_.append("\\\""); break;
      case '\\': out_.append("\\\\"); break;
      case '\n': out_.append("\\n"); break;
      case '\t': out_.append("\\t"); break;
      case '\r': out_.append("\\r"); break;
      default: {
        static const char kHex[] = "0123456789abcdef";
        char escape[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out_.append(escape, 6);
      }
    }
    run_start = ++i;
  }
  flush(text.size());
  out_.push_back('"');
}

}  // namespace stepscope::trace
