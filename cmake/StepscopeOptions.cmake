# Build options and per-target defaults. Presets (CMakePresets.json) set these; nothing is
# hand-edited into compiler flags.
include_guard(GLOBAL)

option(STEPSCOPE_WERROR "Treat warnings as errors (on in CI)" OFF)
option(STEPSCOPE_VIEWER "Build the Qt6 desktop viewer stepscope-view" ON)
option(STEPSCOPE_TESTS "Build tests and benchmarks" ON)
option(STEPSCOPE_FUZZERS "Build the libFuzzer targets (fuzz/); clang with STEPSCOPE_SANITIZE=address" OFF)
set(STEPSCOPE_SANITIZE "" CACHE STRING "Sanitizers: empty, 'address' (ASan+UBSan) or 'thread'")
set(STEPSCOPE_CUDA "AUTO" CACHE STRING "CUDA kernels, cuBLAS, CUPTI, NCCL: AUTO, ON or OFF")
set_property(CACHE STEPSCOPE_CUDA PROPERTY STRINGS AUTO ON OFF)
set(STEPSCOPE_CUDA_ARCHITECTURES "80;90" CACHE STRING "GPU architectures to build for")

# CUDA is on when the toolkit is found, unless turned off; a clear message either way.
set(STEPSCOPE_WITH_CUDA OFF)
if(NOT STEPSCOPE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES ${STEPSCOPE_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    # CMake 3.25 does not know that nvcc >= 12 takes C++20; our CUDA targets use it.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
      set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
    endif()
    find_package(CUDAToolkit REQUIRED)
    set(STEPSCOPE_WITH_CUDA ON)
    message(STATUS "stepscope: CUDA ${CUDAToolkit_VERSION} found; GPU code on "
                   "(architectures ${STEPSCOPE_CUDA_ARCHITECTURES})")
  elseif(STEPSCOPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "stepscope: STEPSCOPE_CUDA=ON but no CUDA compiler was found; install "
                        "the CUDA toolkit or configure with -DSTEPSCOPE_CUDA=OFF")
  else()
    message(STATUS "stepscope: no CUDA toolkit found; building CPU-only (GPU requests will "
                   "report that this build has no GPU support)")
  endif()
else()
  message(STATUS "stepscope: CUDA turned off (STEPSCOPE_CUDA=OFF); building CPU-only")
endif()

if(STEPSCOPE_SANITIZE STREQUAL "address")
  set(STEPSCOPE_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
                                -fno-sanitize-recover=undefined)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND STEPSCOPE_SANITIZER_FLAGS -fsanitize-ignorelist=${PROJECT_SOURCE_DIR}/cmake/ubsan_ignore.txt)
  endif()
elseif(STEPSCOPE_SANITIZE STREQUAL "thread")
  set(STEPSCOPE_SANITIZER_FLAGS -fsanitize=thread)
  # The system libprotobuf is built without TSan, but protobuf's map_field.h adds members to
  # MapFieldBase when __SANITIZE_THREAD__ is defined: our code and the library would disagree
  # on the layout of every map field (crashes in arena destruction). Compile our code with
  # protobuf's ordinary layout; _GLIBCXX_TSAN keeps libstdc++'s own TSan mode, which the
  # undefined macro would turn off.
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX,C>:-U__SANITIZE_THREAD__;-D_GLIBCXX_TSAN=1>")
else()
  set(STEPSCOPE_SANITIZER_FLAGS "")
endif()
if(STEPSCOPE_SANITIZER_FLAGS)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX,C>:${STEPSCOPE_SANITIZER_FLAGS}>")
  add_link_options(${STEPSCOPE_SANITIZER_FLAGS})
endif()

# Warnings for our own C++ targets (generated protobuf code gets none of these).
function(stepscope_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wno-missing-field-initializers>
    $<$<AND:$<BOOL:${STEPSCOPE_WERROR}>,$<COMPILE_LANGUAGE:CXX>>:-Werror>
    # GCC 12 reports impossible overlaps inside std::string at -O3 (GCC bug 105329).
    $<$<AND:$<CXX_COMPILER_ID:GNU>,$<COMPILE_LANGUAGE:CXX>>:-Wno-restrict>
    # In a unity build (CI presets: fewer, larger translation units, built faster) GCC takes the
    # included .cc files for headers and flags their anonymous-namespace types as it would a
    # header's.
    $<$<AND:$<BOOL:${CMAKE_UNITY_BUILD}>,$<CXX_COMPILER_ID:GNU>,$<COMPILE_LANGUAGE:CXX>>:-Wno-subobject-linkage>)
endfunction()
