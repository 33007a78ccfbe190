// Two runs compared in the viewer (`stepscope-view A... --vs B...`, File > Compare With): the
// data behind the comparison view, no widgets.
//
// Each side is what `stepscope diff A... --vs B...` takes (files, directories, several of either):
// its steps come from analysis::StepCollector and the numbers from analysis::DiffRuns, so the view
// shows exactly the rows, verdicts and order the CLI prints. The timelines show one step a side
// (default: the first, in the CLI's step order), read again from its file as a viewer document;
// the two are aligned on the chosen steps' starts.
//
// Tinting: every slice that is an op in the diff's sense (not an aggregate duplicate, not an
// annotation or sync marker) belongs to one row of the diff: a kernel to its row in the kernel
// table (by normalised name, as the diff groups them), any other slice to its row in the op type
// or node table (TintLevel). The row's verdict picks the hue (red regressed, green improved, grey
// unchanged, pale grey inconclusive, blue new, orange gone); for regressed and improved rows the size of the change picks
// how strong it is.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "profiler/analysis/run_diff.h"
#include "profiler/analysis/steps.h"
#include "viewer/load/document.h"

namespace stepscope::viewer {

struct Comparison {
  std::vector<std::string> paths_a, paths_b;  // as given
  std::vector<analysis::Step> steps_a, steps_b;  // StepCollector order
  analysis::RunDiff diff;
};

// Collects both sides' steps and diffs them (as `stepscope diff A... --vs B...` does). Errors name
// the side and the file: an empty side, an unreadable file, a trace without steps.
StatusOr<std::shared_ptr<const Comparison>> LoadComparison(const std::vector<std::string>& paths_a,
                                                           const std::vector<std::string>& paths_b,
                                                           const analysis::RunDiffOptions& options = {});

// One step shown on a timeline: its document and the step's window in that document's time.
struct StepDocument {
  std::shared_ptr<const TraceDocument> document;
  int64_t begin_ns = 0, end_ns = 0;
};

// Opens the file a step came from (the files of its ranks merged, for a merged step) and finds
// the step's window in it.
StatusOr<StepDocument> OpenStepDocument(const analysis::Step& step);

// The diff's tables, for the view and for tinting.
enum class DiffTable { kOpType, kNode, kKernel };
const std::vector<analysis::RunDiffRow>& RowsOf(const analysis::RunDiff& diff, DiffTable table);
const char* DiffTableName(DiffTable table);  // "op type", "node", "kernel" as the CLI names them

// What the non-kernel slices are tinted by.
enum class TintLevel { kOpType, kNode };

// 0xRRGGBB for a diff row: its verdict's hue, stronger the larger the change.
uint32_t VerdictColor(const analysis::RunDiffRow& row);
// For slices that are no op of the diff (annotations, duplicates): a pale neutral.
inline constexpr uint32_t kNotComparedColor = 0xe6e6ea;

// Finds the row of the diff a slice of `trace` belongs to.
class DiffRowFinder {
 public:
  DiffRowFinder(const analysis::RunDiff& diff, TintLevel level);
  // The (table, row index) of a slice; table is the kernel table for kernels. Nothing for a slice
  // that is no op of the diff or has no row.
  struct Match {
    DiffTable table;
    size_t row;
  };
  std::optional<Match> Find(const trace::Trace& trace, uint32_t slice) const;

 private:
  using Key = std::pair<std::string, std::string>;  // (name, where)
  const analysis::RunDiff* diff_;
  TintLevel level_;
  std::map<Key, size_t> op_types_, nodes_, kernels_;
};

// The tint of every slice of a document (indexed like trace().slices()).
std::vector<uint32_t> SliceTints(const TraceDocument& document, const analysis::RunDiff& diff, TintLevel level);

// The slices of `trace` in [begin_ns, end_ns) that belong to a row, longest first.
std::vector<uint32_t> SlicesOfRow(const trace::Trace& trace, const analysis::RunDiff& diff, DiffTable table,
                                  size_t row, int64_t begin_ns, int64_t end_ns);

}  // namespace stepscope::viewer
