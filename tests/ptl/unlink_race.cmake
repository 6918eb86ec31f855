# PtlMEUnlink against the handler's auto-unlink of the same use-once ME
# (mp_unlink_race.c). The progress thread gets a CPU of its own
# (--bind-to none) so that unlink and handler overlap; inline progress checks
# the same accounting with the handler in the waiting thread.
if(TARGET xprun)
  xp_mp_test(mp_unlink_race NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_unlink_race.c
             LIBS portals TIMEOUT 30 LABELS ptl XPRUN_ARGS --bind-to none)
  xp_mp_test(mp_unlink_race NP 2 SUFFIX _inline TIMEOUT 30 LABELS ptl ENV XP_PROGRESS=inline)
endif()
