// main() of the benchmark programs that take no flags of their own.
#include "tests/benchmark_main.h"

int main(int argc, char** argv) { return stepscope::testing::RunBenchmarks(argc, argv); }
