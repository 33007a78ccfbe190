// The viewer's item models on the real TensorFlow sample step, each wrapped in
// QAbstractItemModelTester (which fails the test on any broken model contract), plus search,
// CSV and the details of a known op.
#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QtTest/QtTest>
#include <algorithm>
#include <functional>

#include "base/units.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/testing/synthetic_trace.h"
#include "profiler/trace/slice_details.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "tests/test_util.h"
#include "viewer/load/document.h"
#include "viewer/models/csv.h"
#include "viewer/models/live_tensor_model.h"
#include "viewer/models/op_stats_model.h"
#include "viewer/models/roles.h"
#include "viewer/models/search_model.h"
#include "viewer/models/slice_details_model.h"
#include "viewer/models/track_tree_model.h"
#include "viewer/panes/pane_table.h"
#include "viewer/timeline_data/track_layout.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

std::shared_ptr<const TraceDocument> LoadSample() {
  auto document = OpenDocument(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  if (!document.ok()) qFatal("%s", document.status().message().c_str());
  return *document;
}

// Collects every string shown under `parent` (keys and values), depth first.
void CollectTexts(const QAbstractItemModel& model, const QModelIndex& parent, QStringList* out) {
  for (int r = 0; r < model.rowCount(parent); ++r) {
    for (int c = 0; c < model.columnCount(parent); ++c) out->append(model.index(r, c, parent).data().toString());
    CollectTexts(model, model.index(r, 0, parent), out);
  }
}

// Some slices' flows as the document finds them, against a count over all flows: a few hundred
// slices evenly spread and the ends of a few hundred flows, each asked about twice (the second
// time from what was kept).
void ExpectFlowsOfSlicesFoundByScan(const TraceDocument& document) {
  const trace::Trace& trace = document.trace();
  const auto& flows = trace.flows();
  QVERIFY(flows.size() > 100);
  std::vector<std::vector<uint32_t>> from(trace.slices().size()), to(trace.slices().size());
  for (uint32_t f = 0; f < flows.size(); ++f) {
    from[flows[f].from_slice].push_back(f);
    to[flows[f].to_slice].push_back(f);
  }
  std::vector<uint32_t> asked;
  const size_t stride = std::max<size_t>(7, trace.slices().size() / 300);
  for (size_t slice = 0; slice < trace.slices().size(); slice += stride) asked.push_back(static_cast<uint32_t>(slice));
  for (size_t f = 0; f < flows.size(); f += std::max<size_t>(1, flows.size() / 300)) {
    asked.push_back(flows[f].from_slice);
    asked.push_back(flows[f].to_slice);
  }
  int with_flows = 0;
  for (uint32_t slice : asked) {
    for (int again = 0; again < 2; ++again) {
      QCOMPARE(document.FlowsFrom(slice), from[slice]);
      QCOMPARE(document.FlowsTo(slice), to[slice]);
    }
    with_flows += !from[slice].empty() || !to[slice].empty();
  }
  QVERIFY(with_flows > 100);
}

}  // namespace

class ModelsTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { document_ = LoadSample(); }

  void TrackTreeFollowsTheTrace() {
    TrackTreeModel model(document_);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const trace::Trace& trace = document_->trace();
    // Every track appears once, under its parent.
    int seen = 0;
    std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
      for (int r = 0; r < model.rowCount(parent); ++r) {
        const QModelIndex index = model.index(r, 0, parent);
        const uint32_t track = index.data(kTrackRole).toUInt();
        QCOMPARE(parent.isValid() ? static_cast<int32_t>(parent.data(kTrackRole).toUInt()) : -1,
                 trace.tracks()[track].parent);
        ++seen;
        walk(index);
      }
    };
    walk({});
    QCOMPARE(seen, static_cast<int>(trace.tracks().size()));
    // The single host holds every slice.
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.index(0, TrackTreeModel::kSlicesColumn).data().toLongLong(),
             static_cast<qlonglong>(trace.slices().size()));
    // Unchecking hides.
    QSignalSpy spy(&model, &TrackTreeModel::visibilityChanged);
    const QModelIndex device = model.index(0, 0, model.index(0, 0));
    QVERIFY(model.setData(device, Qt::Unchecked, Qt::CheckStateRole));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(1).toBool(), false);
    QCOMPARE(device.data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
  }

  void OpStatsSortFilterAndCsv() {
    auto analysis = AnalyseDocument(*document_);
    OpStatsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.SetRows(analysis->op_stats.by_op_type);
    QCOMPARE(model.rowCount(), static_cast<int>(analysis->op_stats.by_op_type.size()));
    QVERIFY(model.rowCount() > 10);
    QSortFilterProxyModel proxy;
    QAbstractItemModelTester proxy_tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&model);
    proxy.setSortRole(kSortRole);
    proxy.sort(OpStatsModel::kCount, Qt::DescendingOrder);
    for (int r = 1; r < proxy.rowCount(); ++r) {
      QVERIFY(proxy.index(r - 1, OpStatsModel::kCount).data(kSortRole).toLongLong() >=
              proxy.index(r, OpStatsModel::kCount).data(kSortRole).toLongLong());
    }
    // Numeric sort on a formatted column: "9.000 us" must not sort above "10.00 us".
    proxy.sort(OpStatsModel::kTotal, Qt::AscendingOrder);
    for (int r = 1; r < proxy.rowCount(); ++r) {
      QVERIFY(proxy.index(r - 1, OpStatsModel::kTotal).data(kSortRole).toDouble() <=
              proxy.index(r, OpStatsModel::kTotal).data(kSortRole).toDouble());
    }
    proxy.setFilterKeyColumn(-1);
    proxy.setFilterFixedString("MatMul");
    int expected = 0;
    for (const auto& row : analysis->op_stats.by_op_type) {
      expected += (QString::fromStdString(row.name + row.op_type).contains("MatMul")) ? 1 : 0;
    }
    QCOMPARE(proxy.rowCount(), expected);
    QVERIFY(expected >= 1);
    const QString csv = TableToCsv(proxy);
    const QStringList lines = csv.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), expected + 1);
    QVERIFY(lines[0].startsWith("Name,Op type,Where,Count,Total"));
    // Raw numbers, not formatted text.
    const QStringList first = lines[1].split(',');
    bool numeric = false;
    first[OpStatsModel::kTotal].toLongLong(&numeric);
    QVERIFY2(numeric, qPrintable(lines[1]));
    // The jump target is a slice of that op type.
    const uint32_t slice = proxy.index(0, 0).data(kSliceRole).toUInt();
    const auto& s = document_->trace().slices()[slice];
    QCOMPARE(QString::fromUtf8(document_->trace().str(document_->trace().slice_op_type(s))), proxy.index(0, OpStatsModel::kOpType).data().toString());
  }

  void SearchByTextAndRegex() {
    SearchModel model(document_);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const trace::Trace& trace = document_->trace();
    auto brute = [&](const QRegularExpression& expression) {
      int count = 0;
      for (const auto& s : trace.slices()) {
        if (s.duplicate()) continue;  // a repeat on an aggregate lane is no match of its own
        count += expression.match(QString::fromUtf8(trace.str(trace.slice_name(s)))).hasMatch() ||
                         expression.match(QString::fromUtf8(trace.str(trace.slice_op_type(s)))).hasMatch()
                     ? 1
                     : 0;
      }
      return count;
    };
    QVERIFY(model.SetQuery("lstmblockcell", false).isEmpty());
    const int text_matches = model.rowCount();
    QCOMPARE(text_matches, brute(QRegularExpression("LSTMBlockCell", QRegularExpression::CaseInsensitiveOption)));
    QVERIFY(text_matches > 100);
    // Copies by op type, and one regular expression that also matches names.
    QVERIFY(model.SetQuery("^MEMCPY(HtoD|DtoH)$", true).isEmpty());
    QCOMPARE(model.rowCount(), brute(QRegularExpression("^MEMCPY(HtoD|DtoH)$",
                                                        QRegularExpression::CaseInsensitiveOption)));
    QVERIFY(model.rowCount() > 10);
    QVERIFY(model.SetQuery("cell_[01]/lstm_cell/LSTMBlockCell_1\\d$", true).isEmpty());
    QCOMPARE(model.rowCount(), brute(QRegularExpression("cell_[01]/lstm_cell/LSTMBlockCell_1\\d$",
                                                        QRegularExpression::CaseInsensitiveOption)));
    QVERIFY(model.rowCount() > 0);
    // Time order, next/previous wrap.
    for (int r = 1; r < model.rowCount(); ++r) {
      QVERIFY(model.index(r - 1).data(kTimeRole).toLongLong() <= model.index(r).data(kTimeRole).toLongLong());
    }
    const int64_t first = model.Next();
    QCOMPARE(first, static_cast<int64_t>(model.matches().front()));
    QCOMPARE(model.Previous(), static_cast<int64_t>(model.matches().back()));
    QCOMPARE(model.Next(), first);
    // A broken expression says where; the list empties.
    const QString error = model.SetQuery("MatMul(", true);
    QVERIFY(!error.isEmpty());
    QVERIFY(error.contains("offset"));
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.Next(), int64_t{-1});
  }

  // The H100 ResNet-50 step (TensorFlow's lanes): /stream:all repeats every kernel and /memcpy
  // every copy. Search finds each kernel once (227 Conv2DBackpropFilter slices, not 401), and says
  // how many repeats it left out; the repeat lanes start hidden in the track tree and on the
  // timeline, and the check box shows them.
  void RepeatsAreNoMatchesAndRepeatLanesStartHidden() {
    auto opened = OpenDocument(testing::SamplePath("h100_resnet50_b32_step3.pb.gz"));
    QVERIFY2(opened.ok(), opened.ok() ? "" : opened.status().message().c_str());
    const std::shared_ptr<const TraceDocument> document = *opened;
    const trace::Trace& trace = document->trace();
    SearchModel search(document);
    QVERIFY(search.SetQuery("Conv2DBackpropFilter", false).isEmpty());
    int64_t own = 0, repeats = 0;
    for (const trace::Slice& s : trace.slices()) {
      const bool match = QString::fromUtf8(trace.str(trace.slice_name(s))).contains("conv2dbackpropfilter", Qt::CaseInsensitive) ||
                         QString::fromUtf8(trace.str(trace.slice_op_type(s))).contains("conv2dbackpropfilter", Qt::CaseInsensitive);
      if (match) ++(s.duplicate() ? repeats : own);
    }
    QVERIFY(repeats > 0);
    qInfo("Conv2DBackpropFilter: %lld matches, %lld repeats left out", static_cast<long long>(own),
          static_cast<long long>(repeats));
    QCOMPARE(static_cast<int64_t>(search.rowCount()), own);
    QCOMPARE(search.repeats(), repeats);
    for (uint32_t slice : search.matches()) QVERIFY(!trace.slices()[slice].duplicate());
    // Repeat lanes: every slice a duplicate; here TensorFlow's /stream:all and /memcpy.
    TrackTreeModel tracks(document);
    QAbstractItemModelTester tester(&tracks, QAbstractItemModelTester::FailureReportingMode::QtTest);
    TrackLayout layout(trace, document->index());
    int repeat_lanes = 0;
    for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
      const auto lane = trace.track_slices(t);
      const bool repeat =
          !lane.empty() && std::all_of(lane.begin(), lane.end(), [](const trace::Slice& s) { return s.duplicate(); });
      if (repeat) {
        ++repeat_lanes;
        const trace::TrackKind kind = trace.tracks()[t].kind;
        QVERIFY(kind == trace::TrackKind::kGpuAllStreams || kind == trace::TrackKind::kGpuMemcpy);
      }
      QCOMPARE(tracks.visible(t), !repeat);
      QCOMPARE(layout.hidden(t), repeat);
    }
    QVERIFY(repeat_lanes >= 2);
    for (const TimelineRow& row : layout.rows()) {
      for (const trace::Slice& s : trace.track_slices(row.track)) QVERIFY(!s.duplicate());
    }
    // Shown on demand: checking the lane in the tree says so.
    std::function<QModelIndex(const QModelIndex&)> find_repeat = [&](const QModelIndex& parent) -> QModelIndex {
      for (int r = 0; r < tracks.rowCount(parent); ++r) {
        const QModelIndex index = tracks.index(r, 0, parent);
        if (!tracks.visible(index.data(kTrackRole).toUInt())) return index;
        const QModelIndex below = find_repeat(index);
        if (below.isValid()) return below;
      }
      return {};
    };
    const QModelIndex hidden = find_repeat({});
    QVERIFY(hidden.isValid());
    QCOMPARE(hidden.data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    QSignalSpy spy(&tracks, &TrackTreeModel::visibilityChanged);
    QVERIFY(tracks.setData(hidden, Qt::Checked, Qt::CheckStateRole));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(1).toBool(), true);
    layout.SetHidden(hidden.data(kTrackRole).toUInt(), false);
    QVERIFY(layout.RowOfSlice(trace.track_first_slice(hidden.data(kTrackRole).toUInt())) >= 0);
  }

  // The flows of a slice, found by a scan and kept for the last slice asked about, are the
  // flows whose ends are that slice, in flow order, whichever slice was asked about before: on the
  // TensorFlow sample (scanned on one core) and a generated trace of 80 K flows (on two).
  void FlowsOfASliceAreThoseEndingThere() {
    ExpectFlowsOfSlicesFoundByScan(*document_);
    const TraceDocument generated(synthetic::MakeSyntheticTrace(1'000'000), "synthetic");
    QVERIFY(generated.trace().flows().size() > size_t{1} << 16);
    ExpectFlowsOfSlicesFoundByScan(generated);
  }

  void DetailsListEveryFieldOfTheRecord() {
    const trace::Trace& trace = document_->trace();
    // An executor op with outputs and memory: shapes, allocation descriptions, allocators.
    int64_t slice = -1;
    for (uint32_t i = 0; i < trace.slices().size() && slice < 0; ++i) {
      const auto node = NodeOf(trace, i);
      if (node != nullptr && node->output_size() > 0 && node->memory_size() > 0) slice = i;
    }
    QVERIFY(slice >= 0);
    SliceDetailsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.ShowSlice(*document_, static_cast<uint32_t>(slice));
    QStringList texts;
    CollectTexts(model, {}, &texts);
    const auto& s = trace.slices()[static_cast<size_t>(slice)];
    QVERIFY(texts.contains(QString::fromUtf8(trace.str(trace.slice_name(s)))));
    for (const char* field : {"op type", "duration", "source record", "output", "tensor_description", "shape",
                              "allocation_description", "requested_bytes", "memory", "allocator_name",
                              "all_start_micros", "timeline_label"}) {
      QVERIFY2(texts.contains(field), field);
    }
    // The typed details, as every format's trace shows them.
    for (const char* field : {"outputs", "allocators", "requested bytes", "allocation id"}) {
      QVERIFY2(texts.contains(field), field);
    }
    // Flows link to their slices.
    QVERIFY(texts.contains("flows in") || texts.contains("flows out"));
    model.ShowNothing();
    QCOMPARE(model.rowCount(), 0);
    // A memcpy gets its kind and bytes.
    int64_t copy = -1;
    for (uint32_t i = 0; i < trace.slices().size() && copy < 0; ++i) {
      const auto details = trace::GetMemcpyDetails(trace, i);
      if (details && details->bytes == 320000) copy = i;
    }
    QVERIFY(copy >= 0);
    model.ShowSlice(*document_, static_cast<uint32_t>(copy));
    texts.clear();
    CollectTexts(model, {}, &texts);
    QVERIFY(texts.contains("memcpy"));
    QVERIFY(texts.contains("DtoH"));
    QVERIFY(texts.contains("320000"));
  }

  // A PyTorch profiler event's args, each under "args" with its value as the file wrote it.
  void DetailsListEveryArgOfAKinetoEvent() {
    auto document = OpenDocument(testing::DataPath("kineto_args/nccl_args.json"));
    QVERIFY2(document.ok(), document.ok() ? "" : document.status().message().c_str());
    const trace::Trace& trace = (*document)->trace();
    int64_t comms = -1;
    for (uint32_t i = 0; i < trace.slices().size() && comms < 0; ++i) {
      if (trace.str(trace.slice_name(trace.slices()[i])) == "record_param_comms") comms = i;
    }
    QVERIFY(comms >= 0);
    SliceDetailsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.ShowSlice(**document, static_cast<uint32_t>(comms));
    QModelIndex args;
    for (int r = 0; r < model.rowCount(); ++r) {
      if (model.index(r, 0).data().toString() == "args") args = model.index(r, 0);
    }
    QVERIFY(args.isValid());
    QCOMPARE(model.index(args.row(), 1).data().toString(), QString("16"));
    QMap<QString, QString> shown;
    for (int r = 0; r < model.rowCount(args); ++r) {
      shown[model.index(r, 0, args).data().toString()] = model.index(r, 1, args).data().toString();
    }
    QCOMPARE(shown.value("Collective name"), QString("allreduce"));
    QCOMPARE(shown.value("In msg nelems"), QString("1048576"));
    QCOMPARE(shown.value("Process Group Ranks"), QString("[0, 1]"));
    QCOMPARE(shown.value("External id"), QString("12"));
  }

  // A kernel's launch as the file gave it: every recorded field under the profiler's name (the
  // pane names the shared memory's unit), in the profiler's order.
  void DetailsListAKernelsLaunchFields() {
    auto document = OpenDocument(testing::DataPath("kineto_args/nccl_args.json"));
    QVERIFY2(document.ok(), document.ok() ? "" : document.status().message().c_str());
    const trace::Trace& trace = (*document)->trace();
    int64_t kernel = -1;
    for (uint32_t i = 0; i < trace.slices().size() && kernel < 0; ++i) {
      if (trace.str(trace.slice_name(trace.slices()[i])).starts_with("ncclDevKernel_AllReduce")) kernel = i;
    }
    QVERIFY(kernel >= 0);
    SliceDetailsModel model;
    model.ShowSlice(**document, static_cast<uint32_t>(kernel));
    QModelIndex launch;
    for (int r = 0; r < model.rowCount(); ++r) {
      if (model.index(r, 0).data().toString() == "kernel launch") launch = model.index(r, 0);
    }
    QVERIFY(launch.isValid());
    QCOMPARE(model.index(launch.row(), 1).data().toString(), QString("grid 2,1,1 block 544,1,1"));
    QStringList shown;
    for (int r = 0; r < model.rowCount(launch); ++r) {
      shown << model.index(r, 0, launch).data().toString() + "=" + model.index(r, 1, launch).data().toString();
    }
    // The event's args: grid [2, 1, 1], block [544, 1, 1], registers 96, shared memory 0, blocks
    // per SM 0.25, warps per SM 4.5, occupancy 0, device 0, stream 20, correlation 340.
    QCOMPARE(shown, QStringList({"grid=2,1,1", "block=544,1,1", "registers per thread=96", "shared memory (bytes)=0",
                                 "blocks per SM=0.250000", "warps per SM=4.500000", "est. achieved occupancy %=0.000000",
                                 "device=0", "stream=20", "correlation=340"}));
  }

  void LiveTensorsAtThePeak() {
    auto analysis = AnalyseDocument(*document_);
    QVERIFY(!analysis->memory.empty());
    const auto& timeline = analysis->memory.front();
    LiveTensorModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto tensors = analysis::LiveTensorsAt(document_->trace(), timeline, timeline.peak_ns);
    const size_t count = tensors.size();
    model.SetTensors(std::move(tensors));
    QCOMPARE(model.rowCount(), static_cast<int>(count));
    for (int r = 1; r < model.rowCount(); ++r) {
      QVERIFY(model.index(r - 1, LiveTensorModel::kBytes).data(kSortRole).toLongLong() >=
              model.index(r, LiveTensorModel::kBytes).data(kSortRole).toLongLong());
    }
    QCOMPARE(QString::fromStdString(FormatBytes(1536)), QString("1.5 KiB"));
    QCOMPARE(QString::fromStdString(FormatBytes(830)), QString("830 B"));
  }

 private:
  std::shared_ptr<const TraceDocument> document_;
};

QTEST_GUILESS_MAIN(ModelsTest)
#include "models_test.moc"
