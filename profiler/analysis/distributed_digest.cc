// The digests a process of a distributed analysis sends to process 0 (distributed_digest.h):
// taking them from a trace, and writing and reading them as bytes.
#include "profiler/analysis/distributed_digest.h"

#include <cstdint>

namespace stepscope::analysis {
namespace {

constexpr std::string_view kMagic = "stepscope.digests/1\n";

class DigestWriter {
 public:
  void Unsigned(uint64_t value) {
    while (value >= 0x80) {
      bytes_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    bytes_.push_back(static_cast<char>(value));
  }
  // Zigzag: small magnitudes of either sign take few bytes; INT64_MIN and MAX (sentinels) fit.
  void Signed(int64_t value) {
    Unsigned((static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63));
  }
  void Text(std::string_view text) {
    Unsigned(text.size());
    bytes_.append(text);
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class DigestReader {
 public:
  explicit DigestReader(std::string_view bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  bool done() const { return at_ == bytes_.size(); }
  uint64_t Unsigned() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) return Fail();
      const auto byte = static_cast<unsigned char>(bytes_[at_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return Fail();
  }
  int64_t Signed() {
    const uint64_t u = Unsigned();
    return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  std::string Text() {
    const uint64_t size = Unsigned();
    if (!ok_ || size > bytes_.size() - at_) return Fail(), std::string();
    std::string text(bytes_.substr(at_, size));
    at_ += size;
    return text;
  }
  // A count of items each taking at least one byte: never more than what is left.
  size_t Count() {
    const uint64_t count = Unsigned();
    if (count > bytes_.size() - at_) return Fail(), 0;
    return count;
  }

 private:
  uint64_t Fail() {
    ok_ = false;
    at_ = bytes_.size();
    return 0;
  }
  std::string_view bytes_;
  size_t at_ = 0;
  bool ok_ = true;
};

void WriteClock(const ClockDigest& d, DigestWriter& w) {
  w.Text(d.source);
  w.Signed(d.rank);
  w.Signed(d.step);
  w.Text(d.host);
  w.Signed(d.clock_sync_ns);
  w.Unsigned(d.collectives.size());
  for (const auto& [key, instances] : d.collectives) {
    w.Unsigned(key.earliest ? 1 : 0);
    w.Text(key.group);
    w.Text(key.name);
    w.Signed(key.step);
    w.Unsigned(instances.size());
    for (const CollectiveInstance& i : instances) {
      w.Signed(i.end_ns);
      w.Signed(i.start_ns);
      w.Unsigned(i.input);
      w.Unsigned(i.slice);
    }
  }
}

void ReadClock(DigestReader& r, ClockDigest& d) {
  d.source = r.Text();
  d.rank = static_cast<int32_t>(r.Signed());
  d.step = r.Signed();
  d.host = r.Text();
  d.clock_sync_ns = r.Signed();
  for (size_t k = 0, keys = r.Count(); k < keys && r.ok(); ++k) {
    CollectiveKey key;
    key.earliest = r.Unsigned() != 0;
    key.group = r.Text();
    key.name = r.Text();
    key.step = r.Signed();
    std::vector<CollectiveInstance>& instances = d.collectives[std::move(key)];
    instances.resize(r.Count());
    for (CollectiveInstance& i : instances) {
      i.end_ns = r.Signed();
      i.start_ns = r.Signed();
      i.input = r.Unsigned();
      i.slice = static_cast<uint32_t>(r.Unsigned());
    }
  }
}

void WriteWork(const StragglerWork& work, DigestWriter& w) {
  for (int64_t v : {work.slices, work.begin_ns, work.end_ns, work.comm_begin_ns, work.comm_end_ns, work.busy_ns}) {
    w.Signed(v);
  }
  for (int64_t v : work.by_category_ns) w.Signed(v);
}

void ReadWork(DigestReader& r, StragglerWork& work) {
  for (int64_t* v : {&work.slices, &work.begin_ns, &work.end_ns, &work.comm_begin_ns, &work.comm_end_ns,
                     &work.busy_ns}) {
    *v = r.Signed();
  }
  for (int64_t& v : work.by_category_ns) v = r.Signed();
}

void WriteStragglers(const StragglerDigest& d, DigestWriter& w) {
  w.Text(d.source);
  w.Signed(d.rank);
  w.Signed(d.first_instant_ns);
  w.Text(d.error);
  w.Unsigned(d.windows.size());
  for (const StragglerWindow& window : d.windows) {
    w.Signed(window.step);
    w.Signed(window.begin_ns);
    WriteWork(window.gpu, w);
    WriteWork(window.host, w);
    w.Signed(window.host_input_ns);
  }
}

void ReadStragglers(DigestReader& r, StragglerDigest& d) {
  d.source = r.Text();
  d.rank = static_cast<int32_t>(r.Signed());
  d.first_instant_ns = r.Signed();
  d.error = r.Text();
  d.windows.resize(r.Count());
  for (StragglerWindow& window : d.windows) {
    window.step = r.Signed();
    window.begin_ns = r.Signed();
    ReadWork(r, window.gpu);
    ReadWork(r, window.host);
    window.host_input_ns = r.Signed();
  }
}

}  // namespace

InputDigest DigestInput(const trace::Trace& trace, size_t input) {
  InputDigest digest;
  digest.input = input;
  digest.clock = DigestClock(trace, input);
  digest.stragglers = DigestStragglers(trace);
  return digest;
}

std::string SerializeDigests(std::span<const InputDigest> digests) {
  DigestWriter w;
  w.bytes().append(kMagic);
  w.Unsigned(digests.size());
  for (const InputDigest& d : digests) {
    w.Unsigned(d.input);
    w.Unsigned(static_cast<uint64_t>(d.read.code()));
    w.Text(d.read.message());
    WriteClock(d.clock, w);
    WriteStragglers(d.stragglers, w);
  }
  return std::move(w.bytes());
}

StatusOr<std::vector<InputDigest>> ParseDigests(std::string_view bytes, const std::string& from) {
  if (!bytes.starts_with(kMagic)) return InvalidInput(from + ": not stepscope digests (no header)");
  DigestReader r(bytes.substr(kMagic.size()));
  std::vector<InputDigest> digests(r.Count());
  for (InputDigest& d : digests) {
    d.input = r.Unsigned();
    const auto code = static_cast<StatusCode>(r.Unsigned());
    std::string message = r.Text();
    if (code != StatusCode::kOk) d.read = Status(code, std::move(message));
    ReadClock(r, d.clock);
    ReadStragglers(r, d.stragglers);
    if (!r.ok()) break;
  }
  if (!r.ok() || !r.done()) return InvalidInput(from + ": digests cut short or malformed");
  return digests;
}

}  // namespace stepscope::analysis
