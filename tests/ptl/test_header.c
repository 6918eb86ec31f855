/*
 * test_header.c - include/portals4.h offers every identifier that Portals 4
 * clients (the reference test suite, Sandia OpenSHMEM, Open MPI's portals4
 * components) use, with the types they expect.
 *
 * Compile-time part: each function is assigned to a pointer of the client's
 * prototype (header_sigs.inc; built with -Werror=incompatible-pointer-types),
 * each public struct is built with designated initialisers naming every field,
 * and every constant is used. Run-time part: the constants are consistent
 * (distinct return codes with PTL_OK == 0, option bits that do not overlap
 * and lie inside their masks, distinct enumerators below their *_LAST bound)
 * and the identification calls work on all four kinds of NI.
 */
#include <portals4.h>

#include <limits.h>
#include <stddef.h>

#include "xp_test.h"

/* ------------------------------------------------------------------ functions */

static int sig_count;

static void sig_seen(const volatile void *fn_nonnull)
{
    XP_CHECK(fn_nonnull != NULL);
    sig_count++;
}

static void check_signatures(void)
{
#define XP_SIG_SINK(p) sig_seen((p) ? (const volatile void *)&sig_count : NULL)
#include "header_sigs.inc"
#undef XP_SIG_SINK
    XP_CHECK_EQ(sig_count, 58); /* 54 + the 4 triggered list operations */
}

/* ------------------------------------------------------------------ types */

static void check_scalar_types(void)
{
    /* Widths the specification fixes (or clients store in fixed formats). */
    XP_CHECK_EQ(sizeof(ptl_size_t), 8);
    XP_CHECK_EQ(sizeof(ptl_match_bits_t), 8);
    XP_CHECK_EQ(sizeof(ptl_hdr_data_t), 8);
    XP_CHECK_EQ(sizeof(ptl_pt_index_t), 4);
    XP_CHECK_EQ(sizeof(ptl_nid_t), 4);
    XP_CHECK_EQ(sizeof(ptl_pid_t), 4);
    XP_CHECK_EQ(sizeof(ptl_rank_t), 4);
    XP_CHECK_EQ(sizeof(ptl_uid_t), 4);
    XP_CHECK_EQ(sizeof(ptl_jid_t), 4);
    XP_CHECK_EQ(sizeof(ptl_time_t), sizeof(unsigned int));
    XP_CHECK_EQ(sizeof(ptl_interface_t), sizeof(unsigned int));
    XP_CHECK_EQ(sizeof(ptl_sr_value_t), sizeof(int));
    XP_CHECK_EQ(sizeof(ptl_handle_any_t), 4);
    XP_CHECK_EQ(sizeof(ptl_process_t), 8); /* exchanged as raw bytes by SOS / OMPI */

    /* Unsigned where clients compare with ~0-style wildcards, signed registers. */
    XP_CHECK((ptl_size_t)-1 > 0);
    XP_CHECK((ptl_pt_index_t)-1 > 0);
    XP_CHECK((ptl_time_t)-1 > 0);
    XP_CHECK((ptl_sr_value_t)-1 < 0);

    /* Handles are one scalar type: any handle converts to any other. */
    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    ptl_handle_eq_t eq = PTL_EQ_NONE;
    ptl_handle_ct_t ct = PTL_CT_NONE;
    ptl_handle_md_t md = ni;
    ptl_handle_le_t le = md;
    ptl_handle_me_t me = le;
    ptl_handle_any_t any = me;
    XP_CHECK(any == PTL_INVALID_HANDLE && eq != ct && eq != any && ct != any);

    /* The rank shares storage with the physical nid (a union). */
    ptl_process_t p = { .phys = { .nid = 7, .pid = 9 } };
    XP_CHECK_EQ(p.rank, 7);
    p.rank = 3;
    XP_CHECK_EQ(p.phys.nid, 3);
    XP_CHECK_EQ(p.phys.pid, 9);

    ptl_ac_id_t ac = { .uid = PTL_UID_ANY };
    XP_CHECK_EQ(ac.jid, PTL_JID_ANY);
}

