// The compressed StepStats payload of a Trace (node_store.h), read block by block on demand.
#include "profiler/formats/step_stats/node_store.h"

#include <zstd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "base/check.h"
#include "base/free_storage.h"
#include "profiler/formats/common/varint.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

// Big enough for the compressor to find the repetition between nodes (names, labels, allocator
// names), small enough that reading one block back for the details pane takes well under 1 ms.
constexpr size_t kBlockTargetBytes = 32 * 1024;

uint32_t FieldsOf(const tf::NodeExecStats& node) {
  uint32_t fields = 0;
  if (node.output_size() > 0) fields |= kNodeOutputs;
  if (node.memory_size() > 0) fields |= kNodeMemory;
  if (node.has_memory_stats()) fields |= kNodeMemoryStats;
  if (!node.timeline_label().empty()) fields |= kNodeLabel;
  if (node.has_kernel()) fields |= kNodeKernel;
  if (node.has_memcpy()) fields |= kNodeMemcpy;
  if (node.has_collective()) fields |= kNodeCollective;
  if (node.correlation_id() != 0) fields |= kNodeCorrelation;
  if (node.input_tensor_size() > 0) fields |= kNodeInputTensors;
  return fields;
}

// zstd level 1: on node records as small as deflate level 1 (2.6 times smaller on the
// synthetic trace of trace_benchmark), and there 2.4 times as fast to compress and 3 times as
// fast to read back, which keeping the detail of a binary trace is mostly about.
constexpr int kCompressionLevel = 1;

struct CompressContext {
  CompressContext() : context(ZSTD_createCCtx()) { STEPSCOPE_CHECK(context != nullptr); }
  ~CompressContext() { ZSTD_freeCCtx(context); }
  CompressContext(const CompressContext&) = delete;
  CompressContext& operator=(const CompressContext&) = delete;
  ZSTD_CCtx* context;
  std::string input;    // a block's bytes gathered
  std::string scratch;  // compressed
};

std::string Compress(const std::string& plain, CompressContext& compress) {
  compress.scratch.resize(ZSTD_compressBound(plain.size()));
  const size_t size = ZSTD_compressCCtx(compress.context, compress.scratch.data(), compress.scratch.size(),
                                        plain.data(), plain.size(), kCompressionLevel);
  STEPSCOPE_CHECK(!ZSTD_isError(size));
  return std::string(compress.scratch.data(), size);  // exactly as large as it needs
}

bool Decompress(const std::string& compressed, ZSTD_DCtx* context, std::string& plain) {
  const unsigned long long size = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) return false;
  plain.resize(size);
  const size_t got = ZSTD_decompressDCtx(context, plain.data(), plain.size(), compressed.data(), compressed.size());
  return !ZSTD_isError(got) && got == size;
}

// Compresses blocks while the writer goes on collecting them: helper threads take each block as
// it is handed over, and the collecting thread compresses the oldest waiting block itself when
// more than `max_waiting_bytes` wait. So a bounded amount of plain blocks is held at a time, not a
// plain copy of every node (the size of the input) until the end, and the compression runs
// beside the collecting.
class BlockCompressor {
 public:
  BlockCompressor(std::vector<std::string>& compressed, size_t max_waiting_bytes)
      : compressed_(compressed), max_waiting_bytes_(max_waiting_bytes) {}
  // Without Finish (the scan declined the input): what waits is dropped, the helpers stop.
  ~BlockCompressor() {
    std::unique_lock lock(mutex_);
    waiting_.clear();
    finished_ = true;
    ready_.notify_all();
    lock.unlock();
    for (std::thread& helper : helpers_) {
      if (helper.joinable()) helper.join();
    }
  }
  BlockCompressor(const BlockCompressor&) = delete;
  BlockCompressor& operator=(const BlockCompressor&) = delete;

