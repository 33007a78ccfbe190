// The `stepscope._stepscope` extension: reading traces (through the same resolver as the CLI,
// formats/inputs.h) with the GIL released, the commands of the CLI run in-process (on a trace
// already loaded where the command can: CommandSpec::analyse), and the loaded trace's tables as
// numpy arrays (tables.cc). The Python package (python/stepscope) builds
// the user-facing API on these.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "base/flags.h"
#include "profiler/cli/cli.h"
#include "profiler/cli/command.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"
#include "profiler/testing/synthetic_trace.h"
#include "python/src/py_trace.h"

namespace stepscope::python {
namespace {

// The Python class raised for a failed Status (stepscope.StepscopeError), set by the package on
// import; RuntimeError until then.
nb::object& ErrorType() {
  static nb::object* type = new nb::object(nb::borrow(PyExc_RuntimeError));
  return *type;
}

// A failed Status crossing into Python: raised as StepscopeError(message, exit_code, file).
struct StatusError {
  Status status;
  std::string file;
};

[[noreturn]] void Raise(const Status& status, const std::string& file) { throw StatusError{status, file}; }

// What a path holds: "file", "run" (a directory read as one trace) or "files" (a directory of
// trace files, one trace each), with the inputs in the order they are read.
std::tuple<std::string, std::vector<std::string>> Resolve(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    auto contents = trace::ListTraceDirectory(path);
    if (!contents.ok()) Raise(contents.status(), path);
    if (contents->kind == trace::DirectoryContents::Kind::kProfilerRun) return {"run", {path}};
    return {"files", contents->files};
  }
  auto inputs = trace::ResolveTracePaths({path});
  if (!inputs.ok()) Raise(inputs.status(), path);
  return {inputs->size() == 1 && *inputs == std::vector<std::string>{path} ? "file" : "files", *inputs};
}

// Reads one input (a file, or a directory read as one trace). The GIL is released while reading;
// `progress`, when given, is called with (bytes_read, disk_bytes_read, disk_bytes) as the file
// streams, holding the GIL, and stops the read when it returns False.
PyTrace* Load(const std::string& input, nb::object progress, bool allow_truncated, int64_t preview_bytes) {
  trace::ReadTraceOptions options;
  options.allow_truncated = allow_truncated;
  options.preview_bytes = preview_bytes;
  trace::Truncation truncation;
  options.truncation = &truncation;
  if (!progress.is_none()) {
    options.on_progress = [&progress](const trace::ReadProgress& p) {
      nb::gil_scoped_acquire gil;
      nb::object keep_going = progress(p.bytes_read, p.disk_bytes_read, p.disk_bytes);
      return keep_going.is_none() || nb::cast<bool>(keep_going);
    };
  }
  StatusOr<trace::Trace> read = [&] {
    nb::gil_scoped_release release;
    return trace::ReadTrace(input, options);
  }();
  if (!read.ok()) Raise(read.status(), input);
  auto* loaded = new PyTrace{std::move(*read), input, {}};
  loaded->truncation = std::move(truncation);
  return loaded;
}

// Runs `stepscope ARGS...` in-process with the GIL released: (exit code, stdout, stderr).
std::tuple<int, std::string, std::string> RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = 0;
  {
    nb::gil_scoped_release release;
    code = cli::RunCli(args, out, err);
  }
  return {code, out.str(), err.str()};
}

