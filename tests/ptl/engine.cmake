# Tests of the Portals engine core (src/ptl/engine.cmake).
if(TARGET xprun)
  xp_mp_test(test_engine_putget NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_putget.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_engine_putget NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_putget.c LIBS portals TIMEOUT 60)
endif()
if(TARGET xprun)
  xp_mp_test(test_engine_atomic NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_atomic.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_engine_atomic NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_atomic.c LIBS portals TIMEOUT 60)
endif()
# Small replies (gets of 1..40 bytes, fetch-adds) into a plain MD at offsets 0..3,
# from this process to itself: every byte of the MD checked.
xp_test(test_reply_small SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_reply_small.c LIBS portals
        TIMEOUT 30 LABELS ptl)
# PtlPut's compact path and the cases it hands to the general one (lengths
# around 255, every ack_req, send counting, EQ, iovec, whole address space,
# a map set by PtlSetMap), and bad arguments (errors, no crash).
xp_test(test_put_paths SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_put_paths.c LIBS portals
        TIMEOUT 30 LABELS ptl)
