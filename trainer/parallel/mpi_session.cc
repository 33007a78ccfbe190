// MpiSession over OpenMPI, or a one-process stand-in when the build has no MPI.
#include "trainer/parallel/mpi_session.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#ifdef STEPSCOPE_WITH_MPI
#include <mpi.h>
#endif

namespace stepscope::parallel {

#ifdef STEPSCOPE_WITH_MPI
namespace {

Status MpiError(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Internal(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  std::string(text, static_cast<size_t>(length)));
}

// Largest count per MPI call: counts are ints.
constexpr int64_t kMaxMpiCount = INT_MAX / 2;

}  // namespace

// Every MPI call goes through this: on failure, a Status with the call text and file:line.
#define STEPSCOPE_MPI_RETURN_IF_ERROR(call)                                         \
  do {                                                                              \
    int mpi_code_ = (call);                                                         \
    if (mpi_code_ != MPI_SUCCESS) return MpiError(mpi_code_, #call, __FILE__, __LINE__); \
  } while (0)

bool MpiSession::CompiledWithMpi() { return true; }

StatusOr<std::unique_ptr<MpiSession>> MpiSession::Create() {
  int finalized = 0;
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Finalized(&finalized));
  if (finalized) return Unavailable("MPI was already finalized in this process");
  int initialized = 0;
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    STEPSCOPE_MPI_RETURN_IF_ERROR(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      return Unavailable("the MPI library does not support MPI_THREAD_SERIALIZED");
    }
  }
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int rank = 0;
  int size = 1;
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_size(MPI_COMM_WORLD, &size));
  std::unique_ptr<MpiSession> session(new MpiSession(rank, size, !initialized));
  if (size > 1) {
    MPI_Comm host = MPI_COMM_NULL;
    STEPSCOPE_MPI_RETURN_IF_ERROR(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host));
    const int ranked = MPI_Comm_rank(host, &session->local_rank_);
    const int sized = MPI_Comm_size(host, &session->local_size_);
    MPI_Comm_free(&host);
    STEPSCOPE_MPI_RETURN_IF_ERROR(ranked);
    STEPSCOPE_MPI_RETURN_IF_ERROR(sized);
    // Every rank must take the same path: if the window failed anywhere, all use MPI_Allreduce.
    const Status opened = session->OpenSharedWindow();
    int opened_here = opened.ok() ? 1 : 0;
    int opened_everywhere = 0;
    STEPSCOPE_MPI_RETURN_IF_ERROR(
        MPI_Allreduce(&opened_here, &opened_everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (opened_everywhere == 0) {
      if (!opened.ok()) {
        std::fprintf(stderr, "stepscope: rank %d: no shared-memory all-reduce (%s); using MPI_Allreduce\n", rank,
                     opened.message().c_str());
      }
      session->shared_.reset();
    }
  }
  return session;
}

// Ranks of one host reduce through one MPI-3 shared-memory window: every rank owns a segment of
// two pieces (double buffered: piece k uses half k mod 2, so the copy-in of piece k + 1 never
// overwrites what a slower rank still reads of piece k, and two barriers per piece suffice). A
// piece of 1 MB per rank keeps a piece's working set in cache and the window at 2 MB per rank
// whatever the tensor size; OpenMPI maps it from /dev/shm.
struct MpiSession::SharedWindow {
  // 1 MB: measured fastest of 256 KB ... 4 MB (docs/parallel.md).
  static constexpr int64_t kPieceElements = kSharedPieceElements;

  MPI_Comm local = MPI_COMM_NULL;
  MPI_Win window = MPI_WIN_NULL;
  bool locked = false;
  std::vector<float*> segments;  // segments[r]: rank r's 2 x kPieceElements, mapped here
  int64_t pieces_done = 0;       // picks the half of the next piece, across calls

