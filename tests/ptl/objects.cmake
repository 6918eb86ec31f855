# Tests of the objects part of the engine (handles, CT, EQ, atomics,
# triggered operations). The unit tests build the modules from source so they
# do not depend on the rest of the engine.
set(_obj ${PROJECT_SOURCE_DIR}/src/ptl)
xp_test(test_atomic_ops SOURCES test_atomic_ops.c ${_obj}/atomic_ops.c
        LIBS xp_util TIMEOUT 60 LABELS ptl)
