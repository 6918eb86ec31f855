# The shm route's eager limit (mp_eager.c): puts and gets around
# XP_SHM_EAGER_MAX and one packet, inline below it and by single copy above
# it (XP_SHM_BOUNCE=off), at 4k, at a tiny 100 bytes, with single copies
# chosen (off: 4k), with bounce blocks (on: a whole packet), and as shipped
# (auto: the copy probe's choice), both progress modes. It links the
# engine's archive for xp_eng_eager_max.
if(TARGET xprun AND TARGET xp_ptl)
  xp_mp_test(mp_eager NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_eager.c LIBS xp_ptl
             TIMEOUT 30 LABELS ptl ENV XP_SHM_EAGER_MAX=4k XP_SHM_BOUNCE=off)
  xp_mp_test(mp_eager NP 2 SUFFIX _tiny TIMEOUT 30 LABELS ptl
             ENV XP_SHM_EAGER_MAX=100 XP_SHM_BOUNCE=off XP_PROGRESS=inline)
  xp_mp_test(mp_eager NP 2 SUFFIX _auto TIMEOUT 30 LABELS ptl)
  xp_mp_test(mp_eager NP 2 SUFFIX _single TIMEOUT 30 LABELS ptl ENV XP_SHM_BOUNCE=off)
  xp_mp_test(mp_eager NP 2 SUFFIX _packet TIMEOUT 30 LABELS ptl ENV XP_SHM_BOUNCE=on)
  # One rank with bounce blocks, the other with single copies (auto's probe
  # may choose so: the two ranks then had picked different sizes).
  xp_mp_test(mp_eager NP 2 SUFFIX _bounce0 TIMEOUT 30 LABELS ptl ENV MP_EAGER_BOUNCE_RANK=0)
  xp_mp_test(mp_eager NP 2 SUFFIX _bounce1 TIMEOUT 30 LABELS ptl ENV MP_EAGER_BOUNCE_RANK=1)
endif()
# A put made just before PtlNIFini / PtlFini lands whole although the
# initiator reuses its buffer right after (mp_fini_drain.c): single copies
# read it after PtlPut returned, so finalizing drains what is in flight.
if(TARGET xprun AND TARGET portals)
  xp_mp_test(mp_fini_drain NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_fini_drain.c LIBS portals
             TIMEOUT 30 LABELS ptl ENV XP_SHM_BOUNCE=off)
  xp_mp_test(mp_fini_drain NP 2 SUFFIX _ptlfini TIMEOUT 30 LABELS ptl ARGS --ptlfini
             ENV XP_SHM_BOUNCE=off)
  xp_mp_test(mp_fini_drain NP 2 SUFFIX _inline TIMEOUT 30 LABELS ptl
             ENV XP_SHM_BOUNCE=off XP_PROGRESS=inline)
endif()