  // Block i is the i-th added: `header`, then `plain`, then each of `borrowed` as a varint length
  // and its bytes, compressed as one; its compressed bytes land in compressed[i]. The bytes
  // `borrowed` points at must stay until Finish.
  void Add(std::string header, std::string plain, std::vector<std::string_view> borrowed) {
    std::unique_lock lock(mutex_);
    const size_t index = done_.size();
    done_.emplace_back();
    waiting_.push_back({index, std::move(header), std::move(plain), std::move(borrowed)});
    waiting_bytes_ += waiting_.back().HeldBytes();
    if (helpers_.empty() && done_.size() >= kBlocksBeforeHelpers) StartHelpers();
    if (waiting_bytes_ > max_waiting_bytes_ || helpers_.empty()) {
      CompressOldest(own_, lock);
    } else {
      ready_.notify_one();
    }
  }

  // Compresses what still waits (the helpers too) and moves the blocks into `compressed`.
  void Finish() {
    std::unique_lock lock(mutex_);
    if (finished_) return;
    finished_ = true;
    ready_.notify_all();
    while (!waiting_.empty()) CompressOldest(own_, lock);
    lock.unlock();
    for (std::thread& helper : helpers_) helper.join();
    helpers_.clear();
    compressed_.assign(std::make_move_iterator(done_.begin()), std::make_move_iterator(done_.end()));
    done_.clear();
  }

 private:
  // Helpers only pay for themselves past a few blocks (a small trace compresses in microseconds).
  static constexpr size_t kBlocksBeforeHelpers = 8;

  struct Waiting {
    size_t index;
    std::string header, plain;
    std::vector<std::string_view> borrowed;
    size_t HeldBytes() const {
      return header.capacity() + plain.capacity() + borrowed.capacity() * sizeof(std::string_view);
    }
  };

  void StartHelpers() {
    const size_t helpers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4) - 1;
    for (size_t h = 0; h < helpers; ++h) helpers_.emplace_back([this] { Help(); });
  }

  void Help() {
    CompressContext context;
    std::unique_lock lock(mutex_);
    for (;;) {
      ready_.wait(lock, [&] { return finished_ || !waiting_.empty(); });
      if (waiting_.empty()) return;
      CompressOldest(context, lock);
    }
  }

  // Takes the oldest waiting block and compresses it with the lock released.
  void CompressOldest(CompressContext& context, std::unique_lock<std::mutex>& lock) {
    Waiting block = std::move(waiting_.front());
    waiting_.pop_front();
    waiting_bytes_ -= block.HeldBytes();
    lock.unlock();
    // Gathered here, off the collecting thread (the wire scan hands over views of its input).
    std::string& input = context.input;
    input.assign(block.header);
    input.append(block.plain);
    for (std::string_view node : block.borrowed) {
      AppendVarint(input, node.size());
      input.append(node);
    }
    const size_t index = block.index;
    block = Waiting{};
    std::string compressed = Compress(input, context);
    lock.lock();
    done_[index] = std::move(compressed);  // a deque: the slots stay put as it grows
  }

  std::vector<std::string>& compressed_;
  const size_t max_waiting_bytes_;
  size_t waiting_bytes_ = 0;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Waiting> waiting_;
  std::deque<std::string> done_;
  bool finished_ = false;
  std::vector<std::thread> helpers_;
  CompressContext own_;  // the collecting thread's
};

// One block being filled: its entries, either as the store keeps them (`plain`, built from
// parsed nodes) or as views of the wire scan's input (`borrowed`, gathered by the compressing
// thread), and the node index of each.
struct OpenBlock {
  std::string plain;
  std::vector<std::string_view> borrowed;
  std::vector<uint32_t> nodes;
  size_t bytes = 0;                 // its entries' size as the store keeps them
  uint32_t device = 0;
  uint32_t fields = 0;              // NodeField bits of its nodes
  uint32_t run_entries = 0;         // nodes with no fields at its end
  size_t run_starts_at = 0;         // where that run starts in plain
  size_t bytes_before_run = 0;      // its size without that run
  uint32_t fields_before_run = 0;   // its fields without that run
  uint64_t key = 0;                 // NodeStoreWriter: (device, thread)
  uint64_t last_use = 0;            // NodeStoreWriter: when a node last went in
};

