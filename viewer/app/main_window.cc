// The main window (main_window.h): menus, the search bar, loading with progress and Cancel,
// document and comparison tabs, exports.
#include "viewer/app/main_window.h"

#include <QAction>
#include <QApplication>
#include <QBuffer>
#include <QCheckBox>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "base/file_io.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/writer.h"
#include "viewer/app/document_view.h"
#include "viewer/app/formats_text.h"
#include "viewer/app/search_field.h"
#include "viewer/app/theme.h"
#include "viewer/compare/compare_view.h"
#include "viewer/load/overview.h"
#include "viewer/load/trace_loader.h"
#include "viewer/panes/pane_table.h"
#include "viewer/panes/search_pane.h"
#include "viewer/panes/stats_pane.h"
#include "viewer/timeline/help_overlay.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {
namespace {

constexpr int kMaxRecent = 10;
QString TraceFilter() { return TraceFileFilter(); }

}  // namespace

// A comparison read and diffed off the UI thread, with the documents of the steps it shows.
struct OpenedComparison {
  Status status;
  std::shared_ptr<const Comparison> comparison;
  size_t step_a = 0, step_b = 0;
  StepDocument a, b;
};

MainWindow::MainWindow(bool interactive, QWidget* parent)
    : QMainWindow(parent), interactive_(interactive), loader_(new TraceLoader(&AnalyseDocument, this)) {
  setWindowTitle(tr("stepscope-view"));
  setAcceptDrops(true);
  auto* stack = new QStackedWidget(this);
  welcome_ = new QLabel(tr("<h3>stepscope-view</h3><p>Open a trace: File &gt; Open (Ctrl+O), or drop "
                           "files or a directory of per-step or per-rank traces here.</p>") +
                            FormatsHtml(),
                        stack);
  welcome_->setObjectName(QStringLiteral("welcome"));
  welcome_->setAlignment(Qt::AlignCenter);
  tabs_ = new QTabWidget(stack);
  tabs_->setTabsClosable(true);
  tabs_->setDocumentMode(true);
  stack->addWidget(welcome_);
  stack->addWidget(tabs_);
  setCentralWidget(stack);
  connect(tabs_, &QTabWidget::tabCloseRequested, this, [this, stack](int index) {
    QWidget* page = tabs_->widget(index);
    tabs_->removeTab(index);
    page->deleteLater();
    if (tabs_->count() == 0) stack->setCurrentWidget(welcome_);
  });
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { RunSearch(); });

  import_status_ = new QLabel(this);
  statusBar()->addPermanentWidget(import_status_);
  connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::UpdateImportStatus);
  connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::UpdateTitle);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(240);
  progress_->hide();
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->hide();
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  connect(cancel_, &QPushButton::clicked, loader_, &TraceLoader::Cancel);

  connect(loader_, &TraceLoader::progress, this, [this](int done, int total, const QString& current) {
    if (current.isEmpty()) return;
    progress_->show();
    cancel_->show();
    // A single file has no measurable progress: the bar runs busy.
    progress_->setRange(0, total == 1 ? 0 : total);
    progress_->setValue(done);
    statusBar()->showMessage(tr("Opening %1 ...").arg(current));
  });
  connect(loader_, &TraceLoader::documentLoaded, this,
          [this, stack](std::shared_ptr<const TraceDocument> document, double load_ms) {
            AddDocument(document);
            stack->setCurrentWidget(tabs_);
            UpdateImportStatus();
            // Merged documents are named after their inputs, not a file: nothing to reopen.
            const QString path = QString::fromStdString(document->path());
            if (QFileInfo(path).isFile()) AddRecent(path);
            if (document->preview_bytes() > 0) {
              statusBar()->showMessage(tr("Showing the first %1 MB of %2 (%3 slices, in %4 ms) while the rest loads")
                                           .arg(document->preview_bytes() >> 20)
                                           .arg(QString::fromStdString(document->path()))
                                           .arg(document->trace().slices().size())
                                           .arg(load_ms, 0, 'f', 0));
              return;
            }
            statusBar()->showMessage(tr("Opened %1: %2 slices in %3 ms")
                                         .arg(QString::fromStdString(document->path()))
                                         .arg(document->trace().slices().size())
                                         .arg(load_ms, 0, 'f', 0));
          });
  connect(loader_, &TraceLoader::documentAnalysed, this,
          [this](std::shared_ptr<const TraceDocument> document, std::shared_ptr<const DocumentAnalysis> analysis) {
            for (int i = 0; i < document_count(); ++i) {
              if (this->document(i)->shared_document() == document) this->document(i)->SetAnalysis(analysis);
            }
          });
  connect(loader_, &TraceLoader::failed, this, &MainWindow::ReportError);
  connect(loader_, &TraceLoader::note, this, [this](const QString& message) { statusBar()->showMessage(message); });
  connect(loader_, &TraceLoader::finished, this, [this](bool cancelled) {
    progress_->hide();
    cancel_->hide();
    if (cancelled) statusBar()->showMessage(tr("Opening cancelled; what was open stays open."));
  });

  connect(&comparing_, &QFutureWatcher<std::shared_ptr<OpenedComparison>>::finished, this, &MainWindow::ShowComparison);

  BuildMenus();
  BuildSearchBar();
  resize(kDefaultSize);
}

