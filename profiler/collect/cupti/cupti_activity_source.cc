// The real CuptiActivitySource over CUPTI's activity API; see the header for threads and locks.
#include "profiler/collect/cupti/cupti_activity_source.h"

#include "profiler/collect/cupti/activity_buffer_pool.h"
#include "profiler/collect/cupti/api_exit_detach.h"
#include "profiler/collect/cupti/traced_api.h"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <string>
#include <utility>

namespace stepscope::collect::cupti {

std::vector<CUpti_ActivityKind> DefaultActivityKinds() {
  return {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,  // first: links must exist before launches
          CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,     CUPTI_ACTIVITY_KIND_MEMCPY,
          CUPTI_ACTIVITY_KIND_MEMCPY2,               CUPTI_ACTIVITY_KIND_MEMSET,
          CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,       CUPTI_ACTIVITY_KIND_OVERHEAD,
          CUPTI_ACTIVITY_KIND_RUNTIME,               CUPTI_ACTIVITY_KIND_DRIVER};
}

CuptiSourceOptions SourceOptionsFor(TraceLevel level) {
  CuptiSourceOptions options;
  switch (level) {
    case TraceLevel::kAttached: options.kinds.clear(); break;
    case TraceLevel::kActivity:
      options.kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                       CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET};
      break;
    case TraceLevel::kLaunches: break;
    case TraceLevel::kAll: options.api_ids_only = false; break;
  }
  return options;
}

Status CuptiCallStatus(CUptiResult result, const char* call, const char* file, int line) {
  const char* name = nullptr;
  if (cuptiGetResultString(result, &name) != CUPTI_SUCCESS || name == nullptr) {
    name = "unrecognised CUPTI error";
  }
  std::string message = std::string("CUPTI call ") + call + " failed: " + name + " (" +
                        std::to_string(static_cast<int>(result)) + ") at " + file + ":" +
                        std::to_string(line);
  switch (result) {
    // What CUPTI answers when there is no driver, no device or no permission to trace.
    case CUPTI_ERROR_UNKNOWN:
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_INVALID_DEVICE:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return Unavailable(message +
                         "; GPU tracing needs an NVIDIA GPU and a driver that CUPTI can use");
    default: return Internal(message);
  }
}

namespace {

class CuptiActivitySourceImpl;

// CUPTI's buffer callbacks take no user pointer: the one started source is reached through this.
std::atomic<CuptiActivitySourceImpl*> g_active_source{nullptr};

Status ProbeDriver() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* why = ::dlerror();
    return Unavailable(std::string("CUPTI tracer unavailable: no NVIDIA driver on this machine "
                                   "(loading libcuda.so.1 failed: ") +
                       (why != nullptr ? why : "unknown reason") +
                       "); GPU tracing needs an NVIDIA GPU and its driver");
  }
  ::dlclose(driver);
  return Status::Ok();
}

// The detach's own CUDA call: cuCtxGetCurrent of the driver the process has loaded (cheap, needs
// no context; this library links no CUDA library). Null without a driver.
using CtxGetCurrentCall = CUresult (*)(CUcontext*);
CtxGetCurrentCall DriverCtxGetCurrent() {
  static const CtxGetCurrentCall call = [] {
    void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);  // kept open
    return driver != nullptr
               ? reinterpret_cast<CtxGetCurrentCall>(::dlsym(driver, "cuCtxGetCurrent"))
               : nullptr;
  }();
  return call;
}

// CUPTI's callback while a detach is armed: at the exit of the armed call, on any thread.
void CUPTIAPI DetachAtApiExit(void* userdata, CUpti_CallbackDomain domain,
                              CUpti_CallbackId /*id*/, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || data == nullptr) return;
  if (static_cast<const CUpti_CallbackData*>(data)->callbackSite != CUPTI_API_EXIT) return;
  try {
    static_cast<ApiExitDetach*>(userdata)->OnApiExit();
  } catch (...) {
    // Out of memory for a Status: never unwind into CUDA.
  }
}

class CuptiActivitySourceImpl final : public CuptiActivitySource {
 public:
  explicit CuptiActivitySourceImpl(CuptiSourceOptions options)
      : options_(std::move(options)),
        pool_(options_.buffer_bytes, options_.buffer_budget_bytes),
        detach_(DetachCalls{.arm = [this] { return ArmDetach(); },
                            .trigger =
                                [] {
                                  CUcontext context = nullptr;
                                  (void)DriverCtxGetCurrent()(&context);
                                },
                            .finalize =
                                [] {
                                  const CUptiResult result = cuptiFinalize();
                                  return result == CUPTI_SUCCESS
                                             ? Status::Ok()
                                             : CuptiCallStatus(result, "cuptiFinalize()",
                                                               __FILE__, __LINE__);
                                },
                            .disarm = [this] { DisarmDetach(); }}) {}

