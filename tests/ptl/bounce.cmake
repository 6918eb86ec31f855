# PtlPut (and PtlGet) through shm bounce blocks (mp_bounce.c): sizes around one packet and
# XP_SHM_BOUNCE_MAX, events, iovec MDs, truncation, dropped puts whose blocks
# must come back, threads; both progress modes, bounce blocks off, and a small cap. It
# links the engine's archive (not libportals.so) for xp_tl_bounce_alloc. Its
# block checks use 1 MiB puts, so most runs raise XP_SHM_BOUNCE_MAX to 2m and
# turn blocks on (XP_SHM_BOUNCE=on; auto may choose single copies here);
# _default runs the shipped settings (auto, 4m), _auto_off XP_SHM_BOUNCE=off.
# Puts above 64 KiB are pipelined (the target copies behind the initiator's
# staging).
if(TARGET xprun AND TARGET xp_ptl)
  xp_mp_test(mp_bounce NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_bounce.c LIBS xp_ptl
             TIMEOUT 30 LABELS ptl ENV XP_SHM_BOUNCE=on XP_SHM_BOUNCE_MAX=2m)
  xp_mp_test(mp_bounce NP 2 SUFFIX _default TIMEOUT 30 LABELS ptl)
  xp_mp_test(mp_bounce NP 2 SUFFIX _inline TIMEOUT 30 LABELS ptl
             ENV XP_PROGRESS=inline XP_SHM_BOUNCE=on XP_SHM_BOUNCE_MAX=2m)
  xp_mp_test(mp_bounce NP 2 SUFFIX _off TIMEOUT 30 LABELS ptl
             ENV XP_SHM_BOUNCE=on XP_SHM_BOUNCE_MAX=0)
  xp_mp_test(mp_bounce NP 2 SUFFIX _auto_off TIMEOUT 30 LABELS ptl ENV XP_SHM_BOUNCE=off)
  # A 16 MiB heap: a 4 MiB cap, so that puts and gets fall back to plain RMA
  # while blocks are out.
  xp_mp_test(mp_bounce NP 2 SUFFIX _smallheap TIMEOUT 30 LABELS ptl
             ENV XP_SHM_BOUNCE=on XP_SHM_HEAP_SIZE=16m XP_SHM_BOUNCE_MAX=2m)
  # The initiator exits right after posting bounce puts: they still land.
  xp_mp_test(mp_bounce NP 2 SUFFIX _die TIMEOUT 30 LABELS ptl ARGS --die
             ENV XP_SHM_BOUNCE=on XP_SHM_BOUNCE_MAX=2m)
  xp_mp_test(mp_bounce NP 2 SUFFIX _die_inline TIMEOUT 30 LABELS ptl ARGS --die
             ENV XP_PROGRESS=inline XP_SHM_BOUNCE=on XP_SHM_BOUNCE_MAX=2m)
endif()
