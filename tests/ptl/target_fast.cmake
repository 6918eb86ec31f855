# Tests of the target's small-message short cuts (src/ptl/target.c, atomic_ops.c).
if(TARGET xprun)
  xp_mp_test(test_target_fast NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_target_fast.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_target_fast NP 3 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_target_fast.c LIBS portals TIMEOUT 60)
endif()
# The one-pass path for small inline puts and the entry options, PT states
# and matching cases that must leave it (target.c fast_put).
if(TARGET xprun)
  xp_mp_test(test_target_onepass NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_target_onepass.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_target_onepass NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_target_onepass.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_target_onepass NP 3 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_target_onepass.c LIBS portals TIMEOUT 60)
endif()
# Gets of up to 4 KiB: the compact request, PtlGet's memo and the target's
# one-pass get (target.c fast_get), and the cases that must take the full path.
if(TARGET xprun)
  xp_mp_test(test_get_onepass NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_get_onepass.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_get_onepass NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_get_onepass.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_get_onepass NP 3 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_get_onepass.c LIBS portals TIMEOUT 60)
  # The compact get's bound follows the route's eager limit: 1-4 KiB by
  # single copy here, with the same results.
  xp_mp_test(test_get_onepass NP 2 SUFFIX _eager1k TIMEOUT 60
             ENV XP_SHM_EAGER_MAX=1024 XP_SHM_BOUNCE=off)
endif()