// Hands full blocks to the compressor and numbers their entries in that order.
class BlockWriter {
 public:
  BlockWriter(std::vector<std::string>& blocks, std::vector<uint32_t>& first_entry, std::vector<uint32_t>& fields,
              std::vector<uint32_t>& devices, size_t max_waiting_bytes)
      : compressor_(blocks, max_waiting_bytes), first_entry_(first_entry), fields_(fields), devices_(devices) {}

  // Appends a node to `block`, handing the block over when it is full. A long run of nodes with
  // none of the NodeField fields (GPU kernel records) gets blocks of its own, so a pass that
  // needs none skips them even when a copy record sits beside them on their stream.
  // `borrow`: keep a view of `bytes` (valid until Finish) rather than a copy.
  // `on_flush(device, node, entry)` hears the entry of each node handed over.
  template <typename OnFlush>
  void Add(OpenBlock& block, uint32_t node, std::string_view bytes, uint32_t fields, bool borrow, OnFlush on_flush) {
    if (fields != 0 && block.run_entries >= kLongRun) Flush(block, on_flush);  // the run alone
    if (fields == 0 && block.run_entries == 0) {
      block.run_starts_at = block.plain.size();
      block.bytes_before_run = block.bytes;
      block.fields_before_run = block.fields;
    }
    if (borrow) {
      block.borrowed.push_back(bytes);
    } else {
      AppendVarint(block.plain, bytes.size());
      block.plain.append(bytes);
    }
    block.bytes += bytes.size() + VarintSize(bytes.size());
    block.nodes.push_back(node);
    block.fields |= fields;
    block.run_entries = fields == 0 ? block.run_entries + 1 : 0;
    if (block.run_entries == kLongRun && block.nodes.size() > kLongRun) SplitBeforeRun(block, on_flush);
    if (block.bytes >= kBlockTargetBytes) Flush(block, on_flush);
  }

  // Hands `block` over (nothing when it is empty) and leaves it empty.
  template <typename OnFlush>
  void Flush(OpenBlock& block, OnFlush on_flush) {
    if (block.nodes.empty()) return;
    const uint32_t first = next_entry_;
    first_entry_.push_back(first);
    fields_.push_back(block.fields);
    devices_.push_back(block.device);
    std::string header;
    int64_t previous = 0;
    for (size_t k = 0; k < block.nodes.size(); ++k) {
      const int64_t node = block.nodes[k];
      AppendVarint(header, ZigZagEncode(node - previous));
      previous = node;
      on_flush(block.device, block.nodes[k], first + static_cast<uint32_t>(k));
    }
    next_entry_ += static_cast<uint32_t>(block.nodes.size());
    compressor_.Add(std::move(header), std::move(block.plain), std::move(block.borrowed));
    block.plain = std::string();
    block.borrowed = {};
    block.nodes.clear();
    block.bytes = 0;
    block.fields = 0;
    block.run_entries = 0;
  }

  // Hands the rest over and waits for the compression of all.
  void Finish() {
    first_entry_.push_back(next_entry_);
    compressor_.Finish();
  }

  uint32_t entries() const { return next_entry_; }