static void check_structs(void)
{
    static char buf[64];
    ptl_iovec_t iov[2] = { { .iov_base = buf, .iov_len = 32 },
                           { .iov_base = buf + 32, .iov_len = 32 } };
    ptl_md_t md = { .start = iov, .length = 2, .options = PTL_IOVEC,
                    .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE };
    ptl_le_t le = { .start = buf, .length = sizeof buf, .ct_handle = PTL_CT_NONE,
                    .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT };
    ptl_me_t me = { .start = buf, .length = sizeof buf, .ct_handle = PTL_CT_NONE,
                    .uid = PTL_UID_ANY, .options = PTL_ME_OP_GET,
                    .match_id = { .phys = { .nid = PTL_NID_ANY, .pid = PTL_PID_ANY } },
                    .match_bits = 1, .ignore_bits = ~(ptl_match_bits_t)0, .min_free = 0 };
    ptl_ct_event_t ct = { .success = 1, .failure = 0 };
    ptl_event_t ev = { .start = buf, .user_ptr = &ev, .hdr_data = 2, .match_bits = 3,
                       .rlength = 4, .mlength = 4, .remote_offset = 5, .uid = 6,
                       .initiator = { .rank = 1 }, .type = PTL_EVENT_PUT, .pt_index = 8,
                       .ni_fail_type = PTL_NI_OK, .atomic_operation = PTL_SUM,
                       .atomic_type = PTL_INT32_T, .ptl_list = PTL_PRIORITY_LIST };
    ptl_ni_limits_t lim = { .max_entries = 1, .max_unexpected_headers = 2, .max_mds = 3,
                            .max_cts = 4, .max_eqs = 5, .max_pt_index = 63,
                            .max_iovecs = 7, .max_list_size = 8, .max_triggered_ops = 9,
                            .max_msg_size = 10, .max_atomic_size = 11,
                            .max_fetch_atomic_size = 12, .max_waw_ordered_size = 13,
                            .max_war_ordered_size = 14, .max_volatile_size = 15,
                            .features = PTL_TARGET_BIND_INACCESSIBLE };

    XP_CHECK(((ptl_iovec_t *)md.start)[1].iov_len == 32);
    XP_CHECK(le.length == me.length && ct.success == 1 && ev.mlength == 4);
    XP_CHECK(lim.max_volatile_size == 15);

    /* Event fields hold every value of their type. */
    ev.ni_fail_type = PTL_NI_TARGET_INVALID;
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_TARGET_INVALID);
    ev.type = PTL_EVENT_SEARCH;
    XP_CHECK_EQ(ev.type, PTL_EVENT_SEARCH);
    ev.ptl_list = PTL_OVERFLOW_LIST;
    XP_CHECK_EQ(ev.ptl_list, PTL_OVERFLOW_LIST);
    ev.pt_index = PTL_PT_ANY;
    XP_CHECK_EQ(ev.pt_index, PTL_PT_ANY);
}

/* ------------------------------------------------------------------ constants */

/* Every value distinct; used for return codes and enumerations. */
static void check_distinct(const char *what, const long long *v, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (v[i] == v[j]) {
                fprintf(stderr, "%s: entries %d and %d share value %lld\n", what, i, j, v[i]);
                XP_CHECK(v[i] != v[j]);
            }
}

/* Option flags: each one bit, no two alike, all inside `mask`. */
static void check_bits(const char *what, const unsigned *v, int n, unsigned mask)
{
    for (int i = 0; i < n; i++) {
        if (v[i] == 0 || (v[i] & (v[i] - 1)) != 0 || (v[i] & ~mask) != 0) {
            fprintf(stderr, "%s: entry %d = %#x is not one bit inside %#x\n", what, i, v[i], mask);
            xp_test_failures_++;
        }
        for (int j = i + 1; j < n; j++)
            if (v[i] == v[j]) {
                fprintf(stderr, "%s: entries %d and %d are both %#x\n", what, i, j, v[i]);
                xp_test_failures_++;
            }
    }
}

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void check_return_codes(void)
{
    /* The specification lists the codes alphabetically with PTL_OK first;
     * the reference header numbers them in that order. */
    const long long rc[] = { PTL_OK, PTL_ARG_INVALID, PTL_CT_NONE_REACHED, PTL_EQ_DROPPED,
                             PTL_EQ_EMPTY, PTL_FAIL, PTL_IGNORED, PTL_IN_USE,
                             PTL_INTERRUPTED, PTL_LIST_TOO_LONG, PTL_NO_INIT, PTL_NO_SPACE,
                             PTL_PID_IN_USE, PTL_PT_FULL, PTL_PT_EQ_NEEDED, PTL_PT_IN_USE,
                             PTL_ABORTED, PTL_NI_NOT_LOGICAL, PTL_SIZE_INVALID };
    XP_CHECK_EQ(PTL_OK, 0);
    for (int i = 1; i < N(rc); i++)
        XP_CHECK_INT(rc[i - 1], <, rc[i]);
    XP_CHECK_EQ(PTL_STATUS_LAST, rc[N(rc) - 1] + 1);
    check_distinct("return codes", rc, N(rc));
}

