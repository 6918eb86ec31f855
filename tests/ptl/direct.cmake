# Atomics and puts applied by the initiator straight into the target's
# shared heap, and what keeps them on the ring (mp_direct.c): inline
# progress (the target makes no call while the path must serve), 2 and 4
# ranks, the progress thread, the path turned off (XP_SHM_DIRECT=0: the
# same results) and puts and gets above 4 KiB kept on the ring
# (XP_SHM_DIRECT_MAX=4k).
if(TARGET xprun)
  xp_mp_test(mp_direct NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_direct.c LIBS xp_ptl
             TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=inline)
  xp_mp_test(mp_direct NP 4 TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=inline)
  xp_mp_test(mp_direct NP 2 SUFFIX _thread TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=thread)
  xp_mp_test(mp_direct NP 2 SUFFIX _off TIMEOUT 60 LABELS ptl
             ENV XP_PROGRESS=inline XP_SHM_DIRECT=0)
  # The same with the large puts staged in bounce blocks, which the copy
  # probe may pick for _off too (their SEND is posted at once, from the
  # request: mlength 0, as in mp_bounce.c).
  xp_mp_test(mp_direct NP 2 SUFFIX _off_bounce TIMEOUT 60 LABELS ptl
             ENV XP_PROGRESS=inline XP_SHM_DIRECT=0 XP_SHM_BOUNCE=on)
  # (Bounce blocks off: a put staged in one has its SEND at once, and the
  # copy probe picks them on a loaded machine.)
  xp_mp_test(mp_direct NP 3 SUFFIX _max TIMEOUT 60 LABELS ptl
             ENV XP_PROGRESS=inline XP_SHM_DIRECT_MAX=4k XP_SHM_BOUNCE=off)
endif()
# The close handshake alone, one process, two threads (test_direct_close.c):
# the busy words and the membarrier where the process takes membarriers,
# and (_locked) the locked count, as without them (XP_SHM_ASYM_FENCE=0).
xp_test(test_direct_close SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_direct_close.c LIBS xp_ptl
        TIMEOUT 60 LABELS ptl)
add_test(NAME test_direct_close_locked COMMAND test_direct_close)
set_tests_properties(test_direct_close_locked PROPERTIES TIMEOUT 60 LABELS "ptl;unit"
                     ENVIRONMENT XP_SHM_ASYM_FENCE=0)
# A peer that dies inside a direct access: the target's close gives up
# waiting once it finds the peer dead (mp_direct_dead.c).
if(TARGET xprun)
  xp_mp_test(mp_direct_dead NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_direct_dead.c LIBS xp_ptl
             TIMEOUT 30 LABELS ptl ENV XP_PROGRESS=inline)
endif()
