// The StepStats payload of a Trace: TensorFlow's per-op records, kept for the StepStats writers,
// merging and DetailReader (slice_details.h), which turns them into the typed details every
// other consumer reads (analyses and the viewer include no TensorFlow header). Kept compact:
// every NodeExecStats serialised and compressed (zstd) in blocks of about 32 KB, and the rest of
// the RunMetadata (devices, thread names, graphs, session) serialised once. A block holds the
// nodes of one device that a pass over the slices visits together, so such a pass decompresses
// each block about once:
//  - built from a parsed RunMetadata (NodeStore::Build), entries are in slice order;
//  - streamed from binary input (NodeStoreWriter, during the wire scan), a block holds one source
//    thread's nodes in file order (a thread's slices form one track and its lanes), and each
//    block is compressed on a helper thread while the scan and the import go on. The nodes are
//    the bytes they are in the file: no parse and no serialisation.
// A parsed RunMetadata costs about 420 bytes per node; this costs 15-40, and one node is parsed
// back on demand (details pane, analyses that need outputs or allocation records, pb export).
//
// Invariants: entries are immutable once built; entry k lives in the block b with
// block_first_entry_[b] <= k < block_first_entry_[b + 1]; a decompressed block is the index (in
// its device's node_stats) of each of its nodes, as zigzag varint differences from the one
// before, then each entry as a varint length followed by that many bytes of NodeExecStats wire
// format. Every node of the source is stored exactly once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/trace/node_ref.h"

namespace stepscope::tf {
class RunMetadata;
class NodeExecStats;
}  // namespace stepscope::tf

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
  kNodeInputTensors = 1u << 8,  // input_tensor
  kNodeAnyField = 0xffffffffu,
};

class NodeStoreWriter;

class NodeStore {
 public:
  // Stores the nodes `slice_refs` point at, in that order (entry k = k-th valid ref), then every
  // node no slice points at. `entry_of_slice` gets the entry of each slice, or stays empty when
  // every slice has a node (entry = slice index).
  // Takes the nodes out of `metadata` (its node_stats are cleared).
  static std::shared_ptr<const NodeStore> Build(tf::RunMetadata& metadata,
                                                std::span<const NodeRef> slice_refs,
                                                std::vector<uint32_t>* entry_of_slice);

  size_t entry_count() const { return entry_count_; }
  size_t block_count() const { return blocks_.size(); }
  // Bytes held (compressed blocks, the serialised rest, indices), for memory reports and tests.
  size_t memory_bytes() const;

  // The RunMetadata without its node_stats, serialised (devices, thread names, graphs, session).
  const std::string& rest() const { return rest_; }
  // The whole RunMetadata again, node order as in the source; null when a stored block does not
  // read back (never for a store built here).
  std::shared_ptr<tf::RunMetadata> Rebuild() const;

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
    // Where the entry's node is in the source RunMetadata (invalid when the entry does not exist).
    NodeRef Ref(uint32_t entry);
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
      std::vector<uint32_t> nodes;                       // node index (in its device) of each entry
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
  friend class NodeStoreWriter;
  size_t BlockOf(uint32_t entry) const;

  std::string rest_;                          // RunMetadata without node_stats, serialised
  std::vector<uint32_t> device_node_counts_;  // node_stats size of each dev_stats
  std::vector<std::string> blocks_;           // compressed entries
  std::vector<uint32_t> block_first_entry_;   // size blocks + 1
  std::vector<uint32_t> block_fields_;        // NodeField bits present in each block
  std::vector<uint32_t> block_devices_;       // the dev_stats index of each block's nodes
  size_t entry_count_ = 0;
};

// Builds a store from nodes handed over one by one as the binary input is read (the wire scan),
// each as its own serialised bytes. Nodes of one source thread of one device share blocks; a
// full block is compressed on a helper thread while the caller goes on, and Finish waits for
// what is left.
class NodeStoreWriter {
 public:
  // `node_count`: the nodes that will be added (node indices below it).
  explicit NodeStoreWriter(size_t node_count);
  ~NodeStoreWriter();
  NodeStoreWriter(const NodeStoreWriter&) = delete;
  NodeStoreWriter& operator=(const NodeStoreWriter&) = delete;

  // Node `node` of dev_stats `device` (`global_node`: its index over all devices, < node_count),
  // recorded on `thread`, as NodeExecStats wire bytes with its NodeField bits. The writer keeps a
  // view of `bytes` (the scan's input), which must stay valid until Finish.
  void Add(uint32_t device, uint32_t node, uint32_t global_node, uint32_t thread, std::string_view bytes,
           uint32_t fields);

  // The store, with `rest` (the RunMetadata without node_stats, serialised);
  // `device_first_node[d]` is the global index of device d's first node (size devices + 1).
  // `entry_of_slice` gets the entry of each of `slice_refs`, or stays empty when entry = slice
  // for every slice (as NodeStore::Build).
  std::shared_ptr<const NodeStore> Finish(std::string rest, std::span<const uint32_t> device_first_node,
                                          std::span<const NodeRef> slice_refs, std::vector<uint32_t>* entry_of_slice);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace stepscope::trace
