// The CUDA execution context of the kernels: one device, one stream, one cuBLAS handle bound
// to that stream. Every kernel of stepscope_kernels_cuda enqueues on the stream and returns
// without waiting; Synchronize() waits and reports asynchronous errors.
//
// Create() fails with kUnavailable when there is no usable device or driver (the machines we
// build on have the toolkit but no GPU): a clear error instead of a crash.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "base/status.h"

namespace stepscope::kernels {

class CudaContext {
 public:
  static StatusOr<std::unique_ptr<CudaContext>> Create(int device = 0);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }

  Status Synchronize() const;

 private:
  CudaContext() = default;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
};

// Number of usable CUDA devices, or the error that says why there are none.
StatusOr<int> CudaDeviceCount();

namespace internal {

// Stream-ordered device scratch (cudaMallocAsync/cudaFreeAsync on the context's stream).
class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  Status Allocate(const CudaContext& ctx, size_t bytes);
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Row-major C(m,n) = alpha·op(A)·op(B) + beta·C on cuBLAS (column-major Cᵀ = op(B)ᵀ·op(A)ᵀ).
Status RowMajorSgemm(const CudaContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float beta, float* c, int64_t ldc);

// out(cols) (+)= Σ over rows of x(rows, cols); used by BiasAddGrad and the LSTM bias gradient.
Status ColumnSum(const CudaContext& ctx, const float* x, int64_t rows, int64_t cols, float* out,
                 bool accumulate);

}  // namespace internal
}  // namespace stepscope::kernels
