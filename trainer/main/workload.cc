// Chooses the workload for --model: the one place that maps a model name to its Workload.
#include "trainer/main/workload.h"

#include "trainer/main/lstm_workload.h"
#include "trainer/main/resnet_workload.h"

namespace stepscope::trainer {

StatusOr<std::unique_ptr<Workload>> MakeWorkload(const TrainOptions& options, int run_towers) {
  if (options.model == "lstm") return LstmWorkload::Create(options, run_towers);
  return ResNetWorkload::Create(options, run_towers);
}

}  // namespace stepscope::trainer
