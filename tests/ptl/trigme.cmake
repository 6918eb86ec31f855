# Triggered list operations (PtlTriggeredMEAppend/MEUnlink/LEAppend/LEUnlink,
# the PTL_HAVE_TRIGGERED_ME_OPS extension): one process sending to itself,
# and a remote arrival releasing an append (np 2).
if(TARGET portals)
  xp_test(test_trig_me SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_trig_me.c
          LIBS portals TIMEOUT 30 LABELS ptl)
endif()
if(TARGET xprun AND TARGET portals)
  xp_mp_test(mp_trig_me NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_trig_me.c
             LIBS portals TIMEOUT 30 LABELS ptl)
endif()
