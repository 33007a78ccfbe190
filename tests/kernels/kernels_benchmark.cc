// Kernel throughput (Google Benchmark). Correctness lives in the tests; this measures:
//   * MatMul vs raw OpenBLAS cblas_sgemm on the same shapes (FLOPS; the ratio should be ≥ 0.9),
//   * Conv2D forward / BackpropInput / BackpropFilter on ResNet-50 layer shapes at batch 8
//     (FLOPS and `of_sgemm_peak`, the share of this machine's sgemm peak, target ≥ 0.6),
//   * LSTMBlockCell forward + backward at PTB-small shapes (batch 20, hidden 200): µs per cell.
// Run: build/.../kernels_benchmark [--benchmark_filter=Conv] [--benchmark_min_time=1]
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "kernels/conv2d.h"
#include "kernels/cpu_context.h"
#include "kernels/lstm.h"
#include "kernels/matmul.h"

namespace stepscope::kernels {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// The machine's sgemm peak in GFLOP/s right now: best of three 2048³ products. Each Conv2D
// benchmark measures it just before its own timed loop, so that on a shared machine the peak
// and the convolution see the same load (a peak taken once at start-up, under a different
// load, skews the share either way).
double SgemmPeakGflopsNow() {
  constexpr int n = 2048;
  static const std::vector<float> a = Random(int64_t{n} * n, 1), b = Random(int64_t{n} * n, 2);
  static std::vector<float> c(static_cast<size_t>(n) * n);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                n, 0.0f, c.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * n * n * n / s / 1e9);
  }
  return best;
}

void SetFlops(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOPS"] = benchmark::Counter(flops_per_iteration,
                                               benchmark::Counter::kIsIterationInvariantRate,
                                               benchmark::Counter::kIs1000);
}

// Shapes (M, N, K): square, the PTB-small LSTM gate GEMM (batch 20, [x,h] 400 → 4·200), the PTB
// softmax projection (20 steps × 20 batch, 200 → 10000), a ResNet conv im2col GEMM.
void GemmShapes(benchmark::internal::Benchmark* b) {
  for (const auto& s : std::vector<std::vector<int64_t>>{{256, 256, 256}, {1024, 1024, 1024},
                                                         {20, 800, 400}, {400, 10000, 200},
                                                         {6272, 64, 576}}) {
    b->Args(s);
  }
  // Wall time: OpenBLAS runs on its own threads, so the main thread's CPU time would overstate.
  b->ArgNames({"M", "N", "K"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

void BM_OpenBlasSgemm(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1)),
            k = static_cast<int>(state.range(2));
  auto a = Random(int64_t{m} * k, 1), b = Random(int64_t{k} * n, 2);
  std::vector<float> c(static_cast<size_t>(m) * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(),
                n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, 2.0 * m * n * k);
}
BENCHMARK(BM_OpenBlasSgemm)->Apply(GemmShapes);

void BM_MatMul(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  auto a = Random(m * k, 1), b = Random(k * n, 2);
  std::vector<float> c(static_cast<size_t>(m * n));
  CpuContext ctx;
  for (auto _ : state) {
    if (!MatMul(ctx, In<float>(a.data(), {m, k}), In<float>(b.data(), {k, n}), Out<float>(c.data(), {m, n})).ok()) {
      state.SkipWithError("MatMul failed");
      break;
    }
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, 2.0 * static_cast<double>(m * n * k));
}
BENCHMARK(BM_MatMul)->Apply(GemmShapes);

enum ConvPass { kForward, kBackpropInput, kBackpropFilter };

// Args: batch, H (= W), C in, C out, pass. 3×3 stride 1 SAME, as ResNet-50's 3×3 convolutions.
void BM_Conv2D(benchmark::State& state) {
  const int64_t n = state.range(0), hw = state.range(1), cin = state.range(2), cout = state.range(3);
  const auto pass = static_cast<ConvPass>(state.range(4));
  Conv2DOptions o;
  o.padding = Padding::kSame;
  const Shape in_shape{n, hw, hw, cin}, f_shape{3, 3, cin, cout};
  auto g = ComputeConv2DGeometry(in_shape, f_shape, o);
  auto x = Random(in_shape.num_elements(), 1), f = Random(f_shape.num_elements(), 2),
       dy = Random(g->output_shape().num_elements(), 3);
  std::vector<float> out(dy.size()), dx(x.size()), df(f.size());
  ThreadPool pool(1);  // with the calling thread: 2 threads for im2col/col2im
  CpuContext ctx(&pool);
  const double peak = SgemmPeakGflopsNow();
  double seconds = 0;  // wall time of the timed iterations, for the share of the peak
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    Status s;
    switch (pass) {
      case kForward:
        s = Conv2D(ctx, In<float>(x.data(), in_shape), In<float>(f.data(), f_shape), Out<float>(out.data(), g->output_shape()), o);
        break;
      case kBackpropInput:
        s = Conv2DBackpropInput(ctx, In<float>(f.data(), f_shape), In<float>(dy.data(), g->output_shape()), Out<float>(dx.data(), in_shape), o);
        break;
      case kBackpropFilter:
        s = Conv2DBackpropFilter(ctx, In<float>(x.data(), in_shape), In<float>(dy.data(), g->output_shape()), Out<float>(df.data(), f_shape), o);
        break;
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      break;
    }
  }
  const double flops = 2.0 * static_cast<double>(g->macs());
  SetFlops(state, flops);
  // Share of the sgemm peak: achieved GFLOP/s (mean over the iterations) over peak GFLOP/s. A
  // plain ratio, not a rate: the division by time is done here.
  const double achieved_gflops =
      seconds > 0 ? flops * static_cast<double>(state.iterations()) / seconds / 1e9 : 0.0;
  state.counters["of_sgemm_peak"] =
      benchmark::Counter(achieved_gflops / peak, benchmark::Counter::kDefaults);
  // The peak itself is a figure in GFLOP/s measured beside the loop, not a per-iteration rate.
  state.counters["sgemm_peak_GFLOPS"] = benchmark::Counter(peak, benchmark::Counter::kDefaults);
}
BENCHMARK(BM_Conv2D)
    ->ArgNames({"N", "HW", "Cin", "Cout", "pass"})
    ->Args({8, 56, 64, 64, kForward})
    ->Args({8, 56, 64, 64, kBackpropInput})
    ->Args({8, 56, 64, 64, kBackpropFilter})
    ->Args({8, 14, 256, 256, kForward})
    ->Args({8, 14, 256, 256, kBackpropInput})
    ->Args({8, 14, 256, 256, kBackpropFilter})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One LSTMBlockCell forward + LSTMBlockCellGrad (with x/h/w/b gradients) at PTB small.