MainWindow::~MainWindow() = default;

void MainWindow::BuildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open..."), QKeySequence::Open, this, [this] {
    const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Open traces"), QString(), TraceFilter());
    if (!paths.isEmpty()) Open(paths);
  });
  file->addAction(tr("Open &Directory as One Timeline..."), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a directory of per-rank or per-step traces"));
    if (!dir.isEmpty()) Open({dir});
  });
  file->addAction(tr("Open Files as One &Timeline..."), this, [this] {
    const QStringList paths =
        QFileDialog::getOpenFileNames(this, tr("Open traces to merge (ranks, steps)"), QString(), TraceFilter());
    if (!paths.isEmpty()) Open(paths, /*merge_all=*/true);
  });
  file->addAction(tr("Compare &With..."), this, [this] {
    // Side A: the trace (or directory) of the current tab; side B: files chosen now.
    DocumentView* doc = current_document();
    const QString a = doc == nullptr ? QString() : QString::fromStdString(doc->document().path());
    if (a.isEmpty() || !QFileInfo::exists(a)) {
      ReportError(tr("Compare With: open the trace or directory of the run to compare first (it becomes side A)"));
      return;
    }
    const QStringList b = QFileDialog::getOpenFileNames(
        this, tr("Compare %1 with (side B: one or more traces)").arg(QFileInfo(a).fileName()), QString(), TraceFilter());
    if (!b.isEmpty()) Compare({a}, b);
  });
  file->addAction(tr("Compare Two &Directories..."), this, [this] {
    const QString a = QFileDialog::getExistingDirectory(this, tr("Side A: a directory of step traces (before)"));
    if (a.isEmpty()) return;
    const QString b = QFileDialog::getExistingDirectory(this, tr("Side B: a directory of step traces (after)"));
    if (!b.isEmpty()) Compare({a}, {b});
  });
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  RebuildRecentMenu();
  file->addSeparator();
  QMenu* exports = file->addMenu(tr("&Export"));
  auto export_to = [this](const QString& title, const QString& filter, auto action) {
    if (current_document() == nullptr) return;
    const QString path = QFileDialog::getSaveFileName(this, title, QString(), filter);
    if (path.isEmpty()) return;
    const QString error = action(path);
    if (error.isEmpty()) {
      statusBar()->showMessage(tr("Wrote %1").arg(path));
    } else {
      ReportError(error);
    }
  };
  exports->addAction(tr("Chrome JSON for &Perfetto..."), this, [this, export_to] {
    export_to(tr("Export Chrome JSON"), tr("Chrome JSON (*.json *.json.gz)"),
              [this](const QString& path) { return ExportChromeJson(path, false); });
  });
  exports->addAction(tr("Chrome JSON as TensorFlow's &timeline..."), this, [this, export_to] {
    export_to(tr("Export TensorFlow timeline JSON"), tr("Chrome JSON (*.json *.json.gz)"),
              [this](const QString& path) { return ExportChromeJson(path, true); });
  });
  exports->addAction(tr("Perfetto p&rotobuf (.pftrace)..."), this, [this, export_to] {
    export_to(tr("Export Perfetto protobuf"), tr("Perfetto protobuf (*.pftrace *.perfetto-trace *.pftrace.gz)"),
              [this](const QString& path) { return ExportPerfettoProto(path); });
  });
  exports->addAction(tr("&PNG of the view..."), this, [this, export_to] {
    export_to(tr("Export PNG"), tr("PNG images (*.png)"), [this](const QString& path) { return ExportPng(path); });
  });
  exports->addAction(tr("&Statistics as CSV..."), this, [this, export_to] {
    export_to(tr("Export statistics"), tr("CSV (*.csv)"), [this](const QString& path) { return ExportStatsCsv(path); });
  });
  // An overview's ranks in full: the selected slice's rank by default, or a list ("0, 4-6").
  file->addAction(tr("Open Ranks in &Detail..."), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D), this, [this] {
    DocumentView* doc = current_document();
    if (doc == nullptr || doc->document().overview() == nullptr) {
      ReportError(tr("Open Ranks in Detail: the current tab is no overview (a directory of ranks too large to merge, "
                     "or opened with --overview)"));
      return;
    }
    const int32_t selected = SelectedOverviewRank();
    bool ok = false;
    const QString text = QInputDialog::getText(this, tr("Open ranks in detail"),
                                               tr("Ranks to read in full and merge (e.g. 3 or 0, 4-6):"), QLineEdit::Normal,
                                               selected >= 0 ? QString::number(selected) : QString(), &ok);
    if (!ok) return;
    std::vector<int32_t> ranks;
    for (const QString& part : text.split(',', Qt::SkipEmptyParts)) {
      const QStringList bounds = part.trimmed().split('-');
      bool first_ok = false, last_ok = bounds.size() == 1;
      const int first = bounds.front().trimmed().toInt(&first_ok);
      const int last = bounds.size() == 2 ? bounds.back().trimmed().toInt(&last_ok) : first;
      if (!first_ok || !last_ok || bounds.size() > 2 || last < first) {
        ReportError(tr("Open Ranks in Detail: '%1' is no rank or range of ranks").arg(part.trimmed()));
        return;
      }
      for (int rank = first; rank <= last; ++rank) ranks.push_back(rank);
    }
    OpenOverviewRanks(ranks);
  });
  file->addSeparator();
  allow_truncated_ = file->addAction(tr("Read Traces Cut Short up to the Cut"));
  allow_truncated_->setCheckable(true);
  allow_truncated_->setToolTip(tr("A file cut short opens with what it holds, marked TRUNCATED, instead of failing"));
  connect(allow_truncated_, &QAction::toggled, this, [this](bool on) { loader_->SetAllowTruncated(on); });
  file->addSeparator();
  file->addAction(tr("&Close Tab"), QKeySequence::Close, this, [this] {
    if (tabs_->count() > 0) emit tabs_->tabCloseRequested(tabs_->currentIndex());
  });
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("Fit &All"), this, [this] {
    if (auto* doc = current_document()) doc->axis()->FitAll();
  });
  view->addAction(tr("&Fit Selection (F)"), this, [this] {
    if (auto* doc = current_document()) doc->timeline()->FitSelection();
  });
  QAction* flows = view->addAction(tr("Show &Flows of the Selection (L)"));
  flows->setCheckable(true);
  flows->setChecked(true);
  connect(flows, &QAction::toggled, this, [this](bool on) {
    for (int i = 0; i < document_count(); ++i) document(i)->timeline()->SetShowFlows(on);
  });
  BuildLayoutMenu(view);

  QAction* full_names = view->addAction(tr("Full &Kernel Names"));
  full_names->setCheckable(true);
  full_kernel_names_ = QSettings().value(kFullNamesKey, false).toBool();  // as the last run left it
  full_names->setChecked(full_kernel_names_);
  connect(full_names, &QAction::toggled, this, [this](bool on) {
    full_kernel_names_ = on;
    QSettings().setValue(kFullNamesKey, on);
    for (int i = 0; i < document_count(); ++i) document(i)->SetFullNames(on);
  });

  AddThemeMenu(view);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Keys and Mouse (? or F1)"), QKeySequence::HelpContents, this, &MainWindow::ShowKeys);
}

