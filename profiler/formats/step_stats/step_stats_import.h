// Turns a parsed RunMetadata (TensorFlow's or ours) into a Trace: tracks per host, device and
// lane; one slice per NodeExecStats; dataflow and launch flows; allocator counters from the
// allocation records anchored on allocator_bytes_in_use.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "profiler/formats/step_stats/step_stats_times.h"
#include "profiler/trace/trace.h"

namespace stepscope::tf {
class RunMetadata;
}

namespace stepscope::trace {

Trace ImportRunMetadata(std::shared_ptr<tf::RunMetadata> metadata, SourceFormat format,
                        const std::string& path, const ImportStats& parse_stats);

// Binary RunMetadata or StepStats (`bytes`, already inflated) imported straight from the wire
// (step_stats_wire.h): the same Trace ParseStepStats + ImportRunMetadata give, without a message
// per node. nullopt where the scan declines the input (damage, strings to repair, unusual
// encodings): the caller then takes that path, which names the problem or repairs it.
std::optional<Trace> ImportBinaryStepStats(std::string_view bytes, const std::string& path);

}  // namespace stepscope::trace
