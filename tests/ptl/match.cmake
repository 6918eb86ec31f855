# The matching module: built from match.c directly so the test does not
# depend on the rest of the engine compiling.
xp_test(test_match SOURCES test_match.c ${PROJECT_SOURCE_DIR}/src/ptl/match.c
        LIBS xp_util TIMEOUT 60 LABELS ptl)
