# Analyses, the viewer and the Chrome JSON and Perfetto writers read the trace model's typed
# details, never TensorFlow's records: no file in profiler/analysis (but merge, which rewrites the
# StepStats payload), viewer/ or those writers may include a TensorFlow proto header
# (stepscope/tf/*.pb.h) or the StepStats payload's headers (node_store.h, node_reader.h,
# step_stats_payload.h).
# Run by ctest: cmake -DSOURCE_DIR=<repo> -P check_proto_includes.cmake
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_proto_includes: pass -DSOURCE_DIR=<the repository root>")
endif()
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/profiler/analysis/*.h ${SOURCE_DIR}/profiler/analysis/*.cc
     ${SOURCE_DIR}/viewer/*.h ${SOURCE_DIR}/viewer/*.cc
     ${SOURCE_DIR}/profiler/formats/chrome_json/chrome_json_writer.*
     ${SOURCE_DIR}/profiler/formats/perfetto/perfetto_writer*.cc
     ${SOURCE_DIR}/profiler/formats/perfetto/perfetto_exporter.h)
list(FILTER files EXCLUDE REGEX "^profiler/analysis/merge\\.(h|cc)$")
if(NOT files)
  message(FATAL_ERROR "check_proto_includes: no sources under ${SOURCE_DIR}/profiler/analysis, viewer or the writers")
endif()
set(offenders "")
foreach(file IN LISTS files)
  file(STRINGS ${SOURCE_DIR}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  foreach(line IN LISTS lines)
    if(line MATCHES "[<\"]([^>\"]*\\.pb\\.h|profiler/formats/step_stats/(node_store|node_reader|step_stats_payload)\\.h)[>\"]")
      list(APPEND offenders "${file}: ${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
if(offenders)
  list(JOIN offenders "\n  " text)
  message(FATAL_ERROR "TensorFlow records reached past the trace model "
                      "(read profiler/trace/slice_details.h instead):\n  ${text}")
endif()
list(LENGTH files count)
message(STATUS "check_proto_includes: ${count} files include no TensorFlow proto header")
