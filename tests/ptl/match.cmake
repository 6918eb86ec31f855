# The matching module: built from match.c directly so the test does not
# depend on the rest of the engine compiling.
xp_test(test_match SOURCES test_match.c ${PROJECT_SOURCE_DIR}/src/ptl/match.c
        LIBS xp_util TIMEOUT 60 LABELS ptl)
# Micro-benchmark of the module alone (run by hand, not a test).
add_executable(bench_match bench_match.c ${PROJECT_SOURCE_DIR}/src/ptl/match.c)
target_include_directories(bench_match PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(bench_match PRIVATE xp_util)
set_target_properties(bench_match PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
