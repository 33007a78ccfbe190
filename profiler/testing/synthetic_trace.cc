// The generator behind `stepscope-view --synthetic N`: tracks, nested CPU ops, back-to-back
// kernels and launch flows drawn from one fixed-seed random stream, so a size gives one trace.
#include "profiler/testing/synthetic_trace.h"

#include <algorithm>
#include <array>
#include <string>
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

  // Two passes over the same random sequence: the first counts each track's slices, the second
  // writes every slice at its place in track order, as our protobuf reader does, so the builder
  // has nothing to reorder (at 10^8 slices a reorder is a second 3.2 GB array to fill).
  trace::CounterSeries memory;
  memory.name = builder.Intern("GPU_0_bfc");
  memory.track = static_cast<int32_t>(gpu);
  memory.unit = "bytes";
  memory.origin = "synthetic";
  std::vector<uint32_t> track_next(builder.tracks().size(), 0);
  std::vector<uint32_t> track_count(builder.tracks().size(), 0);
  auto run = [&](bool place) {
    // std::mt19937_64 behind uniform_int_distribution was a quarter of the time to the first
    // frame at 10^8 slices.
    Rng random(seed);
    auto uniform = [&](int64_t lo, int64_t hi) { return random.Between(lo, hi); };
    const int64_t epoch = 1'700'000'000'000'000'000;
    std::vector<int64_t> cpu_clock(kCpuLanes, epoch), gpu_clock(kGpuStreams, epoch + 20'000);
    std::vector<uint32_t> recent_cpu_ops;  // launch sources for kernels
    int64_t kernels_placed = 0;
    auto add = [&](uint32_t track, int64_t start, int64_t dur, int node, trace::SliceKind kind) -> uint32_t {
      if (!place) {
        ++track_count[track];
        return 0;
      }
      const uint32_t index = track_next[track]++;
      trace::SliceRecord slice;
      slice.track = track;
      slice.start_ns = start;
      slice.dur_ns = dur;
      slice.name = node_names[static_cast<size_t>(node)];
      slice.op_type = node_ops[static_cast<size_t>(node)];
      slice.kind = kind;
      builder.SetSlice(index, slice);
      return index;
    };
    int64_t added = 0;
    while (added < slice_count) {
      if (uniform(0, 9) < 4) {
        // A CPU op, sometimes with nested children (and grandchildren).
        const size_t lane = static_cast<size_t>(uniform(0, kCpuLanes - 1));
        const int64_t start = cpu_clock[lane] + uniform(0, 8'000);
        const int64_t dur = uniform(5'000, 60'000);
        recent_cpu_ops.push_back(add(cpu_lanes[lane], start, dur, static_cast<int>(uniform(0, kNodeNames - 1)),
                                     trace::SliceKind::kOp));
        ++added;
        const int64_t children = std::min<int64_t>(uniform(0, 3), slice_count - added);
        int64_t cursor = start + 500;
        for (int64_t c = 0; c < children; ++c) {
          const int64_t child_dur = std::min<int64_t>(uniform(500, dur / 4), start + dur - cursor - 100);
          if (child_dur <= 0) break;
          add(cpu_lanes[lane], cursor, child_dur, static_cast<int>(uniform(0, kNodeNames - 1)),
              trace::SliceKind::kOp);
          ++added;
          if (added < slice_count && child_dur > 2'000 && uniform(0, 1) == 0) {
            add(cpu_lanes[lane], cursor + 200, child_dur / 2, static_cast<int>(uniform(0, kNodeNames - 1)),
                trace::SliceKind::kOp);
            ++added;
          }
          cursor += child_dur + uniform(100, 1'000);
        }
        cpu_clock[lane] = start + dur;
        if (recent_cpu_ops.size() > 64) recent_cpu_ops.erase(recent_cpu_ops.begin(), recent_cpu_ops.begin() + 32);
      } else {
        const size_t stream = static_cast<size_t>(uniform(0, kGpuStreams - 1));
        const int64_t start = gpu_clock[stream] + uniform(0, 3'000);
        // Mostly short kernels, now and then a long one.
        const int64_t dur = uniform(0, 19) == 0 ? uniform(50'000, 400'000) : uniform(1'000, 30'000);
        const uint32_t kernel = add(gpu_streams[stream], start, dur,
                                    static_cast<int>(uniform(0, kNodeNames - 1)), trace::SliceKind::kKernel);
        ++added;
        gpu_clock[stream] = start + dur;
        // No random draw here: the slices stay the same with or without the memory curve.
        if (allocator && place && ++kernels_placed % kKernelsPerMemorySample == 0) {
          memory.ts_ns.push_back(start);
          memory.values.push_back(SyntheticBytesInUse(kernels_placed / kKernelsPerMemorySample));
        }
        if (!recent_cpu_ops.empty() && uniform(0, 3) == 0) {
          if (place) builder.AddFlow(recent_cpu_ops.back(), kernel, trace::FlowKind::kLaunch);
        }
      }
    }
  };
  run(/*place=*/false);
  const uint32_t first = builder.AddSlices(static_cast<size_t>(slice_count));
  for (size_t t = 0; t < track_next.size(); ++t) {
    track_next[t] = t == 0 ? first : track_next[t - 1] + track_count[t - 1];
  }
  run(/*place=*/true);
  if (!memory.ts_ns.empty()) builder.AddCounter(std::move(memory));
  builder.SetSource(trace::SourceFormat::kSynthetic, "synthetic:" + std::to_string(slice_count));
  return std::move(builder).Build();
}

}  // namespace stepscope::synthetic
