/*
 * transport/tl_list.h - THE list of compiled-in transports, in default order.
 * Each entry X(name) needs a `const xp_tl_ops_t xp_tl_<name>_ops` whose
 * `name` field is "<name>" (checked at registration).
 */
#ifndef XP_TRANSPORT_TL_LIST_H
#define XP_TRANSPORT_TL_LIST_H

#include "transport/transport.h"

#define XP_TL_LIST(X) \
    X(self)           \
    X(shm)

#define XP_TL_DECLARE_(name) extern const xp_tl_ops_t xp_tl_##name##_ops;
XP_TL_LIST(XP_TL_DECLARE_)
#undef XP_TL_DECLARE_

#endif