static void check_option_bits(void)
{
    const unsigned ni[] = { PTL_NI_MATCHING, PTL_NI_NO_MATCHING, PTL_NI_LOGICAL,
                            PTL_NI_PHYSICAL };
    check_bits("NI options", ni, N(ni), PTL_NI_INIT_OPTIONS_MASK);

    const unsigned pt[] = { PTL_PT_ONLY_USE_ONCE, PTL_PT_FLOWCTRL, PTL_PT_ONLY_TRUNCATE,
                            PTL_PT_MATCH_UNORDERED };
    check_bits("PT options", pt, N(pt), PTL_PT_ALLOC_OPTIONS_MASK);

    const unsigned md[] = { PTL_IOVEC, PTL_MD_EVENT_SUCCESS_DISABLE, PTL_MD_EVENT_SEND_DISABLE,
                            PTL_MD_EVENT_CT_SEND, PTL_MD_EVENT_CT_REPLY, PTL_MD_EVENT_CT_ACK,
                            PTL_MD_EVENT_CT_BYTES, PTL_MD_UNORDERED, PTL_MD_VOLATILE };
    check_bits("MD options", md, N(md), PTL_MD_OPTIONS_MASK);

    const unsigned me[] = { PTL_IOVEC, PTL_ME_OP_PUT, PTL_ME_OP_GET, PTL_ME_MANAGE_LOCAL,
                            PTL_ME_NO_TRUNCATE, PTL_ME_USE_ONCE, PTL_ME_MAY_ALIGN,
                            PTL_ME_ACK_DISABLE, PTL_ME_UNEXPECTED_HDR_DISABLE,
                            PTL_ME_IS_ACCESSIBLE, PTL_ME_EVENT_COMM_DISABLE,
                            PTL_ME_EVENT_FLOWCTRL_DISABLE, PTL_ME_EVENT_SUCCESS_DISABLE,
                            PTL_ME_EVENT_OVER_DISABLE, PTL_ME_EVENT_UNLINK_DISABLE,
                            PTL_ME_EVENT_LINK_DISABLE, PTL_ME_EVENT_CT_COMM,
                            PTL_ME_EVENT_CT_OVERFLOW, PTL_ME_EVENT_CT_BYTES,
                            PTL_ME_AUTH_USE_JID };
    check_bits("ME options", me, N(me), PTL_ME_APPEND_OPTIONS_MASK);

    /* LE options: the non-matching subset; same bits as their ME twins. */
    const unsigned le[] = { PTL_IOVEC, PTL_LE_OP_PUT, PTL_LE_OP_GET, PTL_LE_USE_ONCE,
                            PTL_LE_ACK_DISABLE, PTL_LE_UNEXPECTED_HDR_DISABLE,
                            PTL_LE_IS_ACCESSIBLE, PTL_LE_EVENT_COMM_DISABLE,
                            PTL_LE_EVENT_FLOWCTRL_DISABLE, PTL_LE_EVENT_SUCCESS_DISABLE,
                            PTL_LE_EVENT_OVER_DISABLE, PTL_LE_EVENT_UNLINK_DISABLE,
                            PTL_LE_EVENT_LINK_DISABLE, PTL_LE_EVENT_CT_COMM,
                            PTL_LE_EVENT_CT_OVERFLOW, PTL_LE_EVENT_CT_BYTES,
                            PTL_LE_AUTH_USE_JID };
    check_bits("LE options", le, N(le), PTL_LE_APPEND_OPTIONS_MASK);
    XP_CHECK_EQ(PTL_LE_OP_PUT, PTL_ME_OP_PUT);
    XP_CHECK_EQ(PTL_LE_EVENT_CT_BYTES, PTL_ME_EVENT_CT_BYTES);
    XP_CHECK_EQ(PTL_LE_APPEND_OPTIONS_MASK & PTL_ME_APPEND_OPTIONS_MASK,
                PTL_LE_APPEND_OPTIONS_MASK);

    const unsigned feat[] = { PTL_TARGET_BIND_INACCESSIBLE, PTL_TOTAL_DATA_ORDERING,
                              PTL_COHERENT_ATOMICS };
    check_bits("features", feat, N(feat), ~0u);
}

