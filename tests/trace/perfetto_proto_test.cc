// The Perfetto protobuf export, decoded with Perfetto's own message definitions
// (tests/trace/proto/perfetto_trace.proto, compiled by protoc into this test): every slice, flow
// and counter point of the source is there with its time, name and track; and read back by
// stepscope, the trace has the same slices, times and names. Damage names the file and offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "base/file_io.h"
#include "base/file_reader.h"
#include "profiler/formats/common/format_sniff.h"
#include "profiler/formats/common/varint.h"
#include "profiler/formats/perfetto/perfetto_proto.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/writer.h"
#include "proto/perfetto_trace.pb.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

namespace pp = perfetto::protos;

// What a Perfetto reader sees in our output, decoded packet by packet with interning resolved.
struct Decoded {
  struct SliceSeen {
    uint64_t track = 0;
    int64_t start = 0, end = 0;  // on the sequence clock (ns since the trace's epoch)
    std::string name, category, node;
  };
  std::vector<SliceSeen> slices;
  std::map<uint64_t, const pp::TrackDescriptor*> tracks;
  std::map<uint64_t, int64_t> counter_points;  // per counter track
  std::map<uint64_t, std::vector<int64_t>> counter_values;  // per counter track, in bytes
  std::multiset<uint64_t> flow_starts, flow_ends;
  std::set<uint32_t> sequences;
  std::set<int64_t> clock_units;  // of the sequence clocks
  int64_t input_names = 0, interned_input_names = 0;  // elements of "inputs" arrays
  int64_t snapshots = 0;
  std::vector<std::string> problems;
};

