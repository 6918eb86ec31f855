# Small puts in every wire form (24-byte, 40-byte, multi-cell) arrive whole
# over the shared-memory ring, with the right event fields (mp_put_forms.c);
# both progress modes.
if(TARGET xprun)
  xp_mp_test(mp_put_forms NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_put_forms.c
             LIBS portals TIMEOUT 60 LABELS ptl)
  xp_mp_test(mp_put_forms NP 2 SUFFIX _inline TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=inline)
endif()
