// Interned strings of a Trace: every name is stored once and referred to by a 32-bit id, which
// keeps slices small and makes name comparison an integer compare.
//
// Importers intern a name or two per event, so the lookup is on every import's hot path: an
// open-addressing table of (hash, id) pairs (8 bytes a slot, at most half full; one probe in
// the usual case, the text compared only on a hash match) and the texts packed into 64 KB
// chunks, instead of a node-based map and a heap string per text.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
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
  struct Slot {
    uint32_t hash = 0;         // the low 32 bits of the text's hash
    uint32_t id_plus_one = 0;  // 0: empty
  };
  static uint32_t HashOf(std::string_view text);
  // The slot holding `text`, or the empty slot where it would go.
  size_t SlotOf(std::string_view text, uint32_t hash) const;
  std::string_view Store(std::string_view text);
  void Grow();

  std::vector<std::unique_ptr<char[]>> chunks_;  // the texts; they never move
  char* chunk_free_ = nullptr;
  size_t chunk_left_ = 0;
  std::vector<std::string_view> views_;  // by id
  std::vector<Slot> slots_;              // size a power of two
};

}  // namespace stepscope::trace
