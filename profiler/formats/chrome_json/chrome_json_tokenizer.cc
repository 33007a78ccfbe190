// The tokenizer half of the Chrome JSON reader (chrome_json_reader.h): the input streamed
// through a buffer, the outer object walked by a small scanner, the event array cut into
// batches of whole events that simdjson parses on demand, damage located by byte offset and
// salvaged. Each event goes to ChromeEventImporter (chrome_json_importer.h), which knows what
// events mean. Perfetto separates its json_trace_tokenizer from its parser the same way.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <simdjson.h>
#include <span>
#include <thread>
#include <vector>

#include "profiler/formats/chrome_json/chrome_json_importer.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/common/utf8.h"

namespace stepscope::trace {

namespace od = simdjson::ondemand;

namespace {

constexpr size_t kNoCut = std::string::npos;

// Import in pieces. The buffer holds the part of the input not consumed yet, refilled from the
// source; the outer object is walked by a small scanner, and the event array is parsed a batch
// at a time: from the consumed position to the last `},` in the buffer, whose comma is turned
// into `]` (with a `[` written just before the batch) so that simdjson reads the batch as one
// array. The parser and the buffer are reused batch after batch, so memory stays a few chunks
// whatever the file's size, and the parser's index stays in the cache.
class StreamingImport {
 public:
  using Source = std::function<StatusOr<size_t>(std::span<char>)>;  // short read: the end

