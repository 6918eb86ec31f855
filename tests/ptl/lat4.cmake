# The packet handler's lock-free PT entry and CT count against application
# threads of the target (mp_lat4_race.c: list churn, triggered increments,
# PtlCTInc and sleeping waiters while messages stream in); both progress modes.
if(TARGET xprun)
  xp_mp_test(mp_lat4_race NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_lat4_race.c
             LIBS portals TIMEOUT 30 LABELS ptl)
  if(TARGET mp_lat4_race)
    add_test(NAME mp_lat4_race_inline_np2
             COMMAND $<TARGET_FILE:xprun> -n 2 --timeout 30 $<TARGET_FILE:mp_lat4_race>)
    set_tests_properties(mp_lat4_race_inline_np2 PROPERTIES TIMEOUT 40 SKIP_RETURN_CODE 77
                         ENVIRONMENT "XP_PROGRESS=inline" LABELS "mp;ptl")
  endif()
endif()
