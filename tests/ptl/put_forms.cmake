# Small puts in every wire form (24-byte, 40-byte, multi-cell) arrive whole
# over the shared-memory ring, with the right event fields (mp_put_forms.c);
# both progress modes.
if(TARGET xprun)
  xp_mp_test(mp_put_forms NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_put_forms.c
             LIBS portals TIMEOUT 60 LABELS ptl)
  xp_mp_test(mp_put_forms NP 2 SUFFIX _inline TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=inline)
endif()
# Longer puts by single copy: the compact path's bound follows the route's
# eager limit (XP_SHM_EAGER_MAX), not only the compact form's 4 KiB.
if(TARGET xprun)
  xp_mp_test(mp_put_forms NP 2 SUFFIX _eager1k TIMEOUT 60 LABELS ptl
             ENV XP_SHM_EAGER_MAX=1024 XP_SHM_BOUNCE=off)
endif()