  StreamingImport(Source source, const std::string& name, const ChromeJsonReadOptions& options,
                  const FileReader* file = nullptr)
      : source_(Metered(std::move(source), options)),
        name_(name),
        preview_bytes_(options.preview_bytes),
        allow_truncated_(options.allow_truncated),
        truncation_(options.truncation),
        chunk_bytes_(std::max<size_t>(options.chunk_bytes, 64)),
        threads_(options.threads > 0 ? options.threads
                                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
        file_(file),
        importer_(name) {
    if (threads_ > 1) {
      // Pieces of a quarter chunk, four a thread in flight: each has its parser (about 6 bytes
      // per byte parsed), so the memory for parsing stays about what one thread with one chunk
      // needs, per thread.
      piece_count_ = 4 * static_cast<size_t>(threads_);
      piece_bytes_ = chunk_bytes_ / 4;
      chunk_bytes_ *= static_cast<size_t>(threads_);
    }
  }

  StatusOr<Trace> Run() {
    RETURN_IF_ERROR(ReadTop());
    ImportStats& stats = importer_.stats();
    if (preview_bytes_ > 0 && bytes_read_ >= preview_bytes_ && damage_) {
      // The preview's cut, not damage: the events before it are the preview.
      if (importer_.events() == 0) {
        return InvalidInput(name_ + ": no whole event in the first " + std::to_string(preview_bytes_) + " bytes");
      }
      stats.Add("json_preview_bytes_read", last_event_end_);
    } else {
      // To the end, so that a gzip stream cut after the JSON's last byte is seen too.
      ASSIGN_OR_RETURN(const int64_t total, BytesToEnd());
      const bool gzip_cut = file_ != nullptr && file_->cut_short();
      if (damage_ || gzip_cut) {
        RETURN_IF_ERROR(Truncated(total, gzip_cut));
        stats.Add("json_truncated_events_kept", importer_.events());
        if (damage_) stats.Add("json_truncated_bytes_dropped", total - last_event_end_);
        if (gzip_cut) stats.Add("gzip_cut_short_read_to_the_cut");
      }
    }
    stats.Add("invalid_utf8_bytes_replaced", utf8_replaced_);
    return importer_.Finish();
  }

 private:
  static constexpr size_t kLead = 64;  // room before the data for the batch's `[`
  static constexpr size_t kTail = simdjson::SIMDJSON_PADDING;

  struct Damage {
    int64_t offset;
    std::string reason;
  };

  struct Batch {
    enum Outcome { kWhole, kArrayClosed, kError } outcome = kError;
    size_t end = 0;           // one past the batch's last byte
    size_t next = 0;          // kArrayClosed: the token after the array
    size_t failed_start = 0;  // kError: where the element that failed starts
    size_t error_index = 0;
    std::string error;
    int64_t parsed = 0;
    bool repaired = false;  // parsed from a UTF-8-repaired copy
  };

  // The input ended early (`total` bytes of content) or is damaged: an error naming the file and
  // the byte, unless the caller reads truncated input, which then learns where the reading stopped.
  Status Truncated(int64_t total, bool gzip_cut) {
    const int64_t events = importer_.events();
    const int64_t at = damage_ ? damage_->offset : total;
    const std::string reason = damage_ ? damage_->reason : "after the end of the JSON";
    if (allow_truncated_ && events > 0) {
      if (truncation_ != nullptr) *truncation_ = Truncation{name_, at, gzip_cut, events, reason};
      return Status::Ok();
    }
    std::string what;
    if (damage_ && at < total) {
      what = "invalid JSON at byte " + std::to_string(at) + ": " + reason;
      if (gzip_cut) what += "; the compressed file also ends early";
    } else if (gzip_cut) {
      what = "the compressed file ends early: its gzip stream stops at byte " + std::to_string(total) +
             " of the decompressed content (" + reason + ")";
    } else {
      what = "the file is cut short at byte " + std::to_string(total) + " (" + reason + ")";
    }
    if (events > 0) {
      what += "; " + std::to_string(events) + " whole events before it, which --allow-truncated reads";
    }
    return InvalidInput(name_ + ": " + what);
  }

  int64_t Offset(size_t index) const { return origin_ + static_cast<int64_t>(index); }
  bool AtEnd() const { return pos_ == end_; }
  void SetDamage(size_t index, std::string reason) {
    if (!damage_) damage_ = Damage{Offset(index), std::move(reason)};
  }
  Status NotATrace(const std::string& detail) { return InvalidInput(name_ + ": JSON is not a trace: " + detail); }

  // Moves the unconsumed bytes to the front and reads more; the buffer doubles only when one
  // piece of JSON fills it.
  Status Fill() {
    if (eof_) return Status::Ok();
    if (buffer_ != nullptr && pos_ > kLead) {
      std::memmove(buffer_.get() + kLead, buffer_.get() + pos_, end_ - pos_);
      origin_ += static_cast<int64_t>(pos_ - kLead);
      end_ -= pos_ - kLead;
      pos_ = kLead;
    }
    if (buffer_ != nullptr && end_ == kLead + chunk_bytes_) chunk_bytes_ *= 2;
    if (kLead + chunk_bytes_ + kTail > capacity_) {
      capacity_ = kLead + chunk_bytes_ + kTail;
      auto grown = std::make_unique_for_overwrite<char[]>(capacity_);
      if (buffer_ != nullptr) std::memcpy(grown.get() + kLead, buffer_.get() + kLead, end_ - kLead);
      buffer_ = std::move(grown);
    }
    const size_t room = kLead + chunk_bytes_ - end_;
    ASSIGN_OR_RETURN(const size_t got, source_({buffer_.get() + end_, room}));
    end_ += got;
    eof_ = got < room;
    std::memset(buffer_.get() + end_, ' ', kTail);
    return Status::Ok();
  }

  Status SkipSpace() {
    while (true) {
      while (pos_ < end_ && IsJsonSpace(buffer_[pos_])) ++pos_;
      if (pos_ < end_ || eof_) return Status::Ok();
      RETURN_IF_ERROR(Fill());
    }
  }

  // The length of the JSON value at pos_, read into the buffer whole; damage at the end of input.
  Status ScanValue(size_t* length) {
    size_t k = 0;
    int depth = 0;
    bool in_string = false, escaped = false;
    while (true) {
      if (pos_ + k == end_) {
        if (eof_) {
          SetDamage(end_, "the file ends inside a value");
          return Status::Ok();
        }
        RETURN_IF_ERROR(Fill());
        continue;
      }
      const char c = buffer_[pos_ + k];
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
          if (depth == 0) break;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) {  // a number or literal ended by its container's close
          *length = k;
          return Status::Ok();
        }
        if (--depth == 0) break;
      } else if (depth == 0 && (c == ',' || c == ':' || IsJsonSpace(c))) {
        *length = k;
        return Status::Ok();
      }
      ++k;
    }
    *length = k + 1;
    return Status::Ok();
  }

