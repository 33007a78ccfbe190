// The StepStats detail of a Trace, kept compact: every NodeExecStats serialised and compressed
// (zstd) in blocks of about 32 KB (in slice order, so a pass over the slices decompresses each
// block once),
// and the rest of the RunMetadata (devices, thread names, graphs, session) serialised once.
// Binary input gives its nodes as the bytes they are in the file (SerializedNodes): they are
// copied into the blocks with no parse and no serialisation.
// A parsed RunMetadata costs about 420 bytes per node; this costs 15-40, and one node is parsed
// back on demand (details pane, analyses that need outputs or allocation records, pb export).
//
// Invariants: entries are immutable after Build; entry k lives in the block b with
// block_first_entry_[b] <= k < block_first_entry_[b + 1]; inside a decompressed block each entry
// is a varint length followed by that many bytes of NodeExecStats wire format.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::trace {

// Fields a pass may need; a block none of whose nodes has any of them is not decompressed.
enum NodeField : uint32_t {
  kNodeOutputs = 1u << 0,       // output
  kNodeMemory = 1u << 1,        // memory (allocators, allocation records)
  kNodeMemoryStats = 1u << 2,   // memory_stats
  kNodeLabel = 1u << 3,         // timeline_label
  kNodeKernel = 1u << 4,        // kernel
  kNodeMemcpy = 1u << 5,        // memcpy
  kNodeCollective = 1u << 6,    // collective
  kNodeCorrelation = 1u << 7,   // correlation_id
  kNodeAnyField = 0xffffffffu,
};

// A step's nodes as wire bytes (a binary file's own: each NodeExecStats submessage is its
// serialisation), for NodeStore::Build.
struct SerializedNodes {
  struct Node {
    uint32_t offset = 0, size = 0;  // in `bytes`
    uint32_t fields = 0;            // NodeField bits
  };
  std::string_view bytes;                   // the input; it must outlive Build
  std::string rest;                         // the RunMetadata without node_stats, serialised
  std::vector<uint32_t> device_first_node;  // nodes of dev_stats d: [first[d], first[d + 1])
  std::vector<Node> nodes;                  // device by device
};

class NodeStore {
 public:
  // Stores the nodes `slice_refs` point at, in that order (entry k = k-th valid ref), then every
  // node no slice points at. `entry_of_slice` gets the entry of each slice, or stays empty when
  // every slice has a node (entry = slice index).
  // Takes the nodes out of `metadata` (its node_stats are cleared).
  static std::shared_ptr<const NodeStore> Build(tf::RunMetadata& metadata,
                                                std::span<const NodeRef> slice_refs,
                                                std::vector<uint32_t>* entry_of_slice);
  // The same from wire bytes; the stored entries parse to the same messages.
  static std::shared_ptr<const NodeStore> Build(const SerializedNodes& nodes,
                                                std::span<const NodeRef> slice_refs,
                                                std::vector<uint32_t>* entry_of_slice);

  size_t entry_count() const { return entry_count_; }
  size_t block_count() const { return blocks_.size(); }
  // Bytes held (compressed blocks, the serialised rest, indices), for memory reports and tests.
  size_t memory_bytes() const;

  // The whole RunMetadata again, node order as in the source. `slice_refs` and
  // `entry_of_slice` as given to (and produced by) Build.
  std::shared_ptr<tf::RunMetadata> Rebuild(std::span<const NodeRef> slice_refs,
                                           std::span<const uint32_t> entry_of_slice) const;

  // Reads entries; keeps the last few decompressed blocks, so reading in entry order decompresses
  // each block once, and so does a pass that moves between a few runs of entries (the Perfetto
  // writer visits a host's tracks in time order). Not shared between threads (each pass makes
  // its own).
  class Reader {
   public:
    explicit Reader(const NodeStore& store, uint32_t needed_fields = kNodeAnyField);
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;
    // The entry's node, valid until the next call; null when the block holds none of the
    // needed fields, or (never for a store Build made) when the entry does not parse.
    const tf::NodeExecStats* Get(uint32_t entry);
    // Parses the entry into `node` (all fields); false when it does not parse.
    bool ParseInto(uint32_t entry, tf::NodeExecStats* node);
    // The entry's NodeExecStats wire bytes, valid until the next call, for passes that walk a
    // few fields rather than parse them all; empty when the block holds none of the needed
    // fields (or the entry does not exist).
    std::string_view Bytes(uint32_t entry);

   private:
    bool LoadBlock(size_t block);
    std::string_view EntryBytes(uint32_t entry);

    const NodeStore& store_;
    uint32_t needed_fields_;
    struct Decompressed {
      size_t block = SIZE_MAX;
      uint64_t last_use = 0;
      std::string plain;                                 // the block read back
      std::vector<std::pair<uint32_t, uint32_t>> spans;  // (start, size) of each entry in plain
    };
    // At most kCachedBlocks (32 KB each); the least recently used is replaced.
    static constexpr size_t kCachedBlocks = 16;
    std::vector<Decompressed> cache_;
    Decompressed* current_ = nullptr;
    uint64_t uses_ = 0;
    std::unique_ptr<tf::NodeExecStats> node_;
    struct DecompressContext;
    std::unique_ptr<DecompressContext> decompress_;
  };

 private:
  // Entries in slice order, then the unreferenced nodes; `add(ref)` stores one node.
  template <typename AddNode>
  void StoreEntries(std::span<const NodeRef> slice_refs, std::vector<uint32_t>* entry_of_slice, AddNode add);
  size_t BlockOf(uint32_t entry) const;

  std::string rest_;                         // RunMetadata without node_stats, serialised
  std::vector<uint32_t> device_node_counts_;  // node_stats size of each dev_stats
  std::vector<std::string> blocks_;           // compressed entries
  std::vector<uint32_t> block_first_entry_;   // size blocks + 1
  std::vector<uint32_t> block_fields_;        // NodeField bits present in each block
  std::vector<NodeRef> unreferenced_;         // nodes of entries past the referenced ones
  size_t entry_count_ = 0;
};

// Reads the NodeExecStats of many slices, decompressing each stored block once when slices are
// visited in order. `needed_fields` (NodeField bits) lets a pass skip blocks where no node has
// what it looks for: Get() is then null for their slices. One reader per thread.
class NodeReader {
 public:
  explicit NodeReader(const Trace& trace, uint32_t needed_fields = 0xffffffffu);
  ~NodeReader();
  NodeReader(const NodeReader&) = delete;
  NodeReader& operator=(const NodeReader&) = delete;
  // Valid until the next call; null when the slice has no node.
  const tf::NodeExecStats* Get(uint32_t slice);
  // The slice's node as NodeExecStats wire bytes (NodeStore::Reader::Bytes); empty when none.
  std::string_view Bytes(uint32_t slice);

 private:
  const Trace& trace_;
  std::unique_ptr<NodeStore::Reader> reader_;
};

}  // namespace stepscope::trace
