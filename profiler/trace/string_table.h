// Interned strings of a Trace: every name is stored once and referred to by a 32-bit id, which
// keeps slices small and makes name comparison an integer compare.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stepscope::trace {

using StringId = uint32_t;

class StringTable {
 public:
  StringTable();  // id 0 is always the empty string
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;

  StringId Intern(std::string_view text);
  // Returns the id of `text` if it was interned, or -1 (as int64) when it never was.
  int64_t Find(std::string_view text) const;
  std::string_view Get(StringId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }

 private:
  std::deque<std::string> storage_;          // stable addresses for the views below
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, StringId> index_;
};

}  // namespace stepscope::trace
