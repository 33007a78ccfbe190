// The digests a process of a distributed analysis sends to process 0 (distributed_digest.h):
// taking them from a trace, and writing and reading them as bytes. Each kind of digest is
// described once, field by field (Describe); the writer and the reader walk that description, so
// what is written is what is read.
#include "profiler/analysis/distributed_digest.h"

#include <array>
#include <bit>
#include <concepts>
#include <cstdint>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>

namespace stepscope::analysis {
namespace {

constexpr std::string_view kMagic = "stepscope.digests/3\n";

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
template <class T>
struct IsMap : std::false_type {};
template <class K, class V>
struct IsMap<std::map<K, V>> : std::true_type {};
template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsStdArray : std::false_type {};
template <class T, size_t N>
struct IsStdArray<std::array<T, N>> : std::true_type {};

// A description's digest type, const when it is written.
template <class D, class T>
concept DigestOf = std::same_as<std::remove_const_t<D>, T>;

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

  // Any field: an integer, enum or bool, a string, a list, map or pair of fields, an array, or a
  // digest with a description.
  template <class T>
  void operator()(const T& field) {
    if constexpr (std::is_same_v<T, bool> || std::is_enum_v<T>) {
      Unsigned(static_cast<uint64_t>(field));
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      Signed(field);
    } else if constexpr (std::is_integral_v<T>) {
      Unsigned(field);
    } else if constexpr (std::is_same_v<T, std::string>) {
      Text(field);
    } else if constexpr (IsVector<T>::value || IsMap<T>::value) {
      Unsigned(field.size());
      for (const auto& item : field) (*this)(item);
    } else if constexpr (IsPair<T>::value) {
      (*this)(field.first);
      (*this)(field.second);
    } else if constexpr (std::is_array_v<T>) {
      for (const auto& item : field) (*this)(item);
    } else {
      Describe(*this, field);
    }
  }

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