void MainWindow::BuildSearchBar() {
  QToolBar* bar = addToolBar(tr("Search"));
  bar->setMovable(false);
  auto* field = new SearchField(bar);
  search_field_ = field;
  search_field_->setPlaceholderText(tr("Search slice names and op types (Ctrl+F)"));
  search_field_->setClearButtonEnabled(true);
  search_field_->setMaximumWidth(420);
  search_regex_ = new QCheckBox(tr("Regex"), bar);
  search_status_ = new QLabel(bar);
  bar->addWidget(search_field_);
  bar->addWidget(search_regex_);
  QAction* previous = bar->addAction(tr("Previous"), this, [this] { StepSearch(false); });
  previous->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F3));
  QAction* next = bar->addAction(tr("Next"), this, [this] { StepSearch(true); });
  next->setShortcut(QKeySequence(Qt::Key_F3));
  bar->addWidget(search_status_);
  auto* focus = new QAction(this);
  focus->setShortcut(QKeySequence::Find);
  connect(focus, &QAction::triggered, search_field_, [this] {
    search_field_->setFocus();
    search_field_->selectAll();
  });
  addAction(focus);
  connect(search_field_, &QLineEdit::textChanged, this, &MainWindow::RunSearch);
  connect(search_regex_, &QCheckBox::toggled, this, &MainWindow::RunSearch);
  // Enter / Shift+Enter step and Esc leaves: the keyboard goes back to the timeline either way.
  auto to_timeline = [this] {
    if (auto* doc = current_document()) doc->timeline()->setFocus(Qt::OtherFocusReason);
  };
  connect(field, &SearchField::stepRequested, this, [this, to_timeline](bool forward) {
    StepSearch(forward);
    to_timeline();
  });
  connect(field, &SearchField::leaveRequested, this, to_timeline);
}