void BM_LstmBlockCellForwardBackward(benchmark::State& state) {
  const int64_t b = state.range(0), h = state.range(1), in = h;
  const Shape bh{b, h}, bi{b, in}, ws{in + h, 4 * h};
  auto x = Random(b * in, 1), cs_prev = Random(b * h, 2), h_prev = Random(b * h, 3),
       w = Random((in + h) * 4 * h, 4), bias = Random(4 * h, 5), cs_grad = Random(b * h, 6),
       h_grad = Random(b * h, 7);
  std::vector<std::vector<float>> o(7, std::vector<float>(static_cast<size_t>(b * h)));
  std::vector<float> gates(static_cast<size_t>(b * 4 * h)), dgates(gates.size()), cs_prev_grad(static_cast<size_t>(b * h)),
      x_grad(x.size()), h_prev_grad(static_cast<size_t>(b * h)), w_grad(w.size()), b_grad(bias.size());
  const LstmBlockCellInputs<float> ins{In<float>(x.data(), bi), In<float>(cs_prev.data(), bh),
                                       In<float>(h_prev.data(), bh), In<float>(w.data(), ws),
                                       In<float>(bias.data(), {4 * h})};
  const LstmBlockCellOutputs<float> outs{Out<float>(o[0].data(), bh), Out<float>(o[1].data(), bh),
                                         Out<float>(o[2].data(), bh), Out<float>(o[3].data(), bh),
                                         Out<float>(o[4].data(), bh), Out<float>(o[5].data(), bh),
                                         Out<float>(o[6].data(), bh)};
  const LstmBlockCellGradInputs<float> gin{ins.x, ins.cs_prev, ins.h_prev, ins.w, outs.i, outs.f,
                                           outs.o, outs.ci, outs.co, In<float>(cs_grad.data(), bh),
                                           In<float>(h_grad.data(), bh)};
  const LstmBlockCellGradOutputs<float> gout{
      Out<float>(cs_prev_grad.data(), bh), Out<float>(dgates.data(), {b, 4 * h}),
      Out<float>(x_grad.data(), bi), Out<float>(h_prev_grad.data(), bh), Out<float>(w_grad.data(), ws),
      Out<float>(b_grad.data(), {4 * h})};
  CpuContext ctx;  // rows of 200 units: threading the element loop does not pay
  for (auto _ : state) {
    if (!LstmBlockCell(ctx, ins, outs, Out<float>(gates.data(), {b, 4 * h})).ok() ||
        !LstmBlockCellGrad(ctx, gin, gout, /*accumulate_weight_grads=*/true).ok()) {
      state.SkipWithError("LSTM failed");
      break;
    }
  }
  // fwd gate GEMM + 2 grad GEMMs (inputs and weights): 3 · 2·B·(I+H)·4H
  SetFlops(state, 3.0 * 2.0 * static_cast<double>(b * (in + h) * 4 * h));
}
BENCHMARK(BM_LstmBlockCellForwardBackward)
    ->ArgNames({"batch", "hidden"})
    ->Args({20, 200})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace stepscope::kernels