static void check_enumerations(void)
{
    const long long sr[] = { PTL_SR_DROP_COUNT, PTL_SR_PERMISSIONS_VIOLATIONS,
                             PTL_SR_OPERATIONS_VIOLATIONS };
    check_distinct("status registers", sr, N(sr));
    for (int i = 0; i < N(sr); i++) /* clients index arrays with them */
        XP_CHECK(sr[i] >= 0 && sr[i] < PTL_SR_LAST);

    const long long fail[] = { PTL_NI_OK, PTL_NI_UNDELIVERABLE, PTL_NI_PT_DISABLED,
                               PTL_NI_DROPPED, PTL_NI_PERM_VIOLATION, PTL_NI_OP_VIOLATION,
                               PTL_NI_SEGV, PTL_NI_NO_MATCH, PTL_NI_TARGET_INVALID };
    check_distinct("ni_fail", fail, N(fail));
    XP_CHECK_EQ(PTL_NI_OK, 0);
    XP_CHECK_EQ(PTL_NI_FLOW_CTRL, PTL_NI_PT_DISABLED); /* 4.0 spelling */

    const long long ev[] = { PTL_EVENT_GET, PTL_EVENT_GET_OVERFLOW, PTL_EVENT_PUT,
                             PTL_EVENT_PUT_OVERFLOW, PTL_EVENT_ATOMIC,
                             PTL_EVENT_ATOMIC_OVERFLOW, PTL_EVENT_FETCH_ATOMIC,
                             PTL_EVENT_FETCH_ATOMIC_OVERFLOW, PTL_EVENT_REPLY, PTL_EVENT_SEND,
                             PTL_EVENT_ACK, PTL_EVENT_PT_DISABLED, PTL_EVENT_LINK,
                             PTL_EVENT_AUTO_UNLINK, PTL_EVENT_AUTO_FREE, PTL_EVENT_SEARCH };
    check_distinct("event kinds", ev, N(ev));

    const long long op[] = { PTL_MIN, PTL_MAX, PTL_SUM, PTL_PROD, PTL_LOR, PTL_LAND, PTL_BOR,
                             PTL_BAND, PTL_LXOR, PTL_BXOR, PTL_SWAP, PTL_CSWAP, PTL_CSWAP_NE,
                             PTL_CSWAP_LE, PTL_CSWAP_LT, PTL_CSWAP_GE, PTL_CSWAP_GT,
                             PTL_MSWAP };
    check_distinct("atomic operations", op, N(op));
    XP_CHECK_EQ(PTL_OP_LAST, N(op)); /* SOS sizes tables with it */
    for (int i = 0; i < N(op); i++)
        XP_CHECK(op[i] >= 0 && op[i] < PTL_OP_LAST);

    const long long dt[] = { PTL_INT8_T, PTL_UINT8_T, PTL_INT16_T, PTL_UINT16_T, PTL_INT32_T,
                             PTL_UINT32_T, PTL_INT64_T, PTL_UINT64_T, PTL_FLOAT,
                             PTL_FLOAT_COMPLEX, PTL_DOUBLE, PTL_DOUBLE_COMPLEX,
                             PTL_LONG_DOUBLE, PTL_LONG_DOUBLE_COMPLEX };
    check_distinct("datatypes", dt, N(dt));
    XP_CHECK_EQ(PTL_DATATYPE_LAST, N(dt));
    for (int i = 0; i < N(dt); i++)
        XP_CHECK(dt[i] >= 0 && dt[i] < PTL_DATATYPE_LAST);

    const long long list[] = { PTL_PRIORITY_LIST, PTL_OVERFLOW_LIST, PTL_PROBE_ONLY };
    check_distinct("lists", list, N(list));
    XP_CHECK_EQ(PTL_OVERFLOW, PTL_OVERFLOW_LIST);
    const long long search[] = { PTL_SEARCH_ONLY, PTL_SEARCH_DELETE };
    check_distinct("search ops", search, N(search));
    const long long ack[] = { PTL_NO_ACK_REQ, PTL_ACK_REQ, PTL_CT_ACK_REQ, PTL_OC_ACK_REQ };
    check_distinct("ack requests", ack, N(ack));
    const long long ctt[] = { PTL_CT_OPERATION, PTL_CT_BYTE };
    check_distinct("ct types", ctt, N(ctt));
}

