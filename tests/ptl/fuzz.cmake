# The engine's packet handler on malformed packets: a singleton process links
# the static engine and feeds xp_eng_recv directly (fuzz/ptl_packet_env.c is
# shared with the libFuzzer harness of fuzz/).
xp_test(test_fuzz_packet
        SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuzz_packet.c
                ${PROJECT_SOURCE_DIR}/fuzz/ptl_packet_env.c
        LIBS xp_ptl TIMEOUT 120 LABELS ptl fuzz)
