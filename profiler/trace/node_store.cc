#include "profiler/trace/node_store.h"

#include <zstd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "base/check.h"
#include "profiler/trace/varint.h"
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
  std::string scratch;
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
// several wait. So a few plain blocks are held at a time, not a plain copy of every node (the
// size of the input) until the end, and the compression runs beside the collecting.
class BlockCompressor {
 public:
  explicit BlockCompressor(std::vector<std::string>& compressed) : compressed_(compressed) {}
  ~BlockCompressor() { Finish(); }
  BlockCompressor(const BlockCompressor&) = delete;
  BlockCompressor& operator=(const BlockCompressor&) = delete;

  // Block i is the i-th added; its compressed bytes land in compressed[i].
  void Add(std::string plain) {
    std::unique_lock lock(mutex_);
    const size_t index = done_.size();
    done_.emplace_back();
    waiting_.push_back({index, std::move(plain)});
    if (helpers_.empty() && done_.size() >= kBlocksBeforeHelpers) StartHelpers();
    if (waiting_.size() > kMaxWaiting || helpers_.empty()) {
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
    compressed_.assign(std::make_move_iterator(done_.begin()), std::make_move_iterator(done_.end()));
    done_.clear();
  }

 private:
  // Helpers only pay for themselves past a few blocks (a small trace compresses in microseconds).
  static constexpr size_t kBlocksBeforeHelpers = 8;
  // Plain blocks held at most (32 KB each) before the collecting thread compresses one.
  static constexpr size_t kMaxWaiting = 8;

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
    auto [index, plain] = std::move(waiting_.front());
    waiting_.pop_front();
    lock.unlock();
    std::string compressed = Compress(plain, context);
    lock.lock();
    done_[index] = std::move(compressed);  // a deque: the slots stay put as it grows
  }

  std::vector<std::string>& compressed_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<size_t, std::string>> waiting_;
  std::deque<std::string> done_;
  bool finished_ = false;
  std::vector<std::thread> helpers_;
  CompressContext own_;  // the collecting thread's
};

// Collects entries into blocks.
class BlockWriter {
 public:
  explicit BlockWriter(std::vector<std::string>& blocks, std::vector<uint32_t>& first_entry,
                       std::vector<uint32_t>& fields)
      : compressor_(blocks), first_entry_(first_entry), fields_(fields) {}

