# The wait's spin slots (ptl/progress.c): more application threads waiting
# at once than there are slots, in both progress modes. The engine linked
# statically (xp_ptl): the test reads the engine's counts.
xp_test(test_spin_slots SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_spin_slots.c
        LIBS xp_ptl TIMEOUT 60 LABELS ptl)
add_test(NAME test_spin_slots_inline COMMAND test_spin_slots)
set_tests_properties(test_spin_slots_inline PROPERTIES ENVIRONMENT "XP_PROGRESS=inline"
                     LABELS "unit;ptl" SKIP_RETURN_CODE 77 TIMEOUT 60)
# An oversubscribed wait's bound on a yield that found nobody to run: from
# the machine's system-call cost, and above what such a yield takes here
# (test_yield_alone.c). The engine linked statically (xp_ptl).
xp_test(test_yield_alone SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_yield_alone.c
        LIBS xp_ptl TIMEOUT 60 LABELS ptl)
