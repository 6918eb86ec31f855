# Tests of the Portals engine core (src/ptl/engine.cmake).
if(TARGET xprun)
  xp_mp_test(test_engine_putget NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_putget.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_engine_putget NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_putget.c LIBS portals TIMEOUT 60)
endif()
if(TARGET xprun)
  xp_mp_test(test_engine_atomic NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_atomic.c LIBS portals TIMEOUT 60)
  xp_mp_test(test_engine_atomic NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_atomic.c LIBS portals TIMEOUT 60)
endif()