  // `device` is the node's dev_stats index: a block holds one device's nodes, so a pass that
  // needs none of a device (TensorFlow's /stream:all and /memcpy repeats, which exporters skip)
  // decompresses none of its blocks.
  // Likewise a long run of nodes with none of the NodeField fields (GPU kernel records) gets
  // blocks of its own, so a pass skips it even when a copy record sits beside it on its stream.
  void Add(const tf::NodeExecStats& node, uint32_t device) {
    const uint32_t fields = FieldsOf(node);
    StartEntry(fields, device);
    const size_t size = node.ByteSizeLong();
    AppendVarint(plain_, size);
    const size_t at = plain_.size();
    plain_.resize(at + size);
    node.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(plain_.data() + at));
    EndEntry(fields);
  }

  // A node already serialised, with its NodeField bits.
  void Add(std::string_view node, uint32_t fields, uint32_t device) {
    StartEntry(fields, device);
    AppendVarint(plain_, node.size());
    plain_.append(node);
    EndEntry(fields);
  }

  // Hands over the last block and waits for the compression of all.
  void Finish() {
    if (entries_in_block_ > 0) Flush();
    first_entry_.push_back(next_entry_);
    compressor_.Finish();
  }

  uint32_t entries() const { return next_entry_; }

 private:
  void StartEntry(uint32_t fields, uint32_t device) {
    if (entries_in_block_ > 0 && device != device_) Flush();
    device_ = device;
    if (fields != 0 && run_entries_ >= kLongRun) Flush();  // the block is that run alone
    if (entries_in_block_ == 0) {
      first_entry_.push_back(next_entry_);
      fields_.push_back(0);
      run_entries_ = 0;
    }
    if (fields == 0 && run_entries_ == 0) {
      run_starts_at_ = plain_.size();
      fields_before_run_ = fields_.back();
    }
  }
  void EndEntry(uint32_t fields) {
    fields_.back() |= fields;
    ++entries_in_block_;
    ++next_entry_;
    run_entries_ = fields == 0 ? run_entries_ + 1 : 0;
    if (run_entries_ == kLongRun && entries_in_block_ > kLongRun) SplitBeforeRun();
    if (plain_.size() >= kBlockTargetBytes) Flush();
  }

  void Flush() {
    compressor_.Add(std::move(plain_));
    plain_ = std::string();
    plain_.reserve(kBlockTargetBytes + 1024);
    entries_in_block_ = 0;
    run_entries_ = 0;
  }

  // The block holds other nodes, then kLongRun nodes with no fields: the others become a block
  // and the run goes on in a block of its own.
  void SplitBeforeRun() {
    std::string run = plain_.substr(run_starts_at_);
    plain_.resize(run_starts_at_);
    fields_.back() = fields_before_run_;
    compressor_.Add(std::move(plain_));
    first_entry_.push_back(next_entry_ - run_entries_);
    fields_.push_back(0);
    plain_ = std::move(run);
    plain_.reserve(kBlockTargetBytes + 1024);
    entries_in_block_ = run_entries_;
  }

  static constexpr uint32_t kLongRun = 16;

  BlockCompressor compressor_;
  std::vector<uint32_t>& first_entry_;
  std::vector<uint32_t>& fields_;
  std::string plain_;
  uint32_t entries_in_block_ = 0;
  uint32_t next_entry_ = 0;
  uint32_t device_ = 0;
  uint32_t run_entries_ = 0;        // nodes with no fields at the end of the block
  size_t run_starts_at_ = 0;        // where that run starts in plain_
  uint32_t fields_before_run_ = 0;  // the block's fields without it
};

}  // namespace

template <typename AddNode>
void NodeStore::StoreEntries(std::span<const NodeRef> slice_refs, std::vector<uint32_t>* entry_of_slice, AddNode add) {
  std::vector<std::vector<bool>> stored(device_node_counts_.size());
  for (size_t d = 0; d < stored.size(); ++d) stored[d].assign(device_node_counts_[d], false);
  auto valid = [&](NodeRef ref) {
    return ref.valid() && ref.device < stored.size() && ref.node < stored[ref.device].size();
  };

  entry_of_slice->clear();
  const bool dense = std::all_of(slice_refs.begin(), slice_refs.end(), valid);
  if (!dense) entry_of_slice->assign(slice_refs.size(), NodeRef::kNone);
  BlockWriter writer(blocks_, block_first_entry_, block_fields_);
  for (size_t s = 0; s < slice_refs.size(); ++s) {
    const NodeRef ref = slice_refs[s];
    if (!valid(ref)) continue;
    if (!dense) (*entry_of_slice)[s] = writer.entries();
    stored[ref.device][ref.node] = true;
    add(ref, writer);
  }
  for (uint32_t d = 0; d < stored.size(); ++d) {
    for (uint32_t n = 0; n < stored[d].size(); ++n) {
      if (stored[d][n]) continue;
      unreferenced_.push_back(NodeRef{d, n});
      add(NodeRef{d, n}, writer);
    }
  }
  writer.Finish();
  entry_count_ = writer.entries();
  blocks_.shrink_to_fit();
}

