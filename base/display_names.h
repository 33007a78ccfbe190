// Names as people read them in a table cell, a slice label or a lane header: C++ kernel names
// with their namespaces and template arguments folded (what Nsight Systems calls a short kernel
// name), and long names cut in the middle so that the informative end stays (the op type at the
// end of a TensorFlow scope, the device and stream of a lane). The CLI and the viewer both use
// these, so one kernel reads the same in a report and on the timeline.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope {

// "…" (U+2026): what every shortened name shows where it left text out.
inline constexpr std::string_view kEllipsis = "\xE2\x80\xA6";

// A mangled C++ name ("_Z...") demangled; any other text unchanged.
std::string DemangleName(std::string_view name);

// How much of a C++ kernel name is kept.
enum class KernelNameDetail {
  kShort,      // "vectorized_elementwise_kernel<…>"
  kArguments,  // "vectorized_elementwise_kernel<4, CUDAFunctor_add<…>, Array<…>>"
};

// The function's own name without return type, namespaces and parameters, its template arguments
// folded to "<…>" (KernelNameDetail::kShort): "void at::native::vectorized_elementwise_kernel<4,
// ...>(int, ...)" -> "vectorized_elementwise_kernel<…>". A mangled name is demangled first. Where
// the function's name says nothing ("Kernel", "Kernel2", "kernel", "device_kernel": CUTLASS,
// CUB), its namespace and first template argument stay: "cutlass::Kernel2<cutlass_80_wmma_…>".
// A name that is not a C++ signature (no "(" or "<": "ampere_sgemm_32x32_sliced1x4_tn",
// "aten::addmm", "MatMul"; or whose function name is no identifier: the Python frame
// "torch/nn/modules/module.py(1501): _call_impl") comes back unchanged, so any slice name may be
// passed. Never empty for non-empty input.
std::string ShortKernelName(std::string_view name, KernelNameDetail detail = KernelNameDetail::kShort);

// Short names for names shown side by side (the rows of one table), in the same order: a name
// whose short form another distinct name shares gets its template arguments shortened instead of
// folded, and where that still collides, " #1", " #2", ... in the order of the full names. Equal
// inputs get equal outputs.
std::vector<std::string> DistinctShortKernelNames(const std::vector<std::string>& names);

// UTF-8 code points in `text` (what a fixed-width column counts).
size_t Utf8Length(std::string_view text);

// `text` cut to at most `max_chars` code points by leaving out its middle: a path keeps its last
// component whole where it fits, its first component where there is room, and as many trailing
// components as fit ("gradient_tape/resnet50/conv2_block1_1_conv/Conv2D/Conv2DBackpropInput" ->
// "gradient_tape/…/Conv2DBackpropInput"; "/job:localhost/replica:0/task:0/device:GPU:0
// stream:7" -> "/job:localhost/…/device:GPU:0 stream:7"; where not even the last component fits,
// it alone: "Con…ropInput"); other text keeps a third of its head and the rest of its tail. Text that fits comes back unchanged; max_chars below 2 gives "…".
// ElidePath::kTail spends the room on trailing components only ("…/conv2_block1_1_conv/Conv2D/
// Conv2DBackpropInput"): what tells apart the rows of a table whose names share head and end;
// ElidePath::kTailText keeps as much of the end as fits, whole components or not
// ("…v2_block3_2_conv/Conv2D/Conv2DBackpropFilter").
enum class ElidePath { kHeadAndTail, kTail, kTailText };
std::string ElideMiddle(std::string_view text, size_t max_chars, ElidePath path = ElidePath::kHeadAndTail);

}  // namespace stepscope
