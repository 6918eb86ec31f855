# Reproducers found by running the Portals 4 reference test suites (test/basic,
# test/sfw) against libportals. One process each, under xprun.
if(TARGET xprun AND TARGET portals)
  xp_mp_test(conf3_search_persistent NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/conf3_search_persistent.c
             LIBS portals TIMEOUT 30 LABELS ptl conformance)
  xp_mp_test(conf3_eq_dropped NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/conf3_eq_dropped.c
             LIBS portals TIMEOUT 30 LABELS ptl conformance)
  xp_mp_test(conf3_abort_status NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/conf3_abort_status.c
             LIBS portals TIMEOUT 30 LABELS ptl conformance)
endif()
if(TARGET xprun AND TARGET portals)
  xp_mp_test(test_uh_rlength NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_uh_rlength.c
             LIBS portals TIMEOUT 30 LABELS ptl conformance)
endif()
