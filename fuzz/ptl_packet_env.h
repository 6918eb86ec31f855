/*
 * fuzz/ptl_packet_env.h - a singleton Portals process whose packet handler
 * (xp_eng_recv, what the transport calls with (src_rank, pkt, len)) is fed
 * arbitrary bytes. Shared by the libFuzzer harness (fuzz/fuzz_ptl_packet.c)
 * and the deterministic CTest program (tests/ptl/test_fuzz_packet.c).
 *
 * The environment: XP_BOOTSTRAP=singleton, inline progress, a matching and a
 * non-matching logical NI, PTs with and without EQ and with flow control,
 * entries with most options (IOVEC, USE_ONCE, NO_TRUNCATE, MANAGE_LOCAL,
 * uid check, overflow list), MDs that answers can reach. Every target
 * buffer sits inside a guarded arena, so a write outside an entry is seen.
 *
 * Trust boundary kept by the harness: RMA segments name the initiator's
 * memory, which the transport reads with process_vm_readv (shm: a bad
 * address is EFAULT) or, for this process itself, with memcpy. Segment
 * addresses of a fed packet are therefore redirected into a scratch buffer
 * (their count and lengths stay as fuzzed); everything else is raw.
 */
#ifndef XP_FUZZ_PTL_PACKET_ENV_H
#define XP_FUZZ_PTL_PACKET_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "ptl/engine.h"

/* Build the environment once (exits on failure). */
void xp_fuzz_ptl_setup(void);
/* Free it (PtlFini). */
void xp_fuzz_ptl_teardown(void);
/* One input: data[0] picks the source rank, data[1] what to do after the
 * packet (progress, drain EQs, re-enable PTs, re-append entries), the rest
 * is the packet as it comes off the transport. */
void xp_fuzz_ptl_feed(const uint8_t *data, size_t size);
/* Hand exactly (pkt, len) from src to the handler, as a transport does. */
void xp_fuzz_ptl_deliver(int src, const void *pkt, size_t len);
/* Run progress (answers to ourselves), drain every EQ, re-enable PTs. */
void xp_fuzz_ptl_settle(void);
/* Re-append every entry (consumed use-once / full MANAGE_LOCAL ones) and
 * delete the unexpected headers. */
void xp_fuzz_ptl_refill(void);
/* 0 if every guard byte around the target buffers is intact. */
int xp_fuzz_ptl_guards_ok(void);
/* Sum of the drop / permission / operation status registers of both NIs. */
uint64_t xp_fuzz_ptl_rejections(void);
/* A well-formed request of `type` for the matching NI (md handle, slot, PT
 * and match bits of a real entry picked by `pick`), in wire form with its
 * payload: returns the bytes written to out (cap >= 88 + payload). */
size_t xp_fuzz_ptl_template(unsigned pick, xp_pkt_type_t type, uint64_t rlength,
                            const void *payload, size_t payload_len, unsigned char *out,
                            size_t cap);
/* Decode/encode the header as the engine does (wire form or raw struct). */
size_t xp_fuzz_ptl_hdr_decode(const unsigned char *in, size_t len, xp_pkt_t *h);
size_t xp_fuzz_ptl_hdr_encode(const xp_pkt_t *h, unsigned char *out);
/* Start and length of the contiguous target buffer of entry 0 (4 KiB). */
unsigned char *xp_fuzz_ptl_target_buf(void);
/* Handle of the MD that templates name (answers land there). */
ptl_handle_md_t xp_fuzz_ptl_md(void);

#endif
