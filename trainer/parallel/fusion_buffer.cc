// FusionBuffer: the hand-in bookkeeping, the communication thread and one fused batch.
#include "trainer/parallel/fusion_buffer.h"

#include <chrono>
#include <cstring>
#include <utility>

#include "base/steady_clock.h"
#include "trainer/parallel/mpi_session.h"

namespace stepscope::parallel {

StatusOr<std::unique_ptr<FusionBuffer>> FusionBuffer::Create(AllReduceSpec spec,
                                                             int num_participants,
                                                             AllReduceOptions reduce_options,
                                                             FusionOptions options) {
  if (options.fusion_threshold_bytes < 0) {
    return InvalidInput("fusion_threshold_bytes must not be negative, got " +
                        std::to_string(options.fusion_threshold_bytes));
  }
  if (!(options.cycle_time_ms >= 0.0) || options.cycle_time_ms > 60'000.0) {
    return InvalidInput("cycle_time_ms must be between 0 and 60000, got " +
                        std::to_string(options.cycle_time_ms));
  }
  if (reduce_options.mpi != nullptr && reduce_options.mpi->world_size() > 1) {
    // Batches form in each process's own hand-in order; across processes they would differ and
    // the MPI calls would not match. That needs Horovod's negotiation step, which this has not.
    return Unavailable("the fusion buffer reduces within one process; across " +
                       std::to_string(reduce_options.mpi->world_size()) +
                       " MPI processes use AllReducer without fusion");
  }
  CollectiveObserver* observer = reduce_options.observer;
  reduce_options.observer = nullptr;  // the fusion buffer reports its own phases
  reduce_options.agg_small_grads_max_bytes = 0;
  reduce_options.agg_small_grads_max_group = 0;
  ASSIGN_OR_RETURN(auto reducer,
                   AllReducer::Create(std::move(spec), num_participants, reduce_options));
  std::unique_ptr<FusionBuffer> buffer(new FusionBuffer(std::move(reducer), options));
  buffer->observer_ = observer;
  return buffer;
}

FusionBuffer::FusionBuffer(std::unique_ptr<AllReducer> reducer, FusionOptions options)
    : reducer_(std::move(reducer)), options_(options), observer_(nullptr),
      fusion_buffers_(reducer_->num_participants()) {
  communication_thread_ = std::thread([this] { CommunicationLoop(); });
}

FusionBuffer::~FusionBuffer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queue_changed_.notify_all();
  communication_thread_.join();
}

int64_t FusionBuffer::batches_reduced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return batches_;
}

Status FusionBuffer::Ready(int participant, const std::string& name, std::span<float> data) {
  const int n = reducer_->num_participants();
  if (participant < 0 || participant >= n) {
    return InvalidInput("gradient '" + name + "': participant " + std::to_string(participant) +
                        " is not one of the " + std::to_string(n) + " participants");
  }
  std::unique_lock<std::mutex> lock(mutex_);
  auto [it, inserted] = pending_.try_emplace(name);
  Pending& pending = it->second;
  if (inserted) {
    pending.gradient.name = name;
    pending.gradient.replicas.assign(n, nullptr);
    pending.gradient.num_elements = static_cast<int64_t>(data.size());
    pending.handed_in.assign(n, false);
  } else if (pending.gradient.num_elements != static_cast<int64_t>(data.size())) {
    return InvalidInput("gradient '" + name + "' has " + std::to_string(data.size()) +
                        " elements on participant " + std::to_string(participant) + " but " +
                        std::to_string(pending.gradient.num_elements) + " on another");
  }
  if (pending.handed_in[participant]) {
    return InvalidInput("gradient '" + name + "' was handed in twice by participant " +
                        std::to_string(participant) + " in one step");
  }
  pending.handed_in[participant] = true;
  pending.gradient.replicas[participant] = data.data();
  if (++pending.count < n) return Status::Ok();
  // Complete on every participant: queue it for the communication thread. The entry stays in
  // pending_ (with count == n) so a third hand-in in this step is still caught.
  if (queue_.empty()) queue_start_ns_ = SteadyNowNanos();
  queue_.push_back(pending.gradient);
  queued_bytes_ += pending.gradient.num_elements * 4;
  ++complete_count_;
  lock.unlock();
  queue_changed_.notify_all();
  return Status::Ok();
}

Status FusionBuffer::Synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  std::string incomplete;
  for (const auto& [name, pending] : pending_) {
    if (pending.count < reducer_->num_participants()) {
      if (!incomplete.empty()) incomplete += ", ";
      incomplete += "'" + name + "' (" + std::to_string(pending.count) + " of " +
                    std::to_string(reducer_->num_participants()) + ")";
    }
  }
  flush_requested_ = true;
  queue_changed_.notify_all();
  batch_done_.wait(lock, [&] { return reduced_count_ == complete_count_; });
  flush_requested_ = false;
  pending_.clear();
  complete_count_ = reduced_count_ = 0;
  Status error = std::exchange(error_, Status::Ok());
  if (!incomplete.empty()) {
    return InvalidInput("fusion buffer synchronized with gradients not handed in by every "
                        "participant: " + incomplete);
  }
  return error;
}