 private:
  // The block holds other nodes, then kLongRun nodes with no fields: the others are handed over
  // and the run goes on in the block alone.
  template <typename OnFlush>
  void SplitBeforeRun(OpenBlock& block, OnFlush on_flush) {
    const uint32_t run_entries = block.run_entries;
    const size_t run_bytes = block.bytes - block.bytes_before_run;
    std::string run = block.plain.substr(block.run_starts_at);
    std::vector<std::string_view> run_borrowed;
    if (!block.borrowed.empty()) {
      run_borrowed.assign(block.borrowed.end() - run_entries, block.borrowed.end());
      block.borrowed.resize(block.borrowed.size() - run_entries);
    }
    std::vector<uint32_t> run_nodes(block.nodes.end() - run_entries, block.nodes.end());
    block.plain.resize(block.run_starts_at);
    block.nodes.resize(block.nodes.size() - run_entries);
    block.fields = block.fields_before_run;
    Flush(block, on_flush);
    block.plain = std::move(run);
    block.borrowed = std::move(run_borrowed);
    block.nodes = std::move(run_nodes);
    block.bytes = run_bytes;
    block.run_entries = run_entries;
    block.run_starts_at = 0;
    block.bytes_before_run = 0;
    block.fields_before_run = 0;
  }

  static constexpr uint32_t kLongRun = 16;

  BlockCompressor compressor_;
  std::vector<uint32_t>& first_entry_;
  std::vector<uint32_t>& fields_;
  std::vector<uint32_t>& devices_;
  uint32_t next_entry_ = 0;
};

// What the collecting thread lets wait before it compresses a block itself. Building from a
// parsed RunMetadata is all compression: a few blocks suffice. The wire scan hands blocks over
// faster than one helper compresses them (about 600 against 400 MB/s here) and has its import
// still to do, during which the helper catches up; its blocks are views of the input (16 bytes
// a node, about 7 KB a block of the synthetic trace), so 32 MB of them let the scan go on alone
// through a file of several hundred MB.
constexpr size_t kMaxWaitingBehindBuild = 8 * kBlockTargetBytes;
constexpr size_t kMaxWaitingBehindScan = size_t{32} << 20;

}  // namespace

std::shared_ptr<const NodeStore> NodeStore::Build(tf::RunMetadata& metadata, std::span<const NodeRef> slice_refs,
                                                  std::vector<uint32_t>* entry_of_slice) {
  auto store = std::make_shared<NodeStore>();
  auto* step = metadata.mutable_step_stats();
  store->device_node_counts_.reserve(static_cast<size_t>(step->dev_stats_size()));
  for (const auto& device : step->dev_stats()) {
    store->device_node_counts_.push_back(static_cast<uint32_t>(device.node_stats_size()));
  }
  std::vector<std::vector<bool>> stored(store->device_node_counts_.size());
  for (size_t d = 0; d < stored.size(); ++d) stored[d].assign(store->device_node_counts_[d], false);
  auto valid = [&](NodeRef ref) {
    return ref.valid() && ref.device < stored.size() && ref.node < stored[ref.device].size();
  };

  // Entries in slice order (entry k = k-th valid ref), then the nodes no slice points at; a block
  // holds one device's nodes, so a pass that needs none of a device (TensorFlow's /stream:all and
  // /memcpy repeats, which exporters skip) decompresses none of its blocks.
  entry_of_slice->clear();
  const bool dense = std::all_of(slice_refs.begin(), slice_refs.end(), valid);
  if (!dense) entry_of_slice->assign(slice_refs.size(), NodeRef::kNone);
  BlockWriter writer(store->blocks_, store->block_first_entry_, store->block_fields_, store->block_devices_,
                     kMaxWaitingBehindBuild);
  OpenBlock block;
  uint32_t entries = 0;
  std::string bytes;
  auto ignore = [](uint32_t, uint32_t, uint32_t) {};
  auto add = [&](NodeRef ref) {
    if (ref.device != block.device) writer.Flush(block, ignore);
    block.device = ref.device;
    const tf::NodeExecStats& node = step->dev_stats(static_cast<int>(ref.device)).node_stats(static_cast<int>(ref.node));
    bytes.clear();
    node.AppendToString(&bytes);
    writer.Add(block, ref.node, bytes, FieldsOf(node), /*borrow=*/false, ignore);
    stored[ref.device][ref.node] = true;
    ++entries;
  };
  for (size_t s = 0; s < slice_refs.size(); ++s) {
    const NodeRef ref = slice_refs[s];
    if (!valid(ref)) continue;
    if (!dense) (*entry_of_slice)[s] = entries;
    add(ref);
  }
  for (uint32_t d = 0; d < stored.size(); ++d) {
    for (uint32_t n = 0; n < stored[d].size(); ++n) {
      if (!stored[d][n]) add(NodeRef{d, n});
    }
  }
  writer.Flush(block, ignore);
  writer.Finish();
  store->entry_count_ = writer.entries();
  store->blocks_.shrink_to_fit();
  for (auto& device : *step->mutable_dev_stats()) device.clear_node_stats();
  metadata.SerializeToString(&store->rest_);
  store->rest_.shrink_to_fit();
  return store;
}

