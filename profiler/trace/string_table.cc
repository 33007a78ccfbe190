// A Trace's interned strings (string_table.h): each stored once, named by a 32-bit id.
#include "profiler/trace/string_table.h"

#include <cstring>
#include <functional>

namespace stepscope::trace {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;
constexpr size_t kFirstSlots = 1024;

}  // namespace

StringTable::StringTable() : slots_(kFirstSlots) { Intern(""); }

uint32_t StringTable::HashOf(std::string_view text) {
  return static_cast<uint32_t>(std::hash<std::string_view>{}(text));
}

size_t StringTable::SlotOf(std::string_view text, uint32_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.id_plus_one == 0 || (slot.hash == hash && views_[slot.id_plus_one - 1] == text)) return i;
  }
}

StringId StringTable::Intern(std::string_view text) {
  const uint32_t hash = HashOf(text);
  const size_t at = SlotOf(text, hash);
  if (slots_[at].id_plus_one != 0) return slots_[at].id_plus_one - 1;
  const auto id = static_cast<StringId>(views_.size());
  views_.push_back(Store(text));
  slots_[at] = Slot{hash, id + 1};
  if (views_.size() * 2 > slots_.size()) Grow();
  return id;
}

int64_t StringTable::Find(std::string_view text) const {
  const Slot& slot = slots_[SlotOf(text, HashOf(text))];
  return slot.id_plus_one == 0 ? -1 : static_cast<int64_t>(slot.id_plus_one - 1);
}

std::string_view StringTable::Store(std::string_view text) {
  if (text.empty()) return std::string_view("", 0);  // a real pointer, as a std::string's
  if (text.size() > chunk_left_) {
    // A text longer than a quarter chunk gets a chunk of its own; the open chunk stays open.
    if (text.size() > kChunkBytes / 4) {
      chunks_.push_back(std::make_unique_for_overwrite<char[]>(text.size()));
      std::memcpy(chunks_.back().get(), text.data(), text.size());
      return {chunks_.back().get(), text.size()};
    }
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(kChunkBytes));
    chunk_free_ = chunks_.back().get();
    chunk_left_ = kChunkBytes;
  }
  std::memcpy(chunk_free_, text.data(), text.size());
  const std::string_view stored(chunk_free_, text.size());
  chunk_free_ += text.size();
  chunk_left_ -= text.size();
  return stored;
}

void StringTable::Grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.id_plus_one == 0) continue;
    size_t i = slot.hash & mask;
    while (slots_[i].id_plus_one != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

}  // namespace stepscope::trace
