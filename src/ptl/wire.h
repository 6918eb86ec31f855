/*
 * ptl/wire.h - what an engine packet header looks like on the wire.
 *
 * The engine works on the full 80-byte xp_pkt_t. A shared-memory cell is 64
 * bytes and a packet's first cell starts with an 8-byte header word, so a
 * put with the full header takes two cells even without data, and so does
 * its counting acknowledgement. The commonest
 * small messages do not need most of the header: a put whose answer (if any)
 * only counts carries no user_ptr or local offset to echo, and its requested
 * length is its payload length; a counting acknowledgement carries no echo
 * and no offsets. Those two travel in compact forms (40 and 24 bytes), so a
 * put of up to 16 bytes and its acknowledgement take one cell each: the
 * transport moves about three times as many one-cell packets per second.
 * A put without match bits and header data (what a non-matching NI's put,
 * an OpenSHMEM put, usually is) drops those two as well: 24 bytes, so up to
 * 32 bytes of data travel in one cell.
 * A REPLY with its data inline (a fetching atomic's old value, a small get)
 * has a compact form too (40 bytes): what its REPLY event and the MD write
 * read, with the data's length standing for rlength and mlength. So does a
 * fetching atomic that needs no echo of user_ptr and no header data (40
 * bytes): a fetch-add and its operand take one cell (up to 16 bytes of
 * operand). So does the request of a small get without that echo (40
 * bytes).
 *
 * xp_wire_encode picks the compact form when it carries everything the
 * receiver reads; xp_wire_decode turns any received header back into an
 * xp_pkt_t (fields the compact form omits are zero), checking lengths, so
 * the handlers below see one format. Both are inline: they sit on the path
 * of every message.
 */
#ifndef XP_PTL_WIRE_H
#define XP_PTL_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ptl/engine.h"

/* Fields read in place from a received packet (the ring slot may be
 * unaligned for them). */
static inline uint16_t xp_wire_load16(const unsigned char *p, size_t off)
{
    uint16_t v;
    memcpy(&v, p + off, sizeof(v));
    return v;
}

static inline uint32_t xp_wire_load32(const unsigned char *p, size_t off)
{
    uint32_t v;
    memcpy(&v, p + off, sizeof(v));
    return v;
}

static inline uint64_t xp_wire_load64(const unsigned char *p, size_t off)
{
    uint64_t v;
    memcpy(&v, p + off, sizeof(v));
    return v;
}

/* Packet types of the compact forms (after xp_pkt_type_t's values). */
enum {
    XP_WIRE_SPUT = 16, /* xp_wire_sput_t: a small put whose answer only counts */
    XP_WIRE_SACK = 17, /* xp_wire_sack_t: a counting or bare acknowledgement */
    XP_WIRE_SREPLY = 18, /* xp_wire_sreply_t: a REPLY with its data inline */
    XP_WIRE_SFETCH = 19, /* xp_wire_sfetch_t: a fetching atomic without echo */
    XP_WIRE_SGET = 20,   /* xp_wire_sget_t: a small get without echo */
    XP_WIRE_TPUT = 21,   /* xp_wire_tput_t: a compact put without bits or header data */
};

/* Largest payload a compact put carries. The packet's frame gives its
 * length (the header's `len` byte holds only the low 8 bits, a check that
 * the two agree); 4 KiB is also the shm transport's automatic eager limit
 * (XP_SHM_AUTO_EAGER_MAX), above which puts may go by single copy. A route
 * takes compact puts when a full header and this much payload fit one of
 * its packets (the retry sends the full header). */
#define XP_WIRE_SPUT_MAX 4096u

/* A put of at most XP_WIRE_SPUT_MAX bytes, no flags, ack_req other than
 * PTL_ACK_REQ (so no answer echoes user_ptr or local_offset). rlength is
 * the payload length: the packet's length less the header. */
