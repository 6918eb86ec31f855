/* Unit tests of the wire helpers: value encoding, launcher keys, PMI lines. */
#include <stdint.h>

#include "runtime/kv_codec.h"
#include "runtime/pmi_wire.h"
#include "xp_test.h"
#include "xportals/xp.h"

static void test_roundtrip(void)
{
    unsigned char in[XP_KV_MAX_VALUE] = {0}, out[XP_KV_MAX_VALUE];
    char enc[2 * XP_KV_MAX_VALUE];
    uint32_t seed = 12345;
    for (size_t n = 0; n <= XP_KV_MAX_VALUE; n++) {
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            in[i] = (unsigned char)(seed >> 16);
        }
        xp_kv_encode(in, n, enc);
        XP_CHECK_EQ(strlen(enc), xp_kv_encoded_len(n));
        XP_CHECK(xp_pmi_token_ok(enc, 1) || n == 0);
        size_t len = 0;
        XP_CHECK_EQ(xp_kv_decode(enc, strlen(enc), out, sizeof out, &len), XP_OK);
        XP_CHECK_EQ(len, n);
        XP_CHECK(memcmp(in, out, n) == 0);
    }
}

static void test_decode_errors(void)
{
    unsigned char out[8];
    size_t len = 99;
    XP_CHECK_EQ(xp_kv_decode("A", 1, out, sizeof out, &len), XP_ERR_PROTOCOL); /* length 1 mod 4 */
    XP_CHECK_EQ(xp_kv_decode("AB=D", 4, out, sizeof out, &len), XP_ERR_PROTOCOL);
    XP_CHECK_EQ(xp_kv_decode("AB D", 4, out, sizeof out, &len), XP_ERR_PROTOCOL);
    XP_CHECK_EQ(xp_kv_decode("AAAAAAAAAAAAAAAA", 16, out, sizeof out, &len), XP_ERR_TRUNCATED);
    XP_CHECK_EQ(len, 99); /* untouched on error */
    XP_CHECK_EQ(xp_kv_decode("", 0, out, 0, &len), XP_OK);
    XP_CHECK_EQ(len, 0);
}

static void test_wire_key(void)
{
    char out[64];
    xp_kv_wire_key(3, "addr", 59, out);
    XP_CHECK_STR(out, "3/addr");
    char longkey[XP_KV_MAX_KEY + 1];
    memset(longkey, 'k', XP_KV_MAX_KEY);
    longkey[XP_KV_MAX_KEY] = '\0';
    xp_kv_wire_key(1234567, longkey, 59, out);
    XP_CHECK(strlen(out) <= 59);
    XP_CHECK(strncmp(out, "1234567/#", 9) == 0);
    char other[64];
    longkey[5] = 'x';
    xp_kv_wire_key(1234567, longkey, 59, other);
    XP_CHECK(strcmp(out, other) != 0); /* different keys, different hashes */
    XP_CHECK(xp_kv_key_ok("a.b-c_d/e:1"));
    XP_CHECK(xp_kv_key_ok(longkey));
    XP_CHECK(!xp_kv_key_ok(""));
    XP_CHECK(!xp_kv_key_ok(NULL));
    XP_CHECK(!xp_kv_key_ok("a b"));
    XP_CHECK(!xp_kv_key_ok("a=b"));
    XP_CHECK(!xp_kv_key_ok("a\nb"));
    char toolong[XP_KV_MAX_KEY + 2];
    memset(toolong, 'k', sizeof toolong - 1);
    toolong[sizeof toolong - 1] = '\0';
    XP_CHECK(!xp_kv_key_ok(toolong));
}

