# Tests of the target's small-message short cuts (src/ptl/target.c, atomic_ops.c).
if(TARGET xprun)
  xp_mp_test(test_target_fast NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_target_fast.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_target_fast NP 3 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_target_fast.c LIBS portals TIMEOUT 60)
endif()
