// The stepscope-view command line: the window (`stepscope-view [--merge] [--allow-truncated]
// [--reset-layout] [TRACE ...]`, its size and dock layout remembered across runs; a
// directory opening as one merged timeline; `stepscope-view A... --vs B...`, two runs compared)
// and the headless modes used by tests, documentation and benchmarks:
//   --screenshot OUT.png [--size WxH] [--pane NAME] TRACE...
//                                   render the window offscreen to a PNG and exit
//   --screenshot OUT.png [--size WxH] [--step N[,N]] A... --vs B...
//                                   the same for the comparison of two runs (see
//                                   viewer/compare/compare_view.h)
//   --bench TRACE | --bench --synthetic N [--frames N] [--frame-log]
//                                   load, first frame, a fixed zoom/pan sequence: times per
//                                   frame, resident bytes per slice
//   --synthetic N --write-synthetic OUT   write the generated benchmark trace to a file
// Headless modes select the offscreen platform themselves when QT_QPA_PLATFORM is unset.
// Exit codes: 0 ok, 1 runtime failure, 2 usage or bad input.
#pragma once

namespace stepscope::viewer {

int RunViewer(int argc, char** argv);

}  // namespace stepscope::viewer