std::shared_ptr<const NodeStore> NodeStore::Build(tf::RunMetadata& metadata, std::span<const NodeRef> slice_refs,
                                                  std::vector<uint32_t>* entry_of_slice) {
  auto store = std::make_shared<NodeStore>();
  auto* step = metadata.mutable_step_stats();
  store->device_node_counts_.reserve(static_cast<size_t>(step->dev_stats_size()));
  for (const auto& device : step->dev_stats()) {
    store->device_node_counts_.push_back(static_cast<uint32_t>(device.node_stats_size()));
  }
  store->StoreEntries(slice_refs, entry_of_slice, [&](NodeRef ref, BlockWriter& writer) {
    writer.Add(step->dev_stats(static_cast<int>(ref.device)).node_stats(static_cast<int>(ref.node)), ref.device);
  });
  for (auto& device : *step->mutable_dev_stats()) device.clear_node_stats();
  metadata.SerializeToString(&store->rest_);
  store->rest_.shrink_to_fit();
  return store;
}

std::shared_ptr<const NodeStore> NodeStore::Build(const SerializedNodes& nodes, std::span<const NodeRef> slice_refs,
                                                  std::vector<uint32_t>* entry_of_slice) {
  auto store = std::make_shared<NodeStore>();
  const auto& first = nodes.device_first_node;
  store->device_node_counts_.reserve(first.empty() ? 0 : first.size() - 1);
  for (size_t d = 0; d + 1 < first.size(); ++d) store->device_node_counts_.push_back(first[d + 1] - first[d]);
  store->StoreEntries(slice_refs, entry_of_slice, [&](NodeRef ref, BlockWriter& writer) {
    const SerializedNodes::Node& node = nodes.nodes[first[ref.device] + ref.node];
    writer.Add(nodes.bytes.substr(node.offset, node.size), node.fields, ref.device);
  });
  store->rest_ = nodes.rest;
  store->rest_.shrink_to_fit();
  return store;
}

size_t NodeStore::memory_bytes() const {
  size_t bytes = sizeof(*this) + rest_.capacity() + device_node_counts_.capacity() * sizeof(uint32_t) +
                 blocks_.capacity() * sizeof(std::string) + block_first_entry_.capacity() * sizeof(uint32_t) +
                 block_fields_.capacity() * sizeof(uint32_t) + unreferenced_.capacity() * sizeof(NodeRef);
  for (const std::string& block : blocks_) bytes += block.capacity();
  return bytes;
}

size_t NodeStore::BlockOf(uint32_t entry) const {
  auto it = std::upper_bound(block_first_entry_.begin(), block_first_entry_.end(), entry);
  return static_cast<size_t>(it - block_first_entry_.begin()) - 1;
}

std::shared_ptr<tf::RunMetadata> NodeStore::Rebuild(std::span<const NodeRef> slice_refs,
                                                    std::span<const uint32_t> entry_of_slice) const {
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
  Reader reader(*this);
  bool ok = true;
  auto place = [&](NodeRef ref, uint32_t entry) {
    auto* node = step->mutable_dev_stats(static_cast<int>(ref.device))->mutable_node_stats(static_cast<int>(ref.node));
    ok = reader.ParseInto(entry, node) && ok;
  };
  uint32_t referenced = 0;
  for (size_t s = 0; s < slice_refs.size(); ++s) {
    const uint32_t entry = entry_of_slice.empty() ? static_cast<uint32_t>(s) : entry_of_slice[s];
    if (entry == NodeRef::kNone) continue;
    place(slice_refs[s], entry);
    ++referenced;
  }
  for (size_t k = 0; k < unreferenced_.size(); ++k) place(unreferenced_[k], referenced + static_cast<uint32_t>(k));
  return ok ? metadata : nullptr;
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
  const std::string& plain = slot->plain;
  const uint32_t entries = store_.block_first_entry_[block + 1] - store_.block_first_entry_[block];
  size_t at = 0;
  for (uint32_t e = 0; e < entries; ++e) {
    uint64_t size = 0;
    for (int shift = 0; at < plain.size(); shift += 7) {
      const auto byte = static_cast<uint8_t>(plain[at++]);
      size |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0 || shift > 56) break;
    }
    if (size > plain.size() - at) return false;
    slot->spans.emplace_back(static_cast<uint32_t>(at), static_cast<uint32_t>(size));
    at += size;
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
