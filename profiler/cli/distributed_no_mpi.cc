// RunCliUnderMpi in a build without MPI (distributed.h): started by mpirun with several
// processes, each would run the whole command and print it; say so once instead.
#include "profiler/cli/distributed.h"

namespace stepscope::cli {

std::optional<int> RunCliUnderMpi(int /*argc*/, char** /*argv*/, const std::vector<std::string>& /*args*/,
                                  std::ostream& /*out*/, std::ostream& err) {
  const int size = LauncherWorldSize();
  if (size <= 1) return std::nullopt;
  if (LauncherWorldRank() == 0) {
    err << "stepscope: started as " << size
        << " MPI processes, but this stepscope was built without MPI (install libopenmpi-dev and rebuild "
           "to spread an analysis of many ranks over processes); run it as one process, without mpirun\n";
  }
  return 2;
}

}  // namespace stepscope::cli