Decoded Decode(const pp::Trace& trace) {
  Decoded d;
  struct Interned {
    std::unordered_map<uint64_t, std::string> names, categories, keys, values;
    uint64_t default_track = 0;
    bool incremental = false;  // the sequence clock 64 is incremental
    int64_t last = 0;
    int64_t unit = 1;  // ns per tick of clock 64
    std::map<uint64_t, int64_t> counter_last;  // incremental counters
  };
  std::map<uint32_t, Interned> interned;
  std::map<uint64_t, std::vector<size_t>> open;  // per track: indices into d.slices
  for (const pp::TracePacket& packet : trace.packet()) {
    const uint32_t seq = packet.trusted_packet_sequence_id();
    if (seq == 0) d.problems.push_back("packet without a sequence id");
    d.sequences.insert(seq);
    Interned& in = interned[seq];
    if (packet.sequence_flags() & pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) in = Interned{};
    if (packet.has_clock_snapshot()) {
      ++d.snapshots;
      if (packet.trace_packet_defaults().timestamp_clock_id() != 64) d.problems.push_back("no sequence clock default");
      for (const auto& c : packet.clock_snapshot().clocks()) {
        if (c.clock_id() == 64) {
          in.incremental = c.is_incremental();
          in.last = static_cast<int64_t>(c.timestamp());
          in.unit = c.has_unit_multiplier_ns() ? static_cast<int64_t>(c.unit_multiplier_ns()) : 1;
          d.clock_units.insert(in.unit);
        }
      }
    }
    if (packet.has_trace_packet_defaults() && packet.trace_packet_defaults().has_track_event_defaults()) {
      in.default_track = packet.trace_packet_defaults().track_event_defaults().track_uuid();
    }
    // An iid is defined once per sequence (until its state is cleared).
    auto define = [&](std::unordered_map<uint64_t, std::string>& table, uint64_t iid, const std::string& text) {
      if (!table.try_emplace(iid, text).second) d.problems.push_back("iid " + std::to_string(iid) + " interned twice");
    };
    for (const auto& e : packet.interned_data().event_names()) define(in.names, e.iid(), e.name());
    for (const auto& e : packet.interned_data().event_categories()) define(in.categories, e.iid(), e.name());
    for (const auto& e : packet.interned_data().debug_annotation_names()) define(in.keys, e.iid(), e.name());
    for (const auto& e : packet.interned_data().debug_annotation_string_values()) define(in.values, e.iid(), e.str());
    if (packet.has_track_descriptor()) d.tracks[packet.track_descriptor().uuid()] = &packet.track_descriptor();
    if (!packet.has_track_event()) continue;
    const pp::TrackEvent& e = packet.track_event();
    if (in.incremental && !(packet.sequence_flags() & pp::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE)) {
      d.problems.push_back("event on an incremental clock without SEQ_NEEDS_INCREMENTAL_STATE");
    }
    // Timestamps on an incremental clock are deltas from the sequence's previous one, in the
    // clock's unit.
    int64_t ts = static_cast<int64_t>(packet.timestamp());
    if (in.incremental) ts = in.last += ts;
    ts *= in.unit;
    const uint64_t track = e.has_track_uuid() ? e.track_uuid() : in.default_track;
    if (!d.tracks.count(track)) d.problems.push_back("event before its track descriptor");
    switch (e.type()) {
      case pp::TrackEvent::TYPE_SLICE_BEGIN: {
        if (!(packet.sequence_flags() & pp::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE)) {
          d.problems.push_back("interned event without SEQ_NEEDS_INCREMENTAL_STATE");
        }
        Decoded::SliceSeen s;
        s.track = track;
        s.start = ts;
        // Names used more than once on the sequence are interned, the others inline.
        if (e.has_name_iid() && !in.names.count(e.name_iid())) d.problems.push_back("name iid not interned");
        if (!e.has_name_iid() && !e.has_name()) d.problems.push_back("slice without a name");
        s.name = e.has_name() ? e.name() : in.names[e.name_iid()];
        if (e.category_iids_size() != 1) d.problems.push_back("slice without one category");
        if (e.category_iids_size() > 0) s.category = in.categories[e.category_iids(0)];
        for (const auto& a : e.debug_annotations()) {
          if (!in.keys.count(a.name_iid())) d.problems.push_back("annotation name not interned");
          if (in.keys[a.name_iid()] != "inputs") continue;
          for (const auto& element : a.array_values()) {
            ++d.input_names;
            if (!element.has_string_value_iid()) continue;
            ++d.interned_input_names;
            if (!in.values.count(element.string_value_iid())) d.problems.push_back("input iid not interned");
          }
        }
        // The node name is the first annotation, "name" (later ones of that name are stats).
        if (e.debug_annotations_size() > 0 && in.keys[e.debug_annotations(0).name_iid()] == "name") {
          const pp::DebugAnnotation& a = e.debug_annotations(0);
          if (a.has_string_value_iid() && !in.values.count(a.string_value_iid())) {
            d.problems.push_back("string value iid not interned");
          }
          s.node = a.has_string_value() ? a.string_value() : in.values[a.string_value_iid()];
        }
        for (uint64_t id : e.flow_ids()) d.flow_starts.insert(id);
        for (uint64_t id : e.terminating_flow_ids()) d.flow_ends.insert(id);
        open[s.track].push_back(d.slices.size());
        d.slices.push_back(s);
        break;
      }
      case pp::TrackEvent::TYPE_SLICE_END: {
        auto& stack = open[track];
        if (stack.empty()) {
          d.problems.push_back("END without BEGIN");
          break;
        }
        Decoded::SliceSeen& s = d.slices[stack.back()];
        stack.pop_back();
        s.end = ts;
        if (s.end < s.start) d.problems.push_back("slice ends before it starts");
        if (!stack.empty() && d.slices[stack.back()].start > s.start) d.problems.push_back("bad nesting");
        break;
      }
      case pp::TrackEvent::TYPE_COUNTER: {
        if (!d.tracks.count(track) || !d.tracks[track]->has_counter()) {
          d.problems.push_back("counter value on a track without CounterDescriptor");
          break;
        }
        ++d.counter_points[track];
        // Incremental counters: deltas from the sequence's previous value, in the counter's unit.
        const pp::CounterDescriptor& counter = d.tracks[track]->counter();
        int64_t value = e.counter_value();
        if (counter.is_incremental()) {
          if (!(packet.sequence_flags() & pp::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE)) {
            d.problems.push_back("incremental counter without SEQ_NEEDS_INCREMENTAL_STATE");
          }
          value = in.counter_last[track] += value;
        }
        d.counter_values[track].push_back(value * (counter.has_unit_multiplier() ? counter.unit_multiplier() : 1));
        break;
      }
      default: d.problems.push_back("unexpected event type"); break;
    }
  }
  for (const auto& [track, stack] : open) {
    if (!stack.empty()) d.problems.push_back("slice never ended");
  }
  return d;
}

