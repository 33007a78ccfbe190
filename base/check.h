// CHECK: a broken invariant of ours is a bug; fail fast with the condition and where it was.
#pragma once

#include <cstdio>
#include <cstdlib>

#define STEPSCOPE_CHECK(cond)                                                           \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)