void MainWindow::StepSearch(bool forward) {
  if (auto* doc = current_document()) {
    if (forward) {
      doc->pane<SearchPane>()->SearchNext();
    } else {
      doc->pane<SearchPane>()->SearchPrevious();
    }
  }
  UpdateSearchStatus();
}

void MainWindow::RunSearch() {
  DocumentView* doc = current_document();
  if (doc == nullptr) {
    search_status_->clear();
    return;
  }
  const QString error = doc->pane<SearchPane>()->Search(search_field_->text(), search_regex_->isChecked());
  if (!error.isEmpty()) {
    search_status_->setText(error);
    return;
  }
  UpdateSearchStatus();
}

void MainWindow::UpdateSearchStatus() {
  DocumentView* doc = current_document();
  search_status_->setText(doc == nullptr || search_field_->text().isEmpty() ? QString() : doc->pane<SearchPane>()->search_status());
}

void MainWindow::Open(const QStringList& paths, bool merge_all) {
  if (paths.isEmpty()) return;
  std::vector<LoadRequest> requests;
  if (merge_all) {
    requests.push_back(LoadRequest{paths, true});
  } else {
    LoadRequest files{{}, false};
    for (const QString& path : paths) {
      if (QFileInfo(path).isDir()) {
        requests.push_back(LoadRequest{{path}, true});
      } else {
        files.paths << path;
      }
    }
    if (!files.paths.isEmpty()) requests.insert(requests.begin(), files);
  }
  loader_->Load(std::move(requests));
}