Trace Read(const std::string& name) {
  auto trace = ReadTrace(testing::DataPath(name));
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

// Every kept slice of `source` appears in the decoded output on its own track, with its time,
// op type (event name), kind (category) and node name.
void ExpectEverySlice(const Trace& source, const Decoded& d) {
  std::multiset<std::tuple<uint64_t, int64_t, int64_t, std::string, std::string, std::string>> want, got;
  for (uint32_t i = 0; i < source.slices().size(); ++i) {
    const Slice& s = source.slices()[i];
    if (s.duplicate()) continue;
    const SliceLabel& label = source.labels()[s.label];
    const std::string name(source.str(label.op_type != 0 ? label.op_type : label.name));
    const std::string node = label.name != label.op_type ? std::string(source.str(label.name)) : "";
    want.insert({uint64_t{s.track} + 1, s.start_ns, s.end_ns(), name, std::string(SliceKindName(s.kind)), node});
  }
  // A node name equal to the op type is written only when a stat is called "name" too.
  for (const auto& s : d.slices) got.insert({s.track, s.start, s.end, s.name, s.category, s.node == s.name ? "" : s.node});
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "slices differ";
}

TEST(PerfettoProtoTest, DecodesWithPerfettosDefinitionsTfGpuStep) {
  const Trace source = Read("ptb_lstm_tf1_gpu_step.pbtxt");
  const std::string bytes = ExportPerfettoProto(source);
  pp::Trace decoded;
  ASSERT_TRUE(decoded.ParseFromString(bytes));
  const Decoded d = Decode(decoded);
  EXPECT_TRUE(d.problems.empty()) << d.problems.front();
  // 2087 node stats of which 755 are /stream:all and /memcpy repeats (as in the chrome flavour).
  EXPECT_EQ(d.slices.size(), 2087u - 755u);
  ExpectEverySlice(source, d);
  // Every flow whose ends are kept: one start and one end per id.
  int64_t kept_flows = 0;
  for (const Flow& f : source.flows()) {
    kept_flows += !source.slices()[f.from_slice].duplicate() && !source.slices()[f.to_slice].duplicate();
  }
  EXPECT_GT(kept_flows, 0);
  EXPECT_EQ(static_cast<int64_t>(d.flow_starts.size()), kept_flows);
  EXPECT_EQ(static_cast<int64_t>(d.flow_ends.size()), kept_flows);
  EXPECT_TRUE(d.flow_starts == d.flow_ends);
  // Every counter point, on a bytes counter track under its device.
  ASSERT_FALSE(source.counters().empty());
  int64_t points = 0, decoded_points = 0;
  for (const CounterSeries& c : source.counters()) points += static_cast<int64_t>(c.ts_ns.size());
  for (const auto& [uuid, n] : d.counter_points) {
    decoded_points += n;
    EXPECT_EQ(d.tracks.at(uuid)->counter().unit(), pp::CounterDescriptor::UNIT_SIZE_BYTES);
    EXPECT_TRUE(d.tracks.at(uuid)->has_parent_uuid());
  }
  EXPECT_EQ(decoded_points, points);
  // Their values, the deltas summed and scaled back, series by series.
  std::multiset<std::vector<int64_t>> want_values, got_values;
  for (const CounterSeries& c : source.counters()) want_values.insert(c.values);
  for (const auto& [uuid, values] : d.counter_values) got_values.insert(values);
  EXPECT_TRUE(want_values == got_values);
  // The descriptors' sequence, then one sequence for the host's events (its lanes, streams and
  // counters, each with its clock snapshot); the host is a process track.
  EXPECT_EQ(d.snapshots, 2);
  EXPECT_EQ(d.sequences.size(), 2u);
  // Step stats times are whole µs: the host's sequence clock counts in µs (the descriptors'
  // sequence, with no events, keeps ns).
  EXPECT_EQ(d.clock_units, (std::set<int64_t>{1, 1000}));
  // Input lists are arrays; a producer used more than once is named by its interned node name.
  EXPECT_GT(d.input_names, 2000);
  EXPECT_GT(d.interned_input_names, 500);
  int64_t processes = 0;
  for (const auto& [uuid, t] : d.tracks) processes += t->has_process();
  EXPECT_EQ(processes, 1);
  // Executor ops carry their output shapes ("float[20,200] ..."), as an inline string.
  int64_t shapes = 0;
  for (const auto& packet : decoded.packet()) {
    for (const auto& a : packet.track_event().debug_annotations()) {
      shapes += a.has_string_value() && a.string_value().rfind("float[", 0) == 0;
    }
  }
  EXPECT_GT(shapes, 100);
}

TEST(PerfettoProtoTest, KinetoKernelsKeepTheirOwnTracksAndArgs) {
  const Trace source = Read("pytorch_kineto_alexnet_train.json.gz");
  const std::string bytes = ExportPerfettoProto(source);
  pp::Trace decoded;
  ASSERT_TRUE(decoded.ParseFromString(bytes));
  const Decoded d = Decode(decoded);
  EXPECT_TRUE(d.problems.empty()) << d.problems.front();
  ExpectEverySlice(source, d);
  // Kernel geometry travels as debug annotations.
  int64_t grids = 0;
  for (const auto& packet : decoded.packet()) {
    for (const auto& e : packet.interned_data().debug_annotation_names()) grids += e.name() == "grid";
  }
  // Interned once per sequence, i.e. once for the host, though its kernels are on two streams.
  std::set<uint32_t> kernel_tracks;
  for (const KernelArgs& k : source.all_kernel_args()) {
    if (k.has_grid()) kernel_tracks.insert(source.slices()[k.slice].track);
  }
  EXPECT_GE(kernel_tracks.size(), 2u);
  EXPECT_EQ(grids, 1);
}

TEST(PerfettoProtoTest, XSpaceStatsBecomeAnnotations) {
  const Trace source = Read("xspace/tf2_keras_mlp_cpu.xplane.pb.gz");
  pp::Trace decoded;
  ASSERT_TRUE(decoded.ParseFromString(ExportPerfettoProto(source)));
  const Decoded d = Decode(decoded);
  EXPECT_TRUE(d.problems.empty()) << d.problems.front();
  ExpectEverySlice(source, d);
  int64_t annotations = 0;
  for (const auto& packet : decoded.packet()) annotations += packet.track_event().debug_annotations_size();
  // Every stat, plus the node name where it differs from the op type.
  int64_t named = 0;
  for (const Slice& s : source.slices()) named += source.slice_name(s) != source.slice_op_type(s);
  EXPECT_GE(annotations, static_cast<int64_t>(source.all_slice_args().size()) + named);
}

TEST(PerfettoProtoTest, ReadsItsOwnOutputBack) {
  for (const char* name : {"ptb_lstm_tf1_gpu_step.pbtxt", "pytorch_kineto_alexnet_train.json.gz",
                           "xspace/tf2_keras_mlp_cpu.xplane.pb.gz"}) {
    SCOPED_TRACE(name);
    const Trace source = Read(name);
    const std::string bytes = ExportPerfettoProto(source);
    EXPECT_EQ(DetectFormat(bytes), DetectedFormat::kPerfettoProto);
    auto back = ReadTraceFromBytes(bytes, "back.pftrace");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->source_format(), SourceFormat::kPerfettoProto);
    EXPECT_EQ(back->epoch_ns() + back->span_begin_ns(), source.epoch_ns() + source.span_begin_ns());
    // Each slice with its kind and its lane's kind (a GPU stream stays one, a host lane too).
    std::multiset<std::tuple<int64_t, int64_t, std::string, std::string, SliceKind, TrackKind>> want, got;
    for (const Slice& s : source.slices()) {
      if (s.duplicate()) continue;
      want.insert({source.epoch_ns() + s.start_ns, s.dur_ns, std::string(source.str(source.slice_name(s))),
                   std::string(source.str(source.slice_op_type(s))), s.kind, source.tracks()[s.track].kind});
    }
    for (const Slice& s : back->slices()) {
      got.insert({back->epoch_ns() + s.start_ns, s.dur_ns, std::string(back->str(back->slice_name(s))),
                  std::string(back->str(back->slice_op_type(s))), s.kind, back->tracks()[s.track].kind});
    }
    EXPECT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want);
    EXPECT_EQ(back->import_stats().Get("overlap_moved_to_lane"), 0);
    EXPECT_EQ(back->all_kernel_args().size(), source.all_kernel_args().size());
    // Free-form arguments come back; so do a step stats node's label and copy details, as
    // free-form arguments of their own.
    std::multiset<std::pair<std::string, std::string>> source_args, back_args;
    for (const SliceArg& a : source.all_slice_args()) source_args.insert({std::string(source.str(a.key)), a.Text(source.strings())});
    for (const SliceArg& a : back->all_slice_args()) back_args.insert({std::string(back->str(a.key)), a.Text(back->strings())});
    EXPECT_TRUE(std::includes(back_args.begin(), back_args.end(), source_args.begin(), source_args.end()));
    if (HasStepStats(source)) {
      // Executor labels come as their parts: inputs (and memory), e.g. for
      // "[cuda_host_bfc 0.5MB 0.5MB] Train/Model/embedding_lookup = GatherV2(a, b, c)".
      int64_t inputs = 0;
      bool gather = false, memory = false;
      for (const auto& [key, value] : back_args) {
        inputs += key == "inputs";
        gather = gather || (key == "inputs" && value == "Model/embedding/read, Train/TrainInput/StridedSlice/_83, "
                                                        "Train/Model/embedding_lookup/axis");
        memory = memory || (key == "memory" && value == "cuda_host_bfc 0.5MB 0.5MB");
      }
      EXPECT_GT(inputs, 500);
      EXPECT_TRUE(gather);
      EXPECT_TRUE(memory);
    } else {
      EXPECT_EQ(back_args.size(), source_args.size());
    }
    int64_t kept_flows = 0;
    for (const Flow& f : source.flows()) {
      kept_flows += !source.slices()[f.from_slice].duplicate() && !source.slices()[f.to_slice].duplicate();
    }
    EXPECT_EQ(static_cast<int64_t>(back->flows().size()), kept_flows);
    ASSERT_EQ(back->counters().size(), source.counters().size());
    for (size_t c = 0; c < source.counters().size(); ++c) {
      EXPECT_EQ(back->counters()[c].values, source.counters()[c].values);
    }
  }
}

