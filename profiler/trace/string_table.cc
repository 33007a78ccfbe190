#include "profiler/trace/string_table.h"

namespace stepscope::trace {

StringTable::StringTable() { Intern(""); }

StringId StringTable::Intern(std::string_view text) {
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  storage_.emplace_back(text);
  const std::string_view stored = storage_.back();
  const auto id = static_cast<StringId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  return id;
}

int64_t StringTable::Find(std::string_view text) const {
  auto it = index_.find(text);
  return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
}

}  // namespace stepscope::trace