// Runs `stepscope ARGS...` (ARGS: the command, the trace's input, flags) on `loaded`, which was
// read from that input, without reading it again: the command's analyse (command.h) on it, with
// the GIL released; (exit code, stdout, stderr) as RunCli would give them. nullopt where the
// command has no analyse or its run would read the input otherwise than `load` did (--rank, which
// reads the ranks asked for; a trace read cut short without --allow-truncated, which the CLI
// refuses): the caller runs the CLI on the input then.
using CliResult = std::tuple<int, std::string, std::string>;
std::optional<CliResult> AnalyseLoaded(const std::vector<std::string>& args, const PyTrace& loaded) {
  if (args.size() < 2) return std::nullopt;
  const auto commands = cli::AllCommands();
  const auto command = std::find_if(commands.begin(), commands.end(),
                                    [&](const cli::CommandSpec& c) { return c.name == args[0]; });
  if (command == commands.end() || !command->analyse) return std::nullopt;
  auto parsed = ParseFlags({args.begin() + 1, args.end()}, command->all_flags());
  if (!parsed.ok() || parsed->help || parsed->positional.size() != 1 || parsed->Has("rank")) return std::nullopt;
  const bool cut = !loaded.truncation.file.empty();
  if (cut != parsed->Has("allow-truncated")) return std::nullopt;
  std::ostringstream out, err;
  Status status;
  {
    nb::gil_scoped_release release;
    cli::CommandOutput output{.text = out, .err = err};
    status = command->analyse({.traces = {&loaded.trace, 1}, .one = &loaded.trace}, *parsed, output);
    // As RunCli heads the output: the cut first, in the document and on stderr.
    if (output.doc && cut) {
      cli::AddTruncationNotice(*output.doc, {loaded.truncation});
      err << trace::TruncationLine(loaded.truncation) << "\n";
    } else if (cut) {
      out.str(trace::TruncationLine(loaded.truncation) + "\n" + out.str());
    }
    if (output.doc) cli::EmitJson(out, *output.doc);
  }
  if (!status.ok()) err << "stepscope " << command->name << ": " << status.message() << "\n";
  return CliResult{ExitCodeFor(status), out.str(), err.str()};
}

// The command table: (name, synopsis, help, reads_traces, flags) per command, each flag as
// (name, whether it takes a value).
using FlagNames = std::vector<std::pair<std::string, bool>>;
std::vector<std::tuple<std::string, std::string, std::string, bool, FlagNames>> Commands() {
  std::vector<std::tuple<std::string, std::string, std::string, bool, FlagNames>> table;
  for (const cli::CommandSpec& command : cli::AllCommands()) {
    FlagNames flags;
    for (const FlagSpec& flag : command.all_flags()) flags.emplace_back(flag.name, !flag.value_name.empty());
    table.emplace_back(command.name, command.synopsis, command.Help(), command.reads_traces, std::move(flags));
  }
  return table;
}

}  // namespace
}  // namespace stepscope::python

using namespace stepscope::python;  // NOLINT: the module's definition only

NB_MODULE(_stepscope, m) {
  m.doc() = "stepscope's C++ core: readers, the CLI's commands, a trace's tables as numpy arrays";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object error = ErrorType()(e.status.message(), stepscope::ExitCodeFor(e.status), e.file);
      PyErr_SetObject(ErrorType().ptr(), error.ptr());
    }
  });
  m.def("_set_error_type", [](nb::object type) { ErrorType() = std::move(type); });
  m.def("resolve", &Resolve, nb::arg("path"),
        "What a path holds ('file', 'run' or 'files') and the inputs it stands for, in order.");
  m.def("load_one", &Load, nb::arg("input"), nb::arg("progress").none() = nb::none(),
        nb::arg("allow_truncated") = false, nb::arg("preview_bytes") = 0, nb::rv_policy::take_ownership,
        "Reads one input (a trace file, or a directory read as one trace).");
  m.def(
      "synthetic",
      [](int64_t slices, uint64_t seed) {
        nb::gil_scoped_release release;
        return new PyTrace{stepscope::synthetic::MakeSyntheticTrace(slices, seed), "", {}};
      },
      nb::arg("slices"), nb::arg("seed") = 1, nb::rv_policy::take_ownership,
      "A generated trace of `slices` slices (stepscope-view --synthetic), for benchmarks.");
  m.def("run_cli", &RunCli, nb::arg("args"), "Runs `stepscope ARGS...`: (exit code, stdout, stderr).");
  m.def("analyse_loaded", &AnalyseLoaded, nb::arg("args"), nb::arg("trace"),
        "Runs `stepscope ARGS...` on a trace already read from its input: (exit code, stdout, stderr), "
        "or None where the CLI must read the input itself.");
  m.def("commands", &Commands, "The CLI's commands: (name, synopsis, help, reads_traces, [(flag, takes_value)]).");
  m.attr("version") = STEPSCOPE_VERSION;
  BindTrace(m);
}