struct NodeStoreWriter::State {
  explicit State(size_t node_count)
      : store(std::make_shared<NodeStore>()),
        writer(store->blocks_, store->block_first_entry_, store->block_fields_, store->block_devices_,
               kMaxWaitingBehindScan),
        entry_of_node(node_count, NodeRef::kNone) {}

  // Open blocks held at most (32 KB each); past them the least recently used is handed over.
  static constexpr size_t kMaxOpenBlocks = 64;

  // Records each handed-over node's entry.
  auto record() {
    return [this](uint32_t device, uint32_t node, uint32_t entry) { entry_of_node[device_first[device] + node] = entry; };
  }

  OpenBlock& BlockFor(uint64_t key, uint32_t device) {
    ++uses;
    if (last != nullptr && last->key == key) {
      last->last_use = uses;
      return *last;
    }
    OpenBlock* oldest = nullptr;
    for (OpenBlock& block : open) {
      if (block.key == key) {
        oldest = &block;
        break;
      }
      if (oldest == nullptr || block.last_use < oldest->last_use) oldest = &block;
    }
    if (oldest == nullptr || oldest->key != key) {
      if (open.size() < kMaxOpenBlocks) {
        oldest = &open.emplace_back();  // a deque: the others stay put
      } else {
        writer.Flush(*oldest, record());
      }
      oldest->key = key;
      oldest->device = device;
    }
    oldest->last_use = uses;
    last = oldest;
    return *oldest;
  }

  std::shared_ptr<NodeStore> store;
  BlockWriter writer;
  std::deque<OpenBlock> open;
  OpenBlock* last = nullptr;
  uint64_t uses = 0;
  std::vector<uint32_t> device_first;  // global index of each device's first node
  std::vector<uint32_t> entry_of_node;
};

NodeStoreWriter::NodeStoreWriter(size_t node_count) : state_(std::make_unique<State>(node_count)) {}
NodeStoreWriter::~NodeStoreWriter() = default;

void NodeStoreWriter::Add(uint32_t device, uint32_t node, uint32_t global_node, uint32_t thread,
                          std::string_view bytes, uint32_t fields) {
  State& state = *state_;
  STEPSCOPE_CHECK(global_node < state.entry_of_node.size() && node <= global_node);
  if (device >= state.device_first.size()) state.device_first.resize(device + 1, 0);
  state.device_first[device] = global_node - node;
  OpenBlock& block = state.BlockFor(uint64_t{device} << 32 | thread, device);
  state.writer.Add(block, node, bytes, fields, /*borrow=*/true, state.record());
}

