# The matching module: built from match.c directly so the test does not
# depend on the rest of the engine compiling.
xp_test(test_match SOURCES test_match.c ${PROJECT_SOURCE_DIR}/src/ptl/match.c
        LIBS xp_util TIMEOUT 60 LABELS ptl)
# Micro-benchmark of the module alone (run by hand, not a test).
add_executable(bench_match bench_match.c ${PROJECT_SOURCE_DIR}/src/ptl/match.c)
target_include_directories(bench_match PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(bench_match PRIVATE xp_util)
set_target_properties(bench_match PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

# Smoke runs of the Portals benchmarks (tiny sizes, a second or so each):
# they catch a benchmark that no longer runs, not performance changes.
if(XP_BUILD_BENCH AND TARGET xprun)
  set(_xp_bench_smoke
    "ptl_pingpong|--max-size 4k --iters 50 --reps 2"
    "ptl_pingpong|--me --max-size 64 --iters 50 --reps 2"
    "ptl_pingpong|--heap --max-size 16k --iters 50 --reps 2"
    "ptl_match_pingpong|--posted 100 --iters 50 --reps 2"
    "ptl_bw|--max-size 64k --iters 5 --reps 2"
    "ptl_msgrate|--iters 5 --reps 2"
    "ptl_atomic_lat|--iters 50 --reps 2"
    "ptl_unexpected|--queue 1000 --reps 2"
    "ptl_flag_pingpong|--iters 200 --reps 2")
  set(_i 0)
  foreach(_spec ${_xp_bench_smoke})
    string(REPLACE "|" ";" _parts "${_spec}")
    list(GET _parts 0 _prog)
    list(GET _parts 1 _argstr)
    separate_arguments(_args UNIX_COMMAND "${_argstr}")
    if(EXISTS ${PROJECT_SOURCE_DIR}/bench/${_prog}.c)
      add_test(NAME bench_smoke_${_prog}_${_i}
               COMMAND $<TARGET_FILE:xprun> -n 2 --timeout 30 $<TARGET_FILE:${_prog}> ${_args})
      set_tests_properties(bench_smoke_${_prog}_${_i} PROPERTIES TIMEOUT 40 LABELS "mp;bench")
    endif()
    math(EXPR _i "${_i} + 1")
  endforeach()
  # The ping-pongs and streams label each repetition near or far
  # (bench/probe_util.h), unless told not to.
  add_test(NAME bench_smoke_state_keys
           COMMAND $<TARGET_FILE:xprun> -n 2 --timeout 30 $<TARGET_FILE:ptl_pingpong>
                   --min-size 8 --max-size 8 --iters 50 --reps 3)
  set_tests_properties(bench_smoke_state_keys PROPERTIES TIMEOUT 40 LABELS "mp;bench"
                       PASS_REGULAR_EXPRESSION "near_reps=[0-3] near_median_us=[-0-9.]+ far_reps=[0-3] far_median_us=[-0-9.]+")
  add_test(NAME bench_smoke_state_keys_stream
           COMMAND $<TARGET_FILE:xprun> -n 2 --timeout 30 $<TARGET_FILE:ptl_msgrate> --iters 5 --reps 3)
  set_tests_properties(bench_smoke_state_keys_stream PROPERTIES TIMEOUT 40 LABELS "mp;bench"
                       PASS_REGULAR_EXPRESSION "near_reps=[0-3] near_median_mps=[-0-9.]+ far_reps=[0-3] far_median_mps=[-0-9.]+")
  add_test(NAME bench_smoke_no_state_probe
           COMMAND $<TARGET_FILE:xprun> -n 2 --timeout 30 $<TARGET_FILE:ptl_pingpong>
                   --min-size 8 --max-size 8 --iters 50 --reps 3 --no-state-probe)
  set_tests_properties(bench_smoke_no_state_probe PROPERTIES TIMEOUT 40 LABELS "mp;bench"
                       FAIL_REGULAR_EXPRESSION "near_reps")
  # An option a benchmark does not honour is refused (exit 2), before any
  # Portals call: ptl_msgrate has no ME variant.
  add_test(NAME bench_smoke_option_refused COMMAND $<TARGET_FILE:ptl_msgrate> --me)
  set_tests_properties(bench_smoke_option_refused PROPERTIES TIMEOUT 20 LABELS "bench"
                       PASS_REGULAR_EXPRESSION "option --me is not one this benchmark takes")
endif()
# The probe compare.sh labels trials with: both of its figures, and a bad
# command line refused (exit 2).
if(XP_BUILD_BENCH AND EXISTS ${PROJECT_SOURCE_DIR}/bench/c2c_probe.c)
  add_test(NAME bench_smoke_c2c_probe COMMAND $<TARGET_FILE:c2c_probe> --iters 200 --samples 3)
  set_tests_properties(bench_smoke_c2c_probe PROPERTIES TIMEOUT 20 LABELS "bench"
                       PASS_REGULAR_EXPRESSION "oneway_ns=[0-9.]+ .*state=[a-z]+ ring_ns=[0-9.]+")
  add_test(NAME bench_smoke_c2c_probe_usage COMMAND $<TARGET_FILE:c2c_probe> --cpus 0,0)
  set_tests_properties(bench_smoke_c2c_probe_usage PROPERTIES TIMEOUT 20 LABELS "bench" WILL_FAIL TRUE)
  # The state takes both figures (each straddles its bound in the far state
  # of one VM or another): near only with both under their bounds, far when
  # either is over it.
  add_test(NAME bench_smoke_c2c_probe_ring_near
           COMMAND $<TARGET_FILE:c2c_probe> --iters 200 --samples 3 --near-ns 1e8 --busy-ns 1e9
                   --near-ring-ns 1e8)
  set_tests_properties(bench_smoke_c2c_probe_ring_near PROPERTIES TIMEOUT 20 LABELS "bench"
                       PASS_REGULAR_EXPRESSION "state=near ring_ns=[0-9.]+")
  add_test(NAME bench_smoke_c2c_probe_ring_far
           COMMAND $<TARGET_FILE:c2c_probe> --iters 200 --samples 3 --near-ns 1e8 --busy-ns 1e9
                   --near-ring-ns 0.001)
  set_tests_properties(bench_smoke_c2c_probe_ring_far PROPERTIES TIMEOUT 20 LABELS "bench"
                       PASS_REGULAR_EXPRESSION "state=far ring_ns=[0-9.]+")
  add_test(NAME bench_smoke_c2c_probe_oneway_far
           COMMAND $<TARGET_FILE:c2c_probe> --iters 200 --samples 3 --near-ns 1 --busy-ns 1e9
                   --near-ring-ns 1e8)
  set_tests_properties(bench_smoke_c2c_probe_oneway_far PROPERTIES TIMEOUT 20 LABELS "bench"
                       PASS_REGULAR_EXPRESSION "state=far ring_ns=[0-9.]+")
endif()
# The bare ring's costs (ring_stream): each mode runs and reports, and a bad
# command line is refused (exit 2).
if(XP_BUILD_BENCH AND EXISTS ${PROJECT_SOURCE_DIR}/bench/ring_stream.c)
  set(_xp_ring_smoke
    "stream|--packets 20000 --reps 2 --extra-stores 8"
    "noreader|--packets 20000 --reps 2 --no-reader"
    "pingpong|--mode pingpong --packets 5000 --reps 2 --touch 2")
  foreach(_spec ${_xp_ring_smoke})
    string(REPLACE "|" ";" _parts "${_spec}")
    list(GET _parts 0 _tag)
    list(GET _parts 1 _argstr)
    separate_arguments(_args UNIX_COMMAND "${_argstr}")
    add_test(NAME bench_smoke_ring_stream_${_tag} COMMAND $<TARGET_FILE:ring_stream> ${_args})
    set_tests_properties(bench_smoke_ring_stream_${_tag} PROPERTIES TIMEOUT 20 LABELS "bench"
                         PASS_REGULAR_EXPRESSION "bench=ring_stream mode=[a-z]+ .*median_ns=[0-9.]+")
  endforeach()
  add_test(NAME bench_smoke_ring_stream_usage COMMAND $<TARGET_FILE:ring_stream> --cells 100)
  set_tests_properties(bench_smoke_ring_stream_usage PROPERTIES TIMEOUT 20 LABELS "bench" WILL_FAIL TRUE)
endif()