typedef struct xp_wire_sput {
    uint8_t type;    /* XP_WIRE_SPUT */
    uint8_t slot;    /* target NI slot */
    uint8_t ack_req; /* PTL_NO_ACK_REQ, PTL_CT_ACK_REQ or PTL_OC_ACK_REQ */
    uint8_t len;     /* payload bytes mod 256 (the frame gives the length) */
    uint32_t pt_index;
    uint32_t md_handle;
    uint32_t uid;
    uint64_t match_bits;
    uint64_t remote_offset;
    uint64_t hdr_data;
} xp_wire_sput_t;

/* A compact put (xp_wire_sput_t's conditions) whose match bits and header
 * data are both 0: they do not travel. */
typedef struct xp_wire_tput {
    uint8_t type;    /* XP_WIRE_TPUT */
    uint8_t slot;
    uint8_t ack_req;
    uint8_t len;     /* payload bytes mod 256 */
    uint32_t pt_index;
    uint32_t md_handle;
    uint32_t uid;
    uint64_t remote_offset;
} xp_wire_tput_t;

/* An ACK answering a request whose ack_req is not PTL_ACK_REQ (or a bare
 * completion, XP_PKT_F_NOACK), without XP_PKT_F_SENDEV: the initiator only
 * counts it, so no user_ptr, offsets or match bits. */
typedef struct xp_wire_sack {
    uint8_t type;    /* XP_WIRE_SACK */
    uint8_t slot;
    uint8_t ack_req;
    uint8_t flags;   /* XP_PKT_F_NOACK, XP_PKT_F_MANY */
    uint8_t fail;
    uint8_t ptl_list;
    uint16_t pad;
    uint32_t md_handle;
    uint32_t nseg;   /* XP_PKT_F_MANY: how many acknowledgements */
    uint64_t mlength;
} xp_wire_sack_t;

/* Largest inline REPLY data the compact form carries (the packet's frame
 * gives its length, the header's length byte the low 8 bits: as for the
 * compact put, XP_WIRE_SPUT_MAX). */
#define XP_WIRE_SREPLY_MAX 4096u

/* A REPLY of len inline bytes (no flags, no RMA) whose requested and
 * manipulated lengths are both len: a successful get or fetching atomic
 * answered whole. Its REPLY event reads user_ptr, mlength, remote_offset,
 * ni_fail_type and the start from local_offset (match_bits, hdr_data and
 * the initiator's uid are no REPLY event fields, so they do not travel);
 * pt_index, ptl_list and the atomic operation and type come along so the
 * event is the one the full header gives. */
typedef struct xp_wire_sreply {
    uint8_t type;        /* XP_WIRE_SREPLY */
    uint8_t slot;        /* initiator NI slot */
    uint8_t fail;        /* ptl_ni_fail_t */
    uint8_t len;         /* data bytes (= rlength = mlength) mod 256 */
    uint8_t ptl_list;
    uint8_t atomic_op;
    uint8_t atomic_type;
    uint8_t pad;
    uint32_t md_handle;
    uint32_t pt_index;
    uint64_t remote_offset;
    uint64_t local_offset;
    uint64_t user_ptr;
} xp_wire_sreply_t;

/* Largest operand a compact fetching atomic carries (one length byte). */
#define XP_WIRE_SFETCH_MAX 255u

/* A PtlFetchAtomic request (XP_PKT_FETCH, no flags, no ack_req) whose
 * header data and user_ptr are 0 and whose get MD offset fits 32 bits;
 * rlength is the operand length. Lossless: every field it omits is zero in
 * the full header. The initiator sends user_ptr 0 when its get MD has no EQ
 * (the REPLY then posts no event, so nothing reads it), so the common
 * fetch-add and its operand fit one cell. */
typedef struct xp_wire_sfetch {
    uint8_t type;        /* XP_WIRE_SFETCH */
    uint8_t slot;        /* target NI slot */
    uint8_t atomic_op;
    uint8_t atomic_type;
    uint32_t pt_index;
    uint32_t md_handle;  /* get MD */
    uint32_t uid;
    uint64_t match_bits;
    uint64_t remote_offset;
    uint32_t local_offset; /* in the get MD */
    uint8_t len;         /* operand bytes = rlength */
    uint8_t pad[3];
} xp_wire_sfetch_t;