// A preview of a big Perfetto file: the packets whole within the first bytes, a trace of their
// own that starts where the full one does and holds a matching share of its slices.
TEST(PerfettoProtoTest, PreviewReadsTheWholePacketsOfTheFirstBytes) {
  const Trace source = Read("pytorch_kineto_alexnet_train.json.gz");
  const std::string bytes = ExportPerfettoProto(source);
  const std::string path = (testing::ScratchDir("perfetto_preview") / "alexnet.pftrace").string();
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  auto full = ReadTrace(path);
  ASSERT_TRUE(full.ok()) << full.status().message();
  const int64_t budget = static_cast<int64_t>(bytes.size() / 2);
  auto preview = ReadTrace(path, {.preview_bytes = budget});
  ASSERT_TRUE(preview.ok()) << preview.status().message();
  const int64_t kept = preview->import_stats().Get("perfetto_preview_bytes_read");
  EXPECT_LE(kept, budget);
  EXPECT_GT(kept, budget - 4096) << "cut at the last whole packet, and packets are small";
  // Every packet before the cut, re-read as a file of its own, gives the same trace.
  auto prefix = ReadTraceFromBytes(std::string_view(bytes).substr(0, static_cast<size_t>(kept)), "prefix");
  ASSERT_TRUE(prefix.ok()) << prefix.status().message();
  EXPECT_EQ(preview->slices().size(), prefix->slices().size());
  EXPECT_GT(preview->slices().size(), full->slices().size() / 4);
  EXPECT_LT(preview->slices().size(), full->slices().size());
  // Each of its slices is one of the full trace's (by start and name: a slice open at the cut
  // closes at the last instant before it). Sequences come one after another (one per host), so
  // the preview need not begin where the full trace does.
  std::multiset<std::pair<int64_t, std::string>> full_slices;
  for (const Slice& s : full->slices()) {
    full_slices.emplace(s.start_ns + full->epoch_ns(), full->str(full->slice_name(s)));
  }
  for (const Slice& s : preview->slices()) {
    const std::string name(preview->str(preview->slice_name(s)));
    ASSERT_TRUE(full_slices.count({s.start_ns + preview->epoch_ns(), name}) > 0) << name;
  }
  EXPECT_GE(preview->epoch_ns(), full->epoch_ns());
  // A file within the budget is read whole, as without one.
  auto whole = ReadTrace(path, {.preview_bytes = static_cast<int64_t>(bytes.size()) + 1});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->slices().size(), full->slices().size());
  EXPECT_EQ(whole->import_stats().Get("perfetto_preview_bytes_read"), 0);
  // A budget shorter than the first packet has nothing to show.
  auto none = ReadTrace(path, {.preview_bytes = 2});
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(none.status().message().find(path), std::string::npos);
}