  // The outer value: an event array, or an object with "traceEvents" (and "distributedInfo").
  Status ReadTop() {
    RETURN_IF_ERROR(Fill());
    if (end_ - pos_ >= 3 && std::memcmp(buffer_.get() + pos_, "\xEF\xBB\xBF", 3) == 0) pos_ += 3;
    RETURN_IF_ERROR(SkipSpace());
    const std::string expected = "expected an array of events or an object with a \"traceEvents\" array";
    if (AtEnd()) return NotATrace(expected);
    if (buffer_[pos_] == '[') {
      ++pos_;
      return ReadEvents();
    }
    if (buffer_[pos_] != '{') return NotATrace(expected);
    ++pos_;
    bool found = false;
    const std::string ends = "the file ends inside the top-level object";
    while (true) {
      RETURN_IF_ERROR(SkipSpace());
      if (AtEnd()) return SetDamage(end_, ends), Status::Ok();
      if (buffer_[pos_] == '}') break;
      if (buffer_[pos_] != '"') return SetDamage(pos_, "expected a key in the top-level object"), Status::Ok();
      size_t length = 0;
      RETURN_IF_ERROR(ScanValue(&length));
      if (damage_) return Status::Ok();
      const std::string key(buffer_.get() + pos_ + 1, length - 2);
      pos_ += length;
      RETURN_IF_ERROR(SkipSpace());
      if (AtEnd() || buffer_[pos_] != ':') {
        return SetDamage(pos_, "expected ':' after the key \"" + key + "\""), Status::Ok();
      }
      ++pos_;
      RETURN_IF_ERROR(SkipSpace());
      if (AtEnd()) return SetDamage(end_, ends), Status::Ok();
      if (key == "traceEvents" && buffer_[pos_] == '[') {
        ++pos_;
        found = true;
        RETURN_IF_ERROR(ReadEvents());
        if (damage_) return Status::Ok();
      } else {
        RETURN_IF_ERROR(ScanValue(&length));
        if (damage_) return Status::Ok();
        if (length == 0) return SetDamage(pos_, "expected a value for the key \"" + key + "\""), Status::Ok();
        if (key == "distributedInfo") DistributedInfo({buffer_.get() + pos_, length});
        if (key == "deviceProperties") DeviceProperties({buffer_.get() + pos_, length});
        if (key == "otherData") OtherData({buffer_.get() + pos_, length});
        pos_ += length;
      }
      RETURN_IF_ERROR(SkipSpace());
      if (AtEnd()) return SetDamage(end_, ends), Status::Ok();
      if (buffer_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (buffer_[pos_] == '}') break;
      return SetDamage(pos_, "expected ',' or '}' in the top-level object"), Status::Ok();
    }
    if (!found) return NotATrace(expected);
    return Status::Ok();
  }

  void DistributedInfo(std::string_view text) {
    const simdjson::padded_string padded(IsValidUtf8(text) ? std::string(text) : RepairUtf8(text));
    od::parser parser;
    od::document doc;
    od::value value;
    if (parser.iterate(padded).get(doc) || doc.get_value().get(value)) return;
    importer_.DistributedInfo(value);
  }

  void OtherData(std::string_view text) {
    const simdjson::padded_string padded(IsValidUtf8(text) ? std::string(text) : RepairUtf8(text));
    od::parser parser;
    od::document doc;
    od::value value;
    if (parser.iterate(padded).get(doc) || doc.get_value().get(value)) return;
    importer_.OtherData(value);
  }

  void DeviceProperties(std::string_view text) {
    const simdjson::padded_string padded(IsValidUtf8(text) ? std::string(text) : RepairUtf8(text));
    od::parser parser;
    od::document doc;
    od::value value;
    if (parser.iterate(padded).get(doc) || doc.get_value().get(value)) return;
    importer_.DeviceProperties(value);
  }

  // The last `},` after `from` and before `before`: the comma's index, or kNoCut.
  size_t FindCut(size_t from, size_t before) const {
    const char* data = buffer_.get();
    while (before > from + 1) {
      const void* hit = memrchr(data + from + 1, ',', before - from - 1);
      if (hit == nullptr) return kNoCut;
      const size_t comma = static_cast<size_t>(static_cast<const char*>(hit) - data);
      size_t k = comma;
      while (k > from && IsJsonSpace(data[k - 1])) --k;
      if (k > from && data[k - 1] == '}') return comma;
      before = comma;
    }
    return kNoCut;
  }

  // The end of the element before `index` (which follows its `,` or the array's `]`).
  size_t EndOfElementBefore(size_t index) const {
    const char* data = buffer_.get();
    while (index > kLead && IsJsonSpace(data[index - 1])) --index;
    if (index > kLead && (data[index - 1] == ',' || data[index - 1] == ']')) --index;
    while (index > kLead && IsJsonSpace(data[index - 1])) --index;
    return index;
  }

  // Consumes up to `index`, counting the UTF-8 repairs of a repaired batch.
  void Advance(size_t index, bool repaired) {
    if (repaired) utf8_replaced_ += CountInvalidUtf8Bytes({buffer_.get() + pos_, index - pos_});
    pos_ = index;
  }

  // The elements from pos_ up to `close`, the byte after the last one, which is read as the
  // array's end (simdjson wants a root array's last token to be its `]`).
  Batch ParseBatch(size_t close) {
    Batch batch;
    const size_t open = pos_ - 1;
    buffer_[open] = '[';
    batch.end = close + 1;
    const char saved = buffer_[close];
    buffer_[close] = ']';
    const std::string_view text(buffer_.get() + open, batch.end - open);
    simdjson::padded_string repaired;
    simdjson::padded_string_view json(text.data(), text.size(), capacity_ - open);
    if (!simdjson::validate_utf8(text.data(), text.size())) {
      repaired = simdjson::padded_string(RepairUtf8(text));
      json = simdjson::padded_string_view(repaired.data(), repaired.size(), repaired.size() + simdjson::SIMDJSON_PADDING);
      batch.repaired = true;
    }
    auto index_of = [&](const char* at) {
      const size_t offset = static_cast<size_t>(at - json.data());
      return open + (batch.repaired ? Utf8OriginalOffset(text, offset) : offset);
    };
    batch.failed_start = pos_;
    od::document doc;
    simdjson::error_code error = parser_.iterate(json).get(doc);
    if (error) {
      batch.error_index = batch.end;  // indexing errors (an unclosed string) have no position
    } else {
      od::array events;
      error = doc.get_array().get(events);
      if (!error) {
        for (auto element : events) {
          od::value value;
          if ((error = std::move(element).get(value))) {
            // Between elements: what was read is kept, the rest starts at the bad token.
            const char* at = nullptr;
            batch.failed_start = doc.current_location().get(at) == simdjson::SUCCESS ? index_of(at) : batch.end;
            break;
          }
          batch.failed_start = index_of(value.raw_json_token().data());
          if ((error = importer_.Event(value))) break;
          ++batch.parsed;
        }
      }
      const char* at = nullptr;
      const bool located = doc.current_location().get(at) == simdjson::SUCCESS;
      if (error) {
        batch.error_index = located ? index_of(at) : batch.end;
      } else if (located) {
        batch.outcome = Batch::kArrayClosed;
        batch.next = index_of(at);
      } else {
        batch.outcome = Batch::kWhole;
      }
    }
    if (error) batch.error = simdjson::error_message(error);
    buffer_[close] = saved;
    return batch;
  }

  Status ReadEvents() {
    bool first = true;
    bool after_element = false;  // the last batch ended after an element, before its `,`
    bool scan_next = false;      // no cut works at the end of the input: scan the next element
    bool need_more = false;      // no cut works in the buffer: read more
    while (true) {
      if (need_more || end_ - pos_ < chunk_bytes_ / 2) RETURN_IF_ERROR(Fill());  // keep batches large
      need_more = false;
      RETURN_IF_ERROR(SkipSpace());
      if (after_element && !AtEnd() && buffer_[pos_] == ',') {
        ++pos_;
        RETURN_IF_ERROR(SkipSpace());
      }
      after_element = false;
      if (AtEnd()) return SetDamage(end_, "the file ends inside the event array"), Status::Ok();
      if (buffer_[pos_] == ']') {
        ++pos_;
        return Status::Ok();
      }
      if (first && buffer_[pos_] != '{') return NotATrace("traceEvents holds values that are not event objects");
      first = false;
      if (threads_ > 1 && !scan_next && Offset(pos_) >= serial_before_) {
        ASSIGN_OR_RETURN(const bool consumed, ParallelRun());
        if (consumed) continue;
      }
      size_t close = scan_next ? kNoCut : FindCut(pos_, end_);
      bool scanned = false;
      scan_next = false;
      if (close == kNoCut) {
        if (!eof_) {
          need_more = true;  // no whole element in the buffer
          continue;
        }
        // The input's last elements: one at a time, their extent found by scanning.
        size_t length = 0;
        RETURN_IF_ERROR(ScanValue(&length));
        if (damage_) return Status::Ok();
        if (length == 0) return SetDamage(pos_, "expected an event"), Status::Ok();
        close = pos_ + length;
        scanned = true;
      }
      while (true) {
        const Batch batch = ParseBatch(close);
        if (batch.parsed > 0 && batch.outcome == Batch::kError) {
          Advance(batch.failed_start, batch.repaired);
          last_event_end_ = Offset(EndOfElementBefore(pos_));
        }
        if (batch.outcome == Batch::kWhole) {
          Advance(scanned ? close : close + 1, batch.repaired);
          last_event_end_ = Offset(scanned ? close : EndOfElementBefore(pos_));
          after_element = scanned;
          break;
        }
        if (batch.outcome == Batch::kArrayClosed) {
          Advance(batch.next, batch.repaired);
          last_event_end_ = Offset(EndOfElementBefore(EndOfElementBefore(pos_)));
          return Status::Ok();
        }
        // An error before the batch's end is damage in the file; at its end, the cut fell inside
        // an element (a `},` in a string or in nested args): an earlier cut is tried, then more
        // input.
        if (batch.error_index + 1 < batch.end || scanned) {
          return SetDamage(batch.error_index, batch.error), Status::Ok();
        }
        close = FindCut(pos_, close);
        if (close == kNoCut) {
          scan_next = eof_;
          need_more = !eof_;
          break;
        }
      }
    }
  }

  // The parallel path. Pieces of the event array cut at event boundaries are copied out of the
  // buffer and queued; the parsing threads (and this one, when the next piece to import is not
  // ready) parse them into batches, which this thread imports in file order. Cutting runs ahead
  // of importing by up to piece_count_ pieces, so the threads never wait for a round's last
  // piece or for the next read.
  struct Piece {
    std::unique_ptr<char[]> copy;  // `[` + the bytes + `]` + padding, for the parser
    size_t size = 0;               // the bytes' count
    size_t capacity = 0;
    int64_t offset = 0;            // input offset of the first byte; a comma follows the last
    int64_t last_event_end = 0;    // input offset just past its last event
    od::parser parser;
    ChromeEventBatch events;
    bool clean = false;
    bool claimed = false;  // taken from the queue by a thread (under queue_mutex_)
    std::atomic<uint32_t> done{0};
  };

  // The last `}`, `,`, `{` (white space between) at or after `from` with its comma before
  // `before`: the comma's index, or kNoCut. Stricter than FindCut, so cuts rarely fall in strings.
  size_t FindPieceCut(size_t from, size_t before, size_t limit) const {
    const char* data = buffer_.get();
    while (before > from + 1) {
      const size_t comma = FindCut(from, before);
      if (comma == kNoCut) return kNoCut;
      size_t k = comma + 1;
      while (k < limit && IsJsonSpace(data[k])) ++k;
      if (k < limit && data[k] == '{') return comma;
      before = comma;
    }
    return kNoCut;
  }

  // Copies the events from pos_ to `comma` into a piece, queues it and consumes them and the comma.
  void QueuePiece(size_t comma) {
    if (free_pieces_.empty()) {
      pieces_.push_back(std::make_unique<Piece>());
      free_pieces_.push_back(pieces_.back().get());
    }
    Piece& piece = *free_pieces_.back();
    free_pieces_.pop_back();
    const size_t n = comma - pos_;
    const size_t need = n + 2 + kTail;
    if (piece.capacity < need) {
      piece.capacity = need + need / 4;
      piece.copy = std::make_unique_for_overwrite<char[]>(piece.capacity);
    }
    char* text = piece.copy.get();
    text[0] = '[';
    std::memcpy(text + 1, buffer_.get() + pos_, n);
    text[n + 1] = ']';
    std::memset(text + n + 2, ' ', kTail);
    piece.size = n;
    piece.offset = Offset(pos_);
    piece.last_event_end = Offset(EndOfElementBefore(comma + 1));
    piece.clean = false;
    piece.claimed = false;
    piece.done.store(0, std::memory_order_relaxed);
    in_flight_.push_back(&piece);
    {
      const std::lock_guard lock(queue_mutex_);
      queue_.push_back(&piece);
    }
    queue_ready_.notify_one();
    pos_ = comma + 1;
  }

  void ParsePiece(Piece& piece) const {
    const size_t n = piece.size;
    const char* text = piece.copy.get();
    piece.events.Clear();
    piece.clean = false;
    if (simdjson::validate_utf8(text + 1, n)) {
      od::document doc;
      od::array events;
      if (!piece.parser.iterate(simdjson::padded_string_view(text, n + 2, piece.capacity)).get(doc) &&
          !doc.get_array().get(events)) {
        bool read = true;
        for (auto element : events) {
          od::value value;
          if (std::move(element).get(value) || piece.events.Read(value)) {
            read = false;
            break;
          }
        }
        const char* at = nullptr;
        piece.clean = read && doc.current_location().get(at) != simdjson::SUCCESS;  // the array ended at the end
      }
    }
    piece.done.store(1, std::memory_order_release);
    piece.done.notify_all();
  }

  // The oldest piece no thread has taken, taken (queue_mutex_ held, the queue not empty).
  Piece* PopQueued() {
    Piece* piece = queue_.front();
    queue_.pop_front();
    piece->claimed = true;
    return piece;
  }

  // The same, or null when there is none, without waiting.
  Piece* TakeQueued() {
    const std::lock_guard lock(queue_mutex_);
    return queue_.empty() ? nullptr : PopQueued();
  }

  void ParseQueued(std::stop_token stop) {
    while (true) {
      Piece* piece = nullptr;
      {
        std::unique_lock lock(queue_mutex_);
        if (!queue_ready_.wait(lock, stop, [this] { return !queue_.empty(); })) return;
        piece = PopQueued();
      }
      ParsePiece(*piece);
    }
  }

  // Runs the parallel path from pos_ until no piece can be cut (the array's end is near, or one
  // event is larger than the buffer) or a piece did not parse cleanly: that piece and the ones
  // after it go back into the buffer, for the single-thread path to read up to serial_before_.
  // True when it consumed events.
  StatusOr<bool> ParallelRun() {
    for (int t = static_cast<int>(workers_.size()) + 1; t < threads_; ++t) {
      workers_.emplace_back([this](std::stop_token stop) { ParseQueued(stop); });
    }
    bool consumed = false;
    while (true) {
      bool cut = true;
      while (cut && in_flight_.size() < piece_count_) {
        if (end_ - pos_ < 2 * piece_bytes_ && !eof_) RETURN_IF_ERROR(Fill());
        size_t comma = FindPieceCut(pos_, std::min(end_, pos_ + piece_bytes_), end_);
        if (comma == kNoCut) comma = FindPieceCut(pos_, end_, end_);  // an event longer than a piece
        cut = comma != kNoCut;
        if (cut) QueuePiece(comma);
      }
      if (in_flight_.empty()) return consumed;
      Piece& piece = *in_flight_.front();
      while (piece.done.load(std::memory_order_acquire) == 0) {
        if (Piece* other = TakeQueued()) {
          ParsePiece(*other);
        } else {
          piece.done.wait(0, std::memory_order_acquire);
        }
      }
      if (!piece.clean) {
        ReturnPiecesToBuffer();
        return consumed;
      }
      importer_.Import(piece.events);
      last_event_end_ = piece.last_event_end;
      in_flight_.pop_front();
      free_pieces_.push_back(&piece);
      consumed = true;
    }
  }

  // The pieces in flight (the first did not parse cleanly) back in front of the unconsumed
  // bytes, as they were in the input, once no thread parses them.
  void ReturnPiecesToBuffer() {
    std::vector<Piece*> taken;
    {
      const std::lock_guard lock(queue_mutex_);
      queue_.clear();
      for (Piece* piece : in_flight_) {
        if (piece->claimed) taken.push_back(piece);
      }
    }
    for (Piece* piece : taken) piece->done.wait(0, std::memory_order_acquire);
    serial_before_ = Offset(pos_);
    const size_t rest = end_ - pos_;
    size_t total = rest;
    for (const Piece* piece : in_flight_) total += piece->size + 1;
    chunk_bytes_ = std::max(chunk_bytes_, total);  // Fill reads into what the chunk leaves
    capacity_ = std::max(capacity_, kLead + chunk_bytes_ + kTail);
    auto bytes = std::make_unique_for_overwrite<char[]>(capacity_);
    size_t at = kLead;
    for (const Piece* piece : in_flight_) {
      std::memcpy(bytes.get() + at, piece->copy.get() + 1, piece->size);
      at += piece->size;
      bytes[at++] = ',';
    }
    std::memcpy(bytes.get() + at, buffer_.get() + pos_, rest);
    origin_ = in_flight_.front()->offset - static_cast<int64_t>(kLead);
    buffer_ = std::move(bytes);
    pos_ = kLead;
    end_ = kLead + total;
    std::memset(buffer_.get() + end_, ' ', kTail);
    for (Piece* piece : in_flight_) free_pieces_.push_back(piece);
    in_flight_.clear();
  }

  StatusOr<int64_t> BytesToEnd() {
    while (!eof_) {
      pos_ = end_;
      RETURN_IF_ERROR(Fill());
    }
    return Offset(end_);
  }

  // The source counted (progress, cancel) and cut at a preview's byte budget: a short read there
  // is the end of the input.
  Source Metered(Source source, const ChromeJsonReadOptions& options) {
    return [this, source = std::move(source), on_progress = options.on_progress,
            budget = options.preview_bytes](std::span<char> out) -> StatusOr<size_t> {
      if (budget > 0) {
        if (bytes_read_ >= budget) return size_t{0};
        out = out.first(std::min<size_t>(out.size(), static_cast<size_t>(budget - bytes_read_)));
      }
      ASSIGN_OR_RETURN(const size_t got, source(out));
      bytes_read_ += static_cast<int64_t>(got);
      if (on_progress && !on_progress(bytes_read_)) {
        return Status(StatusCode::kCancelled, name_ + ": reading was cancelled");
      }
      return got;
    };
  }

  Source source_;
  std::string name_;
  int64_t preview_bytes_ = 0;
  bool allow_truncated_ = false;
  Truncation* truncation_ = nullptr;
  int64_t bytes_read_ = 0;  // input bytes the source gave
  size_t chunk_bytes_;
  int threads_ = 1;
  size_t piece_count_ = 1;  // pieces in flight at most
  size_t piece_bytes_ = 0;  // a piece's length aimed at
  std::vector<std::unique_ptr<Piece>> pieces_;
  std::vector<Piece*> free_pieces_;
  std::deque<Piece*> in_flight_;  // queued, in file order, until imported
  std::mutex queue_mutex_;
  std::condition_variable_any queue_ready_;
  std::deque<Piece*> queue_;  // in flight, not taken by a thread yet
  int64_t serial_before_ = 0;  // input offset before which the single-thread path reads
  const FileReader* file_;  // the file streamed from, if any
  ChromeEventImporter importer_;
  od::parser parser_;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t pos_ = kLead, end_ = kLead;  // unconsumed bytes
  int64_t origin_ = -static_cast<int64_t>(kLead);  // input offset of buffer index 0
  bool eof_ = false;
  int64_t last_event_end_ = 0;  // input offset just past the last event read whole
  int64_t utf8_replaced_ = 0;
  std::optional<Damage> damage_;
  // Last, so that they stop (finishing the piece they parse) before the pieces go.
  std::vector<std::jthread> workers_;
};

}  // namespace

StatusOr<Trace> ReadChromeJson(std::string_view bytes, const std::string& name, const ChromeJsonReadOptions& options) {
  size_t offset = 0;
  StreamingImport import(
      [bytes, &offset](std::span<char> out) -> StatusOr<size_t> {
        const size_t n = std::min(out.size(), bytes.size() - offset);
        if (n > 0) std::memcpy(out.data(), bytes.data() + offset, n);
        offset += n;
        return n;
      },
      name, options);
  return import.Run();
}

StatusOr<Trace> ReadChromeJson(FileReader& reader, std::string_view prefix, const ChromeJsonReadOptions& options) {
  reader.AcceptCutGzip();  // a .json.gz cut short is a JSON file cut short, named with its offset
  StreamingImport import(
      [&reader, &prefix](std::span<char> out) -> StatusOr<size_t> {
        const size_t n = std::min(out.size(), prefix.size());
        if (n > 0) std::memcpy(out.data(), prefix.data(), n);
        prefix.remove_prefix(n);
        if (n == out.size()) return n;
        ASSIGN_OR_RETURN(const size_t more, reader.Read(out.subspan(n)));
        return n + more;
      },
      reader.path(), options, &reader);
  return import.Run();
}

}  // namespace stepscope::trace
