// Chrome Trace Event Format import (array or {"traceEvents": [...]}), including what TensorFlow's
// timeline.py and the PyTorch profiler (Kineto) write: X and B/E slices, M metadata, C counters,
// s/t/f flows (ac2g launch links), Kineto categories mapped to slice kinds, `[memory]` instant
// events as per-device allocator counters, distributedInfo's rank and world size.
// pid -> host/process track, tid -> lane track. Partially overlapping slices on one tid are
// moved to overlap lanes by TraceBuilder and counted.
//
// The input streams through a buffer of a few megabytes, parsed a batch of whole events at a
// time with simdjson's on-demand API: no document tree is built, the file is never in memory
// whole, and memory grows with the slices kept, not with the JSON.
// A file cut short (the JSON or, for `.json.gz`, the compressed file: its gzip stream must end)
// or damaged mid-way is kInvalidInput naming the file and the byte offset of the cut or damage
// (in the decompressed stream for gzip), unless ChromeJsonReadOptions::allow_truncated: then the
// events before the damage are kept, the cut is described in `truncation`, and import_stats()
// counts `json_truncated_events_kept`, `json_truncated_bytes_dropped` (bytes after the last event
// read whole) and, for a gzip stream that ends early, `gzip_cut_short_read_to_the_cut`.
// Other damage is repaired where the rest can still be read, and every repair is counted:
//  - invalid UTF-8: each bad byte becomes U+FFFD, as in every reader (utf8.h)
//    (`invalid_utf8_bytes_replaced`);
//  - numbers beyond int64 or not numbers where times belong: the event is skipped
//    (`event_bad_time_skipped`); times are read from the number's text, so epoch microseconds
//    with a fraction keep nanosecond precision.
// JSON that cannot be read at all, or that is not a trace, is kInvalidInput naming the file and
// the byte offset.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/file_reader.h"
#include "profiler/trace/trace.h"
#include "profiler/trace/truncation.h"

namespace stepscope::trace {

// The JSON is parsed in pieces of about `chunk_bytes` (a piece grows only to hold one event
// larger than that): memory for parsing stays a few pieces, whatever the file's size.
// With more than one thread, the buffer holds a chunk per thread, from which pieces of a quarter
// chunk are cut at event boundaries and copied out, up to 4 per thread in flight: the threads
// parse them while the calling thread imports the parsed ones in file order (and parses too when
// the next one is not ready), so the Trace is the one a single thread builds. A piece that does
// not parse cleanly (damage, a cut that fell in a string) goes back into the buffer with the
// ones after it and is read again by the single-thread path, which repairs and counts as always.
struct ChromeJsonReadOptions {
  size_t chunk_bytes = size_t{1} << 20;
  int threads = 0;  // 0: one per core
  // Told the input bytes read so far after each read, on the calling thread; returning false
  // stops the read, which then returns kCancelled.
  std::function<bool(int64_t bytes_read)> on_progress;
  // A preview of a big file: the read stops after this many input bytes (0: never) and the
  // trace holds the events read whole before it; its import stats count
  // `json_preview_bytes_read` instead of a truncation.
  int64_t preview_bytes = 0;
  // Read a file cut short or damaged up to the damage instead of failing; `truncation`, when
  // given, is then set to describe the cut (left alone when the input was whole).
  bool allow_truncated = false;
  Truncation* truncation = nullptr;
};

StatusOr<Trace> ReadChromeJson(std::string_view bytes, const std::string& name,
                               const ChromeJsonReadOptions& options = {});
// Streams the rest of `reader` (gzip inflated) after `prefix`, the bytes already read from it.
StatusOr<Trace> ReadChromeJson(FileReader& reader, std::string_view prefix, const ChromeJsonReadOptions& options = {});

// A JSON number's text in microseconds ("12", "1.5", "1.7e3") as nanoseconds, exactly for
// decimals; nullopt for non-numbers and values beyond half the int64 nanosecond range (so sums
// and differences of times stay exact).
std::optional<int64_t> MicrosTextToNs(std::string_view text);

}  // namespace stepscope::trace
