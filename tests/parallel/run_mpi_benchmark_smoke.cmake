# Smoke run of parallel_mpi_allreduce_benchmark: 2 ranks, 1 KB and 1 MB, a short minimum time.
# Fails unless mpirun exits 0 and each size's row carries a bus bandwidth.
#   cmake -DMPIEXEC=mpirun -DBENCHMARK=path/to/parallel_mpi_allreduce_benchmark -P <this file>
foreach(variable MPIEXEC BENCHMARK)
  if(NOT ${variable})
    message(FATAL_ERROR "run_mpi_benchmark_smoke.cmake needs -D${variable}=...")
  endif()
endforeach()

execute_process(
  COMMAND ${MPIEXEC} --oversubscribe --allow-run-as-root -np 2 ${BENCHMARK}
          "--benchmark_filter=BM_MpiAllReduce/(1024|1048576)/" --benchmark_min_time=0.01
          --benchmark_color=false
  RESULT_VARIABLE exit_code
  OUTPUT_VARIABLE output
  ERROR_VARIABLE errors
  TIMEOUT 150)
message("${output}")
if(NOT exit_code EQUAL 0)
  message(FATAL_ERROR "mpirun exited with '${exit_code}'\n${errors}")
endif()
foreach(bytes 1024 1048576)
  if(NOT output MATCHES "BM_MpiAllReduce/${bytes}/[^\n]*busbw=")
    message(FATAL_ERROR "no bus bandwidth printed for ${bytes} bytes\n${errors}")
  endif()
endforeach()
