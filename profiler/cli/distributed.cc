// The steps of a multi-rank analysis spread over processes (distributed.h), apart from MPI: the
// plan (which process reads which input), a process's digests, and process 0's combination.
#include "profiler/cli/distributed.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <numeric>
#include <system_error>

#include "profiler/analysis/distributed_digest.h"
#include "profiler/cli/cli.h"
#include "profiler/cli/command.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/rank_digests.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"

namespace stepscope::cli {
namespace {

constexpr int kDistributedUsageExit = 2;

// A file's size, or a profiler run's (a directory read as one trace): the sum of its files.
uint64_t InputBytes(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) {
    const uintmax_t size = std::filesystem::file_size(path, error);
    return error ? 0 : size;
  }
  uint64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(path, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    std::error_code ignored;
    if (it->is_regular_file(ignored)) total += it->file_size(ignored);
  }
  return total;
}

int EnvironmentInt(std::initializer_list<const char*> names, int fallback) {
  for (const char* name : names) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return std::atoi(value);
  }
  return fallback;
}

int FailWith(const std::string& command, const Status& status, std::ostream& err) {
  err << "stepscope " << command << ": " << status.message() << "\n";
  return ExitCodeFor(status);
}

// align and stragglers: the clock and straggler digests. Clocks aligned as recorded or by the
// barrier need no collective: none is sent.
analysis::InputDigest RankDigest(const trace::Trace& trace, size_t input, size_t /*inputs*/, const ParsedArgs& args) {
  analysis::InputDigest digest = analysis::DigestInput(trace, input);
  const std::string align = args.GetOr("align", "auto");
  if (align == "clock" || align == "barrier") digest.clock.collectives.clear();
  return digest;
}

// A command that runs spread over processes: what it keeps of each input, and how it combines
// and prints them (the code one process runs too).
struct DistributedCommand {
  const char* name;
  // Of input `input` of `inputs`.
  analysis::InputDigest (*digest)(const trace::Trace& trace, size_t input, size_t inputs, const ParsedArgs& args);
  Status (*combine)(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out,
                    std::ostream& err);
  // A command with two sides: its positionals split into them (nullptr: one side).
  StatusOr<std::pair<std::vector<std::string>, std::vector<std::string>>> (*sides)(const ParsedArgs& args) = nullptr;
};

const DistributedCommand kDistributedCommands[] = {
    {"align", RankDigest, AlignFromDigests},
    {"stragglers", RankDigest, StragglersFromDigests},
    {"critical-path",
     [](const trace::Trace& trace, size_t input, size_t inputs, const ParsedArgs& args) {
       return CriticalPathDigest(trace, input, inputs, args, /*brief=*/false);
     },
     [](const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out, std::ostream& err) {
       return AnalyseAndPrint(
           [&](const LoadedInputs&, const ParsedArgs&, CommandOutput& output) {
             return CriticalPathFromDigests(args, inputs, /*scoped=*/false, output);
           },
           {}, args, out, err);
     }},
    {"steps",
     [](const trace::Trace& trace, size_t input, size_t, const ParsedArgs&) {
       analysis::InputDigest digest;
       digest.input = input;
       digest.steps = analysis::StepsOfInput(trace);
       return digest;
     },
     [](const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out, std::ostream& err) {
       return AnalyseAndPrint(
           [&](const LoadedInputs&, const ParsedArgs&, CommandOutput& output) {
             return StepsFromDigests(args, inputs, output);
           },
           {}, args, out, err);
     }},
    {"gpu",
     [](const trace::Trace& trace, size_t input, size_t, const ParsedArgs& args) {
       // Where the input's first step falls among all the inputs' is not known here.
       return GpuDigestOfInput(trace, input, args, std::nullopt);
     },
     [](const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out, std::ostream& err) {
       return AnalyseAndPrint(
           [&](const LoadedInputs&, const ParsedArgs&, CommandOutput& output) {
             return GpuFromDigests(args, inputs, /*scoped=*/false, output);
           },
           {}, args, out, err);
     }},
    {"efficiency", EfficiencyDigest, EfficiencyFromDigests},
    {"diff", DiffDigest, DiffFromDigests, DiffSidesOf},
};

const DistributedCommand* FindDistributed(const std::string& command) {
  for (const DistributedCommand& c : kDistributedCommands) {
    if (command == c.name) return &c;
  }
  return nullptr;
}

// "align, stragglers, critical-path, efficiency and diff".
std::string DistributedList() {
  std::string list;
  const size_t count = std::size(kDistributedCommands);
  for (size_t k = 0; k < count; ++k) {
    list += (k == 0 ? "" : k + 1 == count ? " and " : ", ") + std::string(kDistributedCommands[k].name);
  }
  return list;
}

}  // namespace

bool RunsDistributed(const std::string& command) { return FindDistributed(command) != nullptr; }

int LauncherWorldSize() { return EnvironmentInt({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1); }
int LauncherWorldRank() { return EnvironmentInt({"OMPI_COMM_WORLD_RANK", "PMI_RANK"}, 0); }

std::vector<std::vector<size_t>> SplitBySize(std::span<const uint64_t> sizes, int processes) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::vector<size_t>> shares(static_cast<size_t>(std::max(processes, 1)));
  std::vector<uint64_t> load(shares.size(), 0);
  for (size_t input : order) {
    const size_t least = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shares[least].push_back(input);
    load[least] += sizes[input];
  }
  for (auto& share : shares) std::sort(share.begin(), share.end());
  return shares;
}