std::shared_ptr<const NodeStore> NodeStoreWriter::Finish(std::string rest, std::span<const uint32_t> device_first_node,
                                                         std::span<const NodeRef> slice_refs,
                                                         std::vector<uint32_t>* entry_of_slice) {
  State& state = *state_;
  for (OpenBlock& block : state.open) state.writer.Flush(block, state.record());
  state.open.clear();
  state.last = nullptr;
  state.writer.Finish();
  NodeStore& store = *state.store;
  store.entry_count_ = state.writer.entries();
  store.blocks_.shrink_to_fit();
  store.rest_ = std::move(rest);
  store.rest_.shrink_to_fit();
  for (size_t d = 0; d + 1 < device_first_node.size(); ++d) {
    store.device_node_counts_.push_back(device_first_node[d + 1] - device_first_node[d]);
  }
  // Each slice's entry from its node's (entries were numbered as the blocks filled); none at all
  // when entry = slice throughout.
  const std::vector<uint32_t>& entry_of_node = state.entry_of_node;
  const size_t devices = store.device_node_counts_.size();
  auto entry_of = [&](NodeRef ref) {
    if (!ref.valid() || ref.device >= devices || ref.node >= store.device_node_counts_[ref.device]) {
      return NodeRef::kNone;
    }
    return entry_of_node[size_t{device_first_node[ref.device]} + ref.node];
  };
  entry_of_slice->resize(slice_refs.size());
  bool identity = true;
  for (size_t s = 0; s < slice_refs.size(); ++s) {
    (*entry_of_slice)[s] = entry_of(slice_refs[s]);
    identity = identity && (*entry_of_slice)[s] == s;
  }
  if (identity) FreeStorage(*entry_of_slice);
  return std::move(state.store);
}

size_t NodeStore::memory_bytes() const {
  size_t bytes = sizeof(*this) + rest_.capacity() + device_node_counts_.capacity() * sizeof(uint32_t) +
                 blocks_.capacity() * sizeof(std::string) + block_first_entry_.capacity() * sizeof(uint32_t) +
                 block_fields_.capacity() * sizeof(uint32_t) + block_devices_.capacity() * sizeof(uint32_t);
  for (const std::string& block : blocks_) bytes += block.capacity();
  return bytes;
}

size_t NodeStore::BlockOf(uint32_t entry) const {
  auto it = std::upper_bound(block_first_entry_.begin(), block_first_entry_.end(), entry);
  return static_cast<size_t>(it - block_first_entry_.begin()) - 1;
}

std::shared_ptr<tf::RunMetadata> NodeStore::Rebuild() const {
  // What Build serialised parses back; a failure (never seen) yields null rather than a crash.
  auto metadata = std::make_shared<tf::RunMetadata>();
  if (!metadata->ParseFromString(rest_)) return nullptr;
  auto* step = metadata->mutable_step_stats();
  if (static_cast<size_t>(step->dev_stats_size()) != device_node_counts_.size()) return nullptr;
  for (int d = 0; d < step->dev_stats_size(); ++d) {
    auto* nodes = step->mutable_dev_stats(d)->mutable_node_stats();
    nodes->Reserve(static_cast<int>(device_node_counts_[static_cast<size_t>(d)]));
    for (uint32_t n = 0; n < device_node_counts_[static_cast<size_t>(d)]; ++n) nodes->Add();
  }
  // Entry by entry (each block read once), each node to its place.
  Reader reader(*this);
  for (uint32_t entry = 0; entry < entry_count_; ++entry) {
    const NodeRef ref = reader.Ref(entry);
    if (!ref.valid() || ref.device >= device_node_counts_.size() || ref.node >= device_node_counts_[ref.device]) {
      return nullptr;
    }
    auto* node = step->mutable_dev_stats(static_cast<int>(ref.device))->mutable_node_stats(static_cast<int>(ref.node));
    if (!reader.ParseInto(entry, node)) return nullptr;
  }
  return metadata;
}

struct NodeStore::Reader::DecompressContext {
  DecompressContext() : context(ZSTD_createDCtx()) { STEPSCOPE_CHECK(context != nullptr); }
  ~DecompressContext() { ZSTD_freeDCtx(context); }
  DecompressContext(const DecompressContext&) = delete;
  DecompressContext& operator=(const DecompressContext&) = delete;
  ZSTD_DCtx* context;
};