/* Largest reply a compact get asks for: its answer is a compact REPLY. */
#define XP_WIRE_SGET_MAX XP_WIRE_SREPLY_MAX

/* A PtlGet request (XP_PKT_GET, no flags, no payload: the data comes back
 * inline) whose user_ptr is 0 and whose MD offset fits 32 bits; `len` is
 * rlength. Lossless: every field it omits is zero in the full header. The
 * initiator sends user_ptr 0 when its MD has no EQ (the REPLY then posts no
 * event, so nothing reads it). */
typedef struct xp_wire_sget {
    uint8_t type;        /* XP_WIRE_SGET */
    uint8_t slot;        /* target NI slot */
    uint16_t len;        /* bytes asked for = rlength (at most XP_WIRE_SGET_MAX) */
    uint32_t pt_index;
    uint32_t md_handle;
    uint32_t uid;
    uint64_t match_bits;
    uint64_t remote_offset;
    uint32_t local_offset; /* in the MD */
    uint32_t pad2;
} xp_wire_sget_t;

typedef union xp_wire {
    xp_wire_sput_t sput;
    xp_wire_tput_t tput;
    xp_wire_sack_t sack;
    xp_wire_sreply_t sreply;
    xp_wire_sfetch_t sfetch;
    xp_wire_sget_t sget;
} xp_wire_t;

_Static_assert(sizeof(xp_wire_sput_t) == 40, "a compact put and 16 bytes fill one cell");
_Static_assert(sizeof(xp_wire_tput_t) == 24, "a tiny put and 32 bytes fill one cell");
_Static_assert(sizeof(xp_wire_sack_t) == 24, "compact ack layout");
_Static_assert(sizeof(xp_wire_sreply_t) == 40, "a compact reply and 16 bytes fill one cell");
_Static_assert(sizeof(xp_wire_sfetch_t) == 40, "a compact fetch and 16 bytes fill one cell");
_Static_assert(sizeof(xp_wire_sget_t) == 40, "a compact get fits one cell");

static inline int xp_wire_sput_ok(const xp_pkt_t *h, size_t len)
{
    return h->type == XP_PKT_PUT && !h->flags && h->ack_req != PTL_ACK_REQ &&
           len <= XP_WIRE_SPUT_MAX && h->rlength == len;
}

static inline int xp_wire_tput_ok(const xp_pkt_t *h, size_t len)
{
    return xp_wire_sput_ok(h, len) && !h->match_bits && !h->hdr_data;
}

/* Write the compact put into *w (the encoder's form of a put header; PtlPut
 * writes it in place in a reserved ring cell). */
static inline void xp_wire_sput_write(xp_wire_sput_t *w, uint8_t slot, uint8_t ack_req,
                                      uint8_t len, uint32_t pt_index, uint32_t md_handle,
                                      uint32_t uid, uint64_t match_bits,
                                      uint64_t remote_offset, uint64_t hdr_data)
{
    w->type = XP_WIRE_SPUT;
    w->slot = slot;
    w->ack_req = ack_req;
    w->len = len;
    w->pt_index = pt_index;
    w->md_handle = md_handle;
    w->uid = uid;
    w->match_bits = match_bits;
    w->remote_offset = remote_offset;
    w->hdr_data = hdr_data;
}

/* Write the compact put without bits or header data into *t. */
static inline void xp_wire_tput_write(xp_wire_tput_t *t, uint8_t slot, uint8_t ack_req,
                                      uint8_t len, uint32_t pt_index, uint32_t md_handle,
                                      uint32_t uid, uint64_t remote_offset)
{
    t->type = XP_WIRE_TPUT;
    t->slot = slot;
    t->ack_req = ack_req;
    t->len = len;
    t->pt_index = pt_index;
    t->md_handle = md_handle;
    t->uid = uid;
    t->remote_offset = remote_offset;
}

