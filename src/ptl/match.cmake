# The matching module (priority / overflow lists, unexpected headers).
list(APPEND XP_PTL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/match.c)
