// stepscope-view: the Qt6 desktop viewer for stepscope traces.
#include "viewer/app/cli.h"

int main(int argc, char** argv) { return stepscope::viewer::RunViewer(argc, argv); }
