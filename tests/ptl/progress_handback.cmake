# After a long run of busy waits, a rank that leaves the library to compute
# still answers gets through its progress thread within its longest park
# (mp_progress_handback.c).
if(TARGET xprun)
  xp_mp_test(mp_progress_handback NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_progress_handback.c
             LIBS portals TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=thread)
endif()
# OpenSHMEM's put + spin on a flag in memory: the progress thread alone
# handles the puts and gives the shared CPU back after each (mp_progress_memspin.c).
if(TARGET xprun)
  xp_mp_test(mp_progress_memspin NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_progress_memspin.c
             LIBS portals TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=thread)
endif()
# Fetch-adds to a rank whose application thread parked in PtlCTWait: its
# progress thread serves them without a sleep after each (mp_fetch_parked.c).
if(TARGET xprun)
  xp_mp_test(mp_fetch_parked NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_fetch_parked.c
             LIBS portals TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=thread)
  # Its bound compares times: beside another multi-process test (-j2 on 2
  # CPUs, or the ASan suite beside it) a descheduled initiator outlasts the
  # progress thread's spin (1 failure in 11 beside the ASan suite).
  set_tests_properties(mp_fetch_parked_np2 PROPERTIES RUN_SERIAL TRUE)
endif()
# Ranks that wait only by non-blocking looks (an MPI library's progress
# loop), also more ranks than CPUs, in both progress modes (mp_poll_loop.c).
if(TARGET xprun)
  foreach(_np 2 4)
    xp_mp_test(mp_poll_loop NP ${_np} SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_poll_loop.c
               LIBS portals TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=thread)
    xp_mp_test(mp_poll_loop NP ${_np} SUFFIX _inline TIMEOUT 60 LABELS ptl
               ENV XP_PROGRESS=inline)
    # Its bound is on time per message with the CPUs the machine has: run
    # beside another test (make check's -j2: the two 4-rank variants
    # together, 8 ranks on 2 CPUs) it measured 250 us against 3-14 alone.
    set_tests_properties(mp_poll_loop_np${_np} mp_poll_loop_inline_np${_np}
                         PROPERTIES RUN_SERIAL TRUE)
  endforeach()
endif()
# An idle rank costs < 1 % of a CPU, waiting in PtlCTWait or computing
# outside the library, in both progress modes (mp_idle.c).
if(TARGET xprun)
  xp_mp_test(mp_idle NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_idle.c
             LIBS portals TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=thread)
  xp_mp_test(mp_idle NP 2 SUFFIX _inline TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=inline)
endif()
# More ranks than CPUs (4 ranks; 2 CPUs here): a token ring of puts with
# blocking waits takes microseconds per hop, both progress modes, and a
# timed wait ends at its timeout, within the waiters' yield phase or after it
# (mp_ring_oversub.c). Serial: its bound is on time with the machine's CPUs.
if(TARGET xprun)
  xp_mp_test(mp_ring_oversub NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_ring_oversub.c
             LIBS portals TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=thread)
  xp_mp_test(mp_ring_oversub NP 4 SUFFIX _inline TIMEOUT 60 LABELS ptl
             ENV XP_PROGRESS=inline XP_OVERSUB_YIELD_US=200000)
  set_tests_properties(mp_ring_oversub_np4 mp_ring_oversub_inline_np4 PROPERTIES RUN_SERIAL TRUE)
endif()
# More ranks than CPUs and two of them computing: the other two ping-pong in
# microseconds, woken once per packet; or the two waiting (asleep): the pair
# ping-pongs without yielding to nobody (mp_beside_compute.c). Serial: its
# bound is on time with the machine's CPUs.
if(TARGET xprun)
  xp_mp_test(mp_beside_compute NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_beside_compute.c
             LIBS portals TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=thread)
  xp_mp_test(mp_beside_compute NP 4 SUFFIX _inline TIMEOUT 60 LABELS ptl ENV XP_PROGRESS=inline)
  xp_mp_test(mp_beside_compute NP 4 SUFFIX _waiting TIMEOUT 60 LABELS ptl
             ENV XP_PROGRESS=thread MP_OTHERS_WAIT=1)
  xp_mp_test(mp_beside_compute NP 4 SUFFIX _waiting_inline TIMEOUT 60 LABELS ptl
             ENV XP_PROGRESS=inline MP_OTHERS_WAIT=1)
  set_tests_properties(mp_beside_compute_np4 mp_beside_compute_inline_np4
                       mp_beside_compute_waiting_np4 mp_beside_compute_waiting_inline_np4
                       PROPERTIES RUN_SERIAL TRUE)
endif()
# A sender that overflows its peer's ring, also with both ranks on one CPU
# (taskset -c 0), where the peer drains it only if the sender yields
# (mp_full_ring.c). Serial: its bound is on time.
if(TARGET xprun)
  xp_mp_test(mp_full_ring NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_full_ring.c
             LIBS portals TIMEOUT 60 LABELS ptl)
  set_tests_properties(mp_full_ring_np2 PROPERTIES RUN_SERIAL TRUE)
  find_program(XP_TASKSET taskset)
  if(XP_TASKSET)
    foreach(_p thread inline)
      add_test(NAME mp_full_ring_onecpu_${_p}_np2
               COMMAND ${XP_TASKSET} -c 0 $<TARGET_FILE:xprun> -n 2 --timeout 60
                       -x XP_PROGRESS=${_p} $<TARGET_FILE:mp_full_ring>)
      set_tests_properties(mp_full_ring_onecpu_${_p}_np2 PROPERTIES TIMEOUT 70 RUN_SERIAL TRUE
                           SKIP_RETURN_CODE 77 LABELS "mp;ptl")
    endforeach()
  endif()
endif()
