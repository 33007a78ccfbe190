// The fp32 GEMM rate this machine reaches right now through the BLAS the CPU kernels use: the
// CPU's peak that MFU of a CPU run is measured against (a CPU has no datasheet row in
// analysis/device_peaks.tsv; what matters is what its BLAS achieves with the threads it is given).
#pragma once

#include <cstdint>

namespace stepscope::kernels {

struct SgemmPeak {
  double flops_per_s = 0;  // best of the timed products; 2*n^3 FLOPs each (an FMA is 2)
  int64_t n = 0;           // the products' size: n x n by n x n
  int repeats = 0;         // products timed (after one untimed warm-up)
  int threads = 0;         // OpenBLAS's thread count (per call) while they ran
  int callers = 1;         // products run at once, one per calling thread
};

// Times up to `repeats` rounds of square products of size `n` (after one warm-up; fewer, but at
// least two, once the timed ones took half a second) and keeps the fastest: a shared machine's
// other load only ever makes a round slower. A round is `callers` products started at once on
// their own threads, as several CPU devices run their GEMMs, with OpenBLAS's current thread count
// per call (ConfigureBlasThreads decides it: all of a lone device's, one each for several); its
// rate is all of their FLOPs over the time to the last one's end.
SgemmPeak MeasureSgemmPeak(int64_t n = 1024, int repeats = 5, int callers = 1);

}  // namespace stepscope::kernels
