# Header and reference-suite conformance: include/portals4.h offers what
# Portals 4 clients use, builds as C99 and C++, and the installed library
# works the way clients build against it.
xp_test(test_header SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_header.c
        LIBS portals TIMEOUT 30 LABELS ptl header)
# A prototype that differs from the clients' must stop the build, not warn.
target_compile_options(test_header PRIVATE -Werror=incompatible-pointer-types
                       -Werror=discarded-qualifiers)

# Compile-only checks of the header alone: ISO C99 without GNU extensions,
# and C++ (extern "C", exact prototypes). Run as tests so that a missing C++
# compiler skips instead of breaking the build.
add_test(NAME header_c99
         COMMAND ${CMAKE_C_COMPILER} -std=c99 -pedantic-errors -Wall -Wextra -Werror
                 -fsyntax-only -I${PROJECT_SOURCE_DIR}/include
                 ${CMAKE_CURRENT_LIST_DIR}/header_c99.c)
set_tests_properties(header_c99 PROPERTIES TIMEOUT 30 LABELS "unit;ptl;header")
find_program(XP_CXX_FOR_HEADER_TEST NAMES c++ g++ clang++)
if(XP_CXX_FOR_HEADER_TEST)
  add_test(NAME header_cxx
           COMMAND ${XP_CXX_FOR_HEADER_TEST} -std=c++11 -pedantic-errors -Wall -Wextra -Werror
                   -fsyntax-only -I${PROJECT_SOURCE_DIR}/include
                   ${CMAKE_CURRENT_LIST_DIR}/header_cxx.cpp)
  set_tests_properties(header_cxx PROPERTIES TIMEOUT 30 LABELS "unit;ptl;header")
endif()

# Install into a temporary prefix and build/run a client against it the way
# clients do (-I/-L/-lportals and pkg-config portals4), under the installed
# xprun. Needs the whole tree built (cmake --install copies every target).
# Not in sanitizer builds: the plain client would load libportals without the
# sanitizer runtime first.
if(TARGET xprun AND NOT XP_SANITIZE)
  add_test(NAME install_client
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/install_check.sh ${PROJECT_BINARY_DIR}
                   ${CMAKE_C_COMPILER} ${CMAKE_CURRENT_LIST_DIR}/install_client.c)
  set_tests_properties(install_client PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
                       ENVIRONMENT "CMAKE_COMMAND=${CMAKE_COMMAND}"
                       LABELS "install;header")
endif()

# Behaviours the reference implementation's test suite (test/basic) checks,
# in our own tests.
if(TARGET xprun)
  xp_mp_test(ref_search_counters NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/ref_search_counters.c
             LIBS portals TIMEOUT 30 LABELS ptl header)
endif()