// Read from a file a piece at a time (pieces far smaller than a packet, so the buffer grows, and
// larger), a Perfetto trace is the trace read from its bytes at once; damage in a later piece
// names the same offset.
TEST(PerfettoProtoTest, StreamingFromAFileGivesTheSameTrace) {
  const Trace source = Read("pytorch_kineto_alexnet_train.json.gz");
  const std::string bytes = ExportPerfettoProto(source);
  const std::string path = (testing::ScratchDir("perfetto_stream") / "alexnet.pftrace").string();
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  auto whole = ReadPerfettoProto(bytes, path);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  for (const size_t chunk : {size_t{64}, size_t{4096}, size_t{1} << 20}) {
    SCOPED_TRACE(chunk);
    auto file = FileReader::Open(path);
    ASSERT_TRUE(file.ok());
    int64_t progress = 0;
    auto streamed = ReadPerfettoProto(**file, std::string(), path,
                                      {.on_progress = [&](int64_t read) { return (progress = read), true; },
                                       .chunk_bytes = chunk});
    ASSERT_TRUE(streamed.ok()) << streamed.status().message();
    EXPECT_EQ(progress, static_cast<int64_t>(bytes.size()));
    ASSERT_EQ(streamed->slices().size(), whole->slices().size());
    for (size_t i = 0; i < whole->slices().size(); ++i) {
      const Slice& a = streamed->slices()[i];
      const Slice& b = whole->slices()[i];
      ASSERT_EQ(std::tie(a.start_ns, a.dur_ns, a.track, a.depth), std::tie(b.start_ns, b.dur_ns, b.track, b.depth)) << i;
      ASSERT_EQ(streamed->str(streamed->slice_name(a)), whole->str(whole->slice_name(b)));
    }
    EXPECT_EQ(streamed->flows().size(), whole->flows().size());
    EXPECT_EQ(streamed->counters().size(), whole->counters().size());
    EXPECT_EQ(streamed->import_stats().counts(), whole->import_stats().counts());
  }
  // A packet's tag changed past the first pieces: the same message as reading the bytes at once.
  size_t at = 0;
  for (size_t pos = 0; pos < bytes.size() * 3 / 4;) {
    at = pos;
    uint64_t tag = 0, length = 0;
    ASSERT_TRUE(ReadVarint(bytes, pos, tag) && ReadVarint(bytes, pos, length));
    pos += static_cast<size_t>(length);
  }
  ASSERT_GT(at, size_t{4096});
  std::string damaged = bytes;
  damaged[at] = '\x08';  // field 1 as a varint: not a packet
  const std::string damaged_path = (testing::ScratchDir("perfetto_stream") / "damaged.pftrace").string();
  ASSERT_TRUE(WriteFileAtomically(damaged_path, damaged).ok());
  auto at_once = ReadPerfettoProto(damaged, damaged_path);
  auto file = FileReader::Open(damaged_path);
  ASSERT_TRUE(file.ok());
  auto streamed = ReadPerfettoProto(**file, std::string(), damaged_path, {.chunk_bytes = 4096});
  ASSERT_FALSE(at_once.ok());
  ASSERT_FALSE(streamed.ok());
  EXPECT_EQ(streamed.status().message(), at_once.status().message());
  // Cut short inside a packet: the damage is named, nothing half-read is returned.
  const std::string cut_path = (testing::ScratchDir("perfetto_stream") / "cut.pftrace").string();
  ASSERT_TRUE(WriteFileAtomically(cut_path, bytes.substr(0, bytes.size() - 3)).ok());
  auto cut_file = FileReader::Open(cut_path);
  ASSERT_TRUE(cut_file.ok());
  auto cut = ReadPerfettoProto(**cut_file, std::string(), cut_path, {.chunk_bytes = 4096});
  EXPECT_EQ(cut.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(cut.status().message().find(cut_path), std::string::npos);
}

TEST(PerfettoProtoTest, MergedRanksGetASequenceAndClockSnapshotEach) {
  const Trace one = Read("ptb_lstm_tf1_gpu_step.pbtxt");
  // Two hosts in one trace: a second host track copied from the first.
  TraceBuilder builder;
  for (const Track& t : one.tracks()) {
    Track copy = t;
    copy.name = builder.Intern(one.str(t.name));
    copy.full_name = builder.Intern(one.str(t.full_name));
    builder.AddTrack(copy);
  }
  const uint32_t offset = static_cast<uint32_t>(one.tracks().size());
  for (const Track& t : one.tracks()) {
    Track copy = t;
    copy.name = builder.Intern(t.parent < 0 ? "rank1" : one.str(t.name));
    copy.full_name = copy.name;
    if (copy.parent >= 0) copy.parent += static_cast<int32_t>(offset);
    builder.AddTrack(copy);
  }
  for (const Slice& s : one.slices()) {
    for (uint32_t rank = 0; rank < 2; ++rank) {
      SliceRecord copy = one.Record(s);
      copy.track += rank * offset;
      copy.name = builder.Intern(one.str(one.slice_name(s)));
      copy.op_type = builder.Intern(one.str(one.slice_op_type(s)));
      builder.AddSlice(copy);
    }
  }
  const Trace two = std::move(builder).Build();
  pp::Trace decoded;
  ASSERT_TRUE(decoded.ParseFromString(ExportPerfettoProto(two)));
  const Decoded d = Decode(decoded);
  EXPECT_TRUE(d.problems.empty()) << d.problems.front();
  // Each rank has its own sequence and clock snapshot, on one timeline.
  EXPECT_EQ(d.snapshots, 3);
  EXPECT_EQ(d.sequences.size(), 3u);
  int64_t processes = 0;
  for (const auto& [uuid, t] : d.tracks) processes += t->has_process();
  EXPECT_EQ(processes, 2);
  EXPECT_EQ(d.slices.size(), 2 * (2087u - 755u));
  ExpectEverySlice(two, d);
  auto back = ReadPerfettoProto(ExportPerfettoProto(two), "two.pftrace");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->slices().size(), 2 * (2087u - 755u));
  int64_t hosts = 0;
  for (const Track& t : back->tracks()) hosts += t.kind == TrackKind::kHost;
  EXPECT_EQ(hosts, 2);
}

