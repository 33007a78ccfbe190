// UTF-8 repair shared by every trace reader: text that is not valid UTF-8 (a byte outside any
// well-formed sequence, an overlong form, a surrogate, a code point past U+10FFFF, a sequence cut
// short) gets U+FFFD REPLACEMENT CHARACTER for each offending byte, so names display, compare
// and serialise everywhere (protobuf refuses to parse proto3 strings that are not UTF-8, Qt and
// JSON writers mangle them). Readers count what they repaired in the trace's import stats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stepscope::trace {

// The UTF-8 encoding of U+FFFD.
inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";

// Length of the well-formed UTF-8 sequence starting at text[at] (1 to 4), or 0 when the byte
// there does not start one. `at` < text.size().
size_t Utf8SequenceLength(std::string_view text, size_t at);

bool IsValidUtf8(std::string_view text);

// Number of bytes of `text` that are not part of a well-formed sequence.
int64_t CountInvalidUtf8Bytes(std::string_view text);

// `text` with each invalid byte replaced by U+FFFD; `replaced` (optional) gets how many.
std::string RepairUtf8(std::string_view text, int64_t* replaced = nullptr);

// The offset in `original` of the byte at `repaired_offset` in RepairUtf8(original), so
// messages about repaired text can point into the file the user has.
size_t Utf8OriginalOffset(std::string_view original, size_t repaired_offset);

}  // namespace stepscope::trace
