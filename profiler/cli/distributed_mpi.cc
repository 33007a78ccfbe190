// RunCliUnderMpi with MPI (distributed.h): the plan made on every process, each process's
// digests gathered to process 0 with MPI_Gatherv in rounds (distributed_gather.h), process 0's
// exit code broadcast to all.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "profiler/cli/distributed.h"
#include "profiler/cli/distributed_gather.h"

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

// Process 0: every process's bytes, in process order; others: empty. In rounds of at most
// `round_bytes` (distributed_gather.h), so that any total fits MPI's int counts.
std::vector<std::string> GatherToZero(const std::string& mine, int rank, int size, uint64_t round_bytes) {
  const uint64_t my_bytes = mine.size();
  std::vector<uint64_t> sizes(static_cast<size_t>(size));
  STEPSCOPE_MPI_CHECK(MPI_Allgather(&my_bytes, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD));
  std::vector<std::string> shares;
  std::string received;
  if (rank == 0) {
    shares.resize(static_cast<size_t>(size));
    for (int p = 0; p < size; ++p) shares[p].reserve(sizes[p]);
  }
  GatherRounds rounds(sizes, round_bytes);
  GatherRound round;
  while (rounds.Next(round)) {
    if (rank == 0) received.resize(static_cast<size_t>(round.total));
    STEPSCOPE_MPI_CHECK(MPI_Gatherv(mine.data() + round.sent_from[rank], round.counts[rank], MPI_CHAR,
                                    received.data(), round.counts.data(), round.displacements.data(), MPI_CHAR, 0,
                                    MPI_COMM_WORLD));
    if (rank == 0) GatherRounds::Place(round, received, shares);
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
  // Process 0's round size for all (the environment need not reach every host alike); 0: invalid.
  uint64_t round_bytes = 0;
  if (rank == 0) {
    const char* text = std::getenv(kGatherRoundBytesVariable);
    round_bytes = ParseGatherRoundBytes(text).value_or(0);
    if (round_bytes == 0) {
      err << "stepscope: " << kGatherRoundBytesVariable << "=" << text << " is not a byte count from 1 to "
          << kMaxGatherRoundBytes << "\n";
    }
  }
  STEPSCOPE_MPI_CHECK(MPI_Bcast(&round_bytes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
  std::optional<DistributedPlan> plan;
  if (round_bytes == 0) {
    code = 2;  // bad input: the usage exit code
  } else {
    plan = PlanDistributed(args, size, my_out, my_err, code);
  }
  if (plan) {
    const std::vector<std::string> shares = GatherToZero(DigestShare(*plan, rank), rank, size, round_bytes);
    if (rank == 0) code = CombineShares(*plan, shares, out, err);
  }
  STEPSCOPE_MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD));
  out.flush();
  STEPSCOPE_MPI_CHECK(MPI_Finalize());
  return code;
}

}  // namespace stepscope::cli
