# Part 2b of the engine: several NIs per process, the unexpected-queue worst
# case, triggered list operations. Every test here runs through the real
# engine under xprun.
if(TARGET xprun AND TARGET portals)
  xp_mp_test(mp_multi_ni NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_multi_ni.c
             LIBS portals TIMEOUT 60 LABELS ptl)
  xp_mp_test(mp_multi_ni NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_multi_ni.c
             LIBS portals TIMEOUT 60 LABELS ptl)
endif()
if(TARGET xprun AND TARGET portals)
  xp_mp_test(mp_unexpected_deep NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_unexpected_deep.c
             LIBS portals TIMEOUT 60 LABELS ptl)
  xp_mp_test(mp_unexpected_deep NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_unexpected_deep.c
             LIBS portals TIMEOUT 60 LABELS ptl)
endif()
