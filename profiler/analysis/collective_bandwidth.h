// Bandwidth per collective, behind `stepscope collectives` and the `collectives` part of
// `stepscope efficiency`: for each collective a trace records, what it moved, in how long, the
// algorithm and bus bandwidth nccl-tests would report for it, and how much of its time no compute
// hid.
//
// Where a collective and its size come from (the first that applies to a slice):
//  - a collective record of stepscope-train (StepStats `CollectiveInfo`: ALLREDUCE, fusion and
//    MPI records; or our Chrome JSON export of one: args `collective`, `bytes`, `group size`);
//  - an NCCL kernel of a PyTorch profiler trace (a kernel whose name holds "nccl"), sized by its
//    args `Collective name`, `In msg nelems`, `Out msg nelems`, `dtype`, `Group size`;
//  - a gloo collective of a CPU PyTorch trace: the `gloo:<collective>` span on gloo's own thread
//    (the work, waiting for the peers included), sized by its `Input Dims` and `Input type`,
//    the group the trace's world size (Kineto's `distributedInfo`).
// A trainer record and the NCCL kernel it launched (one correlation id) are one collective,
// counted once: the kernel's time with the record's size and group.
// A collective whose size the source does not give is still counted with its time; its bytes
// and bandwidths are unknown (-1 / nullopt), never zero.
//
// The figures, as nccl-tests defines them (doc/PERFORMANCE.md there):
//   size S: the largest buffer of one rank's call, max(In, Out) elements × element size (an
//     all-reduce's buffer, an all-gather's gathered output, a reduce-scatter's input);
//   algbw = S / time;  busbw = algbw × factor(kind, n), n the group size:
//     all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; broadcast, reduce,
//     send/recv 1; none (nullopt) for other kinds (barriers, fusion-buffer copies, packing).
// A row's bandwidth is its total bytes over its total time, so one slow call weighs as it cost.
// Exposed time: the part of a collective's time in which no compute (an op or kernel that is not
// communication, IsCommunication) runs on the same device (its GPU lanes for GPU work, its host
// lanes for host work), as `overlap` counts hidden and exposed communication.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

enum class CollectiveKind : uint8_t {
  kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kSendRecv, kBarrier, kOther
};
// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv",
// "barrier", "other".
std::string_view CollectiveKindName(CollectiveKind kind);
// From a name as the sources write it ("allreduce", "all_reduce", "AllReduce", "_allgather_base",
// "reduce_scatter_tensor_coalesced", "ALLREDUCE", ...); kOther when none matches.
CollectiveKind CollectiveKindOf(std::string_view name);
// nccl-tests' bus bandwidth factor; nullopt when the kind has none or n < 1.
std::optional<double> BusBandwidthFactor(CollectiveKind kind, int32_t group_size);
// Bytes of one element of a dtype as PyTorch names it ("Float", "float", "c10::BFloat16",
// "Half", "long int", ...) or TensorFlow does ("DT_FLOAT"); 0 when unknown.
int32_t DtypeBytes(std::string_view dtype);

// One collective call as the trace recorded it.
struct CollectiveCall {
  uint32_t slice = 0;
  int32_t rank = -1;
  CollectiveKind kind = CollectiveKind::kOther;
  std::string name;           // the kind's name, or the record's own op type for kOther
  std::string source;         // "stepscope", "nccl_kernel", "gloo"
  std::string algorithm;      // as recorded ("ring", "nccl", "pscpu/mpi"); empty when none
  std::string dtype;          // as recorded; empty when none
  int64_t bytes = -1;         // S above; -1 when the source gives no size
  int32_t group_size = 0;     // 0 when unknown
  int64_t start_ns = 0, dur_ns = 0;  // trace time
  int64_t exposed_ns = 0;
};

// The calls of one rank and device of one kind, algorithm, dtype, group size and message size
// (as nccl-tests prints a line per size).
struct CollectiveRow {
  int32_t rank = -1;
  std::string device;        // the device's track path ("" when the source has none)
  std::string name;          // CollectiveCall::name
  std::string source;
  std::string algorithm;
  std::string dtype;
  int32_t group_size = 0;
  int64_t bytes = -1;        // per call; -1 when unknown
  int64_t count = 0;
  int64_t total_bytes = -1;  // count × bytes; -1 when unknown
  int64_t time_ns = 0;       // sum of the calls' durations
  int64_t exposed_ns = 0;
  std::optional<double> algbw_bytes_per_s, busbw_bytes_per_s;
  std::optional<double> busbw_share_of_peak;  // busbw / the link's peak, when both are known
};

// The link a collective's bus bandwidth is compared with.
struct LinkPeak {
  std::optional<double> bytes_per_s;  // nullopt: unknown
  std::string source;                 // "--link-peak", the datasheet, or why it is unknown
};

struct CollectiveTotals {
  int64_t calls = 0, sized_calls = 0;
  int64_t time_ns = 0, exposed_ns = 0;
  int64_t bytes = 0;  // of the sized calls
};

struct CollectiveBandwidth {
  // By rank, device, name, group size, bytes; a rank's files (its steps) fill the same rows.
  std::vector<CollectiveRow> rows;
  std::vector<CollectiveCall> calls;  // by rank, then start
  CollectiveTotals totals;
  LinkPeak link;
  // What a reader must know: collectives without a size, kinds without a bus factor, group sizes
  // taken from the world size.
  std::vector<std::string> notes;
};

// A GPU's NVLink peak a direction (bytes/s) by the device name traces record ("NVIDIA H100 80GB
// HBM3"; compared as device_peaks compares them: no case, no leading "NVIDIA "), from its
// datasheet's total (both directions) halved, as nccl-tests' bus bandwidth is one direction's;
// nullopt for devices whose link the table does not know (PCIe parts: NVLink there is an optional
// bridge).
std::optional<LinkPeak> NvlinkPeakOf(std::string_view device_name);

struct CollectiveOptions {
  std::optional<double> link_peak_bytes_per_s;  // --link-peak, in bytes/s: wins over the device
  std::string device_name;                      // the trace's GPU (or --device), for NvlinkPeakOf
};

// Each trace is one rank (StepInfo.rank; its index among the traces when unknown).
CollectiveBandwidth ComputeCollectiveBandwidth(std::span<const trace::Trace> traces,
                                               const CollectiveOptions& options = {});
CollectiveBandwidth ComputeCollectiveBandwidth(const trace::Trace& trace, const CollectiveOptions& options = {});

}  // namespace stepscope::analysis
