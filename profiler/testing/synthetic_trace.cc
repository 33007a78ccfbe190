// The generator behind `stepscope-view --synthetic N`: tracks, nested CPU ops, back-to-back
// kernels and launch flows drawn from one fixed-seed random stream, so a size gives one trace.
#include "profiler/testing/synthetic_trace.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/random.h"

namespace stepscope::synthetic {
namespace {

constexpr std::array<const char*, 24> kOpStems = {
    "MatMul", "Conv2D", "Relu", "BiasAdd", "Add", "Mul", "Sum", "Softmax", "Tanh", "Sigmoid",
    "Transpose", "Reshape", "Concat", "Slice", "Gather", "LayerNorm", "BatchNorm", "MaxPool",
    "AvgPool", "Cast", "AllReduce", "MEMCPYHtoD", "MEMCPYDtoH", "ApplyMomentum"};
constexpr int kOpTypes = 120;
constexpr int kNodeNames = 5000;
constexpr int kCpuLanes = 4;
constexpr int kGpuStreams = 4;
constexpr int64_t kEpochNs = 1'700'000'000'000'000'000;
// The GPU allocator's bytes in use, sampled every this many kernels: it grows through a forward
// pass and shrinks through the backward one (512 samples a step), with a workspace spike now and
// then, so that memory tracks and charts have a curve of any length to draw.
constexpr int64_t kKernelsPerMemorySample = 32;
int64_t SyntheticBytesInUse(int64_t sample) {
  const int64_t phase = sample % 512;
  const int64_t activations = phase < 256 ? phase : 512 - phase;
  const int64_t spike = sample % 97 == 0 ? (int64_t{512} << 20) : 0;
  return (int64_t{1} << 30) + activations * (int64_t{8} << 20) + spike;
}
// The second pass is cut into pieces of about this many slices, each started from the state the
// first pass had there, and the pieces are written on several threads.
constexpr int64_t kSlicesPerPiece = int64_t{1} << 20;

// Everything the random walk carries from one step to the next: with it, a piece of the walk
// can be replayed on its own.
struct WalkState {
  explicit WalkState(uint64_t seed, size_t tracks) : random(seed), track_count(tracks, 0) {
    cpu_clock.fill(kEpochNs);
    gpu_clock.fill(kEpochNs + 20'000);
  }
  Rng random;
  std::array<int64_t, kCpuLanes> cpu_clock;
  std::array<int64_t, kGpuStreams> gpu_clock;
  std::vector<std::pair<uint32_t, uint32_t>> recent_cpu_ops;  // launch sources: (track, place in it)
  std::vector<uint32_t> track_count;                          // slices of each track so far
  int64_t added = 0;    // slices
  int64_t kernels = 0;  // GPU kernels
  int64_t flows = 0;
};

// Where the second pass writes: each slice at its track's first index plus its place in the
// track, each flow and memory sample at its number, so pieces never write the same place.
struct Placement {
  trace::TraceBuilder* builder;
  std::vector<uint32_t> track_first;
  trace::Flow* flows;
  int64_t* memory_ts;
  int64_t* memory_values;
};

}  // namespace

trace::Trace MakeSyntheticTrace(int64_t slice_count, uint64_t seed, bool allocator) {
  trace::TraceBuilder builder;
  Rng names_random(MixSeed(seed, 1));
  auto pick = [&](int64_t lo, int64_t hi) { return names_random.Between(lo, hi); };

  std::vector<trace::StringId> op_types;
  for (int i = 0; i < kOpTypes; ++i) {
    std::string name = kOpStems[static_cast<size_t>(i) % kOpStems.size()];
    if (i >= static_cast<int>(kOpStems.size())) name += "V" + std::to_string(i / kOpStems.size());
    op_types.push_back(builder.Intern(name));
  }
  std::vector<trace::StringId> node_names;
  std::vector<trace::StringId> node_ops;
  for (int i = 0; i < kNodeNames; ++i) {
    const int op = static_cast<int>(pick(0, kOpTypes - 1));
    node_names.push_back(builder.Intern("model/layer_" + std::to_string(i / 50) + "/" +
                                        std::string(builder.strings().Get(op_types[op])) + "_" +
                                        std::to_string(i % 50)));
    node_ops.push_back(op_types[op]);
  }

  trace::Track host;
  host.name = builder.Intern("synthetic host");
  host.full_name = builder.Intern("/job:synthetic/replica:0/task:0");
  host.kind = trace::TrackKind::kHost;
  const uint32_t host_track = builder.AddTrack(host);
  auto add_device = [&](const char* name, int sort) {
    trace::Track device;
    device.name = builder.Intern(name);
    device.full_name = builder.Intern(std::string("/device:") + name);
    device.parent = static_cast<int32_t>(host_track);
    device.kind = trace::TrackKind::kDevice;
    device.sort_index = sort;
    return builder.AddTrack(device);
  };
  const uint32_t cpu = add_device("CPU:0", 0);
  const uint32_t gpu = add_device("GPU:0", 1);
  std::vector<uint32_t> cpu_lanes, gpu_streams;
  for (int i = 0; i < kCpuLanes; ++i) {
    trace::Track lane;
    lane.name = builder.Intern("thread " + std::to_string(100 + i));
    lane.full_name = lane.name;
    lane.parent = static_cast<int32_t>(cpu);
    lane.kind = trace::TrackKind::kOpLane;
    lane.sort_index = i;
    lane.thread_id = 100 + i;
    cpu_lanes.push_back(builder.AddTrack(lane));
  }
  for (int i = 0; i < kGpuStreams; ++i) {
    trace::Track stream;
    stream.name = builder.Intern("stream:" + std::to_string(13 + i));
    stream.full_name = builder.Intern("/device:GPU:0/stream:" + std::to_string(13 + i));
    stream.parent = static_cast<int32_t>(gpu);
    stream.kind = trace::TrackKind::kGpuStream;
    stream.sort_index = i;
    stream.concurrent = true;
    gpu_streams.push_back(builder.AddTrack(stream));
  }

  trace::CounterSeries memory;
  memory.name = builder.Intern("GPU_0_bfc");
  memory.track = static_cast<int32_t>(gpu);
  memory.unit = "bytes";
  memory.origin = "synthetic";

  // Two passes over the same random sequence: the first counts each track's slices (and flows
  // and memory samples), the second writes every slice at its place in track order, as our
  // protobuf reader does, so the builder has nothing to reorder (at 10^8 slices a reorder is a
  // second 3.2 GB array to fill). The first pass keeps the walk's state every kSlicesPerPiece
  // slices; the second replays the pieces from those states on several threads (at 10^8 slices
  // it was a third of the time to the first frame on one). The threads share the builder: once
  // the first pass has packed every slice's label and set the packing base, SetSlice of a slice
  // whose times fit (all of them here: nothing is clamped) only reads it.
  //
  // One step of the walk: a CPU op with its children, or a kernel. `place` null: count only.
  std::vector<bool> node_packed(kNodeNames, false);
  auto step = [&](WalkState& state, const Placement* place) {
    // std::mt19937_64 behind uniform_int_distribution was a quarter of the time to the first
    // frame at 10^8 slices.
    auto uniform = [&](int64_t lo, int64_t hi) { return state.random.Between(lo, hi); };
    auto add = [&](uint32_t track, int64_t start, int64_t dur, int node, trace::SliceKind kind) {
      const uint32_t place_in_track = state.track_count[track]++;
      ++state.added;
      if (place != nullptr) {
        trace::SliceRecord slice;
        slice.track = track;
        slice.start_ns = start;
        slice.dur_ns = dur;
        slice.name = node_names[static_cast<size_t>(node)];
        slice.op_type = node_ops[static_cast<size_t>(node)];
        slice.kind = kind;
        place->builder->SetSlice(place->track_first[track] + place_in_track, slice);
      } else if (!node_packed[static_cast<size_t>(node)]) {
        // Packed and dropped on its first slice, in walk order: the first slice sets the
        // builder's packing base and each label is interned where packing the slices one by one
        // would intern it (a node's name and op type are one label).
        node_packed[static_cast<size_t>(node)] = true;
        builder.Pack(trace::SliceRecord{.start_ns = start,
                                        .name = node_names[static_cast<size_t>(node)],
                                        .op_type = node_ops[static_cast<size_t>(node)]});
      }
      return std::pair{track, place_in_track};
    };
    if (uniform(0, 9) < 4) {
      // A CPU op, sometimes with nested children (and grandchildren).
      const size_t lane = static_cast<size_t>(uniform(0, kCpuLanes - 1));
      const int64_t start = state.cpu_clock[lane] + uniform(0, 8'000);
      const int64_t dur = uniform(5'000, 60'000);
      state.recent_cpu_ops.push_back(add(cpu_lanes[lane], start, dur, static_cast<int>(uniform(0, kNodeNames - 1)),
                                         trace::SliceKind::kOp));
      const int64_t children = std::min<int64_t>(uniform(0, 3), slice_count - state.added);
      int64_t cursor = start + 500;
      for (int64_t c = 0; c < children; ++c) {
        const int64_t child_dur = std::min<int64_t>(uniform(500, dur / 4), start + dur - cursor - 100);
        if (child_dur <= 0) break;
        add(cpu_lanes[lane], cursor, child_dur, static_cast<int>(uniform(0, kNodeNames - 1)), trace::SliceKind::kOp);
        if (state.added < slice_count && child_dur > 2'000 && uniform(0, 1) == 0) {
          add(cpu_lanes[lane], cursor + 200, child_dur / 2, static_cast<int>(uniform(0, kNodeNames - 1)),
              trace::SliceKind::kOp);
        }
        cursor += child_dur + uniform(100, 1'000);
      }
      state.cpu_clock[lane] = start + dur;
      if (state.recent_cpu_ops.size() > 64) {
        state.recent_cpu_ops.erase(state.recent_cpu_ops.begin(), state.recent_cpu_ops.begin() + 32);
      }
    } else {
      const size_t stream = static_cast<size_t>(uniform(0, kGpuStreams - 1));
      const int64_t start = state.gpu_clock[stream] + uniform(0, 3'000);
      // Mostly short kernels, now and then a long one.
      const int64_t dur = uniform(0, 19) == 0 ? uniform(50'000, 400'000) : uniform(1'000, 30'000);
      const auto kernel = add(gpu_streams[stream], start, dur, static_cast<int>(uniform(0, kNodeNames - 1)),
                              trace::SliceKind::kKernel);
      state.gpu_clock[stream] = start + dur;
      // No random draw here: the slices stay the same with or without the memory curve.
      if (++state.kernels % kKernelsPerMemorySample == 0 && allocator && place != nullptr) {
        const int64_t sample = state.kernels / kKernelsPerMemorySample;
        place->memory_ts[sample - 1] = start;
        place->memory_values[sample - 1] = SyntheticBytesInUse(sample);
      }
      if (!state.recent_cpu_ops.empty() && uniform(0, 3) == 0) {
        if (place != nullptr) {
          const auto [from_track, from_place] = state.recent_cpu_ops.back();
          place->flows[state.flows] = trace::Flow{place->track_first[from_track] + from_place,
                                                  place->track_first[kernel.first] + kernel.second,
                                                  trace::FlowKind::kLaunch};
        }
        ++state.flows;
      }
    }
  };

  // Pass 1: counts, and the walk's state at the start of each piece.
  std::vector<WalkState> piece_starts;
  WalkState walk(seed, builder.tracks().size());
  while (walk.added < slice_count) {
    if (walk.added >= static_cast<int64_t>(piece_starts.size()) * kSlicesPerPiece) piece_starts.push_back(walk);
    step(walk, nullptr);
  }

  // Pass 2: every piece written where pass 1 counted it would go.
  const uint32_t first = builder.AddSlices(static_cast<size_t>(slice_count));
  Placement placement{&builder, std::vector<uint32_t>(walk.track_count.size()), nullptr, nullptr, nullptr};
  for (size_t t = 0; t < walk.track_count.size(); ++t) {
    placement.track_first[t] = t == 0 ? first : placement.track_first[t - 1] + walk.track_count[t - 1];
  }
  auto& flows = builder.flows();
  const size_t flows_before = flows.size();
  flows.resize(flows_before + static_cast<size_t>(walk.flows));
  placement.flows = flows.data() + flows_before;
  if (allocator) {
    memory.ts_ns.resize(static_cast<size_t>(walk.kernels / kKernelsPerMemorySample));
    memory.values.resize(memory.ts_ns.size());
    placement.memory_ts = memory.ts_ns.data();
    placement.memory_values = memory.values.data();
  }
  std::atomic<size_t> next_piece{0};
  auto write_pieces = [&] {
    for (size_t p = next_piece++; p < piece_starts.size(); p = next_piece++) {
      WalkState state = piece_starts[p];
      const int64_t end = p + 1 < piece_starts.size() ? piece_starts[p + 1].added : slice_count;
      while (state.added < end) step(state, &placement);
    }
  };
  const size_t threads_wanted =
      std::min<size_t>(piece_starts.size(), std::max(1u, std::thread::hardware_concurrency()));
  const size_t helpers = threads_wanted == 0 ? 0 : threads_wanted - 1;
  std::vector<std::thread> threads;
  for (size_t h = 0; h < helpers; ++h) threads.emplace_back(write_pieces);
  write_pieces();
  for (std::thread& thread : threads) thread.join();
  if (!memory.ts_ns.empty()) builder.AddCounter(std::move(memory));
  builder.SetSource(trace::SourceFormat::kSynthetic, "synthetic:" + std::to_string(slice_count));
  return std::move(builder).Build();
}

}  // namespace stepscope::synthetic
