// Parser of the all-reduce spec grammar (see allreduce_spec.h). Hand-written so every error can
// point at the byte where the spec goes wrong.
#include "trainer/parallel/allreduce_spec.h"

#include <algorithm>

#include <array>
#include <cctype>
#include <limits>
#include <utility>

namespace stepscope::parallel {
namespace {

struct NamedAlgorithm {
  std::string_view name;
  Algorithm algorithm;
};

constexpr std::array<NamedAlgorithm, 7> kAlgorithmNames = {{
    {"nccl", Algorithm::kNccl},
    {"ring", Algorithm::kRing},
    {"xring", Algorithm::kRing},  // tf_cnn_benchmarks' name of the ring
    {"pscpu", Algorithm::kPsCpu},
    {"psgpu", Algorithm::kPsGpu},
    {"mpi", Algorithm::kMpi},
    {"collective", Algorithm::kCollective},
}};

constexpr int kMaxShards = 1 << 16;

// A piece of the spec and where it starts, so errors can point at it.
struct Piece {
  std::string_view text;
  size_t offset = 0;
};

// The error message: quotes the spec, names the offset, and underlines [offset, offset+length).
Status SpecError(std::string_view spec, size_t offset, size_t length, const std::string& what) {
  std::string shown(spec);
  // Control bytes would break the caret alignment; show them as '?'.
  for (char& c : shown) {
    if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
  }
  std::string message = "invalid all-reduce spec \"" + shown + "\" at offset " +
                        std::to_string(offset) + ": " + what + "\n  " + shown + "\n  " +
                        std::string(offset, ' ') + "^";
  if (length > 1) message += std::string(length - 1, '~');
  return InvalidInput(std::move(message));
}

std::vector<Piece> SplitPieces(std::string_view text, size_t base_offset, char separator) {
  std::vector<Piece> pieces;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      pieces.push_back({text.substr(start), base_offset + start});
      return pieces;
    }
    pieces.push_back({text.substr(start, end - start), base_offset + start});
    start = end + 1;
  }
}

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string AlgorithmList() {
  std::string list;
  for (const auto& named : kAlgorithmNames) {
    if (!list.empty()) list += ", ";
    list += named.name;
  }
  return list;
}

StatusOr<Algorithm> ParseAlgorithm(std::string_view spec, Piece piece) {
  if (piece.text.empty()) {
    return SpecError(spec, piece.offset, 1, "expected an algorithm (" + AlgorithmList() + ")");
  }
  for (const auto& named : kAlgorithmNames) {
    if (named.name == piece.text) return named.algorithm;
  }
  return SpecError(spec, piece.offset, piece.text.size(),
                   "unknown algorithm " + Quoted(piece.text) + " (expected one of " +
                       AlgorithmList() + ")");
}

StatusOr<int> ParseShards(std::string_view spec, Piece piece) {
  if (piece.text.empty()) {
    return SpecError(spec, piece.offset, 1, "expected a shard count after '#'");
  }
  int64_t shards = 0;
  for (char c : piece.text) {
    if (c < '0' || c > '9') {
      return SpecError(spec, piece.offset, piece.text.size(),
                       "shard count " + Quoted(piece.text) + " is not a positive integer");
    }
    shards = shards * 10 + (c - '0');
    if (shards > kMaxShards) {
      return SpecError(spec, piece.offset, piece.text.size(),
                       "shard count " + Quoted(piece.text) + " is larger than " +
                           std::to_string(kMaxShards));
    }
  }
  if (shards < 1) {
    return SpecError(spec, piece.offset, piece.text.size(), "shard count must be at least 1");
  }
  return static_cast<int>(shards);
}

// "alg[#shards][/alg]" or "alg/alg#shards" (the original's order).
StatusOr<AllReduceRange> ParseRange(std::string_view spec, Piece piece) {
  AllReduceRange range;
  std::vector<Piece> levels = SplitPieces(piece.text, piece.offset, '/');
  if (levels.size() > 2) {
    return SpecError(spec, levels[2].offset - 1, 1,
                     "a range has at most two levels (within/across workers, 'a/b')");
  }
  bool have_shards = false;
  for (size_t level = 0; level < levels.size(); ++level) {
    std::vector<Piece> parts = SplitPieces(levels[level].text, levels[level].offset, '#');
    if (parts.size() > 2) {
      return SpecError(spec, parts[2].offset - 1, 1, "more than one '#' in an algorithm");
    }
    ASSIGN_OR_RETURN(Algorithm algorithm, ParseAlgorithm(spec, parts[0]));
    if (level == 0) {
      range.algorithm = algorithm;
    } else {
      range.across_workers = algorithm;
    }
    if (parts.size() == 2) {
      if (have_shards) {
        return SpecError(spec, parts[1].offset - 1, parts[1].text.size() + 1,
                         "the shard count is given twice in one range");
      }
      ASSIGN_OR_RETURN(range.shards, ParseShards(spec, parts[1]));
      have_shards = true;
    }
  }
  return range;
}