/* Write the compact ACK into *a (the encoder's form of an ACK header; the
 * engine's gathered ACKs write it in place in the answer ring). */
static inline void xp_wire_sack_write(xp_wire_sack_t *a, uint8_t slot, uint8_t ack_req,
                                      uint8_t flags, uint8_t fail, uint8_t ptl_list,
                                      uint32_t md_handle, uint32_t nseg, uint64_t mlength)
{
    a->type = XP_WIRE_SACK;
    a->slot = slot;
    a->ack_req = ack_req;
    a->flags = flags;
    a->fail = fail;
    a->ptl_list = ptl_list;
    a->pad = 0;
    a->md_handle = md_handle;
    a->nseg = nseg;
    a->mlength = mlength;
}

/* The compact put that tiny put t stands for (match bits, header data 0). */
static inline void xp_wire_tput_widen(const xp_wire_tput_t *t, xp_wire_sput_t *s)
{
    *s = (xp_wire_sput_t){
        .type = XP_WIRE_SPUT,
        .slot = t->slot,
        .ack_req = t->ack_req,
        .len = t->len,
        .pt_index = t->pt_index,
        .md_handle = t->md_handle,
        .uid = t->uid,
        .remote_offset = t->remote_offset,
    };
}

static inline int xp_wire_sack_ok(const xp_pkt_t *h)
{
    return h->type == XP_PKT_ACK && !(h->flags & ~(unsigned)(XP_PKT_F_NOACK | XP_PKT_F_MANY)) &&
           (h->ack_req != PTL_ACK_REQ || (h->flags & XP_PKT_F_NOACK));
}

static inline int xp_wire_sreply_ok(const xp_pkt_t *h, size_t len)
{
    return h->type == XP_PKT_REPLY && !h->flags && len <= XP_WIRE_SREPLY_MAX &&
           h->mlength == len && h->rlength == len;
}

static inline int xp_wire_sfetch_ok(const xp_pkt_t *h, size_t len)
{
    return h->type == XP_PKT_FETCH && !h->flags && !h->ack_req && !h->fail && !h->ptl_list &&
           !h->nseg && !h->hdr_data && !h->mlength && !h->user_ptr &&
           h->local_offset <= UINT32_MAX && len <= XP_WIRE_SFETCH_MAX && h->rlength == len;
}

static inline int xp_wire_sget_ok(const xp_pkt_t *h, size_t len)
{
    return h->type == XP_PKT_GET && !h->flags && !h->ack_req && !h->fail && !h->ptl_list &&
           !h->atomic_op && !h->atomic_type && !h->nseg && !h->hdr_data && !h->mlength &&
           !h->user_ptr && h->local_offset <= UINT32_MAX && len == 0 &&
           h->rlength <= XP_WIRE_SGET_MAX;
}

/* The compact get request for h (xp_wire_sget_ok(h, 0)) in *g. */
static inline void xp_wire_sget_fill(xp_wire_sget_t *g, const xp_pkt_t *h)
{
    *g = (xp_wire_sget_t){
        .type = XP_WIRE_SGET,
        .slot = h->slot,
        .len = (uint16_t)h->rlength,
        .pt_index = h->pt_index,
        .md_handle = h->md_handle,
        .uid = h->uid,
        .match_bits = h->match_bits,
        .remote_offset = h->remote_offset,
        .local_offset = (uint32_t)h->local_offset,
    };
}

/* The compact REPLY for h (xp_wire_sreply_ok(h, len)) in *s. */
static inline void xp_wire_sreply_fill(xp_wire_sreply_t *s, const xp_pkt_t *h, size_t len)
{
    *s = (xp_wire_sreply_t){
        .type = XP_WIRE_SREPLY,
        .slot = h->slot,
        .fail = h->fail,
        .len = (uint8_t)len,
        .ptl_list = h->ptl_list,
        .atomic_op = h->atomic_op,
        .atomic_type = h->atomic_type,
        .md_handle = h->md_handle,
        .pt_index = h->pt_index,
        .remote_offset = h->remote_offset,
        .local_offset = h->local_offset,
        .user_ptr = h->user_ptr,
    };
}