  // The field DigestWriter wrote of the same type (a failed read stops at the first bad length).
  template <class T>
  void operator()(T& field) {
    if (!ok_) return;
    if constexpr (std::is_same_v<T, bool>) {
      field = Unsigned() != 0;
    } else if constexpr (std::is_enum_v<T>) {
      field = static_cast<T>(Unsigned());
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      field = static_cast<T>(Signed());
    } else if constexpr (std::is_integral_v<T>) {
      field = static_cast<T>(Unsigned());
    } else if constexpr (std::is_same_v<T, std::string>) {
      field = Text();
    } else if constexpr (IsVector<T>::value) {
      field.resize(Count());
      for (auto& item : field) (*this)(item);
    } else if constexpr (IsMap<T>::value) {
      for (size_t k = 0, count = Count(); k < count && ok_; ++k) {
        typename T::key_type key;
        (*this)(key);
        (*this)(field[std::move(key)]);
      }
    } else if constexpr (IsPair<T>::value) {
      (*this)(field.first);
      (*this)(field.second);
    } else if constexpr (std::is_array_v<T>) {
      for (auto& item : field) (*this)(item);
    } else {
      Describe(*this, field);
    }
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

// ---- each kind of digest, field by field (the writer and the reader both walk these) ----------

template <class Io, DigestOf<CollectiveKey> D>
void Describe(Io& io, D& key) {
  io(key.earliest), io(key.group), io(key.name), io(key.step);
}

template <class Io, DigestOf<CollectiveInstance> D>
void Describe(Io& io, D& i) {
  io(i.end_ns), io(i.start_ns), io(i.input), io(i.slice);
}

template <class Io, DigestOf<ClockDigest> D>
void Describe(Io& io, D& d) {
  io(d.source), io(d.rank), io(d.step), io(d.host), io(d.clock_sync_ns), io(d.collectives);
}

template <class Io, DigestOf<StragglerWork> D>
void Describe(Io& io, D& work) {
  io(work.slices), io(work.begin_ns), io(work.end_ns), io(work.comm_begin_ns), io(work.comm_end_ns);
  io(work.busy_ns), io(work.by_category_ns);
}

template <class Io, DigestOf<StragglerWindow> D>
void Describe(Io& io, D& window) {
  io(window.step), io(window.begin_ns), io(window.gpu), io(window.host), io(window.host_input_ns);
}

template <class Io, DigestOf<StragglerDigest> D>
void Describe(Io& io, D& d) {
  io(d.source), io(d.rank), io(d.first_instant_ns), io(d.error), io(d.windows);
}

template <class Io, DigestOf<GapLongestOp> D>
void Describe(Io& io, D& op) {
  io(op.gap), io(op.element), io(op.held_ns), io(op.op), io(op.op_name);
}

template <class Io, DigestOf<RankPathSummary> D>
void Describe(Io& io, D& s) {
  io(s.empty), io(s.begin_ns), io(s.end_ns), io(s.length_ns), io(s.bound_ns), io(s.slices), io(s.longest);
}

template <class Io, DigestOf<SharedElement> D>
void Describe(Io& io, D& e) {
  io(e.slice), io(e.gap), io(e.element), io(e.held_ns), io(e.op), io(e.op_name);
}

template <class Io, DigestOf<RankPathPiece> D>
void Describe(Io& io, D& p) {
  io(p.path), io(p.open), io(p.closing), io(p.shared), io(p.stopped), io(p.passes), io(p.link_bound_ns);
  io(p.link_hold_slice), io(p.link_hold_ns), io(p.next);
}

template <class Io, DigestOf<RankStepDigest> D>
void Describe(Io& io, D& s) {
  io(s.step), io(s.begin_ns), io(s.end_ns), io(s.gap_starts), io(s.whole_end_ns), io(s.has_work), io(s.entry_by);
  io(s.entry_piece), io(s.pieces);
}

template <class Io, DigestOf<RankPathDigest> D>
void Describe(Io& io, D& d) {
  io(d.epoch_ns), io(d.span_begin_ns), io(d.steps), io(d.names);
}

template <class Io, DigestOf<RenderedWindow> D>
void Describe(Io& io, D& w) {
  io(w.step), io(w.marker), io(w.whole), io(w.body);
}

template <class Io, DigestOf<RenderedReport> D>
void Describe(Io& io, D& r) {
  io(r.head), io(r.lead), io(r.windows), io(r.steps);
}

// A double as its 64 bits: what is read is the value written, to the last bit.
template <class Io, DigestOf<double> D>
void Describe(Io& io, D& value) {
  if constexpr (std::is_const_v<D>) {
    io(std::bit_cast<uint64_t>(value));
  } else {
    uint64_t bits = 0;
    io(bits);
    value = std::bit_cast<double>(bits);
  }
}

// An optional: whether it holds a value, then the value.
template <class Io, class D>
  requires IsOptional<std::remove_const_t<D>>::value
void Describe(Io& io, D& optional) {
  if constexpr (std::is_const_v<D>) {
    io(optional.has_value());
    if (optional) io(*optional);
  } else {
    bool has = false;
    io(has);
    if (has) io(optional.emplace());
  }
}

template <class Io, class D>
  requires IsStdArray<std::remove_const_t<D>>::value
void Describe(Io& io, D& array) {
  for (auto& item : array) io(item);
}

template <class Io, DigestOf<trace::DeviceProperties> D>
void Describe(Io& io, D& d) {
  io(d.id), io(d.name), io(d.sm_count), io(d.memory_bytes), io(d.compute_major), io(d.compute_minor);
  io(d.clock_khz), io(d.measured_flops_per_s), io(d.measured_by);
}

template <class Io, DigestOf<UnknownOpType> D>
void Describe(Io& io, D& u) {
  io(u.op_type), io(u.count), io(u.time_ns), io(u.reason);
}

// The sums only (EfficiencyBuilder::Finish names the row and derives the rest).
template <class Io, DigestOf<EfficiencyRowSums> D>
void Describe(Io& io, D& s) {
  auto& row = s.row;
  io(row.count), io(row.time_ns), io(row.device_time_ns), io(row.flops), io(row.model_flops), io(row.bytes);
  io(row.reported_flops), io(row.costed), io(row.longest_slice), io(row.longest_ns);
  io(s.sources), io(s.launcher_time_ns), io(s.precision_flops), io(s.class_count);
}

template <class Io, DigestOf<StepEfficiency> D>
void Describe(Io& io, D& s) {
  io(s.rank), io(s.rank_recorded), io(s.number), io(s.step), io(s.marker), io(s.duration_ns), io(s.flops_known);
  io(s.model_flops), io(s.flops);
}

template <class Io, DigestOf<CollectiveRow> D>
void Describe(Io& io, D& r) {
  io(r.rank), io(r.device), io(r.name), io(r.source), io(r.algorithm), io(r.dtype), io(r.group_size), io(r.bytes);
  io(r.count), io(r.total_bytes), io(r.time_ns), io(r.exposed_ns), io(r.algbw_bytes_per_s), io(r.busbw_bytes_per_s);
  io(r.busbw_share_of_peak);
}

template <class Io, DigestOf<CollectiveTotals> D>
void Describe(Io& io, D& t) {
  io(t.calls), io(t.sized_calls), io(t.time_ns), io(t.exposed_ns), io(t.bytes);
}

template <class Io, DigestOf<LinkPeak> D>
void Describe(Io& io, D& link) {
  io(link.bytes_per_s), io(link.source);
}

// Its rows, totals, link and notes (EfficiencyInput keeps no calls).
template <class Io, DigestOf<CollectiveBandwidth> D>
void Describe(Io& io, D& c) {
  io(c.rows), io(c.totals), io(c.link), io(c.notes);
}

template <class Io, DigestOf<EfficiencyInput> D>
void Describe(Io& io, D& e) {
  io(e.source), io(e.devices), io(e.ops_seen), io(e.ops_costed), io(e.has_shapes), io(e.unknown_ops), io(e.ops);
  io(e.kernels), io(e.model_flops_by_precision), io(e.steps), io(e.collectives);
}

template <class Io, DigestOf<StepOpTotal> D>
void Describe(Io& io, D& t) {
  io(t.name), io(t.op_type), io(t.where), io(t.total_ns), io(t.count);
}

template <class Io, DigestOf<Step> D>
void Describe(Io& io, D& s) {
  io(s.source), io(s.step), io(s.marker), io(s.run), io(s.begin_ns), io(s.end_ns), io(s.duration_ns);
  io(s.op_types), io(s.nodes), io(s.kernels);
}

template <class Io, DigestOf<TraceSteps> D>
void Describe(Io& io, D& t) {
  io(t.source), io(t.waits_for_ranks), io(t.step), io(t.rank), io(t.steps);
}

template <class Io, DigestOf<GpuTime> D>
void Describe(Io& io, D& t) {
  io(t.span_ns), io(t.busy_ns), io(t.idle_ns), io(t.compute_ns), io(t.communication_ns), io(t.memory_ns);
  io(t.compute_communication_overlap_ns), io(t.slices);
}

template <class Io, DigestOf<GpuStreamTime> D>
void Describe(Io& io, D& s) {
  io(s.stream), io(s.time);
}

template <class Io, DigestOf<GpuBreakdown> D>
void Describe(Io& io, D& row) {
  io(row.rank), io(row.device), io(row.time), io(row.streams);
}

template <class Io, DigestOf<GpuDigest> D>
void Describe(Io& io, D& d) {
  io(d.source), io(d.rank), io(d.steps), io(d.numbered_from), io(d.rows);
}

// Every index a step's pieces hold names one of its pieces or names (the walk follows them unchecked).
bool PiecesLinked(const RankPathDigest& paths) {
  for (const RankStepDigest& step : paths.steps) {
    if (step.entry_piece.size() != step.entry_by.size()) return false;
    for (int64_t piece : step.entry_piece) {
      if (piece < -1 || piece >= static_cast<int64_t>(step.pieces.size())) return false;
    }
    const auto named = [&](uint32_t op, uint32_t op_name) { return op < paths.names.size() && op_name < paths.names.size(); };
    for (const RankPathPiece& piece : step.pieces) {
      if (piece.stopped && piece.next >= step.pieces.size()) return false;
      for (const GapLongestOp& op : piece.path.longest) {
        if (!named(op.op, op.op_name)) return false;
      }
      for (const SharedElement& e : piece.shared) {
        if (!named(e.op, e.op_name)) return false;
      }
    }
  }
  return true;
}

}  // namespace

InputDigest DigestInput(const trace::Trace& trace, size_t input) {
  return DigestInput(trace, input, {.clock = true, .stragglers = true});
}

InputDigest DigestInput(const trace::Trace& trace, size_t input, const DigestKinds& kinds) {
  InputDigest digest;
  digest.input = input;
  if (kinds.clock || kinds.rank_paths) digest.clock = DigestClock(trace, input);
  if (kinds.stragglers) digest.stragglers = DigestStragglers(trace);
  if (kinds.rank_paths) digest.rank_paths = DigestRankPaths(trace, digest.clock);
  return digest;
}

std::string SerializeDigests(std::span<const InputDigest> digests) {
  DigestWriter w;
  w.bytes().append(kMagic);
  w.Unsigned(digests.size());
  for (const InputDigest& d : digests) {
    w(d.input);
    w(static_cast<uint64_t>(d.read.code()));
    w(d.read.message());
    w(d.clock), w(d.stragglers), w(d.rank_paths), w(d.report);
    w(d.steps), w(d.gpu);
    w(d.path), w(d.side), w(d.efficiency);
  }
  return std::move(w.bytes());
}

StatusOr<std::vector<InputDigest>> ParseDigests(std::string_view bytes, const std::string& from) {
  if (!bytes.starts_with(kMagic)) return InvalidInput(from + ": not stepscope digests (no header)");
  DigestReader r(bytes.substr(kMagic.size()));
  std::vector<InputDigest> digests(r.Count());
  for (InputDigest& d : digests) {
    r(d.input);
    uint64_t code = 0;
    std::string message;
    r(code), r(message);
    if (static_cast<StatusCode>(code) != StatusCode::kOk) d.read = Status(static_cast<StatusCode>(code), std::move(message));
    r(d.clock), r(d.stragglers), r(d.rank_paths), r(d.report);
    r(d.steps), r(d.gpu);
    r(d.path), r(d.side), r(d.efficiency);
    if (!r.ok()) break;
  }
  if (!r.ok() || !r.done()) return InvalidInput(from + ": digests cut short or malformed");
  for (const InputDigest& d : digests) {
    if (!PiecesLinked(d.rank_paths)) return InvalidInput(from + ": a rank's path pieces point outside its step");
    if (d.side > 1) return InvalidInput(from + ": an input on neither side (A or B)");
  }
  return digests;
}

}  // namespace stepscope::analysis
