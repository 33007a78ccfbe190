// An input read only up to a cut. A trace file cut short (a profiler killed while writing, a copy
// stopped early) or damaged mid-way is an error unless the user accepts it (`--allow-truncated`):
// then the reader keeps what came before the damage and describes the cut here, and every
// report says so at its top (TruncationLine, the "truncated" key of --json documents).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepscope::trace {

struct Truncation {
  std::string file;
  // Where reading stopped: the byte offset of the cut (or of the damage) in the content, which
  // for a gzip file is the decompressed stream.
  int64_t offset = 0;
  bool gzip_cut = false;     // the compressed file itself ends early
  int64_t events_kept = 0;   // whole events read before the cut
  std::string reason;        // what was found there: "the file ends inside a value", ...

  bool operator==(const Truncation&) const = default;
};

// One line for the top of a text report: "TRUNCATED INPUT: <file>: ...".
std::string TruncationLine(const Truncation& truncation);

// While one lives on a thread, ReadTrace on that thread accepts truncated input (as
// ReadTraceOptions::allow_truncated does) and records each cut here, so that a front end reading
// through layers that know nothing of it (merging, per-step collection) can still report every
// cut. Scopes nest; the innermost records.
class AllowTruncatedScope {
 public:
  AllowTruncatedScope();
  ~AllowTruncatedScope();
  AllowTruncatedScope(const AllowTruncatedScope&) = delete;
  AllowTruncatedScope& operator=(const AllowTruncatedScope&) = delete;

  // The innermost scope of the calling thread, or null.
  static AllowTruncatedScope* Current();

  void Add(Truncation truncation) { truncations_.push_back(std::move(truncation)); }
  const std::vector<Truncation>& truncations() const { return truncations_; }

 private:
  AllowTruncatedScope* outer_;
  std::vector<Truncation> truncations_;
};

}  // namespace stepscope::trace