TEST(PerfettoProtoTest, DamageNamesTheFileAndOffset) {
  const std::string bytes = ExportPerfettoProto(Read("pytorch_kineto_alexnet_train.json.gz"));
  // Cuts inside a packet (a cut between two packets reads as a shorter whole file: the format has
  // no end marker, docs/formats.md §7).
  std::set<size_t> boundaries;
  for (size_t pos = 0; pos < bytes.size();) {
    uint64_t tag = 0, length = 0;
    ASSERT_TRUE(ReadVarint(bytes, pos, tag) && ReadVarint(bytes, pos, length));
    pos += length;
    boundaries.insert(pos);
  }
  const size_t middle = boundaries.count(bytes.size() / 2) != 0 ? bytes.size() / 2 + 1 : bytes.size() / 2;
  for (size_t cut : {bytes.size() - 1, middle, size_t{40}}) {
    ASSERT_EQ(boundaries.count(cut), 0u) << cut;
    SCOPED_TRACE(cut);
    const std::string truncated = bytes.substr(0, cut);
    EXPECT_EQ(DetectFormat(truncated), DetectedFormat::kPerfettoProto);
    auto trace = ReadTraceFromBytes(truncated, "cut.pftrace");
    ASSERT_FALSE(trace.ok());
    EXPECT_EQ(trace.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(trace.status().message().find("cut.pftrace: offset "), std::string::npos) << trace.status().message();
    EXPECT_NE(trace.status().message().find("Perfetto protobuf"), std::string::npos);
  }
  // An invalid wire type in the tag of the second packet.
  size_t pos = 1;
  uint64_t length = 0;
  ASSERT_TRUE(ReadVarint(bytes, pos, length));
  const size_t second = pos + length;
  std::string corrupt = bytes;
  corrupt[second] = '\x0f';
  EXPECT_EQ(DetectFormat(corrupt), DetectedFormat::kPerfettoProto);
  auto trace = ReadTraceFromBytes(corrupt, "corrupt.pftrace");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("corrupt.pftrace: offset " + std::to_string(second) + ": invalid wire type"),
            std::string::npos)
      << trace.status().message();
}

