// The translation unit the test programs' shared precompiled GoogleTest header is made with
// (stepscope_test_pch, tests/CMakeLists.txt); it has nothing of its own.
#include <gtest/gtest.h>