static void check_special_values(void)
{
    const long long handles[] = { PTL_EQ_NONE, PTL_CT_NONE, PTL_INVALID_HANDLE };
    check_distinct("special handles", handles, N(handles));
    XP_CHECK_EQ(PTL_TIME_FOREVER, (ptl_time_t)-1);
    XP_CHECK_EQ(PTL_SIZE_MAX, (ptl_size_t)-1);
    XP_CHECK(PTL_PID_ANY != 0 && PTL_NID_ANY != 0 && PTL_RANK_ANY != 0);
    XP_CHECK(PTL_UID_ANY != 0 && PTL_JID_ANY != PTL_JID_NONE && PTL_PT_ANY != 0);
    XP_CHECK(PTL_IFACE_DEFAULT != 1);
    XP_CHECK(PTL_MAJOR_VERSION == 4 && PTL_MINOR_VERSION >= 1);
}

/* ------------------------------------------------------------------ run time */

static void check_ni(unsigned options)
{
    ptl_ni_limits_t actual;
    ptl_handle_ni_t ni, owner;
    int rc = PtlNIInit(PTL_IFACE_DEFAULT, options, PTL_PID_ANY, NULL, &actual, &ni);
    XP_CHECK_EQ(rc, PTL_OK);
    if (rc != PTL_OK)
        return;
    XP_CHECK_INT(actual.max_pt_index, >=, 63);              /* specification minimum */
    XP_CHECK_INT(actual.max_waw_ordered_size, >=, 64);      /* specification minimum */
    XP_CHECK_INT(actual.max_war_ordered_size, >=, 8);       /* specification minimum */
    XP_CHECK_INT(actual.max_atomic_size, >=, 32);           /* SOS: long double complex */
    XP_CHECK_INT(actual.max_fetch_atomic_size, >=, 32);
    XP_CHECK_INT(actual.max_volatile_size, >=, 32);
    XP_CHECK_EQ(actual.features & ~(unsigned)(PTL_TARGET_BIND_INACCESSIBLE |
                                              PTL_TOTAL_DATA_ORDERING | PTL_COHERENT_ATOMICS),
                0);

    XP_CHECK_EQ(PtlNIHandle(ni, &owner), PTL_OK);
    XP_CHECK_EQ(owner, ni);
    /* Clients test PtlHandleIsEqual as a boolean: `!PtlHandleIsEqual(h,
     * PTL_INVALID_HANDLE)` must mean "h is a live handle". */
    XP_CHECK(!PtlHandleIsEqual(ni, PTL_INVALID_HANDLE));
    XP_CHECK(PtlHandleIsEqual(owner, ni));
    XP_CHECK(!PtlHandleIsEqual(PTL_EQ_NONE, PTL_CT_NONE));

    ptl_uid_t uid;
    ptl_jid_t jid;
    ptl_process_t id, phys;
    XP_CHECK_EQ(PtlGetUid(ni, &uid), PTL_OK);
    XP_CHECK_EQ(PtlGetJid(ni, &jid), PTL_OK);
    XP_CHECK_EQ(PtlGetId(ni, &id), PTL_OK);
    XP_CHECK_EQ(PtlGetPhysId(ni, &phys), PTL_OK);
    if (options & PTL_NI_PHYSICAL) {
        XP_CHECK_EQ(id.phys.nid, phys.phys.nid);
        XP_CHECK_EQ(id.phys.pid, phys.phys.pid);
    } else {
        XP_CHECK_EQ(id.rank, 0); /* a single process is rank 0 */
    }

    ptl_sr_value_t sr;
    for (int i = PTL_SR_DROP_COUNT; i < PTL_SR_LAST; i++) {
        XP_CHECK_EQ(PtlNIStatus(ni, (ptl_sr_index_t)i, &sr), PTL_OK);
        XP_CHECK_EQ(sr, 0);
    }
    XP_CHECK_EQ(PtlNIStatus(ni, (ptl_sr_index_t)PTL_SR_LAST, &sr), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
}

int main(void)
{
    check_signatures();
    check_scalar_types();
    check_structs();
    check_return_codes();
    check_option_bits();
    check_enumerations();
    check_special_values();

    XP_REQUIRE(PtlInit() == PTL_OK);
    check_ni(PTL_NI_MATCHING | PTL_NI_PHYSICAL);
    check_ni(PTL_NI_MATCHING | PTL_NI_LOGICAL);
    check_ni(PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL);
    check_ni(PTL_NI_NO_MATCHING | PTL_NI_LOGICAL);
    PtlFini();
    return xp_test_result();
}