  // Frees in reverse order of creation; MPI calls are skipped once MPI is finalized.
  ~SharedWindow() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (locked) MPI_Win_unlock_all(window);
    if (window != MPI_WIN_NULL) MPI_Win_free(&window);
    if (local != MPI_COMM_NULL) MPI_Comm_free(&local);
  }
};

Status MpiSession::OpenSharedWindow() {
  auto shared = std::make_unique<SharedWindow>();
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                                                    MPI_INFO_NULL, &shared->local));
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(shared->local, MPI_ERRORS_RETURN));
  int local_size = 0;
  int local_rank = 0;
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_size(shared->local, &local_size));
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_rank(shared->local, &local_rank));
  // Several hosts: MPI_Allreduce. The split keeps world order (key 0, ties by old rank), so on
  // one host the local rank is the world rank.
  if (local_size != world_size_ || local_rank != rank_) return Status::Ok();

  // Each segment in its own pages (near the rank that writes it) rather than one contiguous block.
  MPI_Info info = MPI_INFO_NULL;
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Info_create(&info));
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  float* mine = nullptr;
  const int status =
      MPI_Win_allocate_shared(2 * SharedWindow::kPieceElements * sizeof(float), sizeof(float),
                              info, shared->local, &mine, &shared->window);
  MPI_Info_free(&info);
  STEPSCOPE_MPI_RETURN_IF_ERROR(status);
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Win_set_errhandler(shared->window, MPI_ERRORS_RETURN));
  shared->segments.resize(static_cast<size_t>(world_size_));
  for (int r = 0; r < world_size_; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    STEPSCOPE_MPI_RETURN_IF_ERROR(
        MPI_Win_shared_query(shared->window, r, &bytes, &unit, &shared->segments[r]));
    if (bytes < static_cast<MPI_Aint>(2 * SharedWindow::kPieceElements * sizeof(float))) {
      return Internal("shared-memory segment of rank " + std::to_string(r) + " has " +
                      std::to_string(bytes) + " bytes, fewer than requested");
    }
  }
  // One passive-target epoch for the session's life; MPI_Win_sync around barriers orders the
  // loads and stores of the ranks (the unified memory model of shared windows).
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Win_lock_all(MPI_MODE_NOCHECK, shared->window));
  shared->locked = true;
  shared_ = std::move(shared);
  return Status::Ok();
}

MpiSession::~MpiSession() {
  shared_.reset();
  if (finalize_) MPI_Finalize();
}

namespace {

// Makes this rank's stores visible to the others and theirs to this rank across a barrier.
Status SyncedBarrier(MPI_Win window, MPI_Comm comm) {
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Win_sync(window));
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Barrier(comm));
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Win_sync(window));
  return Status::Ok();
}

// Slice r of a piece of `length` elements over n ranks: [begin, end), cut at multiples of 16
// floats (64-byte lines) so no two ranks write the same cache line.
std::pair<int64_t, int64_t> SliceOf(int64_t length, int n, int r) {
  const int64_t per_rank = ((length + n - 1) / n + 15) / 16 * 16;
  return {std::min(length, r * per_rank), std::min(length, (r + 1) * per_rank)};
}

// out[i] = ((in[0][i] + in[1][i]) + in[2][i]) + ..., in rank order, so every rank gets the same
// bits, written to both `out` and `copy`. The outputs may alias an input: the sum goes through a
// small block first.
void SumInRankOrder(const std::vector<const float*>& in, int64_t length, float* out, float* copy) {
  constexpr int64_t kBlock = 1024;
  float block[kBlock];
  for (int64_t begin = 0; begin < length; begin += kBlock) {
    const int64_t count = std::min(kBlock, length - begin);
    const float* first = in[0] + begin;
    const float* second = in[1] + begin;
    for (int64_t i = 0; i < count; ++i) block[i] = first[i] + second[i];
    for (size_t r = 2; r < in.size(); ++r) {
      const float* next = in[r] + begin;
      for (int64_t i = 0; i < count; ++i) block[i] += next[i];
    }
    std::memcpy(out + begin, block, static_cast<size_t>(count) * sizeof(float));
    std::memcpy(copy + begin, block, static_cast<size_t>(count) * sizeof(float));
  }
}

}  // namespace

