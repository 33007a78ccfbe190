// UTF-8 validation and repair shared by every reader: U+FFFD for each offending byte (utf8.h).
#include "profiler/formats/common/utf8.h"

namespace stepscope::trace {

size_t Utf8SequenceLength(std::string_view text, size_t at) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  const unsigned char c = bytes[at];
  const size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (length <= 1) return length;
  if (at + length > size) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((bytes[at + k] & 0xC0) != 0x80) return 0;
  }
  if (length == 2) return c >= 0xC2 ? 2 : 0;  // C0, C1: overlong forms of ASCII
  if (length == 3) {
    const unsigned cp = ((c & 0x0Fu) << 12) | ((bytes[at + 1] & 0x3Fu) << 6) | (bytes[at + 2] & 0x3Fu);
    return cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF) ? 3 : 0;  // not overlong, not a surrogate
  }
  const unsigned cp = ((c & 0x07u) << 18) | ((bytes[at + 1] & 0x3Fu) << 12) | ((bytes[at + 2] & 0x3Fu) << 6) |
                      (bytes[at + 3] & 0x3Fu);
  return cp >= 0x10000 && cp <= 0x10FFFF ? 4 : 0;
}

int64_t CountInvalidUtf8Bytes(std::string_view text) {
  int64_t invalid = 0;
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {  // ASCII runs dominate real names
      ++i;
      continue;
    }
    const size_t length = Utf8SequenceLength(text, i);
    if (length == 0) {
      ++invalid;
      ++i;
    } else {
      i += length;
    }
  }
  return invalid;
}

bool IsValidUtf8(std::string_view text) { return CountInvalidUtf8Bytes(text) == 0; }

std::string RepairUtf8(std::string_view text, int64_t* replaced) {
  const int64_t invalid = CountInvalidUtf8Bytes(text);
  if (replaced != nullptr) *replaced = invalid;
  if (invalid == 0) return std::string(text);
  std::string out;
  out.reserve(text.size() + static_cast<size_t>(invalid) * (kUtf8Replacement.size() - 1));
  for (size_t i = 0; i < text.size();) {
    const size_t length = Utf8SequenceLength(text, i);
    if (length == 0) {
      out.append(kUtf8Replacement);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

size_t Utf8OriginalOffset(std::string_view original, size_t repaired_offset) {
  size_t repaired = 0;
  size_t i = 0;
  while (i < original.size()) {
    const size_t length = Utf8SequenceLength(original, i);
    const size_t produced = length == 0 ? kUtf8Replacement.size() : length;
    if (repaired + produced > repaired_offset) return i;
    repaired += produced;
    i += length == 0 ? 1 : length;
  }
  return original.size() + (repaired_offset - repaired);
}

}  // namespace stepscope::trace
