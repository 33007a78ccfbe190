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
  // The top-level `distributedInfo` object (rank, world size).
  void DistributedInfo(simdjson::ondemand::value value);
  // Closes what is open, applies metadata, binds flows and builds the Trace.
  Trace Finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stepscope::trace