void FusionBuffer::CommunicationLoop() {
  const int64_t threshold = options_.fusion_threshold_bytes;
  const auto cycle = std::chrono::nanoseconds(static_cast<int64_t>(options_.cycle_time_ms * 1e6));
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    queue_changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left
    // Wait out the cycle unless the buffer is full or someone waits for the results.
    auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(queue_start_ns_)) + cycle;
    queue_changed_.wait_until(lock, deadline, [&] {
      return stopping_ || flush_requested_ || queued_bytes_ >= threshold;
    });
    Batch batch;
    int64_t batch_bytes = 0;
    while (!queue_.empty()) {
      const int64_t bytes = queue_.front().num_elements * 4;
      if (!batch.gradients.empty() && batch_bytes + bytes > threshold) break;
      batch_bytes += bytes;
      batch.num_elements += queue_.front().num_elements;
      batch.gradients.push_back(std::move(queue_.front()));
      queue_.pop_front();
      if (batch_bytes > threshold) break;  // a gradient larger than the buffer goes alone
    }
    queued_bytes_ -= batch_bytes;
    if (!queue_.empty()) queue_start_ns_ = SteadyNowNanos();
    lock.unlock();
    Status status = ReduceBatch(batch);
    lock.lock();
    if (!status.ok() && error_.ok()) error_ = status;
    reduced_count_ += static_cast<int64_t>(batch.gradients.size());
    ++batches_;
    batch_done_.notify_all();
  }
}

Status FusionBuffer::ReduceBatch(const Batch& batch) {
  const int n = reducer_->num_participants();
  const int peers = n * reducer_->world_size();
  std::vector<std::string> names;
  for (const auto& g : batch.gradients) names.push_back(g.name);
  // Horovod names a collective after its tensor; a fused one here after its batch number.
  const std::string batch_name = batch.gradients.size() == 1
                                     ? batch.gradients[0].name
                                     : "HorovodAllreduce_fused_" + std::to_string(batches_);
  const int range = SplitBySize(reducer_->spec(), std::span<const int64_t>(&batch.num_elements, 1))[0];
  const std::string algorithm = FormatAllReduceSpec(AllReduceSpec{{reducer_->spec().ranges[range]}, {}});
  auto report = [&](CollectivePhase phase, int64_t start, int64_t end,
                    std::vector<std::pair<int64_t, int64_t>> participant_times = {}) {
    if (observer_ == nullptr) return;
    observer_->OnCollective({batch_name, phase,
                             phase == CollectivePhase::kAllReduce ? algorithm : std::string(),
                             batch.num_elements * 4, peers, start, end, names,
                             std::move(participant_times)});
  };
  if (batch.gradients.size() == 1) {
    // Alone: reduced in place, no copies through the buffer.
    const int64_t start = SteadyNowNanos();
    RETURN_IF_ERROR(reducer_->AllReduce(batch.gradients));
    report(CollectivePhase::kAllReduce, start, SteadyNowNanos());
    return Status::Ok();
  }
  for (auto& buffer : fusion_buffers_) {
    if (static_cast<int64_t>(buffer.size()) < batch.num_elements) {
      buffer.resize(static_cast<size_t>(batch.num_elements));
    }
  }
  // Each participant copies its own gradients, on its own thread, and times its own copy.
  std::vector<std::pair<int64_t, int64_t>> times(static_cast<size_t>(n));
  auto copy_all = [&](bool into_buffer) {
    reducer_->team().Run([&](int p) {
      times[static_cast<size_t>(p)].first = SteadyNowNanos();
      float* fused = fusion_buffers_[p].data();
      for (const GradientReplicas& g : batch.gradients) {
        const auto bytes = static_cast<size_t>(g.num_elements) * sizeof(float);
        if (bytes > 0) {
          if (into_buffer) {
            std::memcpy(fused, g.replicas[p], bytes);
          } else {
            std::memcpy(g.replicas[p], fused, bytes);
          }
        }
        fused += g.num_elements;
      }
      times[static_cast<size_t>(p)].second = SteadyNowNanos();
    });
  };
  int64_t start = SteadyNowNanos();
  copy_all(true);
  int64_t end = SteadyNowNanos();
  report(CollectivePhase::kMemcpyInFusionBuffer, start, end, times);

  GradientReplicas fused{batch_name, {}, batch.num_elements};
  for (int p = 0; p < n; ++p) fused.replicas.push_back(fusion_buffers_[p].data());
  start = SteadyNowNanos();
  RETURN_IF_ERROR(reducer_->AllReduce(std::span<const GradientReplicas>(&fused, 1)));
  end = SteadyNowNanos();
  report(CollectivePhase::kAllReduce, start, end);

  start = SteadyNowNanos();
  copy_all(false);
  end = SteadyNowNanos();
  report(CollectivePhase::kMemcpyOutFusionBuffer, start, end, times);
  return Status::Ok();
}

}  // namespace stepscope::parallel
