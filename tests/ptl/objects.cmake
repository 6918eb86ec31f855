# Tests of the objects part of the engine (handles, CT, EQ, atomics,
# triggered operations). The unit tests build the modules from source so they
# do not depend on the rest of the engine.
set(_obj ${PROJECT_SOURCE_DIR}/src/ptl)
xp_test(test_atomic_ops SOURCES test_atomic_ops.c ${_obj}/atomic_ops.c
        LIBS xp_util TIMEOUT 60 LABELS ptl)
xp_test(test_handle SOURCES test_handle.c ${_obj}/handle.c
        LIBS xp_util TIMEOUT 60 LABELS ptl)
# CT, EQ and triggered operations against a stand-in engine (objects_fake_engine.c).
set(_obj_srcs ${_obj}/handle.c ${_obj}/ct.c ${_obj}/eq.c ${_obj}/triggered.c
    ${_obj}/atomic_ops.c objects_fake_engine.c)
xp_test(test_ct SOURCES test_ct.c ${_obj_srcs} LIBS xp_util TIMEOUT 60 LABELS ptl)
xp_test(test_eq SOURCES test_eq.c ${_obj_srcs} LIBS xp_util TIMEOUT 60 LABELS ptl)
xp_test(test_triggered SOURCES test_triggered.c ${_obj_srcs} LIBS xp_util TIMEOUT 60 LABELS ptl)
# Through the real engine, several processes (needs xprun and the engine).
if(TARGET xprun AND EXISTS ${PROJECT_SOURCE_DIR}/src/ptl/engine.cmake)
  xp_mp_test(test_triggered_mp NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_triggered_mp.c
             LIBS portals TIMEOUT 30 LABELS ptl)
  xp_mp_test(test_triggered_mp NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_triggered_mp.c
             LIBS portals TIMEOUT 30 LABELS ptl)
endif()
