// `stepscope call-tree`: the call tree of nested host slices (analysis/call_tree.h), top-down or
// bottom-up, over the whole trace or one step, on every host lane or those a regex names; an
// indented table for people, the nested tree as JSON.
#include <regex>
#include <string>

#include "profiler/analysis/call_tree.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/step_windows.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"
#include "profiler/cli/scope_flags.h"
#include "profiler/formats/inputs.h"

namespace stepscope::cli {
namespace {

using analysis::CallTree;
using analysis::CallTreeNode;
using trace::Trace;

struct CallTreeFlags {
  bool bottom_up = false;
  bool json = false;
  size_t top = kDefaultTop;      // children per node in text
  int64_t depth = 0;             // levels shown; 0: text 8, JSON every level
};

// The tracks whose path (Trace::TrackPath) the regex finds, or an error naming the tracks there are.
StatusOr<std::vector<uint32_t>> TracksMatching(const Trace& trace, const std::string& pattern) {
  std::regex regex;
  try {
    regex = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return InvalidInput("--track " + pattern + ": not a regular expression (" + e.what() + ")");
  }
  std::vector<uint32_t> tracks;
  std::string known;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    const std::string path = trace.TrackPath(t);
    if (std::regex_search(path, regex)) tracks.push_back(t);
    if (t < 12) known += "\n  " + path;
  }
  if (tracks.empty()) {
    return InvalidInput("--track " + pattern + ": no track of " + trace.source_path() + " matches; its tracks:" + known +
                        (trace.tracks().size() > 12 ? "\n  ..." : ""));
  }
  return tracks;
}

void NodeText(const CallTree& tree, uint32_t id, const CallTreeFlags& flags, int64_t max_depth, TextTable& table);

// A node's children, the first --top of them one row each and the rest summed in one row.
void ChildrenText(const CallTree& tree, uint32_t id, const CallTreeFlags& flags, int64_t max_depth, TextTable& table) {
  const CallTreeNode& node = tree.nodes[id];
  const double whole = static_cast<double>(std::max<int64_t>(1, tree.root().total_ns));
  size_t shown = 0;
  int64_t rest_total = 0, rest_nodes = 0;
  for (uint32_t child : tree.children_of(id)) {
    if (shown++ < flags.top) {
      NodeText(tree, child, flags, max_depth, table);
    } else {
      rest_total += tree.nodes[child].total_ns;
      ++rest_nodes;
    }
  }
  if (rest_nodes > 0) {
    table.Row({FormatDuration(rest_total), "", "", FormatPercent(static_cast<double>(rest_total) / whole),
               std::string(2 * node.depth, ' ') + "(" + IntText(rest_nodes) + " more)"});
  }
}

// A node's row (names indented by depth; the share is of the root's total), then its children.
void NodeText(const CallTree& tree, uint32_t id, const CallTreeFlags& flags, int64_t max_depth, TextTable& table) {
  const CallTreeNode& node = tree.nodes[id];
  const double whole = static_cast<double>(std::max<int64_t>(1, tree.root().total_ns));
  table.Row({FormatDuration(node.total_ns), FormatDuration(node.self_ns), IntText(node.calls),
             FormatPercent(static_cast<double>(node.total_ns) / whole),
             std::string(2 * (node.depth - 1), ' ') + tree.name(id)});
  if (static_cast<int64_t>(node.depth) < max_depth) ChildrenText(tree, id, flags, max_depth, table);
}

std::string CallTreeText(const CallTree& tree, const CallTreeFlags& flags) {
  const int64_t max_depth = flags.depth > 0 ? flags.depth : 8;
  std::string out = std::string(flags.bottom_up ? "bottom-up" : "top-down") + " call tree: " +
                    IntText(tree.slices) + " slices, window " + FormatDuration(tree.window_ns) + ", top-level total " +
                    FormatDuration(tree.root().total_ns) + ", " + IntText(tree.max_depth) + " levels\n";
  out += flags.bottom_up ? "(each name's self time, then who calls it)\n\n" : "\n";
  TextTable table({12, 12, 9, 7, 0});
  table.Row({"total", "self", "calls", "share", "name"});
  ChildrenText(tree, 0, flags, max_depth, table);
  return out + table.str();
}

Json NodeJson(const CallTree& tree, uint32_t id, int64_t max_depth) {
  const CallTreeNode& node = tree.nodes[id];
  Json json = {{"name", tree.name(id)}, {"calls", node.calls}, {"total_ns", node.total_ns}, {"self_ns", node.self_ns}};
  if (node.longest_slice >= 0) json["longest_slice"] = node.longest_slice;
  if (max_depth > 0 && static_cast<int64_t>(node.depth) >= max_depth) return json;
  Json children = Json::array();
  for (uint32_t child : tree.children_of(id)) children.push_back(NodeJson(tree, child, max_depth));
  json["children"] = std::move(children);
  return json;
}

StatusOr<CallTreeFlags> ParseCallTreeFlags(const ParsedArgs& args) {
  CallTreeFlags flags;
  flags.bottom_up = args.Has("bottom-up");
  flags.json = args.Has("json");
  ASSIGN_OR_RETURN(flags.top, PositiveFlag(args, "top", kDefaultTop));
  ASSIGN_OR_RETURN(flags.depth, args.GetInt("depth", 0, 1, trace::Slice::kMaxDepth + 1));
  return flags;
}

// The tree of the inputs as one trace: the one the caller merged, or the only one.
Status AnalyseCallTree(const LoadedInputs& inputs, const ParsedArgs& args, CommandOutput& output) {
  std::ostream& out = output.text;
  ASSIGN_OR_RETURN(const CallTreeFlags flags, ParseCallTreeFlags(args));
  ASSIGN_OR_RETURN(const auto range, StepRange(args));
  if (inputs.one == nullptr && inputs.traces.size() != 1) {
    return Internal("call-tree takes several inputs merged (LoadedInputs::one)");
  }
  const Trace& trace = inputs.one != nullptr ? *inputs.one : inputs.traces.front();

  analysis::CallTreeOptions options;
  std::string scope = "trace";
  if (range) {
    const auto windows =
        analysis::NumberedStepWindows(std::span(&trace, 1), range, analysis::StepWindowing::kEveryStep).front();
    if (windows.empty()) return InvalidInput(analysis::NoStepInRangeMessage(*range));
    options.begin_ns = windows.front().begin_ns;
    options.end_ns = windows.back().end_ns;
    scope = windows.size() == 1 ? "step " + std::to_string(windows.front().number)
                                : "steps " + std::to_string(windows.front().number) + "-" +
                                      std::to_string(windows.back().number);
  }
  if (const auto pattern = args.Get("track")) {
    ASSIGN_OR_RETURN(options.tracks, TracksMatching(trace, *pattern));
  }
  CallTree tree = analysis::ComputeCallTree(trace, options);
  if (flags.bottom_up) tree = analysis::BottomUpTree(tree);

  if (flags.json) {
    Json doc = Document("call-tree", trace);
    doc["view"] = flags.bottom_up ? "bottom-up" : "top-down";
    doc["scope"] = scope;
    doc["window_begin_ns"] = tree.window_begin_ns;
    doc["window_ns"] = tree.window_ns;
    doc["slices"] = tree.slices;
    doc["levels"] = tree.max_depth;
    doc["root"] = NodeJson(tree, 0, flags.depth);
    output.doc = std::move(doc);
  } else {
    out << Header(trace) << "scope  " << scope << "\n" << CallTreeText(tree, flags);
  }
  return Status::Ok();
}

// Flags checked, then the inputs read and merged (moved into the one trace, never copied).
Status RunCallTree(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  RETURN_IF_ERROR(ParseCallTreeFlags(args).status());
  RETURN_IF_ERROR(StepRange(args).status());
  ASSIGN_OR_RETURN(std::vector<Trace> traces, trace::ReadTraces(args.positional));
  const Trace one = analysis::OneTrace(std::move(traces));
  return AnalyseAndPrint(AnalyseCallTree, {.traces = {&one, 1}, .one = &one}, args, out, err);
}

}  // namespace

CommandSpec CallTreeCommand() {
  return {.name = "call-tree",
          .synopsis = "TRACE|DIR... [--bottom-up] [--step N | --steps A-B] [--track REGEX] [--depth D] [--top N] [--json]",
          .description =
              "The call tree of nested host slices (ops calling ops, with the annotations and\n"
              "Python frames around them), aggregated by their path of names: calls, total time\n"
              "(durations clipped to the scope) and self time (total minus the nested calls).\n"
              "Top-down from the top-level slices, or --bottom-up: each name with its self time,\n"
              "then its callers. Every lane but the GPU's unless --track picks lanes by path.",
          .flags = {{"json", "", "write the tree as JSON (nested; every level unless --depth)"},
                    {"bottom-up", "", "each name's self time, then who calls it"},
                    StepFlag("only what happens"),
                    StepsFlag("only what happens"),
                    {"track", "REGEX", "only the lanes whose path (host / device / lane) matches, and those below"},
                    {"depth", "D", "levels shown (default 8 in text, every level in JSON)"},
                    {"top", "N", "children shown per node in text (default 15; the rest summed)"}},
          .run = RunCallTree,
          .analyse = AnalyseCallTree};
}

}  // namespace stepscope::cli
