# Several application threads putting to one peer through one MD
# (mp_threads_put.c): counts, per-thread order, order across threads that
# hand a token on, and PtlMDRelease afterwards; with both progress modes.
if(TARGET xprun)
  xp_mp_test(mp_threads_put NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_threads_put.c
             LIBS portals TIMEOUT 30 LABELS ptl)
  if(TARGET mp_threads_put)
    add_test(NAME mp_threads_put_inline_np2
             COMMAND $<TARGET_FILE:xprun> -n 2 --timeout 30 $<TARGET_FILE:mp_threads_put>)
    set_tests_properties(mp_threads_put_inline_np2 PROPERTIES TIMEOUT 40 SKIP_RETURN_CODE 77
                         ENVIRONMENT "XP_PROGRESS=inline" LABELS "mp;ptl")
    add_test(NAME mp_threads_put_nolanes_np2
             COMMAND $<TARGET_FILE:xprun> -n 2 --timeout 30 $<TARGET_FILE:mp_threads_put>)
    set_tests_properties(mp_threads_put_nolanes_np2 PROPERTIES TIMEOUT 40 SKIP_RETURN_CODE 77
                         ENVIRONMENT "XP_SHM_PAIR_RING_SIZE=0" LABELS "mp;ptl")
  endif()
endif()