bool MainWindow::OpenOverviewRanks(const std::vector<int32_t>& ranks) {
  DocumentView* doc = current_document();
  const Overview* overview = doc == nullptr ? nullptr : doc->document().overview();
  if (overview == nullptr) {
    ReportError(tr("Open Ranks in Detail: the current tab is no overview"));
    return false;
  }
  LoadRequest request;
  request.overview_ranks_of = doc->shared_document();
  for (int32_t rank : ranks) {
    const int64_t input = OverviewInputOfRank(*overview, rank);
    if (input < 0) {
      ReportError(tr("Open Ranks in Detail: %1 has no rank %2").arg(QString::fromStdString(doc->document().path())).arg(rank));
      return false;
    }
    request.overview_inputs.push_back(static_cast<size_t>(input));
  }
  if (request.overview_inputs.empty()) {
    ReportError(tr("Open Ranks in Detail: no rank given"));
    return false;
  }
  loader_->Load({std::move(request)});
  return true;
}

int32_t MainWindow::SelectedOverviewRank() const {
  DocumentView* doc = current_document();
  if (doc == nullptr || doc->document().overview() == nullptr || doc->document().rank_merge() == nullptr) return -1;
  const int64_t selected = doc->timeline()->selected_slice();
  const trace::Trace& trace = doc->document().trace();
  if (selected < 0 || static_cast<size_t>(selected) >= trace.slices().size()) return -1;
  const int32_t process = trace.HostOf(static_cast<uint32_t>(trace.slices()[static_cast<size_t>(selected)].track));
  const auto& inputs = doc->document().rank_merge()->inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (static_cast<int32_t>(inputs[i].process_track) == process) return inputs[i].rank >= 0 ? inputs[i].rank : static_cast<int32_t>(i);
  }
  return -1;
}

DocumentView* MainWindow::AddDocument(std::shared_ptr<const TraceDocument> document) {
  // The whole file replaces its preview in the same tab, at the time range shown.
  DocumentView* preview = nullptr;
  for (int i = 0; i < document_count() && document->preview_bytes() == 0; ++i) {
    DocumentView* open = this->document(i);
    if (open->document().preview_bytes() > 0 && open->document().path() == document->path()) preview = open;
  }
  auto* view = new DocumentView(document, tabs_);
  connect(view, &DocumentView::overviewRankRequested, this, [this](int32_t rank) { OpenOverviewRanks({rank}); });
  // A new trace opens with the docks as the trace in front has them (its preview's, when it
  // replaces one), else as saved.
  if (remember_layout_) {
    const DocumentView* shown = preview != nullptr ? preview : current_document();
    view->RestoreLayout(shown != nullptr ? shown->SaveLayout() : QSettings().value(kDockLayoutKey).toByteArray());
    RestoreTrackOrder(view);
  }
  view->SetFullNames(full_kernel_names_);
  const QString name = QFileInfo(QString::fromStdString(document->path())).fileName();
  QString title = name.isEmpty() ? QString::fromStdString(document->path()) : name;
  if (document->preview_bytes() > 0) {
    title += tr(" (first %1 MB, loading)").arg(document->preview_bytes() >> 20);
  }
  if (!document->truncations().empty()) title += tr(" (TRUNCATED)");
  int index = 0;
  if (preview != nullptr) {
    index = tabs_->indexOf(preview);
    // Kept where the preview was zoomed into; else the whole file is shown.
    const trace::Trace& shown = preview->document().trace();
    const TimeAxis& axis = *preview->axis();
    if (axis.begin_ns() > static_cast<double>(shown.span_begin_ns()) || axis.end_ns() < static_cast<double>(shown.span_end_ns())) {
      view->axis()->SetRange(axis.begin_ns(), axis.end_ns());
    }
    tabs_->insertTab(index, view, title);
    tabs_->removeTab(index + 1);
    preview->deleteLater();
  } else {
    index = tabs_->addTab(view, title);
  }
  tabs_->setTabToolTip(index, QString::fromStdString(document->path()));
  tabs_->setCurrentIndex(index);
  UpdateTitle();
  static_cast<QStackedWidget*>(centralWidget())->setCurrentWidget(tabs_);
  connect(view, &DocumentView::statusMessage, this, [this](const QString& message) {
    statusBar()->showMessage(message);
  });
  connect(view->timeline(), &TimelineView::searchStepRequested, this, &MainWindow::StepSearch);
  view->timeline()->setFocus();
  return view;
}

