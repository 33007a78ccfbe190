// Opens traces off the UI thread: reading and indexing on a pool thread, then the analyses its
// owner gives it (the panes') as a second stage so the timeline shows first. Progress and
// results are posted back to the UI thread; Cancel() returns at once and drops whatever the
// cancelled load still produces (every job carries a generation, stale results are ignored).
//
// A request either opens each file as its own document, or merges its files (typically a
// directory of per-rank or per-step traces) into one timeline with aligned clocks
// (analysis::MergeTraces).
#pragma once

#include <QFuture>
#include <QObject>
#include <QStringList>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "viewer/load/document.h"
#include "viewer/load/overview.h"

namespace stepscope::viewer {

struct DocumentAnalysis;
// Computes a document's analyses; called on the pool thread.
using AnalyseFunction = std::function<std::shared_ptr<const DocumentAnalysis>(const TraceDocument&)>;

struct LoadRequest {
  QStringList paths;   // files and directories (a directory stands for the traces inside)
  bool merge = false;  // one document for all of them (an overview when over the memory budget)
  // Instead of paths: these inputs of an overview document read in full, merged on its clocks.
  std::shared_ptr<const TraceDocument> overview_ranks_of;
  std::vector<size_t> overview_inputs;
};

class TraceLoader : public QObject {
  Q_OBJECT

 public:
  explicit TraceLoader(AnalyseFunction analyse, QObject* parent = nullptr);
  ~TraceLoader() override;  // cancels and waits for the pool thread

  // Runs the requests in order. A load in progress is superseded (its results are dropped).
  void Load(std::vector<LoadRequest> requests);
  void Cancel();
  bool busy() const { return busy_; }
  // Blocks until the current job has finished and its results are delivered (tests, headless).
  void WaitForIdle();
  // A single file of at least `file_bytes` on disk is shown first as a preview of its first
  // `preview_bytes` (Chrome JSON, Perfetto protobuf; documentLoaded twice: the preview, then the whole file), with
  // progress in MB read from disk. Defaults: kPreviewFileBytes, kPreviewBytes.
  static constexpr int64_t kPreviewFileBytes = int64_t{256} << 20;
  static constexpr int64_t kPreviewBytes = int64_t{128} << 20;
  void SetPreview(int64_t file_bytes, int64_t preview_bytes) {
    preview_file_bytes_ = file_bytes;
    preview_bytes_ = preview_bytes;
  }
  // Files cut short are read up to their cut (the documents list the cuts) instead of failing;
  // for the loads that start from now on.
  void SetAllowTruncated(bool allow) { allow_truncated_ = allow; }
  bool allow_truncated() const { return allow_truncated_; }
  // How merges align their ranks' clocks (`--align`; kAuto: the best available), from now on.
  void SetAlign(analysis::AlignMethod align) { align_ = align; }
  analysis::AlignMethod align() const { return align_; }
  // When a merge opens as an overview instead (`--overview`, `--no-overview`, the budget), from now on.
  void SetOverviewPolicy(const OverviewPolicy& policy) { overview_policy_ = policy; }
  const OverviewPolicy& overview_policy() const { return overview_policy_; }

 signals:
  void progress(int done, int total, const QString& current);
  void documentLoaded(std::shared_ptr<const stepscope::viewer::TraceDocument> document,
                      double load_ms);
  void documentAnalysed(std::shared_ptr<const stepscope::viewer::TraceDocument> document,
                        std::shared_ptr<const stepscope::viewer::DocumentAnalysis> analysis);
  // One file (or merge) could not be opened; the others still load. `message` names the file.
  void failed(const QString& message);
  // What a merge did (alignment, stragglers), for the status bar.
  void note(const QString& message);
  void finished(bool cancelled);

 private:
  void Post(uint64_t generation, std::function<void()> action);

  const AnalyseFunction analyse_;
  uint64_t generation_ = 0;
  bool busy_ = false;
  int64_t preview_file_bytes_ = kPreviewFileBytes;
  int64_t preview_bytes_ = kPreviewBytes;
  bool allow_truncated_ = false;
  analysis::AlignMethod align_ = analysis::AlignMethod::kAuto;
  OverviewPolicy overview_policy_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::vector<QFuture<void>> jobs_;  // a cancelled job may still be finishing its read
};

}  // namespace stepscope::viewer
