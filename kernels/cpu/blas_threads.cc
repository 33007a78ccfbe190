// How many threads one OpenBLAS call may use: one per call when several CPU devices share the
// machine, all of a device's otherwise, unless the environment says how many.
#include "kernels/blas_threads.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>

namespace stepscope::kernels {

int BlasThreadsPerCall(int cpu_devices, int threads_per_device) {
  if (cpu_devices > 1) return 1;
  return std::max(1, threads_per_device);
}

int BlasThreadsFromEnvironment() {
  // OpenBLAS parses these with atoi and ignores values that are not positive.
  for (const char* variable : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::atoi(value) > 0) return std::atoi(value);
  }
  return 0;
}

int ConfigureBlasThreads(int cpu_devices, int threads_per_device) {
  if (BlasThreadsFromEnvironment() == 0) {
    const int wanted = BlasThreadsPerCall(cpu_devices, threads_per_device);
    if (openblas_get_num_threads() != wanted) openblas_set_num_threads(wanted);
  }
  return BlasThreads();
}

int BlasThreads() { return openblas_get_num_threads(); }

}  // namespace stepscope::kernels
