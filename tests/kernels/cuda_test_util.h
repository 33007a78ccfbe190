// Helpers of the CUDA kernel tests: device copies of host vectors that are ordered with every
// stream, the fixture that skips without a device, and comparisons that print each op's error,
// so that a GPU run's log states the error per op ("max rel err <op>: <x>", also recorded as
// the test property max_rel_err_<op>).
//
// Every GPU output starts as quiet NaN (NaNs()), so an element a kernel fails to write cannot
// pass; an output that a kernel adds to starts from random values that the CPU reference starts
// from too.
//
// Tolerances, fp32, relative to the largest |expected| of the tensor (a GEMM's small outputs
// are differences of large terms, so a per-element relative error says little there):
//   ExpectExact             the CPU's formula in the CPU's order: equal values;
//   kElementwiseTol (1e-5)  one formula per element where the device may fuse a multiply-add
//                           or round expf/division differently (an ulp or two);
//   kReductionTol (1e-4)    reductions, GEMMs and convolutions, which add in another order;
//   kDoubleSumTol (1e-6)    sums both devices accumulate in double (L2Loss, global norm).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu_context.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/tensor_view.h"
#include "tests/kernels/test_util.h"

namespace stepscope::kernels::testing {

inline constexpr double kElementwiseTol = 1e-5;
inline constexpr double kReductionTol = 1e-4;
inline constexpr double kDoubleSumTol = 1e-6;

inline std::vector<float> NaNs(int64_t n) {
  return std::vector<float>(static_cast<size_t>(n), std::numeric_limits<float>::quiet_NaN());
}

inline void ExpectCudaOk(cudaError_t error, const char* what) {
  EXPECT_EQ(error, cudaSuccess) << what << ": " << cudaGetErrorName(error) << " ("
                                << cudaGetErrorString(error) << ")";
}

// Device memory holding a copy of a host vector. The copies are synchronous with respect to
// all streams: the kernels run on a non-blocking stream, which does not wait for the legacy
// default stream that cudaMemcpy uses, and a copy from pageable memory may return before it has
// landed.
template <typename T>
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<T>& host) : size_(host.size()) {
    const cudaError_t alloc =
        cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(1, size_) * sizeof(T));
    if (alloc != cudaSuccess) {
      ptr_ = nullptr;
      ExpectCudaOk(alloc, "cudaMalloc");
      return;
    }
    if (size_ > 0) {
      ExpectCudaOk(cudaMemcpy(ptr_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice),
                   "cudaMemcpy to the device");
    }
    ExpectCudaOk(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the upload");
  }
  ~DeviceVector() {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
  }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;

  // Waits for all of the device's work (the kernels' stream included) first.
  std::vector<T> ToHost() const {
    std::vector<T> host(size_);
    ExpectCudaOk(cudaDeviceSynchronize(), "cudaDeviceSynchronize before the download");
    if (ptr_ != nullptr && size_ > 0) {
      ExpectCudaOk(cudaMemcpy(host.data(), ptr_, size_ * sizeof(T), cudaMemcpyDeviceToHost),
                   "cudaMemcpy to the host");
    }
    return host;
  }
  TensorView<T> view(Shape s) {
    EXPECT_EQ(static_cast<size_t>(s.num_elements()), size_) << s.ToString();
    return TensorView<T>(ptr_, s);
  }
  TensorView<const T> cview(Shape s) const {
    EXPECT_EQ(static_cast<size_t>(s.num_elements()), size_) << s.ToString();
    return TensorView<const T>(ptr_, s);
  }

 private:
  T* ptr_ = nullptr;
  size_t size_;
};

// max |actual − expected| / max |expected| (the absolute error when expected is all zero);
// infinite on a size mismatch or any non-finite value, so an unwritten (NaN) element fails.
template <typename T>
double MaxRelError(const std::vector<T>& actual, const std::vector<T>& expected) {
  if (actual.size() != expected.size()) return std::numeric_limits<double>::infinity();
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]), e = static_cast<double>(expected[i]);
    if (!std::isfinite(a) || !std::isfinite(e)) return std::numeric_limits<double>::infinity();
    max_err = std::max(max_err, std::abs(a - e));
    max_ref = std::max(max_ref, std::abs(e));
  }
  return max_ref > 0 ? max_err / max_ref : max_err;
}

inline void ReportError(const std::string& op, double err) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", err);
  std::printf("max rel err %s: %s\n", op.c_str(), text);
  std::string key = "max_rel_err_";
  for (const char ch : op) key += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  ::testing::Test::RecordProperty(key, text);
}

// Within `tol` relative to the largest |expected|; lists the first mismatches when not.
inline void ExpectClose(const std::vector<float>& actual, const std::vector<float>& expected,
                        double tol, const std::string& op) {
  ASSERT_EQ(actual.size(), expected.size()) << op;
  ASSERT_FALSE(expected.empty()) << op;
  const double err = MaxRelError(actual, expected);
  ReportError(op, err);
  EXPECT_LE(err, tol) << op;
  if (!(err <= tol)) {
    double max_ref = 0;
    for (const float e : expected) max_ref = std::max(max_ref, std::abs(static_cast<double>(e)));
    ExpectAllNear(actual, expected, tol * max_ref, 0, op);
  }
}

// Equal values, element by element (NaN equals nothing).
inline void ExpectExact(const std::vector<float>& actual, const std::vector<float>& expected,
                        const std::string& op) {
  ASSERT_EQ(actual.size(), expected.size()) << op;
  ASSERT_FALSE(expected.empty()) << op;
  ReportError(op, MaxRelError(actual, expected));
  ExpectAllNear(actual, expected, 0, 0, op);
}

// The same bits: what reruns of a kernel on one device must give.
template <typename T>
void ExpectSameBits(const std::vector<T>& rerun, const std::vector<T>& first,
                    const std::string& what) {
  ASSERT_EQ(rerun.size(), first.size()) << what;
  int64_t differing = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    if (std::memcmp(&rerun[i], &first[i], sizeof(T)) != 0) ++differing;
  }
  EXPECT_EQ(differing, 0) << what << ": " << differing << " of " << first.size()
                          << " elements differ between runs";
}

// Skips without a usable device. The CPU reference runs threaded (its results do not depend on
// the thread count) so that real layer shapes stay quick.
class CudaKernelsTest : public ::testing::Test {
 protected:
  CudaKernelsTest()
      : pool_(static_cast<int>(std::max(2u, std::thread::hardware_concurrency())) - 1),
        cpu_(&pool_) {}
  void SetUp() override {
    auto ctx = CudaContext::Create(0);
    if (!ctx.ok()) GTEST_SKIP() << "no usable CUDA device: " << ctx.status().message();
    ctx_ = std::move(ctx).value();
  }
  void Sync() { ASSERT_OK(ctx_->Synchronize()); }

  ThreadPool pool_;
  CpuContext cpu_;
  std::unique_ptr<CudaContext> ctx_;
};

}  // namespace stepscope::kernels::testing
