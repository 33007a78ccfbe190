// The CUPTI-facing side of the GPU tracer: enables activity kinds, lends CUPTI bounded buffers,
// and hands every delivered record to an ActivityRecordSink (normally a GpuActivityConverter).
// It sits behind the CuptiActivitySource interface so the rest of the profiler is tested without
// a GPU; the real implementation (MakeCuptiActivitySource) calls CUPTI's activity API.
//
// Tracing is on only while it is wanted: Start() registers the buffer callbacks and enables the
// kinds; Pause() disables the kinds and, by default, detaches CUPTI from the process
// (cuptiFinalize, at a CUDA call's exit: api_exit_detach.h); Resume() attaches it again
// (callbacks registered afresh) and enables the kinds.
// Detaching is what leaves the unprofiled steps of a run at full speed: with every kind disabled
// but CUPTI still attached, each CUDA call keeps paying for CUPTI's hooks.
// Each Start/Resume reads the CUPTI-to-host clock alignment afresh: CUPTI's clock (which may
// follow the wall clock) and the host's steady clock need not keep one offset over a long run.
//
// Every CUPTI call is checked: a failure becomes a Status naming the call, CUPTI's error and
// where it was made. Without an NVIDIA driver (our development and CI machines), Start() returns
// kUnavailable with a message naming CUPTI and the driver; nothing crashes.
//
// Threads and locks: CUPTI requests buffers and delivers completed ones on its own threads.
// Deliveries take the source's sink lock while they call the sink, so the sink sees one record
// at a time. Flush(), Pause() and Stop() call cuptiActivityFlushAll, which waits for those
// deliveries: they never hold the sink lock themselves (that would deadlock), and neither may
// their caller hold a lock the sink takes.
//
// CUPTI's buffer callbacks carry no user pointer, so one source can be started at a time per
// process; Start() on a second one fails cleanly.
#pragma once

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/steady_clock.h"
#include "profiler/collect/cupti/gpu_activity_converter.h"

namespace stepscope::collect::cupti {

// The external-correlation kind stepscope pushes its op ids under.
inline constexpr CUpti_ExternalCorrelationKind kOpCorrelationKind =
    CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// docs/formats.md §5: kernels, copies (peer copies too), memsets, the op links, synchronisation
// and CUPTI's overhead, and the runtime and driver API records. CUPTI writes an EXTERNAL_CORRELATION
// record only next to an API record, and cuBLAS/cuBLASLt launch through the driver
// (cuLaunchKernelEx): without DRIVER records their kernels would not be linked to their ops.
// RUNTIME and DRIVER are enabled for the calls of traced_api.h only, where CUPTI can
// (CuptiSourceOptions::api_ids_only).
std::vector<CUpti_ActivityKind> DefaultActivityKinds();

struct CuptiSourceOptions {
  std::vector<CUpti_ActivityKind> kinds = DefaultActivityKinds();
  size_t buffer_bytes = size_t{4} << 20;          // CUPTI recommends 1-10 MB
  size_t buffer_budget_bytes = size_t{64} << 20;  // then requests are refused and counted
  // Check that the NVIDIA driver library loads before calling CUPTI, for a clear error: CUPTI
  // itself only reports CUPTI_ERROR_UNKNOWN when there is no driver.
  bool probe_driver = true;
  std::function<int64_t()> host_clock = SteadyNowNanos;  // host clock (steady, ns)
  // Pause() detaches CUPTI (cuptiFinalize) once its buffers are flushed, at the exit of a CUDA
  // call (api_exit_detach.h), so that threads inside CUDA then (NCCL's, fusion's) are safe.
  // Where that cannot be done, CUPTI stays attached, one line goes to stderr and
  // between_steps() says why.
  bool detach_when_paused = true;
  // RUNTIME and DRIVER in `kinds` record only the calls of TracedApis() (traced_api.h), enabled
  // one id at a time. Where this CUPTI cannot, the whole kinds are enabled (every call recorded)
  // and one line goes to stderr; api_records() says which.
  bool api_ids_only = true;
  // Kernel timestamps from the GPU's hardware trace (cuptiActivityEnableHWTrace) instead of
  // CUPTI's instrumentation, where this CUPTI and GPU support it (checked at each enable; where
  // not, one line to stderr and the usual timestamps). hw_trace() says which.
  bool hw_trace = false;
};

// The profiler's cost decomposed (the trainer's --profile_level): what CUPTI records in a
// profiled step, each level adding to the one before.
enum class TraceLevel {
  kAttached,  // CUPTI attached, no kind enabled, no op links pushed
  kActivity,  // kernels, copies and memsets (not linked to ops: no API or link records)
  kLaunches,  // + links, synchronisation, overhead, and the API records of TracedApis()
  kAll,       // + every runtime and driver call's API record
};
// The source options for `level` (the other options left at their defaults).
CuptiSourceOptions SourceOptionsFor(TraceLevel level);

class CuptiActivitySource {
 public:
  virtual ~CuptiActivitySource() = default;

