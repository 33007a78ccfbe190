# A benchmark program's --benchmark_format=json output, as scripts read it: runs the benchmarks
# FILTER selects (briefly) and fails unless the program exits 0, stdout parses as Google
# Benchmark's JSON document, and it holds one successful result for each benchmark that
# --benchmark_list_tests names for the same filter.
#   cmake -DBENCHMARK=path/to/program -DFILTER=regex [-DMPIEXEC=mpirun] -P <this file>
# With MPIEXEC the program runs on 2 ranks (rank 0 reports).
cmake_policy(VERSION 3.25)
foreach(variable BENCHMARK FILTER)
  if(NOT ${variable})
    message(FATAL_ERROR "check_benchmark_json.cmake needs -D${variable}=...")
  endif()
endforeach()
set(launcher)
if(MPIEXEC)
  set(launcher ${MPIEXEC} --oversubscribe --allow-run-as-root -np 2)
endif()

execute_process(
  COMMAND ${launcher} ${BENCHMARK} --benchmark_filter=${FILTER} --benchmark_list_tests=true
  RESULT_VARIABLE exit_code OUTPUT_VARIABLE listed ERROR_VARIABLE errors TIMEOUT 120)
if(NOT exit_code EQUAL 0)
  message(FATAL_ERROR "${BENCHMARK} --benchmark_list_tests exited with '${exit_code}'\n${errors}")
endif()
string(STRIP "${listed}" listed)
string(REPLACE "\n" ";" expected "${listed}")
if(NOT expected)
  message(FATAL_ERROR "${BENCHMARK}: --benchmark_filter=${FILTER} selects no benchmark")
endif()

execute_process(
  COMMAND ${launcher} ${BENCHMARK} --benchmark_filter=${FILTER} --benchmark_min_time=0.01
          --benchmark_format=json
  RESULT_VARIABLE exit_code OUTPUT_VARIABLE output ERROR_VARIABLE errors TIMEOUT 500)
if(NOT exit_code EQUAL 0)
  message(FATAL_ERROR "${BENCHMARK} exited with '${exit_code}'\n${errors}\n${output}")
endif()
# Google Benchmark's JSON: an object with a context object and a benchmarks array.
string(JSON root_type ERROR_VARIABLE json_error TYPE "${output}")
if(NOT json_error AND root_type STREQUAL "OBJECT")
  string(JSON context_type ERROR_VARIABLE json_error TYPE "${output}" context)
  string(JSON benchmarks_type ERROR_VARIABLE json_error TYPE "${output}" benchmarks)
endif()
if(json_error OR NOT root_type STREQUAL "OBJECT" OR NOT context_type STREQUAL "OBJECT"
   OR NOT benchmarks_type STREQUAL "ARRAY")
  message(FATAL_ERROR "${BENCHMARK} --benchmark_format=json: stdout is not Google Benchmark's "
                      "JSON document (an object with context and benchmarks):\n${output}")
endif()
string(JSON count LENGTH "${output}" benchmarks)

set(reported)
if(count GREATER 0)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${output}" benchmarks ${i} name)
    string(JSON failed ERROR_VARIABLE no_error_field GET "${output}" benchmarks ${i} error_occurred)
    if(NOT no_error_field AND failed)
      string(JSON reason GET "${output}" benchmarks ${i} error_message)
      message(FATAL_ERROR "${BENCHMARK}: ${name} reported an error: ${reason}")
    endif()
    list(APPEND reported "${name}")
  endforeach()
endif()
foreach(name IN LISTS expected)
  if(NOT name IN_LIST reported)
    message(FATAL_ERROR "${BENCHMARK}: no JSON result for ${name} (results: ${reported})")
  endif()
endforeach()
list(LENGTH expected expected_count)
message(STATUS "${BENCHMARK}: ${expected_count} benchmarks in valid JSON: ${reported}")
