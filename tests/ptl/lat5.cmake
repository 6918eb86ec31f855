# The poll lock (ptl/engine.h: plain-store release, sleepers' fence
# handshake): exclusion, blocking and trying lockers, no lost wake-up, with
# full fences and with the membarrier-based asymmetric ones.
xp_test(test_poll_lock SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_poll_lock.c
        LIBS xp_ptl TIMEOUT 30 LABELS ptl)
# The compact wire forms of small puts and counting ACKs (ptl/wire.h).
xp_test(test_wire SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_wire.c LIBS xp_ptl TIMEOUT 30 LABELS ptl)