NodeStore::Reader::Reader(const NodeStore& store, uint32_t needed_fields)
    : store_(store),
      needed_fields_(needed_fields),
      node_(std::make_unique<tf::NodeExecStats>()),
      decompress_(std::make_unique<DecompressContext>()) {}
NodeStore::Reader::~Reader() = default;

bool NodeStore::Reader::LoadBlock(size_t block) {
  ++uses_;
  if (current_ != nullptr && current_->block == block) {
    current_->last_use = uses_;
    return true;
  }
  current_ = nullptr;
  Decompressed* slot = nullptr;
  for (Decompressed& cached : cache_) {
    if (cached.block == block) {
      cached.last_use = uses_;
      current_ = &cached;
      return true;
    }
    if (slot == nullptr || cached.last_use < slot->last_use) slot = &cached;
  }
  if (cache_.size() < kCachedBlocks) {
    cache_.reserve(kCachedBlocks);  // never moved: no reallocation after this
    slot = &cache_.emplace_back();
  }
  slot->block = SIZE_MAX;
  slot->spans.clear();
  if (!Decompress(store_.blocks_[block], decompress_->context, slot->plain)) return false;
  const std::string_view plain = slot->plain;
  const uint32_t entries = store_.block_first_entry_[block + 1] - store_.block_first_entry_[block];
  slot->nodes.clear();
  size_t at = 0;
  uint64_t value = 0;
  int64_t node = 0;
  for (uint32_t e = 0; e < entries; ++e) {
    if (!ReadVarint(plain, at, value)) return false;
    node += ZigZagDecode(value);
    if (node < 0 || node > UINT32_MAX) return false;
    slot->nodes.push_back(static_cast<uint32_t>(node));
  }
  for (uint32_t e = 0; e < entries; ++e) {
    if (!ReadVarint(plain, at, value) || value > plain.size() - at) return false;
    slot->spans.emplace_back(static_cast<uint32_t>(at), static_cast<uint32_t>(value));
    at += value;
  }
  slot->block = block;
  slot->last_use = uses_;
  current_ = slot;
  return true;
}

std::string_view NodeStore::Reader::EntryBytes(uint32_t entry) {
  const size_t block = store_.BlockOf(entry);
  if (!LoadBlock(block)) return {};
  const auto [begin, size] = current_->spans[entry - store_.block_first_entry_[block]];
  return std::string_view(current_->plain).substr(begin, size);
}

NodeRef NodeStore::Reader::Ref(uint32_t entry) {
  if (entry >= store_.entry_count_) return {};
  const size_t block = store_.BlockOf(entry);
  if (!LoadBlock(block)) return {};
  return NodeRef{store_.block_devices_[block], current_->nodes[entry - store_.block_first_entry_[block]]};
}

bool NodeStore::Reader::ParseInto(uint32_t entry, tf::NodeExecStats* node) {
  if (entry >= store_.entry_count_) return false;
  const std::string_view bytes = EntryBytes(entry);
  if (bytes.data() == nullptr) return false;
  return node->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

std::string_view NodeStore::Reader::Bytes(uint32_t entry) {
  if (entry >= store_.entry_count_) return {};
  if ((store_.block_fields_[store_.BlockOf(entry)] & needed_fields_) == 0 && needed_fields_ != kNodeAnyField) {
    return {};
  }
  return EntryBytes(entry);
}

const tf::NodeExecStats* NodeStore::Reader::Get(uint32_t entry) {
  if (entry >= store_.entry_count_) return nullptr;
  if ((store_.block_fields_[store_.BlockOf(entry)] & needed_fields_) == 0 && needed_fields_ != kNodeAnyField) {
    return nullptr;
  }
  node_->Clear();
  return ParseInto(entry, node_.get()) ? node_.get() : nullptr;
}

}  // namespace stepscope::trace
