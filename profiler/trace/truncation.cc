// Inputs read only up to a cut (truncation.h): --allow-truncated and each cut's description.
#include "profiler/trace/truncation.h"

namespace stepscope::trace {
namespace {

thread_local AllowTruncatedScope* current_scope = nullptr;

}  // namespace

std::string TruncationLine(const Truncation& t) {
  std::string line = "TRUNCATED INPUT: " + t.file + ": ";
  line += t.gzip_cut ? "the compressed file ends early; read to byte " + std::to_string(t.offset) +
                           " of its decompressed content"
                     : "read to byte " + std::to_string(t.offset);
  if (!t.reason.empty()) line += " (" + t.reason + ")";
  line += "; analysing the " + std::to_string(t.events_kept) + " whole events before it (--allow-truncated)";
  return line;
}

AllowTruncatedScope::AllowTruncatedScope() : outer_(current_scope) { current_scope = this; }

AllowTruncatedScope::~AllowTruncatedScope() { current_scope = outer_; }

AllowTruncatedScope* AllowTruncatedScope::Current() { return current_scope; }

}  // namespace stepscope::trace