void MainWindow::Compare(const QStringList& a, const QStringList& b, int64_t step_a, int64_t step_b) {
  std::vector<std::string> paths_a, paths_b;
  for (const QString& path : a) paths_a.push_back(path.toStdString());
  for (const QString& path : b) paths_b.push_back(path.toStdString());
  if (comparison_pending_) comparing_.waitForFinished();  // one at a time: the newest wins
  comparison_pending_ = true;
  statusBar()->showMessage(tr("Comparing %1 with %2 ...").arg(a.join(", "), b.join(", ")));
  comparing_.setFuture(QtConcurrent::run([paths_a, paths_b, step_a, step_b] {
    auto opened = std::make_shared<OpenedComparison>();
    auto comparison = LoadComparison(paths_a, paths_b);
    if (!comparison.ok()) {
      opened->status = comparison.status();
      return opened;
    }
    opened->comparison = *comparison;
    auto pick = [](const std::vector<analysis::Step>& steps, int64_t number) -> size_t {
      for (size_t i = 0; i < steps.size() && number >= 0; ++i) {
        if (steps[i].step == number) return i;
      }
      return 0;
    };
    opened->step_a = pick(opened->comparison->steps_a, step_a);
    opened->step_b = pick(opened->comparison->steps_b, step_b);
    for (int s = 0; s < 2; ++s) {
      const analysis::Step& step =
          s == 0 ? opened->comparison->steps_a[opened->step_a] : opened->comparison->steps_b[opened->step_b];
      auto document = OpenStepDocument(step);
      if (!document.ok()) {
        opened->status = document.status();
        return opened;
      }
      (s == 0 ? opened->a : opened->b) = std::move(document).value();
    }
    return opened;
  }));
}

void MainWindow::WaitForComparison() {
  comparing_.waitForFinished();
  ShowComparison();
}

void MainWindow::SetAllowTruncated(bool allow) {
  allow_truncated_->setChecked(allow);  // toggled() tells the loader
  loader_->SetAllowTruncated(allow);
}

// The current trace's name, and TRUNCATED with its cut when it was read only up to one.
void MainWindow::UpdateTitle() {
  const DocumentView* doc = current_document();
  if (doc == nullptr || doc->document().truncations().empty()) {
    setWindowTitle(tr("stepscope-view"));
    return;
  }
  const auto& cuts = doc->document().truncations();
  const QString name = QFileInfo(QString::fromStdString(doc->document().path())).fileName();
  setWindowTitle(cuts.size() == 1 ? tr("TRUNCATED at byte %1: %2 - stepscope-view").arg(cuts.front().offset).arg(name)
                                  : tr("TRUNCATED (%1 files cut short): %2 - stepscope-view").arg(cuts.size()).arg(name));
}

