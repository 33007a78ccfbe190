# FindNCCL: NVIDIA's collective communication library (GPU builds only).
#
# Looks next to the CUDA toolkit first (CUDAToolkit_INCLUDE_DIRS / CUDAToolkit_LIBRARY_DIR when
# find_package(CUDAToolkit) ran), then in NCCL_ROOT and the system paths (libnccl-dev).
#
# Result: NCCL_FOUND, NCCL_VERSION (from nccl.h), and the imported target NCCL::nccl (headers and
# the shared library). Cache: NCCL_INCLUDE_DIR, NCCL_LIBRARY.
include_guard(GLOBAL)

find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${NCCL_ROOT} ENV NCCL_ROOT ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include)
find_library(NCCL_LIBRARY nccl
  HINTS ${NCCL_ROOT} ENV NCCL_ROOT ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib lib64)
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)

if(NCCL_INCLUDE_DIR AND EXISTS ${NCCL_INCLUDE_DIR}/nccl.h)
  file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_version_lines
       REGEX "^#define NCCL_(MAJOR|MINOR|PATCH)[ \t]+[0-9]+")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${part}[ \t]+([0-9]+)" _nccl_match "${_nccl_version_lines}")
    set(_nccl_${part} ${CMAKE_MATCH_1})
  endforeach()
  if(NOT _nccl_MAJOR STREQUAL "")
    set(NCCL_VERSION ${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH})
  endif()
  unset(_nccl_version_lines)
  unset(_nccl_match)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION ${NCCL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
endif()
