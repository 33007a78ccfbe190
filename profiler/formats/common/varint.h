// Protobuf wire-format varints, for the readers and stores that walk or write encoded messages
// without a parser (format sniffing, UTF-8 repair, the node store's framing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stepscope::trace {

// The loop of ReadVarint for values of two bytes or more, out of line so that the one-byte
// case inlines everywhere (a scan reads several varints per field).
[[gnu::noinline]] inline bool ReadLongVarint(std::string_view bytes, size_t& pos, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && pos < bytes.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(bytes[pos++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Reads one varint at `pos` and advances it; false at the end of input or on overflow.
[[gnu::always_inline]] inline bool ReadVarint(std::string_view bytes, size_t& pos, uint64_t& value) {
  // One byte: tags, small numbers and short lengths, most of what a reader meets.
  if (pos < bytes.size() && static_cast<uint8_t>(bytes[pos]) < 0x80) {
    value = static_cast<uint8_t>(bytes[pos++]);
    return true;
  }
  return ReadLongVarint(bytes, pos, value);
}

// Bytes AppendVarint writes for `value`.
inline size_t VarintSize(uint64_t value) {
  size_t size = 1;
  for (; value >= 0x80; value >>= 7) ++size;
  return size;
}

// Signed values as varints that stay short near zero (protobuf's sint encoding).
inline uint64_t ZigZagEncode(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}
inline int64_t ZigZagDecode(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

inline void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

}  // namespace stepscope::trace
