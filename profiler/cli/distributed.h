// `mpirun -np N stepscope align|stragglers|critical-path|steps|gpu|efficiency DIR` (and `diff A...
// --vs B...`): one analysis of many ranks spread
// over MPI processes. Every process resolves the inputs and splits them the same way (by size,
// balanced: the largest first, each to the process with the least bytes so far), reads its share
// one trace at a time and digests each as the command asks (analysis/distributed_digest.h); the
// digests are gathered to process 0, which combines them and prints exactly what one process
// prints (the same code prints both); the others print nothing, and every process exits with
// process 0's code. An input one process cannot read fails the run as in one process: process 0
// prints the first such error, in input order, naming the file.
//
// The steps are here, apart from MPI (distributed_mpi.cc: MPI_Gatherv of the digests), so tests
// run them without it.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "base/flags.h"

namespace stepscope::cli {

// The commands that can run spread over processes.
bool RunsDistributed(const std::string& command);

struct DistributedPlan {
  std::string command;
  ParsedArgs args;
  std::vector<std::string> inputs;              // trace::ResolveTracePaths, in input order
  std::vector<std::vector<size_t>> shares;      // per process, the inputs it reads (ascending)
  // A command with two sides (diff A... --vs B...): each input's side, 0 (A) or 1 (B), each
  // side's inputs resolved on their own; empty for the others.
  std::vector<uint32_t> sides;
};

// The plan of `args` over `processes`; nullopt when there is nothing to spread (help, a usage
// error, a command that does not run distributed, inputs that cannot be listed): then `out`
// and `err` got what one process prints and `code` the exit code.
std::optional<DistributedPlan> PlanDistributed(const std::vector<std::string>& args, int processes,
                                               std::ostream& out, std::ostream& err, int& code);

// Inputs (their sizes in bytes) split over `processes`: the largest first, each to the process
// holding the fewest bytes so far (the lowest on a tie). Each share ascending.
std::vector<std::vector<size_t>> SplitBySize(std::span<const uint64_t> sizes, int processes);

// Process `process`'s share read and digested (serialized, analysis/distributed_digest.h).
std::string DigestShare(const DistributedPlan& plan, int process);

// Process 0: every process's digests combined and printed as one process prints them; the
// exit code.
int CombineShares(const DistributedPlan& plan, std::span<const std::string> shares, std::ostream& out,
                  std::ostream& err);

// Started by mpirun (or another MPI launcher) with two processes or more: runs `args` spread over
// them and returns the exit code; nullopt when not (run as one process). A build without MPI
// says so (exit 2) instead of running the whole command in every process.
std::optional<int> RunCliUnderMpi(int argc, char** argv, const std::vector<std::string>& args, std::ostream& out,
                                  std::ostream& err);

// The launcher's process count and this process's place from the environment (OpenMPI's
// OMPI_COMM_WORLD_SIZE/RANK, else PMI_SIZE/RANK of MPICH and Slurm); 1 and 0 outside one.
int LauncherWorldSize();
int LauncherWorldRank();

}  // namespace stepscope::cli