void MainWindow::UpdateImportStatus() {
  const DocumentView* doc = current_document();
  import_status_->setVisible(doc != nullptr);
  if (doc == nullptr) return;
  const trace::ImportStats& stats = doc->document().trace().import_stats();
  QStringList counts, lines;
  for (const auto& [name, count] : stats.counts()) {
    counts << QStringLiteral("%1 %2").arg(QString::fromStdString(name)).arg(count);
    lines << counts.back();
  }
  const QString text = counts.isEmpty() ? tr("Import: nothing repaired or skipped")
                                        : tr("Import: %1").arg(counts.join(QStringLiteral(", ")));
  import_status_->setText(fontMetrics().elidedText(text, Qt::ElideRight, 520));
  import_status_->setToolTip(counts.isEmpty() ? text
                                              : tr("What the import counted (repairs, skipped events, limits), "
                                                   "as `stepscope summary` lists it:\n") +
                                                    lines.join(QStringLiteral("\n")));
}

QString MainWindow::import_status() const { return import_status_->text(); }
QString MainWindow::import_details() const { return import_status_->toolTip(); }

void MainWindow::ShowComparison() {
  if (!comparison_pending_) return;
  comparison_pending_ = false;
  const std::shared_ptr<OpenedComparison> opened = comparing_.result();
  if (!opened->status.ok()) {
    ReportError(QString::fromStdString(opened->status.message()));
    return;
  }
  const Comparison& comparison = *opened->comparison;
  auto* view = new CompareView(opened->comparison, opened->step_a, std::move(opened->a), opened->step_b,
                               std::move(opened->b), tabs_);
  // A side's name: its input, or the directory its inputs share ("a (4)" for a/run0 ... a/run7).
  auto side_name = [](const std::vector<std::string>& paths) {
    const QFileInfo first(QString::fromStdString(paths.front()));
    if (paths.size() == 1) return first.fileName().isEmpty() ? first.filePath() : first.fileName();
    const QString parent = first.absolutePath();
    const bool shared = std::all_of(paths.begin(), paths.end(), [&](const std::string& path) {
      return QFileInfo(QString::fromStdString(path)).absolutePath() == parent;
    });
    return shared ? QStringLiteral("%1 (%2)").arg(QFileInfo(parent).fileName()).arg(paths.size())
                  : QStringLiteral("%1 +%2").arg(first.fileName()).arg(paths.size() - 1);
  };
  const int index = tabs_->addTab(view, tr("%1 vs %2").arg(side_name(comparison.paths_a), side_name(comparison.paths_b)));
  QStringList tip;
  for (const auto* paths : {&comparison.paths_a, &comparison.paths_b}) {
    QStringList side;
    for (const std::string& path : *paths) side << QString::fromStdString(path);
    tip << side.join(" ");
  }
  tabs_->setTabToolTip(index, tip.join(" --vs "));
  tabs_->setCurrentIndex(index);
  static_cast<QStackedWidget*>(centralWidget())->setCurrentWidget(tabs_);
  connect(view, &CompareView::statusMessage, this, [this](const QString& message) { statusBar()->showMessage(message); });
  statusBar()->showMessage(tr("Compared %1 steps with %2").arg(comparison.diff.steps_a).arg(comparison.diff.steps_b));
}

int MainWindow::comparison_count() const {
  int count = 0;
  for (int i = 0; i < tabs_->count(); ++i) count += qobject_cast<CompareView*>(tabs_->widget(i)) != nullptr;
  return count;
}

CompareView* MainWindow::comparison(int i) const {
  for (int t = 0; t < tabs_->count(); ++t) {
    auto* view = qobject_cast<CompareView*>(tabs_->widget(t));
    if (view != nullptr && i-- == 0) return view;
  }
  return nullptr;
}

int MainWindow::document_count() const {
  int count = 0;
  for (int i = 0; i < tabs_->count(); ++i) count += qobject_cast<DocumentView*>(tabs_->widget(i)) != nullptr;
  return count;
}

// The i-th trace tab (comparison tabs are not counted).
DocumentView* MainWindow::document(int i) const {
  for (int t = 0; t < tabs_->count(); ++t) {
    auto* view = qobject_cast<DocumentView*>(tabs_->widget(t));
    if (view != nullptr && i-- == 0) return view;
  }
  return nullptr;
}

DocumentView* MainWindow::current_document() const {
  return qobject_cast<DocumentView*>(tabs_->currentWidget());
}

