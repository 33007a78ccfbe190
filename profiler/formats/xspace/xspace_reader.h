// XSpace import: the trace TensorFlow 2 (`tf.profiler.experimental`) and JAX (`jax.profiler`)
// write as `<logdir>/plugins/profile/<run>/<host>.xplane.pb` (docs/formats.md §8).
//
// One host track per XSpace (its hostname, else the file name); under it one device track per
// plane with events (`/host:CPU` -> "CPU", `/device:GPU:0` -> "GPU:0"); one lane per line
// (threads on the host, streams and derived lines on devices). Each event is a slice named by
// its metadata: TensorFlow's `node:OpType` names (and `tf_op` stats on kernels) give node name
// and op type; every stat becomes a slice argument (SliceArg), `kernel_details` and
// `memcpy_details` fill the kernel and copy argument tables; host and device events sharing a
// `correlation_id` are linked by a launch flow; a step annotation (`step_num`/`iter_num` stat) is
// named `ProfilerStep#N` (its own name is the op type), so per-step analyses see the steps. Times are line timestamp + offset (ps, floored to
// ns); lines whose timestamps were normalised to the profile start are put back on the epoch with
// the `Task Environment` plane's `profile_start_time`.
//
// The protobuf is decoded by hand (no generated code, one pass, nothing copied but names), and
// damage is kInvalidInput naming the file and the byte offset of the broken field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

StatusOr<Trace> ReadXSpace(std::string_view bytes, const std::string& name);

// Several hosts' files of one run (a `plugins/profile/<run>/` directory), read into one trace
// with a host track per file, named after the file (`<host>.xplane.pb`); gzip inflated.
StatusOr<Trace> ReadXSpaceFiles(const std::vector<std::string>& paths);

}  // namespace stepscope::trace
