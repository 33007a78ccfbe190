// RunCliUnderMpi with MPI (distributed.h): the plan made on every process, each process's
// digests gathered to process 0 with MPI_Gatherv, process 0's exit code broadcast to all.
#include <mpi.h>

#include <climits>
#include <sstream>

#include "profiler/cli/distributed.h"

namespace stepscope::cli {
namespace {

// Every MPI call checked: a failed one aborts the job (an MPI error leaves no safe way on).
#define STEPSCOPE_MPI_CHECK(call)                                                                     \
  do {                                                                                                \
    if (const int mpi_status = (call); mpi_status != MPI_SUCCESS) {                                   \
      std::fprintf(stderr, "stepscope: %s failed (%d) at %s:%d\n", #call, mpi_status, __FILE__, __LINE__); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                   \
    }                                                                                                 \
  } while (0)

// Process 0: every process's bytes, in process order; others: empty.
std::vector<std::string> GatherToZero(const std::string& mine, int rank, int size) {
  // MPI counts are ints: a process's digests (a few hundred bytes per step and collective of
  // each of its inputs) stay far below 2 GiB.
  if (mine.size() > static_cast<size_t>(INT_MAX)) {
    std::fprintf(stderr, "stepscope: the digests of MPI process %d exceed 2 GiB\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size)), displacements(static_cast<size_t>(size));
  STEPSCOPE_MPI_CHECK(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  std::string all;
  if (rank == 0) {
    size_t total = 0;
    for (int p = 0; p < size; ++p) {
      if (total + static_cast<size_t>(counts[p]) > static_cast<size_t>(INT_MAX)) {
        std::fprintf(stderr, "stepscope: the digests of all MPI processes exceed 2 GiB\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      displacements[p] = static_cast<int>(total);
      total += static_cast<size_t>(counts[p]);
    }
    all.resize(total);
  }
  STEPSCOPE_MPI_CHECK(MPI_Gatherv(mine.data(), count, MPI_CHAR, all.data(), counts.data(), displacements.data(),
                                  MPI_CHAR, 0, MPI_COMM_WORLD));
  std::vector<std::string> shares;
  if (rank == 0) {
    for (int p = 0; p < size; ++p) {
      shares.push_back(all.substr(static_cast<size_t>(displacements[p]), static_cast<size_t>(counts[p])));
    }
  }
  return shares;
}

}  // namespace

std::optional<int> RunCliUnderMpi(int argc, char** argv, const std::vector<std::string>& args, std::ostream& out,
                                  std::ostream& err) {
  if (LauncherWorldSize() <= 1) return std::nullopt;
  STEPSCOPE_MPI_CHECK(MPI_Init(&argc, &argv));
  int rank = 0, size = 1;
  STEPSCOPE_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  STEPSCOPE_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  // Only process 0 prints; the others plan the same way into streams nobody reads.
  std::ostringstream quiet_out, quiet_err;
  std::ostream& my_out = rank == 0 ? out : quiet_out;
  std::ostream& my_err = rank == 0 ? err : quiet_err;
  int code = 0;
  const std::optional<DistributedPlan> plan = PlanDistributed(args, size, my_out, my_err, code);
  if (plan) {
    const std::vector<std::string> shares = GatherToZero(DigestShare(*plan, rank), rank, size);
    if (rank == 0) code = CombineShares(*plan, shares, out, err);
  }
  STEPSCOPE_MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD));
  out.flush();
  STEPSCOPE_MPI_CHECK(MPI_Finalize());
  return code;
}

}  // namespace stepscope::cli
