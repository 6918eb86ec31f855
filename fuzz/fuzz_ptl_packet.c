/* libFuzzer harness: the engine's packet handler (see ptl_packet_env.h for
 * the input format and what the environment holds). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ptl_packet_env.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xp_fuzz_ptl_setup();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned long runs;
    xp_fuzz_ptl_feed(data, size);
    xp_fuzz_ptl_settle();
    /* Consumed entries and unexpected headers come back now and then, so a
     * long run keeps reaching every entry. */
    if (++runs % 1024 == 0)
        xp_fuzz_ptl_refill();
    if (!xp_fuzz_ptl_guards_ok())
        abort(); /* a write outside an entry's buffer */
    return 0;
}
