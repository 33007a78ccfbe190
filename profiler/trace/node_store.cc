#include "profiler/trace/node_store.h"

#include <zlib.h>

#include <algorithm>
#include <thread>

#include "base/check.h"
#include "profiler/trace/varint.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

// Big enough for deflate to find the repetition between nodes (names, labels, allocator
// names), small enough that inflating one block for the details pane takes well under 1 ms.
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

std::string Deflate(const std::string& plain) {
  z_stream stream{};
  // Raw deflate (no zlib header or checksum: the blocks never leave the process), level 1:
  // about as small as level 6 on node records, several times faster.
  STEPSCOPE_CHECK(deflateInit2(&stream, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&stream, static_cast<uLong>(plain.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  stream.avail_in = static_cast<uInt>(plain.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  STEPSCOPE_CHECK(deflate(&stream, Z_FINISH) == Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  out.shrink_to_fit();
  return out;
}

// Collects entries into blocks.
class BlockWriter {
 public:
  explicit BlockWriter(std::vector<std::string>& blocks, std::vector<uint32_t>& first_entry,
                       std::vector<uint32_t>& fields)
      : blocks_(blocks), first_entry_(first_entry), fields_(fields) {}

  // `device` is the node's dev_stats index: a block holds one device's nodes, so a pass that
  // needs none of a device (TensorFlow's /stream:all and /memcpy repeats, which exporters skip)
  // inflates none of its blocks.
  // Likewise a long run of nodes with none of the NodeField fields (GPU kernel records) gets
  // blocks of its own, so a pass skips it even when a copy record sits beside it on its stream.
  void Add(const tf::NodeExecStats& node, uint32_t device) {
    if (entries_in_block_ > 0 && device != device_) Flush();
    device_ = device;
    const uint32_t fields = FieldsOf(node);
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
    const size_t size = node.ByteSizeLong();
    AppendVarint(plain_, size);
    const size_t at = plain_.size();
    plain_.resize(at + size);
    node.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(plain_.data() + at));
    fields_.back() |= fields;
    ++entries_in_block_;
    ++next_entry_;
    run_entries_ = fields == 0 ? run_entries_ + 1 : 0;
    if (run_entries_ == kLongRun && entries_in_block_ > kLongRun) SplitBeforeRun();
    if (plain_.size() >= kBlockTargetBytes) Flush();
  }

  // Deflates the collected blocks, on several threads when there are many (the blocks are
  // independent; this is most of the cost of keeping the detail of a big trace).
  void Finish() {
    if (entries_in_block_ > 0) Flush();
    first_entry_.push_back(next_entry_);
    blocks_.resize(plain_blocks_.size());
    const size_t threads = plain_blocks_.size() < 64 ? 1 : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
    auto work = [&](size_t first) {
      for (size_t b = first; b < plain_blocks_.size(); b += threads) {
        blocks_[b] = Deflate(plain_blocks_[b]);
        std::string().swap(plain_blocks_[b]);
      }
    };
    std::vector<std::thread> workers;
    for (size_t t = 1; t < threads; ++t) workers.emplace_back(work, t);
    work(0);
    for (std::thread& worker : workers) worker.join();
    plain_blocks_.clear();
  }

  uint32_t entries() const { return next_entry_; }

 private:
  void Flush() {
    plain_blocks_.push_back(std::move(plain_));
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
    plain_blocks_.push_back(std::move(plain_));
    first_entry_.push_back(next_entry_ - run_entries_);
    fields_.push_back(0);
    plain_ = std::move(run);
    plain_.reserve(kBlockTargetBytes + 1024);
    entries_in_block_ = run_entries_;
  }

  static constexpr uint32_t kLongRun = 16;

  std::vector<std::string>& blocks_;
  std::vector<uint32_t>& first_entry_;
  std::vector<uint32_t>& fields_;
  std::string plain_;
  std::vector<std::string> plain_blocks_;  // serialised, waiting to be deflated
  uint32_t entries_in_block_ = 0;
  uint32_t next_entry_ = 0;
  uint32_t device_ = 0;
  uint32_t run_entries_ = 0;        // nodes with no fields at the end of the block
  size_t run_starts_at_ = 0;        // where that run starts in plain_
  uint32_t fields_before_run_ = 0;  // the block's fields without it
};

}  // namespace

// One inflate stream per reader, reset between blocks (setting one up for every block would
// allocate its state and window each time).
class NodeStore::Reader::Inflater {
 public:
  Inflater() { ok_ = inflateInit2(&stream_, -15) == Z_OK; }
  ~Inflater() {
    if (ok_) inflateEnd(&stream_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  bool Inflate(const std::string& compressed, std::string& plain) {
    if (!ok_ || inflateReset(&stream_) != Z_OK) return false;
    // Blocks inflate to about kBlockTargetBytes: room for that without zero-filling more.
    if (plain.size() < kBlockTargetBytes * 2) plain.resize(kBlockTargetBytes * 2);
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
    stream_.avail_in = static_cast<uInt>(compressed.size());
    size_t out = 0;
    int result = Z_OK;
    while (result == Z_OK) {
      if (out == plain.size()) plain.resize(plain.size() * 2);
      stream_.next_out = reinterpret_cast<Bytef*>(plain.data() + out);
      stream_.avail_out = static_cast<uInt>(plain.size() - out);
      result = inflate(&stream_, Z_NO_FLUSH);
      out = plain.size() - stream_.avail_out;
    }
    plain_size_ = out;
    return result == Z_STREAM_END;
  }
  // Bytes of the last inflated block (`plain` keeps its larger size, so it is never refilled).
  size_t plain_size() const { return plain_size_; }

 private:
  z_stream stream_{};
  bool ok_ = false;
  size_t plain_size_ = 0;
};

std::shared_ptr<const NodeStore> NodeStore::Build(tf::RunMetadata& metadata, std::span<const NodeRef> slice_refs,
                                                  std::vector<uint32_t>* entry_of_slice) {
  auto store = std::make_shared<NodeStore>();
  auto* step = metadata.mutable_step_stats();
  store->device_node_counts_.reserve(static_cast<size_t>(step->dev_stats_size()));
  std::vector<std::vector<bool>> stored(static_cast<size_t>(step->dev_stats_size()));
  for (int d = 0; d < step->dev_stats_size(); ++d) {
    const int nodes = step->dev_stats(d).node_stats_size();
    store->device_node_counts_.push_back(static_cast<uint32_t>(nodes));
    stored[static_cast<size_t>(d)].assign(static_cast<size_t>(nodes), false);
  }
  auto valid = [&](NodeRef ref) {
    return ref.valid() && ref.device < stored.size() && ref.node < stored[ref.device].size();
  };

  entry_of_slice->clear();
  const bool dense = std::all_of(slice_refs.begin(), slice_refs.end(), valid);
  if (!dense) entry_of_slice->assign(slice_refs.size(), NodeRef::kNone);
  BlockWriter writer(store->blocks_, store->block_first_entry_, store->block_fields_);
  for (size_t s = 0; s < slice_refs.size(); ++s) {
    const NodeRef ref = slice_refs[s];
    if (!valid(ref)) continue;
    if (!dense) (*entry_of_slice)[s] = writer.entries();
    stored[ref.device][ref.node] = true;
    writer.Add(step->dev_stats(static_cast<int>(ref.device)).node_stats(static_cast<int>(ref.node)), ref.device);
  }
  for (uint32_t d = 0; d < stored.size(); ++d) {
    for (uint32_t n = 0; n < stored[d].size(); ++n) {
      if (stored[d][n]) continue;
      store->unreferenced_.push_back(NodeRef{d, n});
      writer.Add(step->dev_stats(static_cast<int>(d)).node_stats(static_cast<int>(n)), d);
    }
  }
  writer.Finish();
  store->entry_count_ = writer.entries();
  store->blocks_.shrink_to_fit();
  for (auto& device : *step->mutable_dev_stats()) device.clear_node_stats();
  metadata.SerializeToString(&store->rest_);
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

NodeStore::Reader::Reader(const NodeStore& store, uint32_t needed_fields)
    : store_(store), needed_fields_(needed_fields), node_(std::make_unique<tf::NodeExecStats>()) {}
NodeStore::Reader::~Reader() = default;

bool NodeStore::Reader::LoadBlock(size_t block) {
  ++uses_;
  if (current_ != nullptr && current_->block == block) {
    current_->last_use = uses_;
    return true;
  }
  current_ = nullptr;
  Inflated* slot = nullptr;
  for (Inflated& cached : cache_) {
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
  if (inflater_ == nullptr) inflater_ = std::make_unique<Inflater>();
  if (!inflater_->Inflate(store_.blocks_[block], slot->plain)) return false;
  const std::string_view plain(slot->plain.data(), inflater_->plain_size());
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
  return std::string_view(current_->plain.data() + begin, size);
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
