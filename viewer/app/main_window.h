// The main window: one tab per open trace (DocumentView), File/View/Help menus, the search
// bar, a status bar with the load progress and Cancel, drag and drop, recent files. Failures
// are reported without blocking (status bar and a non-modal message box) and never close what
// is already open. The panes of each trace dock around its timeline; the window's size and the
// docks' layout are remembered across runs (main_window_layout.cc).
#pragma once

#include <QFutureWatcher>
#include <QMainWindow>
#include <QSize>
#include <QStringList>
#include <cstdint>
#include <memory>
#include <vector>

#include "viewer/load/document.h"

class QCheckBox;
class QImage;
class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QPushButton;
class QTabWidget;

namespace stepscope::viewer {

class CompareView;
class DocumentView;
class TraceLoader;
struct OpenedComparison;

// Writes `image` as a PNG completely or not at all (temp file + rename). Returns the error, or an
// empty string.
QString SavePngAtomically(const QImage& image, const QString& path);

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // `interactive`: errors also pop up a message box (off in headless modes and tests).
  explicit MainWindow(bool interactive = true, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Files open as one tab each; a directory opens as one tab with its traces (ranks, steps)
  // merged into one timeline. `merge_all` merges everything given into one tab.
  void Open(const QStringList& paths, bool merge_all = false);
  // Adds an already built document (the synthetic benchmark trace).
  DocumentView* AddDocument(std::shared_ptr<const TraceDocument> document);
  TraceLoader* loader() const { return loader_; }
  // Whether files cut short open up to their cut (`--allow-truncated`, File > Read Traces Cut
  // Short) instead of failing; such a document's tab and the window title say TRUNCATED and a
  // banner over its timeline names each cut.
  void SetAllowTruncated(bool allow);
  int document_count() const;  // trace tabs (DocumentView), not comparisons
  DocumentView* document(int i) const;
  DocumentView* current_document() const;
  void ShowDocument(int i);  // brings document i's tab to the front
  // Opens the comparison of two runs in a tab of its own (`stepscope-view A... --vs B...`): each
  // side files or directories, as `stepscope diff A... --vs B...` takes them; the timelines show
  // the step numbered `step_a` / `step_b` (the first of the side when -1 or not found). The diff
  // runs off the UI thread; a failure is reported like a load failure.
  void Compare(const QStringList& a, const QStringList& b, int64_t step_a = -1, int64_t step_b = -1);
  // Blocks until a comparison started by Compare() is shown or has failed (tests, headless).
  void WaitForComparison();
  int comparison_count() const;
  CompareView* comparison(int i) const;
  // The overview of a job too large to merge (viewer/load/overview.h): its ranks, by rank
  // number, read in full and merged in a tab of their own on the overview's clocks, so that
  // their times are the overview's (File > Open Ranks in Detail). False, having said why, when
  // the current tab is no overview or names no such rank.
  bool OpenOverviewRanks(const std::vector<int32_t>& ranks);
  // The rank of the current overview's selected slice; -1 when there is none.
  int32_t SelectedOverviewRank() const;
  // Every error reported since the window opened, newest last.
  const QStringList& errors() const { return errors_; }
  // What the current document's import counted (repairs, skipped events, limits), as
  // `stepscope summary` lists it: the status bar's permanent label and its tooltip.
  QString import_status() const;
  QString import_details() const;
  QLineEdit* search_field() const { return search_field_; }

  // The window's geometry and the docks' layout kept across runs, in the user's settings
  // (QSettings: ~/.config/stepscope/stepscope-view.conf on Linux). Off until turned on (the
  // interactive window turns it on; headless modes and tests start from the defaults):
  // turning it on restores the saved window geometry, and from then on each trace opens with
  // the saved dock layout and closing the window saves both.
  void SetRememberLayout(bool remember);
  bool remember_layout() const { return remember_layout_; }
  // Writes the window geometry and the current trace's dock layout to the settings.
  void SaveLayout();
  // View > Reset Layout: every trace's docks back where they start, and the saved layout
  // forgotten (the window keeps its size; `--reset-layout` also forgets that).
  void ResetLayout();
  // Removes the saved layout from the settings (`stepscope-view --reset-layout`).
  static void ForgetSavedLayout();
  static constexpr QSize kDefaultSize{1600, 1000};

  // Exports of the current document; the error message is empty on success.
  QString ExportChromeJson(const QString& path, bool tf_timeline);
  // Perfetto protobuf, as the CLI writes it (`convert --format perfetto-proto`).
  QString ExportPerfettoProto(const QString& path);
  QString ExportPng(const QString& path);
  QString ExportStatsCsv(const QString& path);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  void BuildMenus();
  void BuildSearchBar();
  void BuildLayoutMenu(QMenu* view);
  // The settings' keys of the remembered layout (main_window_layout.cc).
  static constexpr const char* kGeometryKey = "layout/window_geometry";
  static constexpr const char* kDockLayoutKey = "layout/docks";
  // The tracks' order of each trace the user reordered, under this group by the trace's path.
  static constexpr const char* kTrackOrderGroup = "layout/track_order";
  void SaveTrackOrder(const DocumentView* view) const;
  void RestoreTrackOrder(DocumentView* view) const;
  static constexpr const char* kFullNamesKey = "view/full_kernel_names";  // View > Full Kernel Names
  void ReportError(const QString& message_text);
  void AddRecent(const QString& path);
  void RebuildRecentMenu();
  void RunSearch();
  void UpdateSearchStatus();
  void StepSearch(bool forward);  // the next or previous match, on the current document
  void ShowKeys();
  void ShowComparison();
  void UpdateImportStatus();
  void UpdateTitle();

  bool interactive_;
  TraceLoader* loader_;
  QTabWidget* tabs_;
  QLabel* welcome_;
  QProgressBar* progress_;
  QLabel* import_status_;
  QPushButton* cancel_;
  QMenu* recent_menu_;
  QAction* allow_truncated_ = nullptr;
  QLineEdit* search_field_;
  QCheckBox* search_regex_;
  QLabel* search_status_;
  QStringList errors_;
  QFutureWatcher<std::shared_ptr<OpenedComparison>> comparing_;
  bool comparison_pending_ = false;
  bool remember_layout_ = false;
  bool full_kernel_names_ = false;  // View > Full Kernel Names
};

}  // namespace stepscope::viewer
