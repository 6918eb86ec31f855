# A put made before xp_barrier has landed when the barrier returns at the
# target (mp_barrier_drain.c): thread progress bound and unbound (the
# progress thread asleep or on another CPU), inline progress, 3 ranks; the
# staged sizes through bounce blocks (XP_SHM_BOUNCE=on) and single copies (off).
if(TARGET xprun)
  xp_mp_test(mp_barrier_drain NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_barrier_drain.c
             LIBS portals TIMEOUT 60 LABELS ptl ENV XP_SHM_BOUNCE=on)
  xp_mp_test(mp_barrier_drain NP 2 SUFFIX _cma TIMEOUT 60 LABELS ptl ENV XP_SHM_BOUNCE=off)
  xp_mp_test(mp_barrier_drain NP 2 SUFFIX _unbound TIMEOUT 60 LABELS ptl XPRUN_ARGS --bind-to none)
  xp_mp_test(mp_barrier_drain NP 2 SUFFIX _inline TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=inline)
  xp_mp_test(mp_barrier_drain NP 3 TIMEOUT 60 LABELS ptl)
endif()