// Per piece: this rank publishes the slices the others sum (not its own: it reads that one from
// `data`); barrier; it sums its slice of every rank's piece into `data` and into its segment;
// barrier; it takes the other slices' sums from their owners' segments.
Status MpiSession::SharedAllReduceSum(std::span<float> data) {
  SharedWindow& shared = *shared_;
  const int n = world_size_;
  std::vector<const float*> inputs(static_cast<size_t>(n));
  for (size_t begin = 0; begin < data.size(); begin += SharedWindow::kPieceElements) {
    const int64_t length =
        std::min<int64_t>(SharedWindow::kPieceElements, static_cast<int64_t>(data.size() - begin));
    float* piece = data.data() + begin;
    const int64_t half = (shared.pieces_done++ % 2) * SharedWindow::kPieceElements;
    float* mine = shared.segments[rank_] + half;
    for (int r = 0; r < n; ++r) {
      const auto [from, to] = SliceOf(length, n, r);
      if (r != rank_) {
        std::memcpy(mine + from, piece + from, static_cast<size_t>(to - from) * sizeof(float));
      }
    }
    RETURN_IF_ERROR(SyncedBarrier(shared.window, shared.local));
    const auto [slice_begin, slice_end] = SliceOf(length, n, rank_);
    for (int r = 0; r < n; ++r) {
      inputs[r] = (r == rank_ ? piece : shared.segments[r] + half) + slice_begin;
    }
    SumInRankOrder(inputs, slice_end - slice_begin, mine + slice_begin, piece + slice_begin);
    RETURN_IF_ERROR(SyncedBarrier(shared.window, shared.local));
    for (int r = 0; r < n; ++r) {
      const auto [from, to] = SliceOf(length, n, r);
      if (r != rank_) {
        std::memcpy(piece + from, shared.segments[r] + half + from,
                    static_cast<size_t>(to - from) * sizeof(float));
      }
    }
  }
  return Status::Ok();
}

Status MpiSession::AllReduceSum(std::span<float> data) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shared_ != nullptr) return SharedAllReduceSum(data);
  for (size_t begin = 0; begin < data.size(); begin += kMaxMpiCount) {
    int count = static_cast<int>(std::min<int64_t>(kMaxMpiCount, data.size() - begin));
    STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, data.data() + begin, count,
                                                MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  }
  return Status::Ok();
}

namespace {

Status CheckRoot(int root, int world_size) {
  if (root < 0 || root >= world_size) {
    return InvalidInput("broadcast root " + std::to_string(root) + " is not a rank of " +
                        std::to_string(world_size));
  }
  return Status::Ok();
}

template <typename T>
Status BroadcastChunks(std::span<T> data, MPI_Datatype type, int root) {
  for (size_t begin = 0; begin < data.size(); begin += kMaxMpiCount) {
    int count = static_cast<int>(std::min<int64_t>(kMaxMpiCount, data.size() - begin));
    STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Bcast(data.data() + begin, count, type, root, MPI_COMM_WORLD));
  }
  return Status::Ok();
}

}  // namespace

Status MpiSession::Broadcast(std::span<float> data, int root) {
  RETURN_IF_ERROR(CheckRoot(root, world_size_));
  std::lock_guard<std::mutex> lock(mutex_);
  return BroadcastChunks(data, MPI_FLOAT, root);
}

Status MpiSession::Broadcast(std::span<int64_t> data, int root) {
  RETURN_IF_ERROR(CheckRoot(root, world_size_));
  std::lock_guard<std::mutex> lock(mutex_);
  return BroadcastChunks(data, MPI_INT64_T, root);
}

