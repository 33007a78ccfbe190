// AllReducer: packing, routing by size, and the per-participant job that runs the collectives.
#include "trainer/parallel/all_reducer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/steady_clock.h"
#include "trainer/parallel/gradient_packing.h"
#include "trainer/parallel/mpi_session.h"

namespace stepscope::parallel {
namespace {

std::string RangeText(const AllReduceRange& range) {
  return FormatAllReduceSpec(AllReduceSpec{{range}, {}});
}

constexpr int kMaxParticipants = 4096;

}  // namespace

// One collective: a single gradient, or a packed run of small ones.
struct AllReducer::Unit {
  std::vector<float*> buffers;  // per participant
  int64_t num_elements = 0;
  int range = 0;
  int first_reducer = 0;        // round-robin position for pscpu/psgpu
  int64_t host_offset = 0;      // into host_accumulator_ for pscpu
  int first_gradient = 0;       // gradients covered: [first_gradient, last_gradient]
  int last_gradient = 0;
  bool packed = false;
  int64_t pack_offset = 0;      // into pack_buffers_[p] when packed
};

AllReducer::AllReducer(AllReduceSpec spec, int num_participants, AllReduceOptions options)
    : spec_(std::move(spec)), options_(options), team_(num_participants),
      pack_buffers_(num_participants) {}

StatusOr<std::unique_ptr<AllReducer>> AllReducer::Create(AllReduceSpec spec, int num_participants,
                                                         AllReduceOptions options) {
  if (num_participants < 1 || num_participants > kMaxParticipants) {
    return InvalidInput("all-reduce needs between 1 and " + std::to_string(kMaxParticipants) +
                        " participants, got " + std::to_string(num_participants));
  }
  if (spec.ranges.empty() || spec.limits.size() + 1 != spec.ranges.size()) {
    return InvalidInput("all-reduce spec has " + std::to_string(spec.ranges.size()) +
                        " ranges and " + std::to_string(spec.limits.size()) +
                        " size limits; expected one limit fewer than ranges");
  }
  if (UsesAlgorithm(spec, Algorithm::kNccl)) {
    return Unavailable("all-reduce algorithm nccl (in '" + FormatAllReduceSpec(spec) +
                       "') needs GPU participants; use ring, pscpu, psgpu or mpi for CPU "
                       "devices");
  }
  if (options.ring_chunk_bytes < static_cast<int64_t>(sizeof(float))) {
    return InvalidInput("ring chunk must be at least 4 bytes, got " +
                        std::to_string(options.ring_chunk_bytes));
  }
  return std::unique_ptr<AllReducer>(new AllReducer(std::move(spec), num_participants, options));
}

int AllReducer::world_size() const {
  return options_.mpi != nullptr ? options_.mpi->world_size() : 1;
}

Status AllReducer::ReduceUnitShare(int participant, const Unit& unit, float* host_accumulator) {
  const AllReduceRange& range = spec_.ranges[unit.range];
  const int world = world_size();
  // Several processes: every range must cross them or the replicas of different ranks would
  // diverge; the process-local algorithm runs first, then MPI (the "b" of "a/b", whatever it
  // names, travels over MPI: that is the transport between processes here).
  const bool across = world > 1;
  const float divisor = options_.op == ReduceOp::kMean
                            ? static_cast<float>(team_.size()) * static_cast<float>(world)
                            : 1.0f;
  const float within_divisor = across ? 1.0f : divisor;
  std::span<float* const> buffers(unit.buffers);
  switch (range.algorithm) {
    case Algorithm::kPsCpu:
      ParameterServerAllReduceShare(team_, participant, buffers, unit.num_elements, range.shards,
                                    unit.first_reducer, host_accumulator + unit.host_offset,
                                    within_divisor);
      break;
    case Algorithm::kPsGpu:
      ParameterServerAllReduceShare(team_, participant, buffers, unit.num_elements, range.shards,
                                    unit.first_reducer, nullptr, within_divisor);
      break;
    case Algorithm::kRing:
    case Algorithm::kCollective:  // TF's collective all-reduce is a ring too
    case Algorithm::kMpi:         // within the process: a ring, then MPI across processes
    case Algorithm::kNccl:        // refused by Create
      RingAllReduceShare(team_, participant, buffers, unit.num_elements, range.shards,
                         std::max<int64_t>(1, options_.ring_chunk_bytes / 4), within_divisor);
      break;
  }
  if (!across) return Status::Ok();
  // Across processes: participant 0 reduces its copy with MPI, then the others copy it.
  Status status;
  team_.Barrier();
  if (participant == 0) {
    status = options_.mpi->AllReduceSum(std::span<float>(unit.buffers[0], unit.num_elements));
    if (status.ok() && divisor != 1.0f) {
      for (int64_t i = 0; i < unit.num_elements; ++i) unit.buffers[0][i] /= divisor;
    }
  }
  team_.Barrier();
  if (participant != 0 && unit.num_elements > 0) {
    std::memcpy(unit.buffers[participant], unit.buffers[0],
                static_cast<size_t>(unit.num_elements) * sizeof(float));
  }
  return status;
}

namespace {

// Every gradient has one replica per participant, a non-negative size and a buffer wherever it
// has elements.
Status CheckGradients(std::span<const GradientReplicas> gradients, int n) {
  for (const GradientReplicas& g : gradients) {
    if (static_cast<int>(g.replicas.size()) != n) {
      return InvalidInput("gradient '" + g.name + "' has " + std::to_string(g.replicas.size()) +
                          " replicas; the all-reduce has " + std::to_string(n) + " participants");
    }
    if (g.num_elements < 0) {
      return InvalidInput("gradient '" + g.name + "' has a negative element count");
    }
    for (int p = 0; p < n; ++p) {
      if (g.replicas[p] == nullptr && g.num_elements > 0) {
        return InvalidInput("gradient '" + g.name + "' has no buffer on participant " +
                            std::to_string(p));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

// Participant 0's clock readings of each phase (start, end in ns).
struct AllReducer::PhaseTimes {
  std::pair<int64_t, int64_t> pack{0, 0};
  std::pair<int64_t, int64_t> unpack{0, 0};
  std::vector<std::pair<int64_t, int64_t>> units;
};

std::vector<AllReducer::Unit> AllReducer::PlanUnits(std::span<const GradientReplicas> gradients,
                                                    int64_t* pack_elements) {
  const int n = team_.size();
  std::vector<PackingCandidate> candidates;
  candidates.reserve(gradients.size());
  for (const GradientReplicas& g : gradients) candidates.push_back({g.num_elements, true});

  // Units in gradient order: packed runs and single gradients. Empty gradients need nothing.
  std::vector<PackGroup> groups = PlanSmallGradientPacking(
      candidates, options_.agg_small_grads_max_bytes, options_.agg_small_grads_max_group);
  std::vector<Unit> units;
  *pack_elements = 0;
  size_t next_group = 0;
  for (int i = 0; i < static_cast<int>(gradients.size());) {
    Unit unit;
    if (next_group < groups.size() && groups[next_group].first == i) {
      const PackGroup& group = groups[next_group++];
      unit.packed = true;
      unit.first_gradient = group.first;
      unit.last_gradient = group.last;
      unit.pack_offset = *pack_elements;
      for (int g = group.first; g <= group.last; ++g) unit.num_elements += gradients[g].num_elements;
      *pack_elements += unit.num_elements;
      i = group.last + 1;
    } else {
      unit.first_gradient = unit.last_gradient = i;
      unit.num_elements = gradients[i].num_elements;
      unit.buffers = gradients[i].replicas;
      ++i;
    }
    if (unit.num_elements > 0) units.push_back(std::move(unit));
  }
  for (int p = 0; p < n; ++p) {
    if (static_cast<int64_t>(pack_buffers_[p].size()) < *pack_elements) {
      pack_buffers_[p].resize(static_cast<size_t>(*pack_elements));
    }
  }
  std::vector<int64_t> unit_sizes;
  for (Unit& unit : units) {
    unit_sizes.push_back(unit.num_elements);
    if (unit.packed) {
      for (int p = 0; p < n; ++p) unit.buffers.push_back(pack_buffers_[p].data() + unit.pack_offset);
    }
  }
  // Route each unit to its range by size; pscpu units get their slice of the host accumulator.
  std::vector<int> range_of = SplitBySize(spec_, unit_sizes);
  std::vector<int> round_robin(spec_.ranges.size(), 0);
  int64_t host_elements = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    Unit& unit = units[u];
    unit.range = range_of[u];
    unit.first_reducer = round_robin[unit.range]++ % n;
    if (spec_.ranges[unit.range].algorithm == Algorithm::kPsCpu) {
      unit.host_offset = host_elements;
      host_elements += unit.num_elements;
    }
  }
  if (static_cast<int64_t>(host_accumulator_.size()) < host_elements) {
    host_accumulator_.resize(static_cast<size_t>(host_elements));
  }
  return units;
}

Status AllReducer::AllReduce(std::span<const GradientReplicas> gradients) {
  const int n = team_.size();
  RETURN_IF_ERROR(CheckGradients(gradients, n));
  int64_t pack_elements = 0;
  const std::vector<Unit> units = PlanUnits(gradients, &pack_elements);

  // Participant 0 times each phase; the step barriers keep it in step with the others.
  PhaseTimes times;
  times.units.resize(units.size());
  Status first_error;
  std::mutex error_mutex;
  const bool packing = pack_elements > 0;
  team_.Run([&](int p) {
    if (packing) {
      if (p == 0) times.pack.first = SteadyNowNanos();
      for (const Unit& unit : units) {
        if (!unit.packed) continue;
        float* dst = pack_buffers_[p].data() + unit.pack_offset;
        for (int g = unit.first_gradient; g <= unit.last_gradient; ++g) {
          const auto count = static_cast<size_t>(gradients[g].num_elements);
          if (count > 0) std::memcpy(dst, gradients[g].replicas[p], count * sizeof(float));
          dst += count;
        }
      }
      team_.Barrier();  // packed buffers complete before anyone reads a neighbour's
      if (p == 0) times.pack.second = SteadyNowNanos();
    }
    for (size_t u = 0; u < units.size(); ++u) {
      if (p == 0) times.units[u].first = SteadyNowNanos();
      Status status = ReduceUnitShare(p, units[u], host_accumulator_.data());
      if (p == 0) times.units[u].second = SteadyNowNanos();
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.ok()) first_error = status;
      }
    }
    if (packing) {
      // This participant's packed copies are final once its own share is done.
      if (p == 0) times.unpack.first = SteadyNowNanos();
      for (const Unit& unit : units) {
        if (!unit.packed) continue;
        const float* src = pack_buffers_[p].data() + unit.pack_offset;
        for (int g = unit.first_gradient; g <= unit.last_gradient; ++g) {
          const auto count = static_cast<size_t>(gradients[g].num_elements);
          if (count > 0) std::memcpy(gradients[g].replicas[p], src, count * sizeof(float));
          src += count;
        }
      }
      if (p == 0) times.unpack.second = SteadyNowNanos();
    }
  });
  RETURN_IF_ERROR(first_error);
  if (options_.observer != nullptr) ReportCollectives(gradients, units, pack_elements, times);
  return Status::Ok();
}

void AllReducer::ReportCollectives(std::span<const GradientReplicas> gradients,
                                   const std::vector<Unit>& units, int64_t pack_elements,
                                   const PhaseTimes& times) const {
  const int peers = team_.size() * world_size();
  const bool packing = pack_elements > 0;
  auto names = [&](int first, int last) {
    std::vector<std::string> list;
    for (int g = first; g <= last; ++g) list.push_back(gradients[g].name);
    return list;
  };
  std::vector<std::string> packed_names;
  for (const Unit& unit : units) {
    if (!unit.packed) continue;
    for (int g = unit.first_gradient; g <= unit.last_gradient; ++g) {
      packed_names.push_back(gradients[g].name);
    }
  }
  if (packing) {
    options_.observer->OnCollective({"AllReduce/pack", CollectivePhase::kPack, "",
                                     pack_elements * 4, peers, times.pack.first,
                                     times.pack.second, packed_names});
  }
  for (size_t u = 0; u < units.size(); ++u) {
    const Unit& unit = units[u];
    std::string name = unit.packed ? "AllReduce/packed_" + std::to_string(unit.first_gradient) +
                                         "_" + std::to_string(unit.last_gradient)
                                   : "AllReduce/" + gradients[unit.first_gradient].name;
    options_.observer->OnCollective(
        {std::move(name), CollectivePhase::kAllReduce, RangeText(spec_.ranges[unit.range]),
         unit.num_elements * 4, peers, times.units[u].first, times.units[u].second,
         names(unit.first_gradient, unit.last_gradient)});
  }
  if (packing) {
    options_.observer->OnCollective({"AllReduce/unpack", CollectivePhase::kUnpack, "",
                                     pack_elements * 4, peers, times.unpack.first,
                                     times.unpack.second, std::move(packed_names)});
  }
}

}  // namespace stepscope::parallel
