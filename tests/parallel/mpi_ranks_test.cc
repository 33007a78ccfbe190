// Run under `mpirun -np 2` (ctest) or -np 3 and more by hand. Two MPI ranks must reduce to what
// two in-process participants give (bit for bit, a sum of two is exact in any order); with any
// rank count, ranks of one host must sum through shared memory, lengths that are no multiple of
// the piece or of the rank count must match a double sum and be identical on every rank,
// hierarchical ring/mpi over n ranks x 2 participants must match 2n in-process participants
// within fp tolerance and be identical on every rank, and the parameter broadcast from rank 0
// (floats and integers) must overwrite the other ranks, and local ranks must number the host. Exits non-zero on any mismatch, naming it.
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tests/parallel/parallel_test_util.h"
#include "trainer/parallel/all_reducer.h"
#include "trainer/parallel/mpi_session.h"

namespace stepscope::parallel {
namespace {

using testing::GradientSet;
using testing::MixedSizes;

int failures = 0;

void Expect(bool condition, int rank, const std::string& what) {
  if (!condition) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
    ++failures;
  }
}

std::unique_ptr<AllReducer> Reducer(const char* spec, int participants, MpiSession* mpi,
                                    ReduceOp op = ReduceOp::kSum) {
  AllReduceOptions options;
  options.mpi = mpi;
  options.op = op;
  auto reducer = AllReducer::Create(*ParseAllReduceSpec(spec), participants, options);
  if (!reducer.ok()) {
    std::fprintf(stderr, "%s\n", reducer.status().message().c_str());
    std::abort();
  }
  return std::move(*reducer);
}

// Rank `rank` takes over participants [rank * local, (rank + 1) * local) of `set`.
std::vector<GradientReplicas> LocalShare(GradientSet& set, int rank, int local) {
  std::vector<GradientReplicas> share;
  for (const GradientReplicas& g : set.gradients()) {
    GradientReplicas mine{g.name, {}, g.num_elements};
    for (int p = 0; p < local; ++p) mine.replicas.push_back(g.replicas[rank * local + p]);
    share.push_back(std::move(mine));
  }
  return share;
}

bool SameAsRankZero(MpiSession& mpi, std::vector<float> values) {
  std::vector<float> root = values;
  if (!mpi.Broadcast(root, 0).ok()) return false;
  return std::memcmp(root.data(), values.data(), values.size() * sizeof(float)) == 0;
}

void TwoRanksEqualTwoParticipants(MpiSession& mpi, ReduceOp op) {
  const int rank = mpi.rank();
  const char* op_name = op == ReduceOp::kSum ? "sum" : "mean";
  GradientSet distributed(MixedSizes(), 2, 42u);  // same data on both ranks
  GradientSet in_process(MixedSizes(), 2, 42u);
  auto share = LocalShare(distributed, rank, 1);
  Status status = Reducer("mpi", 1, &mpi, op)->AllReduce(share);
  Expect(status.ok(), rank, std::string("mpi all-reduce: ") + status.message());
  Expect(Reducer("ring", 2, nullptr, op)->AllReduce(in_process.gradients()).ok(), rank,
         "in-process ring");
  for (size_t t = 0; t < distributed.size(); ++t) {
    const auto& mine = distributed.buffer(t, rank);
    const auto& expected = in_process.buffer(t, 0);
    Expect(std::memcmp(mine.data(), expected.data(), mine.size() * sizeof(float)) == 0, rank,
           std::string(op_name) + ": tensor " + std::to_string(t) +
               " differs from the in-process 2-participant result");
    Expect(SameAsRankZero(mpi, mine), rank, "tensor " + std::to_string(t) + " differs across ranks");
  }
}

void HierarchicalMatchesFourParticipants(MpiSession& mpi, const char* spec) {
  const int rank = mpi.rank();
  const int participants = 2 * mpi.world_size();
  GradientSet distributed(MixedSizes(), participants, 7u);
  auto share = LocalShare(distributed, rank, 2);
  Status status = Reducer(spec, 2, &mpi)->AllReduce(share);
  Expect(status.ok(), rank, std::string(spec) + ": " + status.message());
  // The other rank's participants were reduced there; take its results into this copy so the
  // whole set can be checked against the 2n-participant reference.
  for (size_t t = 0; t < distributed.size(); ++t) {
    for (int p = 0; p < participants; ++p) {
      if (p / 2 != rank) distributed.buffer(t, p) = distributed.buffer(t, rank * 2);
    }
    Expect(SameAsRankZero(mpi, distributed.buffer(t, rank * 2)), rank,
           std::string(spec) + ": tensor " + std::to_string(t) + " differs across ranks");
  }
  ::testing::AssertionResult reduced = distributed.Reduced();
  Expect(static_cast<bool>(reduced), rank, std::string(spec) + ": " + reduced.message());
}

// MpiSession::AllReduceSum straight on lengths around the piece size and the rank count: every
// rank fills rank-dependent values from the same generator, and each rank checks its sum against
// the double-precision sum of all ranks' values and against rank 0's bits.
void OddLengthsMatchDoubleSum(MpiSession& mpi) {
  const int rank = mpi.rank();
  Expect(mpi.uses_shared_memory(), rank, "ranks of one host do not sum through shared memory");
  const int64_t piece = MpiSession::kSharedPieceElements;
  const std::vector<int64_t> lengths = {1, 3, 0, 5, 1001, piece - 1, piece, piece + 7,
                                        2 * piece + 12345, 3 * piece + 1};
  GradientSet set(lengths, mpi.world_size(), 99u);  // same values on every rank
  for (size_t t = 0; t < lengths.size(); ++t) {
    const std::string what = "length " + std::to_string(lengths[t]);
    std::vector<float>& mine = set.buffer(t, rank);
    Status status = mpi.AllReduceSum(mine);
    Expect(status.ok(), rank, what + ": " + status.message());
    for (int p = 0; p < mpi.world_size(); ++p) {
      if (p != rank) set.buffer(t, p) = mine;
    }
    Expect(SameAsRankZero(mpi, mine), rank, what + ": differs across ranks");
  }
  ::testing::AssertionResult reduced = set.Reduced();
  Expect(static_cast<bool>(reduced), rank, std::string("odd lengths: ") + reduced.message());
}

void BroadcastFromRankZero(MpiSession& mpi) {
  std::vector<float> parameters(100003);
  for (size_t i = 0; i < parameters.size(); ++i) {
    parameters[i] = mpi.rank() == 0 ? static_cast<float>(i) * 0.5f : -1.0f;
  }
  Expect(mpi.Broadcast(parameters, 0).ok(), mpi.rank(), "broadcast");
  bool equal = true;
  for (size_t i = 0; i < parameters.size(); ++i) equal &= parameters[i] == static_cast<float>(i) * 0.5f;
  Expect(equal, mpi.rank(), "parameters after broadcast differ from rank 0's");
  Expect(!mpi.Broadcast(parameters, 5).ok(), mpi.rank(), "broadcast from a missing rank fails");

  // Integers beyond float precision arrive exactly (the benchmark's commands use them).
  std::vector<int64_t> command = {mpi.rank() == 0 ? (int64_t{1} << 40) + 3 : 0, -7};
  if (mpi.rank() != 0) command[1] = 0;
  Expect(mpi.Broadcast(std::span<int64_t>(command), 0).ok(), mpi.rank(), "integer broadcast");
  Expect(command == std::vector<int64_t>({(int64_t{1} << 40) + 3, -7}), mpi.rank(),
         "integers after broadcast differ from rank 0's");
}

// All ranks of this test share one host: local ranks are the world ranks, each exactly once,
// and agree with what the launcher says (the GPU each rank takes is chosen from them).
void LocalRanksNumberTheHost(MpiSession& mpi) {
  Expect(mpi.local_size() == mpi.world_size(), mpi.rank(),
         "local size " + std::to_string(mpi.local_size()) + " on one host of " +
             std::to_string(mpi.world_size()) + " ranks");
  Expect(mpi.local_rank() == mpi.rank(), mpi.rank(),
         "local rank " + std::to_string(mpi.local_rank()));
  Expect(MpiSession::LocalRanks() == mpi.local_size(), mpi.rank(),
         "the launcher's local size " + std::to_string(MpiSession::LocalRanks()));
}

int Main() {
  auto session = MpiSession::Create();
  if (!session.ok()) {
    std::fprintf(stderr, "MPI: %s\n", session.status().message().c_str());
    return 1;
  }
  MpiSession& mpi = **session;
  if (mpi.world_size() < 2) {
    std::fprintf(stderr, "run with mpirun -np 2 or more (world size is %d)\n", mpi.world_size());
    return 2;
  }
  if (mpi.world_size() == 2) {
    TwoRanksEqualTwoParticipants(mpi, ReduceOp::kSum);
    TwoRanksEqualTwoParticipants(mpi, ReduceOp::kMean);
  }
  LocalRanksNumberTheHost(mpi);
  OddLengthsMatchDoubleSum(mpi);
  HierarchicalMatchesFourParticipants(mpi, "ring/mpi");
  HierarchicalMatchesFourParticipants(mpi, "mpi");
  HierarchicalMatchesFourParticipants(mpi, "pscpu:1k:psgpu#2/mpi");
  BroadcastFromRankZero(mpi);
  std::vector<float> total = {static_cast<float>(failures)};
  if (!mpi.AllReduceSum(total).ok()) return 1;
  if (mpi.rank() == 0) {
    std::printf("%s: %d failure(s) over %d ranks\n", total[0] == 0 ? "PASSED" : "FAILED",
                static_cast<int>(total[0]), mpi.world_size());
  }
  return total[0] == 0 ? 0 : 1;
}

}  // namespace
}  // namespace stepscope::parallel

int main() { return stepscope::parallel::Main(); }