  ~CuptiActivitySourceImpl() override { (void)Stop(); }

  Status Start(ActivityRecordSink* sink) override {
    if (started_) return Internal("CUPTI tracer already started");
    if (options_.probe_driver) RETURN_IF_ERROR(ProbeDriver());
    CuptiActivitySourceImpl* expected = nullptr;
    if (!g_active_source.compare_exchange_strong(expected, this)) {
      return Internal("another CUPTI tracer is already running in this process");
    }
    {
      std::lock_guard<std::mutex> lock(sink_mu_);
      sink_ = sink;
    }
    Status status = RegisterCallbacks();
    if (status.ok()) status = EnableKinds();
    if (!status.ok()) {
      DisableEnabled();
      {
        std::lock_guard<std::mutex> lock(sink_mu_);
        sink_ = nullptr;
      }
      g_active_source.store(nullptr);
      return status;
    }
    started_ = true;
    paused_ = false;
    return Status::Ok();
  }

  Status Flush() override {
    // Detached, CUPTI holds no buffer; a flush would only attach it again.
    if (!started_ || detached_) return Status::Ok();
    // No lock of ours is held here: the completion callback takes sink_mu_.
    STEPSCOPE_CUPTI_RETURN_IF_ERROR(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    const uint64_t refused = pool_.refused();
    std::lock_guard<std::mutex> lock(sink_mu_);
    if (refused > reported_refused_ && sink_ != nullptr) {
      sink_->OnDropped(DropReason::kBufferBudget, refused - reported_refused_);
    }
    reported_refused_ = refused;
    return Status::Ok();
  }

  Status Pause() override {
    if (!started_ || paused_) return Status::Ok();
    const Status flushed = Flush();
    DisableEnabled();  // even when the flush failed: tracing must not stay on
    paused_ = true;
    // Once more: records CUPTI completed between the flush and the disable reach the sink, and
    // the buffers that held them come back to the pool.
    const Status last = Flush();
    if (options_.detach_when_paused && stays_attached_why_.empty() && flushed.ok() &&
        last.ok()) {
      // Every buffer is back: CUPTI holds nothing of ours. Other threads may be inside CUDA,
      // so the finalize runs at a CUDA call's exit (api_exit_detach.h).
      const Status detached = detach_.Detach();
      if (detached.ok()) {
        detached_ = true;
        subscriber_ = nullptr;  // ended by the finalize
      } else {
        // The step's records are whole; later steps pay for CUPTI's hooks, and the log says so.
        stays_attached_why_ = detached.message();
        std::cerr << "stepscope: CUPTI stays attached between profiled steps (unprofiled steps "
                     "keep its cost): "
                  << stays_attached_why_ << "\n";
      }
    }
    if (!flushed.ok()) return flushed;
    return last;
  }

  Status Resume() override {
    if (!started_) return Internal("CUPTI tracer resumed before it was started");
    if (!paused_) return Status::Ok();
    // Any CUPTI call attaches CUPTI again; the detach forgot the buffer callbacks.
    Status status = detached_ ? RegisterCallbacks() : Status::Ok();
    if (status.ok() && detached_) {
      detached_ = false;
      TakeDropsWhileOff();
    }
    if (status.ok()) status = EnableKinds();
    if (!status.ok()) {
      DisableEnabled();
      return status;
    }
    paused_ = false;
    return Status::Ok();
  }

  Status Stop() override {
    if (!started_) return Status::Ok();
    Status status = Pause();
    {
      std::lock_guard<std::mutex> lock(sink_mu_);
      sink_ = nullptr;
    }
    g_active_source.store(nullptr);
    started_ = false;
    return status;
  }

  Status PushExternalCorrelation(uint64_t external_id) override {
    STEPSCOPE_CUPTI_RETURN_IF_ERROR(
        cuptiActivityPushExternalCorrelationId(kOpCorrelationKind, external_id));
    return Status::Ok();
  }

  Status PopExternalCorrelation() override {
    uint64_t last_id = 0;
    STEPSCOPE_CUPTI_RETURN_IF_ERROR(
        cuptiActivityPopExternalCorrelationId(kOpCorrelationKind, &last_id));
    return Status::Ok();
  }

  ClockAlignment clock_alignment() const override { return clock_; }
  uint64_t dropped_while_off() const override { return dropped_while_off_; }
  std::string api_records() const override { return api_records_; }
  bool links_ops() const override {
    return std::find(options_.kinds.begin(), options_.kinds.end(),
                     CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) != options_.kinds.end();
  }
  std::string hw_trace() const override { return hw_trace_state_; }
  std::string between_steps() const override {
    if (!options_.detach_when_paused) return "attached";
    if (!stays_attached_why_.empty()) return "attached (" + stays_attached_why_ + ")";
    return "detached";
  }

  // CUPTI callbacks (static, C linkage-compatible); nothing may throw out of them.
  static void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *max_records = 0;  // as many as fit
    CuptiActivitySourceImpl* self = g_active_source.load();
    *buffer = self != nullptr ? self->pool_.Acquire() : nullptr;
    *size = *buffer != nullptr ? self->pool_.buffer_bytes() : 0;
  }