  // Registers the buffer callbacks, enables the activity kinds and reads the clock alignment.
  // `sink` must outlive Stop(). On failure nothing stays enabled.
  virtual Status Start(ActivityRecordSink* sink) = 0;
  // Delivers every buffer CUPTI holds, complete or not, to the sink, then reports drops (CUPTI's
  // and refused buffers) through OnDropped. Returns after the sink has seen them all.
  virtual Status Flush() = 0;
  // Between Start and Stop, tracing off: Flush, disable the kinds (even when the flush failed),
  // then flush again so every buffer CUPTI still held comes back to the pool, then (when
  // detach_when_paused) detach CUPTI. Idempotent.
  virtual Status Pause() = 0;
  // Tracing on again after Pause: attaches CUPTI again when it was detached (registering the
  // buffer callbacks), enables the kinds and reads the clock alignment afresh. On
  // failure nothing stays enabled. A no-op when not paused; an error before Start.
  virtual Status Resume() = 0;
  // Pause, then unregister the sink. Idempotent.
  virtual Status Stop() = 0;

  // Hot path, on the thread launching an op's GPU work: GPU work launched between Push and Pop
  // is linked to `external_id` through an EXTERNAL_CORRELATION record. Only while tracing is on:
  // CUPTI writes no link record for launches made while the kinds are disabled.
  virtual Status PushExternalCorrelation(uint64_t external_id) = 0;
  virtual Status PopExternalCorrelation() = 0;

  // CUPTI's clock against the host clock, read at the last Start() or Resume().
  virtual ClockAlignment clock_alignment() const = 0;
  // Records CUPTI counted as dropped while tracing was off (read as it resumed): part of no step.
  virtual uint64_t dropped_while_off() const { return 0; }
  // Which API calls are recorded, for the log: "67 chosen runtime/driver calls", "every runtime
  // and driver call (<why>)", or "none"; empty before the first Start/Resume.
  virtual std::string api_records() const { return {}; }
  // Whether ops should push their external correlation ids: only when links are recorded.
  virtual bool links_ops() const { return true; }
  // "on", "off", or "unavailable (<why>)" (asked for, refused); empty before the first enable.
  virtual std::string hw_trace() const { return {}; }
  // CUPTI between profiled steps: "detached", "attached" (asked for), or "attached (<why the
  // detach could not be done>)".
  virtual std::string between_steps() const { return "attached"; }
};

std::unique_ptr<CuptiActivitySource> MakeCuptiActivitySource(CuptiSourceOptions options = {});

// A failed CUPTI call as a Status: "<call> failed: <CUPTI error name> (<file>:<line>)", code
// kUnavailable when the error means no usable driver/device/permission, else kInternal.
Status CuptiCallStatus(CUptiResult result, const char* call, const char* file, int line);

}  // namespace stepscope::collect::cupti

// Checks a CUPTI call, keeping its text and file:line; returns the Status from the enclosing
// function on failure.
#define STEPSCOPE_CUPTI_RETURN_IF_ERROR(call)                                                   \
  do {                                                                                          \
    const CUptiResult _cupti_result_ = (call);                                                  \
    if (_cupti_result_ != CUPTI_SUCCESS) {                                                      \
      return ::stepscope::collect::cupti::CuptiCallStatus(_cupti_result_, #call, __FILE__,      \
                                                          __LINE__);                            \
    }                                                                                           \
  } while (0)
