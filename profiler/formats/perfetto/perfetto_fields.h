// Field numbers of the protobuf messages the Perfetto reader and writer speak: google/perfetto's
// protos/perfetto/trace/ (docs/formats.md §7), and the NodeExecStats fields the writer reads.
#pragma once

#include <cstdint>
#include <string_view>

namespace stepscope::trace::perfetto_fields {

// google/perfetto protos/perfetto/trace/.
namespace trace_proto { enum : uint32_t { kPacket = 1 }; }
namespace packet {
enum : uint32_t {
  kClockSnapshot = 6, kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
  kSequenceFlags = 13, kIncrementalStateCleared = 41, kTimestampClockId = 58, kDefaults = 59,
  kTrackDescriptor = 60,
};
enum : uint32_t { kSeqIncrementalStateCleared = 1, kSeqNeedsIncrementalState = 2 };
}  // namespace packet
namespace defaults { enum : uint32_t { kTrackEventDefaults = 11, kTimestampClockId = 58 }; }
namespace event_defaults { enum : uint32_t { kTrackUuid = 11 }; }
namespace clock_snapshot { enum : uint32_t { kClocks = 1, kPrimaryTraceClock = 2 }; }
namespace clock {
enum : uint32_t { kClockId = 1, kTimestamp = 2, kIsIncremental = 3, kUnitMultiplierNs = 4 };
enum : uint32_t { kRealtime = 1, kBoottime = 6, kSequenceClock = 64 };
}  // namespace clock
namespace track_descriptor {
enum : uint32_t { kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5, kCounter = 8, kStaticName = 10,
                  kChildOrdering = 11, kSiblingOrderRank = 12 };
// stepscope's own field (Perfetto skips it): the lane's TrackKindName, so a reader need not guess
// what a lane is from its name and depth.
enum : uint32_t { kStepscopeTrackKind = 1000 };
enum : uint32_t { kChildOrderingExplicit = 3 };
}  // namespace track_descriptor
namespace process_descriptor { enum : uint32_t { kPid = 1, kProcessName = 6 }; }
namespace thread_descriptor { enum : uint32_t { kPid = 1, kTid = 2, kThreadName = 5 }; }
namespace counter_descriptor {
enum : uint32_t { kUnit = 3, kUnitMultiplier = 4, kIsIncremental = 5 };
enum : uint32_t { kUnitSizeBytes = 3 };
}  // namespace counter_descriptor
namespace track_event {
enum : uint32_t {
  kCategoryIids = 3, kDebugAnnotations = 4, kType = 9, kNameIid = 10, kTrackUuid = 11, kCategories = 22,
  kName = 23, kCounterValue = 30, kFlowIdsOld = 36, kTerminatingFlowIdsOld = 42, kDoubleCounterValue = 44,
  kFlowIds = 47, kTerminatingFlowIds = 48,
};
enum : uint32_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4 };
}  // namespace track_event
namespace annotation {
enum : uint32_t { kNameIid = 1, kBool = 2, kUint = 3, kInt = 4, kDouble = 5, kString = 6, kPointer = 7,
                  kName = 10, kArrayValues = 12, kStringIid = 17 };
}
// NodeExecStats (stepscope/tf/step_stats.proto, docs/formats.md §1.2) and what the writer
// reads of its outputs.
namespace node_field {
enum : uint32_t {
  kOutput = 7, kTimelineLabel = 8, kKernel = 1001, kCorrelationId = 1004,
  kOutputTensor = 3,                     // NodeOutput.tensor_description
  kTensorDtype = 1, kTensorShape = 2,    // TensorDescription
  kShapeDim = 2, kShapeUnknownRank = 3,  // TensorShapeProto
  kDimSize = 1,                          // TensorShapeProto.Dim
};
}  // namespace node_field
namespace interned {
enum : uint32_t { kEventCategories = 1, kEventNames = 2, kAnnotationNames = 3, kAnnotationStrings = 29 };
enum : uint32_t { kIid = 1, kName = 2 };  // EventName/EventCategory/DebugAnnotationName; InternedString str = 2
}  // namespace interned

// Annotation names of the typed memory details (profiler/trace/slice_details.h), written and
// read back.
inline constexpr std::string_view kOutputsKey = "tensor outputs";
inline constexpr std::string_view kAllocatorsKey = "allocators";
inline constexpr std::string_view kTempMemoryKey = "temp memory (bytes)";
inline constexpr std::string_view kPersistentMemoryKey = "persistent memory (bytes)";

}  // namespace stepscope::trace::perfetto_fields