  static void CUPTIAPI BufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                       size_t /*size*/, size_t valid_size) {
    CuptiActivitySourceImpl* self = g_active_source.load();
    if (self == nullptr) return;  // not ours (cannot happen once started); nothing to return
    self->Deliver(context, stream_id, buffer, valid_size);
  }

 private:
  // The detach's callback on cuCtxGetCurrent's exit (DetachAtApiExit); ended by the finalize.
  Status ArmDetach() {
    if (DriverCtxGetCurrent() == nullptr) {
      return Unavailable("the NVIDIA driver library has no cuCtxGetCurrent for the detach's call");
    }
    const CUptiResult subscribed = cuptiSubscribe(&subscriber_, DetachAtApiExit, &detach_);
    if (subscribed != CUPTI_SUCCESS) {
      subscriber_ = nullptr;
      return CuptiCallStatus(subscribed, "cuptiSubscribe() (another CUPTI client, such as "
                                         "Nsight Systems, may hold the callbacks)",
                             __FILE__, __LINE__);
    }
    STEPSCOPE_CUPTI_RETURN_IF_ERROR(cuptiEnableCallback(
        1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent));
    return Status::Ok();
  }

  void DisarmDetach() {
    if (subscriber_ == nullptr) return;
    (void)cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
  }

  // Once per Start: CUPTI keeps the callbacks while kinds are disabled and enabled again.
  Status RegisterCallbacks() {
    STEPSCOPE_CUPTI_RETURN_IF_ERROR(cuptiActivityRegisterCallbacks(BufferRequested,
                                                                   BufferCompleted));
    return Status::Ok();
  }

  // Enables every kind (RUNTIME and DRIVER one chosen call at a time where CUPTI can), then
  // reads the clock alignment for the records to come.
  Status EnableKinds() {
    if (options_.hw_trace) EnableHwTrace();
    std::vector<CUpti_ActivityKind> api_kinds;
    for (CUpti_ActivityKind kind : options_.kinds) {
      if (options_.api_ids_only &&
          (kind == CUPTI_ACTIVITY_KIND_RUNTIME || kind == CUPTI_ACTIVITY_KIND_DRIVER)) {
        api_kinds.push_back(kind);
        continue;
      }
      RETURN_IF_ERROR(EnableKind(kind));
    }
    if (!api_kinds.empty()) {
      const ApiEnableResult ids = SwitchTracedApis(CuptiApiIdSwitch(), 1);
      if (ids.per_id) {
        api_ids_enabled_ = true;
        api_records_ = std::to_string(ids.enabled) + " chosen runtime/driver calls";
      } else {
        if (!warned_api_fallback_) {
          warned_api_fallback_ = true;
          std::cerr << "stepscope: CUPTI records every runtime and driver call (more host time "
                       "per call): "
                    << ids.why_not << "\n";
        }
        for (CUpti_ActivityKind kind : api_kinds) RETURN_IF_ERROR(EnableKind(kind));
        api_records_ = "every runtime and driver call (" + ids.why_not + ")";
      }
    } else {
      api_records_ = "none";
    }
    // One reading of both clocks; the host reading is the midpoint around CUPTI's.
    uint64_t cupti_ns = 0;
    const int64_t before = options_.host_clock();
    STEPSCOPE_CUPTI_RETURN_IF_ERROR(cuptiGetTimestamp(&cupti_ns));
    const int64_t after = options_.host_clock();
    clock_ = ClockAlignment{static_cast<int64_t>(cupti_ns), before + (after - before) / 2};
    return Status::Ok();
  }

  // Before the kinds: kernel records then carry the hardware's timestamps. Looked up at run
  // time (CUDA 13's CUPTI has it; it works on the GPUs CUPTI lists, Blackwell as of 13.0).
  void EnableHwTrace() {
    static const HwTraceSwitch enable_hw_trace = CuptiHwTraceSwitch();
    const CUptiResult result =
        enable_hw_trace != nullptr ? enable_hw_trace(1) : CUPTI_ERROR_NOT_SUPPORTED;
    if (result == CUPTI_SUCCESS) {
      hw_trace_on_ = true;
      hw_trace_state_ = "on";
      return;
    }
    const char* name = nullptr;
    if (cuptiGetResultString(result, &name) != CUPTI_SUCCESS || name == nullptr) name = "?";
    hw_trace_state_ = std::string("unavailable (") +
                      (enable_hw_trace == nullptr ? "this CUPTI has no cuptiActivityEnableHWTrace"
                                                  : name) +
                      ")";
    if (!warned_hw_trace_) {
      warned_hw_trace_ = true;
      std::cerr << "stepscope: CUPTI hardware trace " << hw_trace_state_
                << "; kernels keep CUPTI's own timestamps\n";
    }
  }

  Status EnableKind(CUpti_ActivityKind kind) {
    const CUptiResult result = cuptiActivityEnable(kind);
    if (result != CUPTI_SUCCESS) {
      return CuptiCallStatus(
          result, ("cuptiActivityEnable(kind " + std::to_string(kind) + ")").c_str(), __FILE__,
          __LINE__);
    }
    enabled_.push_back(kind);
    return Status::Ok();
  }

  // Drop counts CUPTI holds from before this Resume (seen after a detach): no kind was enabled,
  // so they belong to no step. Read (which resets them) before the kinds go on, and kept apart.
  void TakeDropsWhileOff() {
    std::vector<std::pair<CUcontext, uint32_t>> queues;
    {
      std::lock_guard<std::mutex> lock(sink_mu_);
      queues = delivered_queues_;
    }
    queues.emplace_back(nullptr, 0);  // CUPTI's global queue
    for (const auto& [context, stream_id] : queues) {
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) {
        dropped_while_off_ += dropped;
      }
    }
  }

  void DisableEnabled() {
    if (hw_trace_on_) {
      if (const HwTraceSwitch off = CuptiHwTraceSwitch()) (void)off(0);
      hw_trace_on_ = false;
    }
    if (api_ids_enabled_) (void)SwitchTracedApis(CuptiApiIdSwitch(), 0);
    api_ids_enabled_ = false;
    for (CUpti_ActivityKind kind : enabled_) (void)cuptiActivityDisable(kind);
    enabled_.clear();
  }

  void Deliver(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t valid_size) {
    try {
      std::lock_guard<std::mutex> lock(sink_mu_);
      if (sink_ != nullptr && buffer != nullptr) {
        CUpti_Activity* record = nullptr;
        while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
          sink_->OnRecord(*record);
        }
        const std::pair<CUcontext, uint32_t> queue{context, stream_id};
        if (std::find(delivered_queues_.begin(), delivered_queues_.end(), queue) ==
            delivered_queues_.end()) {
          delivered_queues_.push_back(queue);
        }
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS &&
            dropped > 0) {
          sink_->OnDropped(DropReason::kCupti, dropped);
        }
      }
    } catch (...) {
      // Out of memory in the sink: the rest of this buffer is lost; never unwind into CUPTI.
    }
    pool_.Release(buffer);
  }

  CuptiSourceOptions options_;
  ActivityBufferPool pool_;
  // Start/Flush/Pause/Resume/Stop are called from one controlling thread.
  bool started_ = false;
  bool paused_ = false;  // started, kinds disabled
  bool detached_ = false;  // paused with CUPTI detached (cuptiFinalize)
  ApiExitDetach detach_;
  CUpti_SubscriberHandle subscriber_ = nullptr;  // while a detach is armed
  std::string stays_attached_why_;  // a detach failed: CUPTI stays attached from then on
  std::vector<CUpti_ActivityKind> enabled_;
  bool api_ids_enabled_ = false;     // the TracedApis() ids are on (per-id mode)
  bool warned_api_fallback_ = false;  // the whole-kinds fallback was logged
  std::string api_records_;
  bool hw_trace_on_ = false;
  bool warned_hw_trace_ = false;
  std::string hw_trace_state_;
  ClockAlignment clock_;
  std::mutex sink_mu_;  // guards sink_ and reported_refused_; taken by buffer deliveries
  ActivityRecordSink* sink_ = nullptr;
  uint64_t reported_refused_ = 0;
  std::vector<std::pair<CUcontext, uint32_t>> delivered_queues_;  // (context, stream) seen
  uint64_t dropped_while_off_ = 0;  // controlling thread only
};

}  // namespace

std::unique_ptr<CuptiActivitySource> MakeCuptiActivitySource(CuptiSourceOptions options) {
  return std::make_unique<CuptiActivitySourceImpl>(std::move(options));
}

}  // namespace stepscope::collect::cupti
