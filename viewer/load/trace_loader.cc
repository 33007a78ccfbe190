// The loader (trace_loader.h): read and index on a pool thread, then the panes' analyses, each
// result posted back to the UI thread with its generation so cancelled loads are dropped.
#include "viewer/load/trace_loader.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QMetaObject>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <filesystem>
#include <optional>

#include "profiler/analysis/merge.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"

namespace stepscope::viewer {
namespace {

struct PlannedRequest {
  std::vector<std::string> files;
  bool merge = false;
  std::string name;  // what a merged document is called
  std::shared_ptr<const TraceDocument> overview_ranks_of;
  std::vector<size_t> overview_inputs;
};

}  // namespace

TraceLoader::TraceLoader(AnalyseFunction analyse, QObject* parent) : QObject(parent), analyse_(std::move(analyse)) {}

TraceLoader::~TraceLoader() {
  if (cancel_ != nullptr) cancel_->store(true);
  for (auto& job : jobs_) job.waitForFinished();
}

void TraceLoader::Post(uint64_t generation, std::function<void()> action) {
  // Runs on the UI thread; dropped when a newer job started or this loader is gone.
  QMetaObject::invokeMethod(
      this,
      [this, generation, action = std::move(action)] {
        if (generation == generation_) action();
      },
      Qt::QueuedConnection);
}

void TraceLoader::Load(std::vector<LoadRequest> requests) {
  // A newer request supersedes the running one: its results are dropped by the generation.
  if (busy_) cancel_->store(true);
  const uint64_t generation = ++generation_;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  busy_ = true;
  std::vector<std::pair<std::vector<std::string>, bool>> wanted;
  std::vector<PlannedRequest> overview_ranks;  // ranks of an overview, opened in full
  for (const LoadRequest& request : requests) {
    if (request.overview_ranks_of != nullptr) {
      overview_ranks.push_back({{}, true, {}, request.overview_ranks_of, request.overview_inputs});
      continue;
    }
    std::vector<std::string> paths;
    for (const QString& path : request.paths) paths.push_back(path.toStdString());
    wanted.emplace_back(std::move(paths), request.merge);
  }
  std::erase_if(jobs_, [](const QFuture<void>& job) { return job.isFinished(); });
  jobs_.push_back(QtConcurrent::run([this, generation, wanted, overview_ranks, cancel = cancel_, preview_file_bytes = preview_file_bytes_,
                                     preview_bytes = preview_bytes_, allow_truncated = allow_truncated_, align = align_,
                                     overview_policy = overview_policy_] {
    auto fail = [&](const std::string& message) {
      const QString text = QString::fromStdString(message);
      Post(generation, [this, text] { emit failed(text); });
    };
    // Expand directories first so that progress counts files.
    std::vector<PlannedRequest> plan = overview_ranks;
    int total = 0;
    for (const PlannedRequest& request : overview_ranks) total += static_cast<int>(request.overview_inputs.size());
    for (const auto& [paths, merge] : wanted) {
      auto files = trace::ResolveTracePaths(paths);
      if (!files.ok()) {
        fail(files.status().message());
        continue;
      }
      PlannedRequest planned{*files, merge, {}};
      if (merge) {
        planned.name = (paths.size() == 1 ? paths.front() : paths.front() + " and " + std::to_string(paths.size() - 1) + " more") +
                       " (" + std::to_string(planned.files.size()) + " traces merged)";
      }
      total += static_cast<int>(planned.files.size());
      plan.push_back(std::move(planned));
    }
    int done = 0;
    auto step = [&](const std::string& file) {
      const QString current = QString::fromStdString(file);
      const int now = done++;
      Post(generation, [this, now, total, current] { emit progress(now, total, current); });
    };
    // An opened document delivered (a merge's note first, an overview's unread ranks named), or why
    // it could not be opened reported; false once the load is cancelled (nothing more is posted).
    auto settle = [&](const StatusOr<std::shared_ptr<const TraceDocument>>& opened, const QElapsedTimer& timer,
                      const std::optional<std::string>& note = std::nullopt) {
      if (cancel->load()) return false;
      if (!opened.ok()) {
        fail(opened.status().message());
        return true;
      }
      const std::shared_ptr<const TraceDocument>& document = *opened;
      if (const Overview* overview = document->overview(); overview != nullptr) {
        for (const UnreadRank& unread : overview->unread) fail(unread.message + " (left out of the overview; the other ranks are open)");
      }
      if (note) Post(generation, [this, text = QString::fromStdString(*note)] { emit this->note(text); });
      const double load_ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
      Post(generation, [this, document, load_ms] { emit documentLoaded(document, load_ms); });
      auto analysis = analyse_(*document);
      if (cancel->load()) return false;
      Post(generation, [this, document, analysis] { emit documentAnalysed(document, analysis); });
      return true;
    };
    for (const PlannedRequest& request : plan) {
      if (cancel->load()) break;
      QElapsedTimer timer;
      timer.start();
      if (!request.merge) {
        for (const std::string& file : request.files) {
          if (cancel->load()) break;
          step(file);
          timer.restart();
          trace::ReadTraceOptions read;
          read.allow_truncated = allow_truncated;
          if (total == 1) {
            // One big file: a preview of its start first, then progress in MB as it streams.
            std::error_code error;
            const auto size = static_cast<int64_t>(std::filesystem::file_size(file, error));
            if (!error && size >= preview_file_bytes) {
              auto preview = OpenDocument(file, cancel.get(), {.preview_bytes = preview_bytes, .allow_truncated = allow_truncated});
              if (cancel->load()) break;
              // Formats without a preview (kUnavailable) are read whole below.
              if (preview.ok()) {
                const double ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
                Post(generation, [this, document = *preview, ms] { emit documentLoaded(document, ms); });
              }
            }
            const QString current = QString::fromStdString(file);
            read.on_progress = [this, generation, current, shown = int64_t{-1}](const trace::ReadProgress& p) mutable {
              const int64_t mb = p.disk_bytes_read >> 20;
              if (mb != shown && p.disk_bytes > 0) {
                shown = mb;
                const int read_mb = static_cast<int>(mb), file_mb = static_cast<int>(std::max<int64_t>(p.disk_bytes >> 20, 2));
                Post(generation, [this, read_mb, file_mb, current] { emit progress(read_mb, file_mb, current); });
              }
              return true;
            };
          }
          if (!settle(OpenDocument(file, cancel.get(), read), timer)) break;
        }
        continue;
      }
      if (request.overview_ranks_of != nullptr) {
        for (size_t input : request.overview_inputs) {
          const Overview* overview = request.overview_ranks_of->overview();
          if (overview != nullptr && input < overview->ranks.size()) step(overview->ranks[input].source);
        }
        if (!settle(OpenOverviewRanks(*request.overview_ranks_of, request.overview_inputs, cancel.get()), timer)) break;
        continue;
      }
      std::string summary;
      // A job too large to merge in memory opens as its overview (overview.h).
      auto document = WantsOverview(request.files, overview_policy)
                          ? OpenOverviewDocument(request.files, request.name, cancel.get(), step, &summary, align, overview_policy)
                          : OpenMergedDocument(request.files, request.name, cancel.get(), step, &summary, allow_truncated, align);
      if (!settle(document, timer, summary)) break;
    }
    Post(generation, [this, total] {
      busy_ = false;
      emit progress(total, total, QString());
      emit finished(false);
    });
  }));
}

void TraceLoader::Cancel() {
  if (!busy_) return;
  cancel_->store(true);
  ++generation_;  // whatever the cancelled job still posts is dropped
  busy_ = false;
  emit finished(true);
}

void TraceLoader::WaitForIdle() {
  if (!jobs_.empty()) jobs_.back().waitForFinished();
  // Deliver what the job posted.
  while (busy_) QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
}

}  // namespace stepscope::viewer