// A trace as the Perfetto SDK writes it, not as we do: a process and a thread track
// (ThreadDescriptor), names and categories as plain strings, absolute BOOTTIME timestamps with
// no clock snapshot, nested slices, an instant, a double-valued counter, a flow between threads,
// an END without BEGIN and a BEGIN never ended.
TEST(PerfettoProtoTest, ReadsTrackEventsOfOtherProducers) {
  pp::Trace trace;
  auto descriptor = [&](uint64_t uuid, uint64_t parent) {
    pp::TracePacket* p = trace.add_packet();
    p->set_trusted_packet_sequence_id(7);
    pp::TrackDescriptor* d = p->mutable_track_descriptor();
    d->set_uuid(uuid);
    if (parent != 0) d->set_parent_uuid(parent);
    return d;
  };
  pp::ProcessDescriptor* process = descriptor(100, 0)->mutable_process();
  process->set_pid(42);
  process->set_process_name("trainer");
  for (int t = 0; t < 2; ++t) {
    pp::ThreadDescriptor* thread = descriptor(101 + t, 100)->mutable_thread();
    thread->set_pid(42);
    thread->set_tid(1000 + t);
    thread->set_thread_name(t == 0 ? "main" : "worker");
  }
  pp::TrackDescriptor* counter = descriptor(200, 100);
  counter->set_name("rss");
  counter->mutable_counter()->set_unit(pp::CounterDescriptor::UNIT_SIZE_BYTES);
  auto event = [&](uint64_t ts, uint64_t track, pp::TrackEvent::Type type, const std::string& name) {
    pp::TracePacket* p = trace.add_packet();
    p->set_trusted_packet_sequence_id(7);
    p->set_timestamp(ts);
    pp::TrackEvent* e = p->mutable_track_event();
    e->set_type(type);
    e->set_track_uuid(track);
    if (!name.empty()) {
      e->set_name(name);
      e->add_categories("cat");
    }
    return e;
  };
  const uint64_t base = uint64_t{1700000000} * 1000000000;
  event(base + 100, 101, pp::TrackEvent::TYPE_SLICE_BEGIN, "step")->add_flow_ids(9);
  event(base + 150, 101, pp::TrackEvent::TYPE_SLICE_BEGIN, "forward");
  event(base + 160, 101, pp::TrackEvent::TYPE_INSTANT, "mark");
  event(base + 400, 101, pp::TrackEvent::TYPE_SLICE_END, "");
  event(base + 900, 101, pp::TrackEvent::TYPE_SLICE_END, "");
  pp::TrackEvent* work = event(base + 300, 102, pp::TrackEvent::TYPE_SLICE_BEGIN, "work");
  work->add_terminating_flow_ids(9);
  pp::DebugAnnotation* arg = work->add_debug_annotations();
  arg->set_name("items");
  arg->set_int_value(12);
  event(base + 700, 102, pp::TrackEvent::TYPE_SLICE_END, "");
  event(base + 800, 102, pp::TrackEvent::TYPE_SLICE_END, "");  // unmatched
  event(base + 850, 102, pp::TrackEvent::TYPE_SLICE_BEGIN, "never ends");
  event(base + 200, 200, pp::TrackEvent::TYPE_COUNTER, "")->set_double_counter_value(4096.0);
  event(base + 600, 200, pp::TrackEvent::TYPE_COUNTER, "")->set_counter_value(8192);

  const std::string bytes = trace.SerializeAsString();
  EXPECT_EQ(DetectFormat(bytes), DetectedFormat::kPerfettoProto);
  auto read = ReadTraceFromBytes(bytes, "sdk.pftrace");
  ASSERT_TRUE(read.ok()) << read.status().message();
  std::map<std::string, std::pair<int64_t, int64_t>> slices;  // name -> (start since base, dur)
  for (const Slice& s : read->slices()) {
    slices[std::string(read->str(read->slice_name(s)))] = {read->epoch_ns() + s.start_ns - static_cast<int64_t>(base),
                                                           s.dur_ns};
  }
  EXPECT_EQ(slices.size(), 5u);
  EXPECT_EQ(slices["step"], std::make_pair(int64_t{100}, int64_t{800}));
  EXPECT_EQ(slices["forward"], std::make_pair(int64_t{150}, int64_t{250}));
  EXPECT_EQ(slices["mark"], std::make_pair(int64_t{160}, int64_t{0}));
  EXPECT_EQ(slices["work"], std::make_pair(int64_t{300}, int64_t{400}));
  EXPECT_EQ(slices["never ends"].second, 50);  // closed at the last instant seen (900)
  EXPECT_EQ(read->import_stats().Get("perfetto_unmatched_end_skipped"), 1);
  EXPECT_EQ(read->import_stats().Get("perfetto_unclosed_slices_closed"), 1);
  ASSERT_EQ(read->flows().size(), 1u);
  EXPECT_EQ(read->str(read->slice_name(read->slices()[read->flows()[0].from_slice])), "step");
  EXPECT_EQ(read->str(read->slice_name(read->slices()[read->flows()[0].to_slice])), "work");
  ASSERT_EQ(read->counters().size(), 1u);
  EXPECT_EQ(read->str(read->counters()[0].name), "rss");
  EXPECT_EQ(read->counters()[0].values, (std::vector<int64_t>{4096, 8192}));
  // process -> host, threads -> its lanes, named by their descriptors.
  std::set<std::string> lanes;
  for (const Track& t : read->tracks()) {
    if (t.parent >= 0) lanes.insert(std::string(read->str(t.name)));
    if (t.parent < 0) {
      EXPECT_EQ(read->str(t.name), "trainer");
    }
  }
  EXPECT_TRUE(lanes.count("main") && lanes.count("worker"));
  int64_t items = 0;
  for (const SliceArg& a : read->all_slice_args()) items += read->str(a.key) == "items" && a.is_number && a.number == 12;
  EXPECT_EQ(items, 1);
}

