// stepscope-view: the Qt6 desktop viewer for stepscope traces.
#include "viewer/app/command_line.h"

int main(int argc, char** argv) { return stepscope::viewer::RunViewer(argc, argv); }
