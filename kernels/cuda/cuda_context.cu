// CudaContext, the call-checking functions, device scratch, the row-major GEMM on cuBLAS and
// the column sum.
#include "kernels/cuda/cuda_context.h"

#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_runtime_calls.h"
#include "kernels/cuda/cuda_util.cuh"

namespace stepscope::kernels {
namespace internal {
namespace {

std::string Where(const char* call, const char* file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": ";
}

}  // namespace

Status CudaCallStatus(cudaError_t error, const char* call, const char* file, int line) {
  const std::string message = Where(call, file, line) + cudaGetErrorString(error) + " (" +
                              cudaGetErrorName(error) + ")";
  switch (error) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
      return Unavailable(message);
    default:
      return Internal(message);
  }
}

Status CudaCallStatus(cublasStatus_t error, const char* call, const char* file, int line) {
  std::string message = Where(call, file, line) + cublasGetStatusString(error) + " (" +
                        cublasGetStatusName(error) + ")";
  return error == CUBLAS_STATUS_NOT_INITIALIZED ? Unavailable(message) : Internal(message);
}

DeviceScratch::~DeviceScratch() {
  if (ptr_ != nullptr) (void)cudaFreeAsync(ptr_, stream_);  // nothing to report to in a dtor
}

Status DeviceScratch::Allocate(const CudaContext& ctx, size_t bytes) {
  if (ptr_ != nullptr) {
    STEPSCOPE_CUDA_CHECK(cudaFreeAsync(ptr_, stream_));
    ptr_ = nullptr;
  }
  stream_ = ctx.stream();
  if (bytes == 0) return Status::Ok();
  STEPSCOPE_CUDA_CHECK(cudaMallocAsync(&ptr_, bytes, stream_));
  return Status::Ok();
}

Status RowMajorSgemm(const CudaContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return Status::Ok();
  auto dim = [](int64_t v) { return static_cast<int>(v < 1 ? 1 : v); };
  STEPSCOPE_CUDA_CHECK(cublasSgemm(ctx.cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, dim(n), dim(m),
                                   static_cast<int>(k), &alpha, b, dim(ldb), a, dim(lda), &beta,
                                   c, dim(ldc)));
  return Status::Ok();
}

namespace {
struct ColumnValuesFn {
  const float* x;
  int64_t cols;
  __device__ ColumnTerms<1> operator()(int64_t r, int64_t c) const { return {{x[r * cols + c]}}; }
};
struct StoreColumnSumFn {
  float* out;
  bool accumulate;
  __device__ void operator()(int64_t c, const ColumnTerms<1>& sum) const {
    out[c] = accumulate ? out[c] + sum.v[0] : sum.v[0];
  }
};
}  // namespace

Status ColumnSum(const CudaContext& ctx, const float* x, int64_t rows, int64_t cols, float* out,
                 bool accumulate) {
  return ColumnReduce<1>(ctx, rows, cols, ColumnValuesFn{x, cols}, StoreColumnSumFn{out, accumulate});
}

}  // namespace internal

StatusOr<int> CudaDeviceCount() {
  int count = 0;
  STEPSCOPE_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count == 0) return Unavailable("no CUDA device is present");
  return count;
}

StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(int device) {
  ASSIGN_OR_RETURN(const int count, CudaDeviceCount());
  if (device < 0 || device >= count) {
    return Unavailable("CUDA device " + std::to_string(device) + " requested, " +
                       std::to_string(count) + " present");
  }
  std::unique_ptr<CudaContext> ctx(new CudaContext());
  ctx->device_ = device;
  STEPSCOPE_CUDA_CHECK_AS(SetDevice(device), "cudaSetDevice(device)");
  STEPSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking));
  STEPSCOPE_CUDA_CHECK(cublasCreate(&ctx->cublas_));
  STEPSCOPE_CUDA_CHECK(cublasSetStream(ctx->cublas_, ctx->stream_));
  // fp32 means fp32: the default math mode uses no TF32 tensor-core rounding.
  STEPSCOPE_CUDA_CHECK(cublasSetMathMode(ctx->cublas_, CUBLAS_DEFAULT_MATH));
  return StatusOr<std::unique_ptr<CudaContext>>(std::move(ctx));
}

CudaContext::~CudaContext() {
  // Nothing to report to in a destructor.
  if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Status CudaContext::Synchronize() const {
  STEPSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

}  // namespace stepscope::kernels