static void test_pmi_parse(void)
{
    char line[] = "cmd=get_result rc=0 msg=success value=a=b flag\n";
    xp_pmi_msg_t m;
    int rc = -5;
    XP_CHECK_EQ(xp_pmi_parse(line, &m), XP_OK);
    XP_CHECK_EQ(m.ntokens, 5);
    XP_CHECK_STR(xp_pmi_get(&m, "cmd"), "get_result");
    XP_CHECK_STR(xp_pmi_get(&m, "value"), "a=b"); /* split at the first '=' */
    XP_CHECK_STR(xp_pmi_get(&m, "flag"), "");
    XP_CHECK(xp_pmi_get(&m, "nope") == NULL);
    XP_CHECK_EQ(xp_pmi_get_int(&m, "rc", &rc), XP_OK);
    XP_CHECK_EQ(rc, 0);
    XP_CHECK_EQ(xp_pmi_get_int(&m, "msg", &rc), XP_ERR_PROTOCOL);
    XP_CHECK_EQ(xp_pmi_get_int(&m, "nope", &rc), XP_ERR_PROTOCOL);
    char empty[] = "   \n";
    XP_CHECK_EQ(xp_pmi_parse(empty, &m), XP_ERR_PROTOCOL);
    char many[200] = "";
    for (int i = 0; i < XP_PMI_MAX_TOKENS + 1; i++)
        strcat(many, "k=v ");
    XP_CHECK_EQ(xp_pmi_parse(many, &m), XP_ERR_PROTOCOL);
    XP_CHECK(!xp_pmi_token_ok("a b", 0));
    XP_CHECK(xp_pmi_token_ok("a=b", 0));
    XP_CHECK(!xp_pmi_token_ok("a=b", 1));
}

static void test_mapping(void)
{
    int node[16], n = -1;
    XP_CHECK_EQ(xp_pmi_parse_mapping("(vector,(0,1,4))", 4, node, &n), XP_OK);
    XP_CHECK_EQ(n, 1);
    XP_CHECK(node[0] == 0 && node[3] == 0);
    XP_CHECK_EQ(xp_pmi_parse_mapping("(vector,(0,2,4))", 8, node, &n), XP_OK);
    XP_CHECK_EQ(n, 2);
    XP_CHECK(node[3] == 0 && node[4] == 1 && node[7] == 1);
    /* round robin: the blocks repeat until every rank is placed */
    XP_CHECK_EQ(xp_pmi_parse_mapping("(vector,(0,3,1))", 7, node, &n), XP_OK);
    XP_CHECK_EQ(n, 3);
    XP_CHECK(node[0] == 0 && node[1] == 1 && node[2] == 2 && node[3] == 0 && node[6] == 0);
    XP_CHECK_EQ(xp_pmi_parse_mapping("(vector,(0,1,2),(1,2,1))", 4, node, &n), XP_OK);
    XP_CHECK(node[0] == 0 && node[1] == 0 && node[2] == 1 && node[3] == 2);
    XP_CHECK_EQ(n, 3);
    /* fewer ranks than the map describes */
    XP_CHECK_EQ(xp_pmi_parse_mapping("(vector,(0,2,4))", 3, node, &n), XP_OK);
    XP_CHECK_EQ(n, 1);
    const char *bad[] = {"", "(vector)", "(vector,(0,1))", "(vector,(0,1,0))", "(vector,(1,1,4))",
                         "(vector,(0,1,4)", "(vector,(0,1,4))x", "(vector,(-1,1,4))",
                         "(vector,(0,a,4))", "(list,(0,1,4))", "(vector,(0,1,4),(5,1,4))"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = -1;
        XP_CHECK_EQ(xp_pmi_parse_mapping(bad[i], 8, node, &n), XP_ERR_PROTOCOL);
        XP_CHECK_EQ(n, -1);
    }
    XP_CHECK_EQ(xp_pmi_parse_mapping(NULL, 8, node, &n), XP_ERR_PROTOCOL);
}

int main(void)
{
    test_mapping();
    test_roundtrip();
    test_decode_errors();
    test_wire_key();
    test_pmi_parse();
    return xp_test_result();
}
