# Portals objects: handles, counting events, event queues, atomic arithmetic,
# triggered operations (see src/ptl/CMakeLists.txt).
list(APPEND XP_PTL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/atomic_ops.c
  ${CMAKE_CURRENT_LIST_DIR}/handle.c)
# CT, EQ and triggered operations call into the engine (NI, progress, PtlPut):
# they join the library together with it.
if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/engine.cmake)
  list(APPEND XP_PTL_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/ct.c
    ${CMAKE_CURRENT_LIST_DIR}/eq.c
    ${CMAKE_CURRENT_LIST_DIR}/triggered.c)
endif()
