# Portals engine core (see engine.h): init, NI, PT and lists, MD, protocol, progress.
list(APPEND XP_PTL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/init.c
  ${CMAKE_CURRENT_LIST_DIR}/ni.c
  ${CMAKE_CURRENT_LIST_DIR}/pt.c
  ${CMAKE_CURRENT_LIST_DIR}/direct.c
  ${CMAKE_CURRENT_LIST_DIR}/md.c
  ${CMAKE_CURRENT_LIST_DIR}/ops.c
  ${CMAKE_CURRENT_LIST_DIR}/target.c
  ${CMAKE_CURRENT_LIST_DIR}/progress.c)
