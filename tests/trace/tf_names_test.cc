// TensorFlow naming conventions: labels, device names, GPU record names, memcpy labels.
#include "profiler/formats/step_stats/tf_names.h"

#include <gtest/gtest.h>

namespace stepscope::trace {
namespace {

TEST(TfOpLabelTest, PlainLabelWithInputs) {
  const TfOpLabel label = ParseTfOpLabel("a/b = MatMul(x, y:1, ^ctrl)");
  ASSERT_TRUE(label.matched);
  EXPECT_EQ(label.node, "a/b");
  EXPECT_EQ(label.op, "MatMul");
  ASSERT_EQ(label.inputs.size(), 3u);
  EXPECT_EQ(label.inputs[1], "y:1");
  EXPECT_EQ(label.inputs[2], "^ctrl");
}

TEST(TfOpLabelTest, MemoryPrefixStaysInTheNodeGroup) {
  const TfOpLabel label = ParseTfOpLabel("[GPU_0_bfc 0.1MB 0.1MB] n = Op(a, b)");
  ASSERT_TRUE(label.matched);
  EXPECT_EQ(label.node, "[GPU_0_bfc 0.1MB 0.1MB] n");
  EXPECT_EQ(label.op, "Op");
  EXPECT_EQ(label.inputs.size(), 2u);
}

TEST(TfOpLabelTest, GreedyRegexOddities) {
  // Same answers as Python's re.match(r'(.*) = (.*)\((.*)\)', label).
  TfOpLabel label = ParseTfOpLabel("n = Foo(a, b) extra (c)");
  EXPECT_EQ(label.op, "Foo(a, b) extra ");
  ASSERT_EQ(label.inputs.size(), 1u);
  EXPECT_EQ(label.inputs[0], "c");
  label = ParseTfOpLabel("n = Op(a, fn(b))");
  EXPECT_EQ(label.op, "Op(a, fn");
  EXPECT_EQ(label.inputs[0], "b)");
  label = ParseTfOpLabel("p = q = Op(a)");
  EXPECT_EQ(label.node, "p = q");
  EXPECT_EQ(label.op, "Op");
  label = ParseTfOpLabel("n = Op()");
  EXPECT_TRUE(label.matched);
  EXPECT_TRUE(label.inputs.empty());
  label = ParseTfOpLabel("n = Op(, a)");
  ASSERT_EQ(label.inputs.size(), 2u);
  EXPECT_EQ(label.inputs[0], "");
}

TEST(TfOpLabelTest, UnmatchedLabels) {
  EXPECT_FALSE(ParseTfOpLabel("").matched);
  EXPECT_FALSE(ParseTfOpLabel("n = _Send(a").matched);  // Send/Recv labels missing ')'
  EXPECT_FALSE(ParseTfOpLabel("no equals sign(x)").matched);
  EXPECT_FALSE(ParseTfOpLabel("n = Op\n(a)").matched);   // '.' stops at a newline
}

TEST(TfDeviceNameTest, ExecutorAndTracerLanes) {
  TfDeviceName name = ParseTfDeviceName("/job:localhost/replica:0/task:0/device:GPU:0");
  EXPECT_TRUE(name.parsed);
  EXPECT_EQ(name.task, "/job:localhost/replica:0/task:0");
  EXPECT_EQ(name.device, "GPU:0");
  EXPECT_EQ(name.kind, TfLaneKind::kExecutor);
  name = ParseTfDeviceName("/device:GPU:1/stream:14");
  EXPECT_EQ(name.device, "GPU:1");
  EXPECT_EQ(name.kind, TfLaneKind::kStream);
  EXPECT_EQ(name.stream_id, 14);
  EXPECT_EQ(ParseTfDeviceName("/device:GPU:0/stream:all").kind, TfLaneKind::kAllStreams);
  EXPECT_EQ(ParseTfDeviceName("/device:GPU:0/memcpy").kind, TfLaneKind::kMemcpy);
  EXPECT_EQ(ParseTfDeviceName("/job:w/replica:0/task:1/gpu:2").device, "GPU:2");
  EXPECT_FALSE(ParseTfDeviceName("something else").parsed);
}

TEST(TfKernelNameTest, ColonsAndAnnotations) {
  TfKernelName kernel = ParseTfKernelName("foo/bar:Conv2D:Conv2D", "");
  EXPECT_EQ(kernel.name, "foo/bar");
  EXPECT_EQ(kernel.op, "Conv2D");
  kernel = ParseTfKernelName("ignored", "kern regs:32 shm:0 grid:1,1,1 block:256,1,1@@a/b:MatMul#id=1#");
  EXPECT_EQ(kernel.name, "a/b");
  EXPECT_EQ(kernel.op, "MatMul");
  kernel = ParseTfKernelName("nocolon", "");
  EXPECT_EQ(kernel.op, "unknown");
  // A '#' before '@@' makes the label unusable.
  kernel = ParseTfKernelName("x:Relu", "#k@@y:Softmax");
  EXPECT_EQ(kernel.op, "Relu");
}

TEST(TfMemcpyLabelTest, KindBytesAndMemory) {
  const TfMemcpyLabel label = ParseTfMemcpyLabel("MEMCPYHtoD 16000 bytes (Pinned to Device)");
  ASSERT_TRUE(label.matched);
  EXPECT_EQ(label.kind, "HtoD");
  EXPECT_EQ(label.bytes, 16000);
  EXPECT_EQ(label.src_memory, "Pinned");
  EXPECT_EQ(label.dst_memory, "Device");
  EXPECT_FALSE(ParseTfMemcpyLabel("MEMCPYHtoD lots of bytes").matched);
  EXPECT_FALSE(ParseTfMemcpyLabel("n = Op(a)").matched);
}

TEST(StripPartitionSuffixTest, OnlyNumericSuffixes) {
  EXPECT_EQ(StripPartitionSuffix("a/b/_3"), "a/b");
  EXPECT_EQ(StripPartitionSuffix("a/b/_x"), "a/b/_x");
  EXPECT_EQ(StripPartitionSuffix("a/b"), "a/b");
}

}  // namespace
}  // namespace stepscope::trace
