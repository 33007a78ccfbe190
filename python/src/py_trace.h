// The trace object the Python module hands out: a read trace and the input it was read from (so
// that the CLI's commands can be run on the same input).
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "profiler/trace/trace.h"
#include "profiler/trace/truncation.h"

namespace stepscope::python {

namespace nb = nanobind;

struct PyTrace {
  trace::Trace trace;
  std::string input;       // the file or directory it was read from
  trace::Truncation truncation;  // what allow_truncated cut (file empty when read whole)
};

// Defines the `Trace` class of module `m` (tables.cc).
void BindTrace(nb::module_& m);

}  // namespace stepscope::python