// The sequence clock counts in the largest unit dividing every time of the sequence (and below
// 2^30 ns, as readers take it): times come back exact whatever they divide by.
TEST(PerfettoProtoTest, TheClockUnitDividesEveryTime) {
  struct Case {
    std::vector<int64_t> starts;  // each slice lasts as long as it starts after the epoch
    int64_t unit;
  };
  const int64_t giga = 1000000000;
  for (const Case& c : {Case{{1000, 5000, 12000}, 1000}, Case{{0, 3 * giga, 9 * giga}, giga},
                        Case{{int64_t{1} << 31, int64_t{3} << 31}, 512}, Case{{1000, 1007}, 1}}) {
    TraceBuilder builder;
    Track host;
    host.name = builder.Intern("host");
    host.kind = TrackKind::kHost;
    const uint32_t parent = builder.AddTrack(host);
    std::vector<std::pair<int64_t, int64_t>> want;
    for (size_t i = 0; i < c.starts.size(); ++i) {
      Track lane;
      lane.name = builder.Intern("lane " + std::to_string(i));
      lane.parent = static_cast<int32_t>(parent);
      lane.kind = TrackKind::kOpLane;
      const uint32_t track = builder.AddTrack(lane);
      SliceRecord slice;
      slice.start_ns = int64_t{1700000000} * giga + c.starts[i];
      slice.dur_ns = c.starts[i];
      slice.track = track;
      slice.name = slice.op_type = builder.Intern("op");
      builder.AddSlice(slice);
      want.emplace_back(slice.start_ns, slice.dur_ns);
    }
    const Trace trace = std::move(builder).Build();
    const std::string bytes = ExportPerfettoProto(trace);
    pp::Trace decoded;
    ASSERT_TRUE(decoded.ParseFromString(bytes));
    const Decoded d = Decode(decoded);
    EXPECT_TRUE(d.problems.empty()) << d.problems.front();
    EXPECT_TRUE(d.clock_units.count(c.unit)) << c.unit;
    auto back = ReadPerfettoProto(bytes, "units.pftrace");
    ASSERT_TRUE(back.ok()) << back.status().message();
    std::vector<std::pair<int64_t, int64_t>> got;
    for (const Slice& s : back->slices()) got.emplace_back(back->epoch_ns() + s.start_ns, s.dur_ns);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << c.unit;
  }
}

TEST(PerfettoProtoTest, AnEmptyTraceIsAFileThatReadsBack) {
  TraceBuilder builder;
  const Trace empty = std::move(builder).Build();
  const std::string bytes = ExportPerfettoProto(empty);
  EXPECT_FALSE(bytes.empty());
  EXPECT_EQ(DetectFormat(bytes), DetectedFormat::kPerfettoProto);
  auto back = ReadPerfettoProto(bytes, "empty.pftrace");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->slices().empty());
}

TEST(PerfettoProtoTest, WriterTableAndExtensions) {
  EXPECT_EQ(OutputFormatFromPath("a.pftrace"), OutputFormat::kPerfettoProto);
  EXPECT_EQ(OutputFormatFromPath("a.pftrace.gz"), OutputFormat::kPerfettoProto);
  EXPECT_EQ(OutputFormatFromPath("a.perfetto-trace"), OutputFormat::kPerfettoProto);
  EXPECT_EQ(ParseOutputFormat("perfetto-proto"), OutputFormat::kPerfettoProto);
  EXPECT_EQ(ParseOutputFormat("pftrace"), OutputFormat::kPerfettoProto);
  EXPECT_EQ(ParseOutputFormat("chrome"), OutputFormat::kPerfettoJson);
  EXPECT_FALSE(ParseOutputFormat("xspace").has_value());
}

}  // namespace
}  // namespace stepscope::trace
