# PtlPut's memo of its last compact put never sends with what went stale,
# never mixes up MDs or targets (mp_put_memo.c); both progress modes.
if(TARGET xprun)
  xp_mp_test(mp_put_memo NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_put_memo.c
             LIBS portals TIMEOUT 60 LABELS ptl)
  xp_mp_test(mp_put_memo NP 2 SUFFIX _inline TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=inline)
endif()
