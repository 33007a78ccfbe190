// The GPU lanes the converter writes read back through the trace library's parsers of TF's
// naming (the ones every import uses): lane kinds, kernel op names, memcpy labels.
#include <gtest/gtest.h>

#include <string>

#include "profiler/collect/cupti/gpu_activity_converter.h"
#include "profiler/formats/step_stats/tf_names.h"

namespace stepscope::collect::cupti {
namespace {

template <typename Record>
void Feed(GpuActivityConverter& converter, const Record& record) {
  converter.OnRecord(reinterpret_cast<const CUpti_Activity&>(record));
}

TEST(GpuLanesIntegrationTest, TraceParsersUnderstandConvertedLanes) {
  GpuActivityConverter converter(ClockAlignment{1'000'000, 5'000'000});
  converter.RegisterOp(3, "resnet50/conv1_conv/Conv2D", "Conv2D");
  ExternalCorrelationActivity link{};
  link.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  link.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  link.externalId = 3;
  link.correlationId = 30;
  Feed(converter, link);
  KernelActivity kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.streamId = 14;
  kernel.correlationId = 30;
  kernel.start = 1'002'000;
  kernel.end = 1'012'000;
  kernel.name = "implicit_convolve_sgemm";
  kernel.gridX = kernel.gridY = kernel.gridZ = 1;
  kernel.blockX = kernel.blockY = kernel.blockZ = 32;
  Feed(converter, kernel);
  MemcpyActivity copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.bytes = 602112;
  copy.streamId = 15;
  copy.correlationId = 30;
  copy.start = 1'000'500;
  copy.end = 1'001'500;
  Feed(converter, copy);

  const ConvertedStep step = converter.Finish();
  int kernels = 0, copies = 0;
  for (const tf::DeviceStepStats& dev : step.step_stats.dev_stats()) {
    const trace::TfDeviceName device = trace::ParseTfDeviceName(dev.device());
    SCOPED_TRACE(dev.device());
    ASSERT_TRUE(device.parsed);
    EXPECT_EQ(device.device, "GPU:0");
    EXPECT_NE(device.kind, trace::TfLaneKind::kExecutor);
    if (device.kind == trace::TfLaneKind::kStream) {
      EXPECT_TRUE(device.stream_id == 14 || device.stream_id == 15);
    }
    for (const tf::NodeExecStats& node : dev.node_stats()) {
      const trace::TfKernelName name =
          trace::ParseTfKernelName(node.node_name(), node.timeline_label());
      EXPECT_EQ(name.name, "resnet50/conv1_conv/Conv2D");
      EXPECT_EQ(name.op, "Conv2D");
      if (node.has_memcpy()) {
        ++copies;
        const trace::TfMemcpyLabel label = trace::ParseTfMemcpyLabel(node.timeline_label());
        ASSERT_TRUE(label.matched) << node.timeline_label();
        EXPECT_EQ(label.kind, "HtoD");
        EXPECT_EQ(label.bytes, 602112);
        EXPECT_EQ(label.src_memory, "Pinned");
        EXPECT_EQ(label.dst_memory, "Device");
      } else {
        ++kernels;
      }
    }
  }
  EXPECT_EQ(kernels, 2);  // stream:14 and stream:all
  EXPECT_EQ(copies, 3);   // stream:15, stream:all and memcpy
}

}  // namespace
}  // namespace stepscope::collect::cupti
