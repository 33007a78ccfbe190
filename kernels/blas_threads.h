// How many threads OpenBLAS gives each GEMM. OpenBLAS has one thread count for the whole process
// and, in its pthread build (Debian's libopenblas0-pthread), runs a multi-threaded GEMM while
// holding its GEMM driver's lock (one lock per GEMM variant, OpenBLAS issue #5836) on one worker
// pool as large as the machine: GEMMs that several threads start at once mostly run one after
// the other, and the workers compete with the callers' own threads. So with several CPU devices
// (towers on their own threads) every GEMM should run on its caller's thread alone, which
// OpenBLAS does without that lock or pool; a lone device keeps all its threads (its own pool
// idles while its GEMM runs, so nothing is oversubscribed).
//
// The user's choice wins: when OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS holds a
// positive number (the variables OpenBLAS itself reads at load time, in its order), the count
// OpenBLAS took from it is left alone.
#pragma once

namespace stepscope::kernels {

// The BLAS threads per call for `cpu_devices` devices of `threads_per_device` threads each in
// this process: all of a single device's threads, one when several devices call concurrently.
int BlasThreadsPerCall(int cpu_devices, int threads_per_device);

// The count the environment asks OpenBLAS for (first positive value of OPENBLAS_NUM_THREADS,
// GOTO_NUM_THREADS, OMP_NUM_THREADS, read as OpenBLAS reads them), or 0 when none is set.
int BlasThreadsFromEnvironment();

// Sets OpenBLAS's process-wide count to BlasThreadsPerCall(cpu_devices, threads_per_device)
// unless the environment chose one. Returns the count in effect afterwards. Process-wide: the
// device set created last decides; call it before the devices run, not while GEMMs are running.
int ConfigureBlasThreads(int cpu_devices, int threads_per_device);

// OpenBLAS's current process-wide thread count.
int BlasThreads();

}  // namespace stepscope::kernels