StatusOr<int64_t> ParseSize(std::string_view spec, Piece piece) {
  const std::string expected = "is not an element count (an integer with an optional K, M, G or "
                               "T suffix, powers of two)";
  if (piece.text.empty()) {
    return SpecError(spec, piece.offset, 1, "expected a size after ':'");
  }
  std::string_view digits = piece.text;
  int shift = 0;
  switch (digits.back()) {
    case 'K': case 'k': shift = 10; break;
    case 'M': case 'm': shift = 20; break;
    case 'G': case 'g': shift = 30; break;
    case 'T': case 't': shift = 40; break;
    default: break;
  }
  if (shift != 0) digits.remove_suffix(1);
  if (digits.empty()) {
    return SpecError(spec, piece.offset, piece.text.size(),
                     "size " + Quoted(piece.text) + " " + expected);
  }
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return SpecError(spec, piece.offset, piece.text.size(),
                       "size " + Quoted(piece.text) + " " + expected);
    }
    if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) {
      return SpecError(spec, piece.offset, piece.text.size(),
                       "size " + Quoted(piece.text) + " is too large");
    }
    value = value * 10 + (c - '0');
  }
  if (value > (std::numeric_limits<int64_t>::max() >> shift)) {
    return SpecError(spec, piece.offset, piece.text.size(),
                     "size " + Quoted(piece.text) + " is too large");
  }
  value <<= shift;
  if (value <= 0) {
    return SpecError(spec, piece.offset, piece.text.size(), "size must be at least 1 element");
  }
  return value;
}

}  // namespace

std::string_view AlgorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kNccl: return "nccl";
    case Algorithm::kRing: return "ring";
    case Algorithm::kPsCpu: return "pscpu";
    case Algorithm::kPsGpu: return "psgpu";
    case Algorithm::kMpi: return "mpi";
    case Algorithm::kCollective: return "collective";
  }
  return "unknown";
}

StatusOr<AllReduceSpec> ParseAllReduceSpec(std::string_view text) {
  if (text.empty()) return InvalidInput("invalid all-reduce spec: the spec is empty");
  std::vector<Piece> pieces = SplitPieces(text, 0, ':');
  if (pieces.size() % 2 == 0) {
    const Piece& size = pieces.back();
    if (size.text.empty()) {
      return SpecError(text, size.offset > 0 ? size.offset - 1 : 0, 1,
                       "a ':' must be followed by a size, ':' and another range");
    }
    return SpecError(text, size.offset, size.text.size(),
                     "size " + Quoted(size.text) + " has no range after it");
  }
  AllReduceSpec spec;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i % 2 == 0) {
      ASSIGN_OR_RETURN(AllReduceRange range, ParseRange(text, pieces[i]));
      spec.ranges.push_back(range);
      continue;
    }
    ASSIGN_OR_RETURN(int64_t limit, ParseSize(text, pieces[i]));
    if (!spec.limits.empty() && limit <= spec.limits.back()) {
      return SpecError(text, pieces[i].offset, pieces[i].text.size(),
                       "sizes must increase: " + std::to_string(limit) +
                           " elements is not larger than the previous size " +
                           std::to_string(spec.limits.back()));
    }
    spec.limits.push_back(limit);
  }
  return spec;
}

std::string FormatAllReduceSpec(const AllReduceSpec& spec) {
  std::string text;
  for (size_t i = 0; i < spec.ranges.size(); ++i) {
    if (i > 0) {
      int64_t limit = spec.limits[i - 1];
      static constexpr std::array<std::pair<int, char>, 4> kSuffixes = {
          {{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}}};
      std::string size = std::to_string(limit);
      for (auto [shift, suffix] : kSuffixes) {
        if (limit % (int64_t{1} << shift) == 0) {
          size = std::to_string(limit >> shift) + suffix;
          break;
        }
      }
      text += ":" + size + ":";
    }
    const AllReduceRange& range = spec.ranges[i];
    text += AlgorithmName(range.algorithm);
    if (range.shards != 1) text += "#" + std::to_string(range.shards);
    if (range.across_workers) text += "/" + std::string(AlgorithmName(*range.across_workers));
  }
  return text;
}

bool UsesAlgorithm(const AllReduceSpec& spec, Algorithm algorithm) {
  return std::any_of(spec.ranges.begin(), spec.ranges.end(), [&](const AllReduceRange& range) {
    return range.algorithm == algorithm ||
           (range.across_workers && *range.across_workers == algorithm);
  });
}

std::vector<int> SplitBySize(const AllReduceSpec& spec, std::span<const int64_t> num_elements) {
  std::vector<int> range_of(num_elements.size());
  for (size_t t = 0; t < num_elements.size(); ++t) {
    size_t range = 0;
    while (range < spec.limits.size() && num_elements[t] > spec.limits[range]) ++range;
    range_of[t] = static_cast<int>(range);
  }
  return range_of;
}

}  // namespace stepscope::parallel
