# Gets staged in a bounce block of the target (mp_bounce_get.c): both
# progress modes (XP_SHM_BOUNCE=on), with bounce blocks off (the same checks
# hold with the single-copy write), and auto (whatever the copy probe chooses).
if(TARGET xprun)
  xp_mp_test(mp_bounce_get NP 2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/mp_bounce_get.c LIBS xp_ptl
             TIMEOUT 60 LABELS ptl ENV XP_SHM_BOUNCE=on)
  if(TARGET mp_bounce_get)
    foreach(_run "inline|XP_PROGRESS=inline,XP_SHM_BOUNCE=on" "off|XP_SHM_BOUNCE_MAX=0"
                 "auto|XP_SHM_BOUNCE=auto")
      string(REPLACE "|" ";" _f "${_run}")
      list(GET _f 0 _name)
      list(GET _f 1 _env)
      string(REPLACE "," ";" _env "${_env}")
      add_test(NAME mp_bounce_get_${_name}
               COMMAND $<TARGET_FILE:xprun> -n 2 --timeout 60 $<TARGET_FILE:mp_bounce_get>)
      set_tests_properties(mp_bounce_get_${_name} PROPERTIES TIMEOUT 70 SKIP_RETURN_CODE 77
                           ENVIRONMENT "${_env}" LABELS "mp;ptl")
    endforeach()
  endif()
endif()