void MainWindow::ShowDocument(int i) {
  if (DocumentView* doc = document(i)) tabs_->setCurrentWidget(doc);
}

void MainWindow::ReportError(const QString& message_text) {
  QString message = message_text;
  // The reader names the command-line flag; here it is also a menu item.
  if (message.contains("--allow-truncated")) message += tr(" (File > Read Traces Cut Short up to the Cut)");
  errors_.push_back(message);
  statusBar()->showMessage(message);
  if (!interactive_) return;
  // Non-modal: the window stays usable and what was open stays open.
  auto* box = new QMessageBox(QMessageBox::Warning, tr("stepscope-view"), message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

QString MainWindow::ExportChromeJson(const QString& path, bool tf_timeline) {
  DocumentView* doc = current_document();
  if (doc == nullptr) return tr("nothing to export: no trace is open");
  const Status status = trace::WriteTrace(doc->document().trace(), path.toStdString(),
                                          tf_timeline ? trace::OutputFormat::kTfTimelineJson
                                                      : trace::OutputFormat::kPerfettoJson);
  return status.ok() ? QString() : QString::fromStdString(status.message()).prepend(path + ": ");
}

// As `stepscope convert --format perfetto-proto` writes it: the same writer.
QString MainWindow::ExportPerfettoProto(const QString& path) {
  DocumentView* doc = current_document();
  if (doc == nullptr) return tr("nothing to export: no trace is open");
  const Status status = trace::WriteTrace(doc->document().trace(), path.toStdString(), trace::OutputFormat::kPerfettoProto);
  return status.ok() ? QString() : QString::fromStdString(status.message()).prepend(path + ": ");
}

QString SavePngAtomically(const QImage& image, const QString& path) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, "PNG")) return QStringLiteral("%1: the image could not be encoded as PNG").arg(path);
  const Status status = WriteFileAtomically(path.toStdString(), std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
  return status.ok() ? QString() : QString::fromStdString(status.message());
}

QString MainWindow::ExportPng(const QString& path) {
  DocumentView* doc = current_document();
  if (doc == nullptr) return tr("nothing to export: no trace is open");
  return SavePngAtomically(doc->timeline()->grab().toImage(), path);
}

QString MainWindow::ExportStatsCsv(const QString& path) {
  DocumentView* doc = current_document();
  if (doc == nullptr) return tr("nothing to export: no trace is open");
  if (doc->document().overview() != nullptr) {
    return tr("an overview of ranks has no per-op statistics: open ranks in full (File > Open Ranks in Detail) and export those");
  }
  if (!doc->analysed()) return tr("the statistics are still being computed; try again in a moment");
  const Status status = WriteFileAtomically(path.toStdString(), doc->pane<StatsPane>()->StatsCsv().toStdString());
  return status.ok() ? QString() : QString::fromStdString(status.message());
}

void MainWindow::AddRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recent_files").toStringList();
  recent.removeAll(path);
  recent.prepend(QFileInfo(path).absoluteFilePath());
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recent_files", recent);
  RebuildRecentMenu();
}

void MainWindow::RebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value("recent_files").toStringList();
  for (const QString& path : recent) {
    recent_menu_->addAction(path, this, [this, path] { Open({path}); });
  }
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::ShowKeys() {
  // Over the timeline when one is open, so the bindings are read next to what they act on.
  if (DocumentView* doc = current_document()) {
    doc->timeline()->ShowHelp(!doc->timeline()->help_shown());
    return;
  }
  QMessageBox::information(this, tr("Keys and mouse"), KeyBindingsHtml());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls()) {
    if (url.isLocalFile()) paths << url.toLocalFile();
  }
  if (!paths.isEmpty()) {
    Open(paths);
    event->acceptProposedAction();
  }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  loader_->Cancel();
  if (remember_layout_) SaveLayout();
  event->accept();
}

}  // namespace stepscope::viewer
