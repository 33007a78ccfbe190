// base/display_names.h on kernel and op names taken from the samples: the H100 ResNet-50 step
// (samples/h100_resnet50_b32_step3.pb.gz) and the PyTorch Kineto AlexNet trace
// (pytorch_kineto_alexnet_train.json.gz).
#include "base/display_names.h"

#include <gtest/gtest.h>

#include <set>

namespace stepscope {
namespace {

// From the Kineto AlexNet trace.
constexpr char kClampKernel[] =
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar("
    "at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
    "const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
    "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() "
    "const::{lambda(float)#1}, at::detail::Array<char*, 2>)";
constexpr char kAddKernel[] =
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> "
    ">(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int, "
    "at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, "
    "at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1})";
constexpr char kPool[] =
    "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*, long, long, long, "
    "int, int, int, int, int, int, int, int, int, int, float*, long*)";
constexpr char kFftA[] =
    "void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, int, int, int, int, int, int, int, int, "
    "cudnn::reduced_divisor, bool, int2, int, int)";
constexpr char kFftB[] =
    "void fft2d_r2c_32x32<float, false, 5u, true>(float2*, float const*, int, int, int, int, int, int, int, int, int, "
    "cudnn::reduced_divisor, bool, int2, int, int)";
// From the H100 ResNet-50 step.
constexpr char kCutlass[] =
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt_align1>(cutlass_80_simt_sgemm_64x64_8x5_nt_align1::Params)";
constexpr char kIm2Col[] =
    "void stepscope::kernels::internal::ForEachKernel<stepscope::kernels::(anonymous namespace)::Im2ColFn<int> >(long, "
    "stepscope::kernels::(anonymous namespace)::Im2ColFn<int>)";
constexpr char kCol2Im[] =
    "void stepscope::kernels::internal::ForEachKernel<stepscope::kernels::(anonymous namespace)::Col2ImFn<int> >(long, "
    "stepscope::kernels::(anonymous namespace)::Col2ImFn<int>)";
constexpr char kSplitK[] =
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, float, true, "
    "false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, float*, float "
    "const*, float const*, float const*, float const*, float*, void*, long, float*, int*, float*, float*, float "
    "const*, float const*, float const*, float const*, float const*)";

TEST(ShortKernelNameTest, FoldsNamespacesTemplateArgumentsAndParameters) {
  EXPECT_EQ(ShortKernelName(kClampKernel), "vectorized_elementwise_kernel<…>");
  EXPECT_EQ(ShortKernelName(kAddKernel), "elementwise_kernel<…>");
  EXPECT_EQ(ShortKernelName(kPool), "max_pool_forward_nchw<…>");
  EXPECT_EQ(ShortKernelName(kSplitK), "splitKreduce_kernel<…>");
  EXPECT_EQ(ShortKernelName("void cask_cudnn::computeOffsetsKernel<false, false>(cask_cudnn::ComputeOffsetsParams)"),
            "computeOffsetsKernel<…>");
  EXPECT_EQ(ShortKernelName("void at::native::(anonymous namespace)::adaptive_average_pool<float>(float const*, "
                            "float*, int, int, int, int, long, long, long)"),
            "adaptive_average_pool<…>");
}

TEST(ShortKernelNameTest, GenericLaunchersKeepTheWorkTheyRun) {
  EXPECT_EQ(ShortKernelName(kCutlass), "cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt_align1>");
  EXPECT_EQ(ShortKernelName(kIm2Col), "ForEachKernel<Im2ColFn<…>>");
  EXPECT_EQ(ShortKernelName(kCol2Im), "ForEachKernel<Col2ImFn<…>>");
}

TEST(ShortKernelNameTest, NamesThatAreNotSignaturesStayWhole) {
  for (const char* name : {"ampere_sgemm_32x32_sliced1x4_tn", "aten::addmm", "MatMul",
                           "gradient_tape/resnet50/conv2_block1_1_conv/Conv2D/Conv2DBackpropInput",
                           "torch/nn/modules/module.py(1501): _call_impl", "<built-in method to of Tensor object>",
                           "ProfilerStep#3", "cudaLaunchKernel", "Memcpy HtoD (Pageable -> Device)",
                           "Memset (Device)",
                           "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_"
                           "stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel_cudnn"}) {
    EXPECT_EQ(ShortKernelName(name), name);
  }
}

TEST(ShortKernelNameTest, DemanglesMangledNamesFirst) {
  // at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>>
  const char* mangled =
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_";
  EXPECT_EQ(DemangleName(mangled).substr(0, 41), "void at::native::vectorized_elementwise_k");
  EXPECT_EQ(ShortKernelName(mangled), "vectorized_elementwise_kernel<…>");
  EXPECT_EQ(ShortKernelName(mangled, KernelNameDetail::kArguments),
            "vectorized_elementwise_kernel<4, CUDAFunctor_add<…>, Array<…>>");
  EXPECT_EQ(ShortKernelName("_Znot_really"), "_Znot_really");  // not a valid mangling: kept
}

TEST(ShortKernelNameTest, OddInputNeverComesBackEmpty) {
  for (const char* name : {"(", "<", "()", "<>", " (int)", "void (", "operator<", "void f<(int)", "a::b::", "{}"}) {
    EXPECT_FALSE(ShortKernelName(name).empty()) << name;
  }
  EXPECT_EQ(ShortKernelName(""), "");
}

TEST(DistinctShortKernelNamesTest, NamesSideBySideStayApart) {
  const std::vector<std::string> names = {kFftA, kFftB, kIm2Col, kCol2Im, kClampKernel, kAddKernel, kFftA};
  const std::vector<std::string> shown = DistinctShortKernelNames(names);
  ASSERT_EQ(shown.size(), names.size());
  EXPECT_EQ(shown[0], "fft2d_r2c_32x32<float, false, 0u, false>");
  EXPECT_EQ(shown[1], "fft2d_r2c_32x32<float, false, 5u, true>");
  EXPECT_EQ(shown[2], "ForEachKernel<Im2ColFn<…>>");
  EXPECT_EQ(shown[4], "vectorized_elementwise_kernel<…>");  // alone: stays short
  EXPECT_EQ(shown[6], shown[0]);                           // equal names, equal text
  EXPECT_EQ(std::set<std::string>(shown.begin(), shown.end()).size(), 6u);
}

TEST(DistinctShortKernelNamesTest, NumbersWhatArgumentsCannotTellApart) {
  // Same template arguments, different parameters (overloads): numbered in full-name order.
  const std::vector<std::string> shown =
      DistinctShortKernelNames({"void k<float>(int)", "void k<float>(double)", "void k<float>(int)"});
  EXPECT_EQ(shown[0], "k<float> #2");
  EXPECT_EQ(shown[1], "k<float> #1");
  EXPECT_EQ(shown[2], "k<float> #2");
}

TEST(ElideMiddleTest, PathsKeepTheirLastComponent) {
  const std::string op = "gradient_tape/resnet50/conv2_block1_1_conv/Conv2D/Conv2DBackpropInput";
  EXPECT_EQ(ElideMiddle(op, 200), op);
  EXPECT_EQ(ElideMiddle(op, 36), "gradient_tape/…/Conv2DBackpropInput");
  EXPECT_EQ(ElideMiddle(op, 45), "gradient_tape/…/Conv2D/Conv2DBackpropInput");
  EXPECT_EQ(ElideMiddle(op, 30), "…/Conv2D/Conv2DBackpropInput");
  EXPECT_EQ(ElideMiddle(op, 22), "…/Conv2DBackpropInput");
  EXPECT_EQ(ElideMiddle(op, 12), "Con…ropInput");
  EXPECT_EQ(ElideMiddle(op, 48, ElidePath::kTail), "…/conv2_block1_1_conv/Conv2D/Conv2DBackpropInput");
  EXPECT_EQ(ElideMiddle(op, 40, ElidePath::kTailText), "…lock1_1_conv/Conv2D/Conv2DBackpropInput");
  const std::string lane = "/job:localhost/replica:0/task:0/device:GPU:0 stream:7";
  EXPECT_EQ(ElideMiddle(lane, 40), "/job:localhost/…/device:GPU:0 stream:7");
  EXPECT_EQ(ElideMiddle(lane, 30), "…/task:0/device:GPU:0 stream:7");
  // A track path (Trace::TrackPath) keeps the device its lane belongs to.
  EXPECT_EQ(ElideMiddle("/job:localhost/replica:0/task:0/device:GPU:0 / stream:14", 30), "…/device:GPU:0 / stream:14");
  EXPECT_EQ(ElideMiddle("rank 0 (host-a) step 5 / host-a /job:worker/replica:0/task:0 / GPU:0", 44),
            "rank 0 (host-a) step 5 /…/task:0 / GPU:0");
  for (size_t width = 0; width < op.size(); ++width) {
    EXPECT_LE(Utf8Length(ElideMiddle(op, width)), std::max<size_t>(width, 1)) << width;
    EXPECT_LE(Utf8Length(ElideMiddle(lane, width)), std::max<size_t>(width, 1)) << width;
    EXPECT_LE(Utf8Length(ElideMiddle(op, width, ElidePath::kTail)), std::max<size_t>(width, 1)) << width;
  }
}

TEST(ElideMiddleTest, OtherTextKeepsMoreOfItsTail) {
  EXPECT_EQ(ElideMiddle("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", 16), "cudnn…arge_nn_v1");
  EXPECT_EQ(Utf8Length(ElideMiddle("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", 16)), 16u);
  EXPECT_EQ(ElideMiddle("abc", 0), "…");
  // Never cuts a UTF-8 sequence: the kept head and tail are whole code points.
  EXPECT_EQ(ElideMiddle("αβγδεζηθικ", 4), "α…ικ");
}

}  // namespace
}  // namespace stepscope
