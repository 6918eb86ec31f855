# Part 2 of the engine: matching interfaces (ME semantics, unexpected
# headers, search, flow control, triggered operations across processes, the
# Open MPI mtl/portals4 pattern). Every test here runs through the real
# engine under xprun.
if(TARGET xprun AND TARGET portals)
  xp_mp_test(test_me_semantics NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_me_semantics.c
             LIBS portals TIMEOUT 30 LABELS ptl)
endif()
if(TARGET xprun AND TARGET portals)
  xp_mp_test(test_me_property NP 1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_me_property.c
             LIBS portals TIMEOUT 60 LABELS ptl ARGS 300 200)
endif()
if(TARGET xprun AND TARGET portals)
  xp_mp_test(mp_flowctl NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_flowctl.c
             LIBS portals TIMEOUT 60 LABELS ptl)
  xp_mp_test(mp_flowctl NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_flowctl.c
             LIBS portals TIMEOUT 60 LABELS ptl)
endif()
if(TARGET xprun AND TARGET portals)
  xp_mp_test(mp_ompi_pattern NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_ompi_pattern.c
             LIBS portals TIMEOUT 60 LABELS ptl)
  xp_mp_test(mp_ompi_pattern NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_ompi_pattern.c
             LIBS portals TIMEOUT 60 LABELS ptl)
endif()
