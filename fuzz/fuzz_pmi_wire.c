/* libFuzzer harness: the PMI-1 line parser and the process-mapping parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pmi_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    /* The same text both ways: as a command line and as a mapping value. */
    int node_of[64], nn, rank_count = size ? 1 + data[0] % 64 : 1;
    if (xp_pmi_parse_mapping(line, rank_count, node_of, &nn) == XP_OK) {
        for (int i = 0; i < rank_count; i++)
            if (node_of[i] < 0 || node_of[i] >= nn)
                abort();
    }
    xp_pmi_msg_t msg;
    if (xp_pmi_parse(line, &msg) == XP_OK) {
        int v;
        for (int i = 0; i < msg.ntokens; i++)
            if (!xp_pmi_get(&msg, msg.key[i]) || strchr(msg.key[i], '='))
                abort();
        (void)xp_pmi_get_int(&msg, "rc", &v);
        (void)xp_pmi_token_ok(msg.value[0], 0);
    }
    free(line);
    return 0;
}
