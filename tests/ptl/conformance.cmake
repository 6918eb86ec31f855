# Portals 4 conformance tests (non-matching interfaces): argument checking,
# error codes and semantics of every call, event fields, the SOS pattern.
# The engine linked statically (xp_ptl, not libportals): abort_waiters asks
# the engine how many threads wait before it calls PtlAbort.
xp_test(test_api_errors SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_api_errors.c
        LIBS xp_ptl TIMEOUT 30 LABELS ptl conformance)
if(TARGET xprun)
  xp_mp_test(mp_events NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_events.c
             LIBS portals TIMEOUT 30 LABELS ptl conformance)
  xp_mp_test(mp_events NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_events.c
             LIBS portals TIMEOUT 30 LABELS ptl conformance)
endif()
if(TARGET xprun)
  xp_mp_test(mp_sos_pattern NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_sos_pattern.c
             LIBS portals TIMEOUT 30 LABELS ptl conformance)
  xp_mp_test(mp_sos_pattern NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_sos_pattern.c
             LIBS portals TIMEOUT 30 LABELS ptl conformance)
endif()
# libportals dlopen'ed, initialized, never finalized, dlclose'd, as Open MPI
# does with osc/portals4: the process must go on (test_dlclose.c). Not linked
# with libportals, so the dlclose would really drop the last reference.
xp_test(test_dlclose SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dlclose.c
        LIBS ${CMAKE_DL_LIBS} TIMEOUT 30 LABELS ptl ARGS $<TARGET_FILE:portals>)
target_include_directories(test_dlclose PRIVATE ${PROJECT_SOURCE_DIR}/include)