/* The full header a compact REPLY of len data bytes stands for (omitted
 * fields zero). */
static inline void xp_wire_sreply_unpack(const xp_wire_sreply_t *s, size_t len, xp_pkt_t *h)
{
    *h = (xp_pkt_t){
        .type = XP_PKT_REPLY,
        .slot = s->slot,
        .fail = s->fail,
        .ptl_list = s->ptl_list,
        .atomic_op = s->atomic_op,
        .atomic_type = s->atomic_type,
        .md_handle = s->md_handle,
        .pt_index = s->pt_index,
        .rlength = len,
        .mlength = len,
        .remote_offset = s->remote_offset,
        .local_offset = s->local_offset,
        .user_ptr = s->user_ptr,
    };
}

/* The header to send for h followed by len payload bytes: a compact form
 * built in *w when one carries everything, else h itself. *hdr_len is set
 * to its size. */
static inline const void *xp_wire_encode(const xp_pkt_t *h, size_t len, xp_wire_t *w,
                                         size_t *hdr_len)
{
    if (xp_wire_tput_ok(h, len)) {
        xp_wire_tput_write(&w->tput, h->slot, h->ack_req, (uint8_t)len, h->pt_index,
                           h->md_handle, h->uid, h->remote_offset);
        *hdr_len = sizeof(w->tput);
        return &w->tput;
    }
    if (xp_wire_sput_ok(h, len)) {
        xp_wire_sput_write(&w->sput, h->slot, h->ack_req, (uint8_t)len, h->pt_index,
                           h->md_handle, h->uid, h->match_bits, h->remote_offset, h->hdr_data);
        *hdr_len = sizeof(w->sput);
        return &w->sput;
    }
    if (xp_wire_sack_ok(h)) {
        xp_wire_sack_write(&w->sack, h->slot, h->ack_req, h->flags, h->fail, h->ptl_list,
                           h->md_handle, h->nseg, h->mlength);
        *hdr_len = sizeof(w->sack);
        return &w->sack;
    }
    if (xp_wire_sreply_ok(h, len)) {
        xp_wire_sreply_fill(&w->sreply, h, len);
        *hdr_len = sizeof(w->sreply);
        return &w->sreply;
    }
    if (xp_wire_sfetch_ok(h, len)) {
        w->sfetch = (xp_wire_sfetch_t){
            .type = XP_WIRE_SFETCH,
            .slot = h->slot,
            .atomic_op = h->atomic_op,
            .atomic_type = h->atomic_type,
            .pt_index = h->pt_index,
            .md_handle = h->md_handle,
            .uid = h->uid,
            .match_bits = h->match_bits,
            .remote_offset = h->remote_offset,
            .local_offset = (uint32_t)h->local_offset,
            .len = (uint8_t)len,
        };
        *hdr_len = sizeof(w->sfetch);
        return &w->sfetch;
    }
    if (xp_wire_sget_ok(h, len)) {
        xp_wire_sget_fill(&w->sget, h);
        *hdr_len = sizeof(w->sget);
        return &w->sget;
    }
    *hdr_len = sizeof(*h);
    return h;
}

/* Decode the header at the start of a received packet of len bytes into *h
 * and set *hdr_len to its wire size. 0 on success; -1 when the packet is
 * too short for its header or its lengths disagree (the caller drops it). */