Status MpiSession::Barrier() {
  std::lock_guard<std::mutex> lock(mutex_);
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Barrier(MPI_COMM_WORLD));
  return Status::Ok();
}

namespace {

Status CheckGatherSizes(size_t mine, size_t all, int world_size) {
  if (all != mine * static_cast<size_t>(world_size) || mine > static_cast<size_t>(kMaxMpiCount)) {
    return InvalidInput("all-gather of " + std::to_string(mine) + " elements per rank over " +
                        std::to_string(world_size) + " ranks needs room for exactly " +
                        std::to_string(mine * static_cast<size_t>(world_size)) + ", got " +
                        std::to_string(all) + " (at most " + std::to_string(kMaxMpiCount) +
                        " per rank)");
  }
  return Status::Ok();
}

}  // namespace

Status MpiSession::AllGather(std::span<const float> mine, std::span<float> all) {
  RETURN_IF_ERROR(CheckGatherSizes(mine.size(), all.size(), world_size_));
  std::lock_guard<std::mutex> lock(mutex_);
  const int count = static_cast<int>(mine.size());
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Allgather(mine.data(), count, MPI_FLOAT, all.data(), count,
                                              MPI_FLOAT, MPI_COMM_WORLD));
  return Status::Ok();
}

Status MpiSession::AllGather(std::span<const int32_t> mine, std::span<int32_t> all) {
  RETURN_IF_ERROR(CheckGatherSizes(mine.size(), all.size(), world_size_));
  std::lock_guard<std::mutex> lock(mutex_);
  const int count = static_cast<int>(mine.size());
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Allgather(mine.data(), count, MPI_INT32_T, all.data(), count,
                                              MPI_INT32_T, MPI_COMM_WORLD));
  return Status::Ok();
}

#else  // no MPI in this build

bool MpiSession::CompiledWithMpi() { return false; }

struct MpiSession::SharedWindow {};

StatusOr<std::unique_ptr<MpiSession>> MpiSession::Create() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::atoi(value) > 1) {
      return Unavailable(std::string("started by an MPI launcher with ") + variable + "=" +
                         value + ", but this build has no MPI (install libopenmpi-dev and "
                         "rebuild)");
    }
  }
  return std::unique_ptr<MpiSession>(new MpiSession(0, 1, false));
}

MpiSession::~MpiSession() = default;

Status MpiSession::AllReduceSum(std::span<float>) { return Status::Ok(); }

Status MpiSession::Broadcast(std::span<float>, int root) {
  if (root != 0) return InvalidInput("broadcast root " + std::to_string(root) + " is not a rank of 1");
  return Status::Ok();
}

Status MpiSession::Broadcast(std::span<int64_t>, int root) {
  if (root != 0) return InvalidInput("broadcast root " + std::to_string(root) + " is not a rank of 1");
  return Status::Ok();
}

Status MpiSession::Barrier() { return Status::Ok(); }

// One rank: the gather is a copy.
Status MpiSession::AllGather(std::span<const float> mine, std::span<float> all) {
  if (all.size() != mine.size()) return InvalidInput("all-gather over one rank needs equal sizes");
  std::copy(mine.begin(), mine.end(), all.begin());
  return Status::Ok();
}

Status MpiSession::AllGather(std::span<const int32_t> mine, std::span<int32_t> all) {
  if (all.size() != mine.size()) return InvalidInput("all-gather over one rank needs equal sizes");
  std::copy(mine.begin(), mine.end(), all.begin());
  return Status::Ok();
}

#endif

MpiSession::MpiSession(int rank, int world_size, bool finalize) :
    rank_(rank), world_size_(world_size), finalize_(finalize) {}

bool MpiSession::LaunchedByMpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

int MpiSession::LocalRanks() {
  for (const char* variable : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::atoi(value) > 0) return std::atoi(value);
  }
  return 1;
}

}  // namespace stepscope::parallel
