# Helpers that keep every layer's CMakeLists.txt short and uniform.
#
#   xp_layer(<name> SOURCES ... [DEPS xp_<layer>...] [PUBLIC_LIBS ...])
#       Static, position-independent library xp_<name>; all layers are folded
#       into libportals.so (see src/CMakeLists.txt). Unit tests link the static
#       layer so they can reach internal functions.
#   xp_test(<name> SOURCES ... [LIBS ...] [TIMEOUT s] [LABELS ...] [ARGS ...])
#       A single-process test registered with CTest (exit 77 = skipped).
#   xp_mp_test(<name> NP <n> SOURCES ... [LIBS ...] [TIMEOUT s] [XPRUN_ARGS ...] [ARGS ...])
#       A test program run as `xprun -n <n> --timeout <s> prog args`.
#   xp_program(<name> KIND bench|example SOURCES ... [LIBS ...])
#       A benchmark or example, built into <build>/libexec/xportals and installed
#       into PREFIX/libexec/xportals under the name of its source.

set(XP_LAYERS util runtime transport accel dt ptl xtq msg devapi coll)

# ThreadSanitizer runs the code 5-15 times slower, and the multi-process tests
# spin across processes: on a loaded 2-core machine they outran their limits
# (test_tl_mp, test_shmheap: 23 s of 30 when they passed). Every time limit
# (CTest's and xprun's) is multiplied by this factor in a TSan build.
if(XP_SANITIZE MATCHES "thread")
  set(XP_TEST_TIMEOUT_SCALE 4)
else()
  set(XP_TEST_TIMEOUT_SCALE 1)
endif()

function(xp_layer name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PUBLIC_LIBS" ${ARGN})
  add_library(xp_${name} STATIC ${A_SOURCES})
  target_include_directories(xp_${name}
    PUBLIC  ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(xp_${name} PUBLIC ${A_DEPS} ${A_PUBLIC_LIBS} Threads::Threads)
  set_target_properties(xp_${name} PROPERTIES C_VISIBILITY_PRESET hidden)
  set_property(GLOBAL APPEND PROPERTY XP_LAYER_TARGETS xp_${name})
endfunction()

function(_xp_test_target name)
  cmake_parse_arguments(A "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PRIVATE ${A_LIBS} Threads::Threads m)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
endfunction()

function(xp_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 60)
  endif()
  math(EXPR A_TIMEOUT "${A_TIMEOUT} * ${XP_TEST_TIMEOUT_SCALE}")
  _xp_test_target(${name} SOURCES ${A_SOURCES} LIBS ${A_LIBS})
  add_test(NAME ${name} COMMAND ${name} ${A_ARGS})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${A_TIMEOUT} SKIP_RETURN_CODE 77
                       LABELS "unit;${A_LABELS}")
endfunction()

function(xp_mp_test name)
  # SUFFIX names a variant (test <name><SUFFIX>_np<N>), ENV sets its environment.
  cmake_parse_arguments(A "" "NP;TIMEOUT;SUFFIX" "SOURCES;LIBS;LABELS;ARGS;XPRUN_ARGS;ENV" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 60)
  endif()
  math(EXPR A_TIMEOUT "${A_TIMEOUT} * ${XP_TEST_TIMEOUT_SCALE}")
  if(NOT TARGET ${name})
    _xp_test_target(${name} SOURCES ${A_SOURCES} LIBS ${A_LIBS})
  endif()
  set(_t ${name}${A_SUFFIX}_np${A_NP})
  add_test(NAME ${_t}
           COMMAND $<TARGET_FILE:xprun> -n ${A_NP} --timeout ${A_TIMEOUT} ${A_XPRUN_ARGS}
                   $<TARGET_FILE:${name}> ${A_ARGS})
  math(EXPR _ctest_timeout "${A_TIMEOUT} + 10")
  set_tests_properties(${_t} PROPERTIES TIMEOUT ${_ctest_timeout}
                       SKIP_RETURN_CODE 77 LABELS "mp;${A_LABELS}")
  if(A_ENV)
    set_tests_properties(${_t} PROPERTIES ENVIRONMENT "${A_ENV}")
  endif()
endfunction()

function(xp_program name)
  cmake_parse_arguments(A "" "KIND" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/bench)
  target_link_libraries(${name} PRIVATE ${A_LIBS} Threads::Threads m)
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/libexec/xportals
    INSTALL_RPATH "$ORIGIN/../../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS ${name} RUNTIME DESTINATION ${XP_LIBEXECDIR})
endfunction()

# Add <dir>/<layer> for every layer that has a CMakeLists.txt, in dependency order.
macro(xp_add_layer_dirs)
  foreach(_l ${XP_LAYERS})
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_l}/CMakeLists.txt)
      add_subdirectory(${_l})
    endif()
  endforeach()
endmacro()
