// Generates Kineto-format (PyTorch profiler) JSON of a given size, for benchmarks and fuzz seeds:
// CPU ops with nested runtime launches, kernels with their launch args, ac2g flows, copies and
// [memory] events, in the layout the PyTorch profiler writes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace stepscope::analysis::testing {

struct GeneratedJson {
  std::string json;
  int64_t events = 0;   // trace events written (slices, flows, instants)
  int64_t slices = 0;
};

// A rank of a generated multi-rank run. By default one rank 0 of 8 without steps; with
// `iterations_per_step` each run of that many iterations is a ProfilerStep#N window, and the
// `slow_kernel_ns` (added to every kernel's duration) makes a rank the straggler of each step.
struct KinetoJsonOptions {
  int rank = 0;
  int world_size = 8;
  int64_t iterations_per_step = 0;
  int64_t slow_kernel_ns = 0;
  // The CPU ops' shapes as record_shapes=True writes them (Input Dims, Input type), so that the
  // op cost model can cost them (the efficiency benchmark).
  bool shapes = false;
};

inline GeneratedJson GenerateKinetoJson(size_t target_bytes, const KinetoJsonOptions& options = {}) {
  GeneratedJson out;
  out.json.reserve(target_bytes + 4096);
  out.json +=
      "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA A100-SXM4-40GB\", "
      "\"totalGlobalMem\": 42505273344, \"computeMajor\": 8, \"computeMinor\": 0, \"numSms\": 108}],\n"
      "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(options.rank) +
      ", \"world_size\": " + std::to_string(options.world_size) + "},\n  \"traceEvents\": [\n";
  static const char* const kOps[] = {"aten::mm", "aten::addmm", "aten::conv2d", "aten::relu", "aten::add_"};
  static const char* const kKernels[] = {"ampere_sgemm_128x64_tn", "sm80_xmma_fprop_implicit_gemm_tf32f32",
                                         ("void at::native::vectorized_elementwise_kernel<4, at::native::"
                                          "(anonymous namespace)::launch_clamp_scalar>"),
                                         "ncclKernel_AllReduce_RING_LL_Sum_float", "void cudnn::bn_fw_tr_1C11_kernel_NCHW"};
  char line[1024];
  int64_t allocated = 0;
  const long long base_us = 1700000000000000LL;
  for (int64_t i = 0; out.json.size() < target_bytes; ++i) {
    const long long t = base_us + i * 40;
    const int64_t correlation = i + 1;
    const char* op = kOps[i % 5];
    const char* kernel = kKernels[i % 5];
    const int stream = i % 5 == 3 ? 20 : 7;
    int n = 0;
    if (options.iterations_per_step > 0 && i % options.iterations_per_step == 0) {
      n = std::snprintf(line, sizeof line,
          "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%lld\", \"pid\": 4242, "
          "\"tid\": 4242, \"ts\": %lld.000, \"dur\": %lld.000},\n",
          static_cast<long long>(i / options.iterations_per_step), t,
          static_cast<long long>(options.iterations_per_step * 40));
      out.json.append(line, static_cast<size_t>(n));
      out.events += 1;
      out.slices += 1;
    }
    // Per op of kOps: its inputs as record_shapes writes them.
    static const char* const kShapes[] = {
        ", \"Input Dims\": [[256, 512], [512, 1024]], \"Input type\": [\"float\", \"float\"]",
        ", \"Input Dims\": [[1024], [256, 512], [512, 1024], [], []], \"Input type\": [\"float\", \"float\", \"float\", "
        "\"Scalar\", \"Scalar\"]",
        ", \"Input Dims\": [[32, 64, 56, 56], [64, 64, 3, 3], [64], [], [], [], []], \"Input type\": [\"float\", \"float\", "
        "\"float\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Int\"], \"Concrete Inputs\": [\"\", \"\", \"\", "
        "\"[1, 1]\", \"[1, 1]\", \"[1, 1]\", \"1\"]",
        ", \"Input Dims\": [[32, 64, 56, 56]], \"Input type\": [\"float\"]",
        ", \"Input Dims\": [[32, 64, 56, 56], [32, 64, 56, 56], []], \"Input type\": [\"float\", \"float\", \"Scalar\"]"};
    n = std::snprintf(line, sizeof line,
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 4242, \"tid\": 4242, \"ts\": %lld.%03d, "
        "\"dur\": 30.250, \"args\": {\"External id\": %lld, \"Record function id\": 0, \"Sequence number\": %lld, "
        "\"Fwd thread id\": 0, \"Ev Idx\": %lld%s}},\n",
        op, t, static_cast<int>(i % 1000), static_cast<long long>(correlation), static_cast<long long>(i),
        static_cast<long long>(i * 3), options.shapes ? kShapes[i % 5] : "");
    out.json.append(line, static_cast<size_t>(n));
    n = std::snprintf(line, sizeof line,
        "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 4242, \"tid\": 4242, "
        "\"ts\": %lld.500, \"dur\": 5.125, \"args\": {\"External id\": %lld, \"cbid\": 211, \"correlation\": %lld}},\n"
        "  {\"ph\": \"s\", \"id\": %lld, \"pid\": 4242, \"tid\": 4242, \"ts\": %lld.500, \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n",
        t + 2, static_cast<long long>(correlation), static_cast<long long>(correlation),
        static_cast<long long>(correlation), t + 2);
    out.json.append(line, static_cast<size_t>(n));
    n = std::snprintf(line, sizeof line,
        "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d, \"ts\": %lld.250, "
        "\"dur\": %lld.%03lld, \"args\": {\"External id\": %lld, \"queued\": 0, \"device\": 0, \"context\": 1, "
        "\"stream\": %d, \"correlation\": %lld, \"registers per thread\": 128, \"shared memory\": 16384, "
        "\"blocks per SM\": 2.370370, \"warps per SM\": 18.962963, \"grid\": [128, 2, 1], \"block\": [256, 1, 1], "
        "\"est. achieved occupancy %%\": 25}},\n"
        "  {\"ph\": \"f\", \"id\": %lld, \"pid\": 0, \"tid\": %d, \"ts\": %lld.250, \"cat\": \"ac2g\", \"name\": \"ac2g\", "
        "\"bp\": \"e\"},\n",
        kernel, stream, t + 10, static_cast<long long>((36875 + options.slow_kernel_ns) / 1000),
        static_cast<long long>((36875 + options.slow_kernel_ns) % 1000), static_cast<long long>(correlation), stream, static_cast<long long>(correlation),
        static_cast<long long>(correlation), stream, t + 10);
    out.json.append(line, static_cast<size_t>(n));
    out.events += 5;
    out.slices += 3;
    if (i % 10 == 0) {
      const int64_t bytes = 1 << 20;
      allocated += (i % 20 == 0) ? bytes : -bytes;
      n = std::snprintf(line, sizeof line,
          "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> Device)\", \"pid\": 0, "
          "\"tid\": 7, \"ts\": %lld.000, \"dur\": 2.000, \"args\": {\"External id\": %lld, \"device\": 0, "
          "\"context\": 1, \"stream\": 7, \"correlation\": %lld, \"bytes\": 1048576, \"memory bandwidth (GB/s)\": 524.288}},\n"
          "  {\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 4242, "
          "\"tid\": 4242, \"ts\": %lld.750, \"args\": {\"Total Reserved\": 4194304000, \"Total Allocated\": %lld, "
          "\"Bytes\": %lld, \"Addr\": 139872000000000, \"Device Id\": 0, \"Device Type\": 1}},\n",
          t + 1, static_cast<long long>(correlation), static_cast<long long>(correlation), t + 1,
          static_cast<long long>(allocated + 100000000), static_cast<long long>((i % 20 == 0) ? bytes : -bytes));
      out.json.append(line, static_cast<size_t>(n));
      out.events += 2;
      out.slices += 1;
    }
  }
  out.json += "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": \"GPU 0\"}},\n"
              "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 4242, \"tid\": 0, \"args\": {\"name\": \"python3\"}}\n"
              "  ],\n  \"traceName\": \"generated.pt.trace.json\",\n  \"baseTimeNanoseconds\": 1700000000000000000\n}\n";
  out.events += 2;
  return out;
}

}  // namespace stepscope::analysis::testing
