// The importer half of the Chrome JSON reader (chrome_json_reader.h): what Chrome trace events
// mean. It receives one event object at a time from the tokenizer (chrome_json_tokenizer.cc)
// and builds the Trace: X and B/E slices, M metadata, C counters, s/t/f flows, Kineto categories
// and args, `[memory]` instants, distributedInfo; every repair counted in import_stats().
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <string>

#include "profiler/trace/trace.h"

namespace stepscope::trace {

// JSON's white space (RFC 8259): what the tokenizer skips between tokens and the importer trims
// off raw number tokens.
inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Events read from one piece of the event array, on any thread: Read() touches no importer, and
// what it keeps points into the parser's string buffer and the parsed bytes, so both must live
// until ChromeEventImporter::Import() has taken the batch (in file order).
class ChromeEventBatch {
 public:
  ChromeEventBatch();
  ~ChromeEventBatch();
  ChromeEventBatch(const ChromeEventBatch&) = delete;
  ChromeEventBatch& operator=(const ChromeEventBatch&) = delete;

  void Clear();
  // Reads one event object; on a simdjson error the event is not kept.
  simdjson::error_code Read(simdjson::ondemand::value value);
  size_t size() const;

 private:
  friend class ChromeEventImporter;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class ChromeEventImporter {
 public:
  explicit ChromeEventImporter(const std::string& name);
  ~ChromeEventImporter();
  ChromeEventImporter(const ChromeEventImporter&) = delete;
  ChromeEventImporter& operator=(const ChromeEventImporter&) = delete;

  ImportStats& stats();
  // Events read so far (whole ones, kept or skipped).
  int64_t events() const;
  // Reads one event object; a simdjson error stops the import (the caller decides what to keep).
  simdjson::error_code Event(simdjson::ondemand::value value);
  // Imports a batch read before, as Event() would each of its events.
  void Import(const ChromeEventBatch& batch);
  // The top-level `distributedInfo` object (rank, world size).
  void DistributedInfo(simdjson::ondemand::value value);
  // stepscope's export: "producer" (who recorded the trace it was converted from).
  void OtherData(simdjson::ondemand::value value);
  // The top-level `deviceProperties` array (name, SMs, memory of each GPU): StepInfo::devices.
  void DeviceProperties(simdjson::ondemand::value value);
  // Closes what is open, applies metadata, binds flows and builds the Trace.
  Trace Finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stepscope::trace