static inline int xp_wire_decode(const void *pkt, size_t len, xp_pkt_t *h, size_t *hdr_len)
{
    uint8_t type = len ? *(const uint8_t *)pkt : 0;
    if (type == XP_WIRE_TPUT || type == XP_WIRE_SPUT) {
        /* The tiny form is the compact one with match bits and header
         * data 0. */
        xp_wire_sput_t s = { 0 };
        size_t hl = type == XP_WIRE_TPUT ? sizeof(xp_wire_tput_t) : sizeof(s);
        if (len < hl)
            return -1;
        if (type == XP_WIRE_TPUT) {
            xp_wire_tput_t t;
            memcpy(&t, pkt, sizeof(t));
            xp_wire_tput_widen(&t, &s);
        } else {
            /* The ring slot may be unaligned for the 64-bit fields. */
            memcpy(&s, pkt, sizeof(s));
        }
        if (s.len != (uint8_t)(len - hl) || s.ack_req == PTL_ACK_REQ ||
            s.ack_req > PTL_OC_ACK_REQ)
            return -1;
        *h = (xp_pkt_t){
            .type = XP_PKT_PUT,
            .slot = s.slot,
            .ack_req = s.ack_req,
            .pt_index = s.pt_index,
            .md_handle = s.md_handle,
            .uid = s.uid,
            .match_bits = s.match_bits,
            .hdr_data = s.hdr_data,
            .rlength = len - hl,
            .remote_offset = s.remote_offset,
        };
        *hdr_len = hl;
        return 0;
    }
    if (type == XP_WIRE_SACK) {
        xp_wire_sack_t a;
        if (len < sizeof(a))
            return -1;
        memcpy(&a, pkt, sizeof(a));
        memset(h, 0, sizeof(*h));
        h->type = XP_PKT_ACK;
        h->slot = a.slot;
        h->ack_req = a.ack_req;
        h->flags = a.flags;
        h->fail = a.fail;
        h->ptl_list = a.ptl_list;
        h->md_handle = a.md_handle;
        h->nseg = a.nseg;
        h->mlength = a.mlength;
        if (!xp_wire_sack_ok(h))
            return -1;
        *hdr_len = sizeof(a);
        return 0;
    }
    if (type == XP_WIRE_SREPLY) {
        xp_wire_sreply_t s;
        if (len < sizeof(s))
            return -1;
        memcpy(&s, pkt, sizeof(s));
        if (s.len != (uint8_t)(len - sizeof(s)))
            return -1;
        xp_wire_sreply_unpack(&s, len - sizeof(s), h);
        *hdr_len = sizeof(s);
        return 0;
    }
    if (type == XP_WIRE_SFETCH) {
        xp_wire_sfetch_t f;
        if (len < sizeof(f))
            return -1;
        memcpy(&f, pkt, sizeof(f));
        if (f.len != len - sizeof(f))
            return -1;
        *h = (xp_pkt_t){
            .type = XP_PKT_FETCH,
            .slot = f.slot,
            .atomic_op = f.atomic_op,
            .atomic_type = f.atomic_type,
            .pt_index = f.pt_index,
            .md_handle = f.md_handle,
            .uid = f.uid,
            .match_bits = f.match_bits,
            .rlength = f.len,
            .remote_offset = f.remote_offset,
            .local_offset = f.local_offset,
        };
        *hdr_len = sizeof(f);
        return 0;
    }
    if (type == XP_WIRE_SGET) {
        xp_wire_sget_t g;
        if (len != sizeof(g)) /* a get carries no payload */
            return -1;
        memcpy(&g, pkt, sizeof(g));
        if (g.len > XP_WIRE_SGET_MAX)
            return -1;
        *h = (xp_pkt_t){
            .type = XP_PKT_GET,
            .slot = g.slot,
            .pt_index = g.pt_index,
            .md_handle = g.md_handle,
            .uid = g.uid,
            .match_bits = g.match_bits,
            .rlength = g.len,
            .remote_offset = g.remote_offset,
            .local_offset = g.local_offset,
        };
        *hdr_len = sizeof(g);
        return 0;
    }
    if (len < sizeof(*h))
        return -1;
    memcpy(h, pkt, sizeof(*h));
    *hdr_len = sizeof(*h);
    return 0;
}

#endif
