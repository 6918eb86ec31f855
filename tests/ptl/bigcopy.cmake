# Large puts and gets between processes, every byte checked (mp_bigcopy.c):
# the shm split copy (XP_SHM_SPLIT_MIN) and the plain single copy (iovec
# MDs/LEs, or 4 ranks on a 2-CPU machine), both progress modes; a peer
# that dies in the middle of large transfers (--die); and (staged_*) the
# relative alignments that go through the transport's stage.
if(TARGET xprun)
  xp_mp_test(mp_bigcopy NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_bigcopy.c LIBS portals
             TIMEOUT 60 LABELS ptl)
  xp_mp_test(mp_bigcopy NP 4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_bigcopy.c LIBS portals
             TIMEOUT 60 LABELS ptl)
  if(TARGET mp_bigcopy)
    # name | np | environment | arguments
    set(_bigcopy_runs
      "inline_np2|2|XP_PROGRESS=inline|"
      "inline_np4|4|XP_PROGRESS=inline|"
      "nosplit_np2|2|XP_SHM_SPLIT_MIN=0|"
      "die_np2|2|XP_PROGRESS=thread|--die"
      "die_inline_np2|2|XP_PROGRESS=inline|--die"
      "staged_get_np2|2|MP_BIGCOPY_SHIFT=-32|"
      "staged_put_np2|2|MP_BIGCOPY_SHIFT=-48|"
      "staged_nosplit_np2|2|MP_BIGCOPY_SHIFT=-48,XP_SHM_SPLIT_MIN=0|"
      "staged_get_inline_np4|4|MP_BIGCOPY_SHIFT=-32,XP_PROGRESS=inline|"
      "die_staged_np2|2|MP_BIGCOPY_SHIFT=-56,XP_SHM_SPLIT_MIN=0|--die")
    foreach(_run ${_bigcopy_runs})
      string(REPLACE "|" ";" _f "${_run}")
      list(GET _f 0 _name)
      list(GET _f 1 _np)
      list(GET _f 2 _env)
      string(REPLACE "," ";" _env "${_env}")
      list(LENGTH _f _nf)
      set(_args "")
      if(_nf GREATER 3)
        list(GET _f 3 _args)
      endif()
      add_test(NAME mp_bigcopy_${_name}
               COMMAND $<TARGET_FILE:xprun> -n ${_np} --timeout 60 $<TARGET_FILE:mp_bigcopy> ${_args})
      set_tests_properties(mp_bigcopy_${_name} PROPERTIES TIMEOUT 70 SKIP_RETURN_CODE 77
                           ENVIRONMENT "${_env}" LABELS "mp;ptl")
    endforeach()
  endif()
endif()