namespace {

// The plan of a command with two sides: each side's inputs resolved on their own (one process
// resolves each when it reads it), side A's first. Sides that cannot be split or resolved are
// left to one process, which says so as it would alone (its flags checked first).
std::optional<DistributedPlan> PlanTwoSides(const DistributedCommand& command, const std::vector<std::string>& args,
                                            ParsedArgs parsed, int processes, std::ostream& out, std::ostream& err,
                                            int& code) {
  const auto sides = command.sides(parsed);
  StatusOr<std::vector<std::string>> a = InvalidInput("no sides"), b = InvalidInput("no sides");
  if (sides.ok()) a = trace::ResolveTracePaths(sides->first);
  if (a.ok()) b = trace::ResolveTracePaths(sides->second);
  if (!b.ok()) {
    code = RunCli(args, out, err);
    return std::nullopt;
  }
  DistributedPlan plan{.command = command.name, .args = std::move(parsed), .inputs = std::move(*a), .shares = {}};
  plan.sides.assign(plan.inputs.size(), 0);
  plan.inputs.insert(plan.inputs.end(), b->begin(), b->end());
  plan.sides.resize(plan.inputs.size(), 1);
  std::vector<uint64_t> sizes;
  for (const std::string& input : plan.inputs) sizes.push_back(InputBytes(input));
  plan.shares = SplitBySize(sizes, processes);
  return plan;
}

}  // namespace

std::optional<DistributedPlan> PlanDistributed(const std::vector<std::string>& args, int processes,
                                               std::ostream& out, std::ostream& err, int& code) {
  const std::vector<CommandSpec> commands = AllCommands();
  const auto spec = args.empty() ? commands.end()
                                 : std::find_if(commands.begin(), commands.end(),
                                                [&](const CommandSpec& c) { return c.name == args[0]; });
  // Help, --version and unknown commands: as one process (they read nothing).
  if (spec == commands.end()) {
    code = RunCli(args, out, err);
    return std::nullopt;
  }
  if (!RunsDistributed(spec->name)) {
    err << "stepscope " << spec->name << ": cannot run spread over " << processes
        << " MPI processes (" << DistributedList() << " can); run it as one process, without mpirun\n";
    code = kDistributedUsageExit;
    return std::nullopt;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  auto parsed = ParseFlags(rest, spec->all_flags());
  const size_t count = parsed.ok() ? parsed->positional.size() : 0;
  if (!parsed.ok() || parsed->help || count < spec->min_positional || count > spec->max_positional) {
    code = RunCli(args, out, err);  // prints the help or the usage error, reading nothing
    return std::nullopt;
  }
  if (parsed->Has("allow-truncated")) {
    err << "stepscope " << spec->name << ": --allow-truncated does not run spread over MPI processes; run it as "
        << "one process\n";
    code = kDistributedUsageExit;
    return std::nullopt;
  }
  const DistributedCommand& command = *FindDistributed(spec->name);
  if (command.sides != nullptr) return PlanTwoSides(command, args, std::move(*parsed), processes, out, err, code);
  auto inputs = trace::ResolveTracePaths(parsed->positional);
  if (!inputs.ok()) {
    // As one process: a bad flag it checks first, else this error (it reads nothing either way).
    code = RunCli(args, out, err);
    return std::nullopt;
  }
  DistributedPlan plan{.command = spec->name, .args = std::move(*parsed), .inputs = std::move(*inputs), .shares = {}};
  std::vector<uint64_t> sizes;
  for (const std::string& input : plan.inputs) sizes.push_back(InputBytes(input));
  plan.shares = SplitBySize(sizes, processes);
  return plan;
}

std::string DigestShare(const DistributedPlan& plan, int process) {
  const DistributedCommand& command = *FindDistributed(plan.command);
  std::vector<analysis::InputDigest> digests;
  for (size_t input : plan.shares[static_cast<size_t>(process)]) {
    // One trace at a time: memory holds the one being read and the digests so far.
    StatusOr<trace::Trace> trace = trace::ReadTrace(plan.inputs[input]);
    if (!trace.ok()) {
      analysis::InputDigest failed;
      failed.input = input;
      failed.read = trace.status();
      digests.push_back(std::move(failed));
    } else {
      digests.push_back(command.digest(*trace, input, plan.inputs.size(), plan.args));
    }
    digests.back().path = plan.inputs[input];
    if (!plan.sides.empty()) digests.back().side = plan.sides[input];
  }
  return analysis::SerializeDigests(digests);
}

int CombineShares(const DistributedPlan& plan, std::span<const std::string> shares, std::ostream& out,
                  std::ostream& err) {
  std::vector<std::optional<analysis::InputDigest>> by_input(plan.inputs.size());
  for (size_t p = 0; p < shares.size(); ++p) {
    auto digests = analysis::ParseDigests(shares[p], "the digests of MPI process " + std::to_string(p));
    if (!digests.ok()) return FailWith(plan.command, digests.status(), err);
    for (analysis::InputDigest& d : *digests) {
      if (d.input >= by_input.size() || by_input[d.input]) {
        return FailWith(plan.command, InvalidInput("MPI process " + std::to_string(p) + " sent input " +
                                               std::to_string(d.input) + " twice or out of range"), err);
      }
      by_input[d.input] = std::move(d);
    }
  }
  std::vector<analysis::InputDigest> inputs;
  for (size_t i = 0; i < by_input.size(); ++i) {
    if (!by_input[i]) {
      return FailWith(plan.command, InvalidInput("no MPI process read " + plan.inputs[i] +
                                             " (do the processes see the same files?)"), err);
    }
    inputs.push_back(std::move(*by_input[i]));
  }
  const Status status = FindDistributed(plan.command)->combine(plan.args, inputs, out, err);
  return status.ok() ? 0 : FailWith(plan.command, status, err);
}

}  // namespace stepscope::cli
