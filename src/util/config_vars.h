/*
 * util/config_vars.h - THE table of every XP_* environment variable.
 *
 * One row per variable: XP_CONFIG_VAR(field, TYPE, "NAME", "default", min, max,
 * "choices", "help"). TYPE is BOOL, INT, SIZE (accepts k/m/g suffixes), ENUM
 * (index into "a|b|c" choices) or STRING. min/max bound INT and SIZE values.
 * A layer that needs a setting adds a row here and reads xp_config()->field;
 * nothing else reads the environment. xpinfo -c prints this table.
 */
/* clang-format off */
XP_CONFIG_VAR(log_level, ENUM, "XP_LOG_LEVEL", "warn", 0, 0, "error|warn|info|debug|trace",
              "Logging verbosity on stderr")
XP_CONFIG_VAR(progress, ENUM, "XP_PROGRESS", "thread", 0, 0, "thread|inline",
              "How the Portals engine progresses: a per-process progress thread that sleeps "
              "when idle (thread) or only inside library calls (inline)")
XP_CONFIG_VAR(transports, STRING, "XP_TRANSPORTS", "self,shm", 0, 0, "",
              "Comma-separated transports to use, in order of preference")
XP_CONFIG_VAR(bootstrap, ENUM, "XP_BOOTSTRAP", "auto", 0, 0, "auto|pmi1|pmix|singleton",
              "How the runtime learns rank and size (auto: PMI-1 if PMI_FD/PMI_PORT is set, "
              "else PMIx if PMIX_RANK is set, else singleton)")
XP_CONFIG_VAR(bootstrap_timeout, INT, "XP_BOOTSTRAP_TIMEOUT", "120", 1, 86400, "",
              "Seconds to wait for the launcher's answer before giving up")
XP_CONFIG_VAR(malloc_hugepages, BOOL, "XP_MALLOC_HUGEPAGES", "1", 0, 0, "",
              "xprun starts ranks with glibc's malloc asking for transparent huge pages "
              "(GLIBC_TUNABLES glibc.malloc.hugetlb=1, unless GLIBC_TUNABLES sets hugetlb "
              "itself) and taking blocks up to 32 MiB from its heap (mmap_threshold=33554432, "
              "unless set, or hugetlb is set to other than 1): single copies of large malloc "
              "buffers pin 2 MiB pages, not 4 KiB ones. No effect where THP is off (never)")
XP_CONFIG_VAR(spin_count, INT, "XP_SPIN_COUNT", "2000", 0, 100000000, "",
              "Polls that find nothing before a waiting thread sleeps on a futex (the progress "
              "thread spins only where a CPU is likely spare for it)")
XP_CONFIG_VAR(node_cpus, INT, "XP_NODE_CPUS", "0", 0, 1048576, "",
              "CPUs that the node's ranks share, against which the library tells whether the "
              "node runs more ranks than CPUs (0: the union of the local ranks' affinity masks, "
              "as their shared-memory segments record them; the online CPUs without shm)")
XP_CONFIG_VAR(oversub_yield_us, INT, "XP_OVERSUB_YIELD_US", "500", 0, 1000000, "",
              "With more local ranks than CPUs: microseconds a waiting thread that found nothing "
              "in its spin keeps polling, yielding its CPU after each look, before it sleeps on a "
              "futex (a waited-for rank on the same CPU runs at once; 0: sleep after the spin)")
XP_CONFIG_VAR(accel_cuda, ENUM, "XP_ACCEL_CUDA", "auto", 0, 0, "off|auto",
              "Load the CUDA agent plugin when a CUDA agent is requested or the process uses CUDA (auto), or never (off)")
XP_CONFIG_VAR(accel_plugin_dir, STRING, "XP_ACCEL_PLUGIN_DIR", "", 0, 0, "",
              "Folder holding libxpaccel_cuda.so (default: <libdir>/xportals next to libportals)")
/* clang-format on */
/* clang-format off */
XP_CONFIG_VAR(shm_ring_size, SIZE, "XP_SHM_RING_SIZE", "1m", 131072, 1073741824, "",
              "Bytes of each process's shared-memory inbox ring (rounded down to a power of two)")
XP_CONFIG_VAR(dt_work_unit, SIZE, "XP_DT_WORK_UNIT", "2k", 256, 65536, "",
              "Datatype engine: bytes per work unit that long blocks are split into for GPU warps")
XP_CONFIG_VAR(dt_threads, INT, "XP_DT_THREADS", "1", 1, 256, "",
              "Datatype engine: CPU threads (caller included) that share one large pack / unpack")
XP_CONFIG_VAR(dt_par_min, SIZE, "XP_DT_PAR_MIN", "8m", 4096, 1099511627776, "",
              "Datatype engine: smallest pack / unpack window split over XP_DT_THREADS threads")
XP_CONFIG_VAR(dt_stream_min, SIZE, "XP_DT_STREAM_MIN", "0", 0, 1099511627776, "",
              "Datatype engine: smallest CPU pack / unpack window (of blocks >= 256 B) copied with "
              "non-temporal stores and a software prefetch ahead; 0: half the last-level cache")
XP_CONFIG_VAR(dt_max_segments, SIZE, "XP_DT_MAX_SEGMENTS", "16m", 16, 1099511627776, "",
              "Datatype engine: most flattened segments cached for one type (commit fails above)")
XP_CONFIG_VAR(dt_zero_copy, BOOL, "XP_DT_ZERO_COPY", "1", 0, 0, "",
              "Datatype engine: GPU kernels read / write pinned host buffers directly (zero copy) "
              "instead of staging through device memory")
XP_CONFIG_VAR(dt_cuda, ENUM, "XP_DT_CUDA", "auto", 0, 0, "off|auto",
              "Datatype engine: load the xpdt_cuda plugin once the process uses CUDA (auto), or never (off)")
/* clang-format on */
/* clang-format off */
XP_CONFIG_VAR(shm_asym_fence, BOOL, "XP_SHM_ASYM_FENCE", "1", 0, 0, "",
              "shm senders skip the store-load fence before looking for sleepers, which then "
              "issue a global membarrier instead (about 4x the small-packet rate); only safe when "
              "every thread sleeps on the process doorbell through xp_tl_wait (the engine does). "
              "Also lets direct heap accesses (XP_SHM_DIRECT) announce themselves with a plain "
              "store, the entry's close then issuing the membarrier")
/* clang-format on */
/* clang-format off */
XP_CONFIG_VAR(shm_heap_size, SIZE, "XP_SHM_HEAP_SIZE", "256m", 0, 68719476736, "",
              "Bytes of address space of each process's shared heap (xp_shmalloc; pages are "
              "allocated on first touch); transfers from/to a peer's heap are plain copies. 0: none")
XP_CONFIG_VAR(shm_direct, BOOL, "XP_SHM_DIRECT", "1", 0, 0, "",
              "Atomics and puts (up to XP_SHM_DIRECT_MAX) into an entry that lies in a peer's "
              "shared heap and asks for no target event or count are applied by the initiator "
              "through its mapping (a CPU atomic, a copy) instead of through the peer's ring and "
              "handler (ptl/direct.h); 0: always the ring")
XP_CONFIG_VAR(shm_direct_max, SIZE, "XP_SHM_DIRECT_MAX", "0", 0, 1099511627776, "",
              "Largest put or get that XP_SHM_DIRECT copies straight into or out of a peer's "
              "shared heap, inside PtlPut / PtlGet (a put from an iovec MD at most 4 KiB); larger "
              "ones take the ring, where the target's CPU makes or shares the copy. 0: no limit")
/* clang-format on */
/* clang-format off */
XP_CONFIG_VAR(shm_split_min, SIZE, "XP_SHM_SPLIT_MIN", "128k", 0, 1099511627776, "",
              "Smallest single-copy (process_vm_readv/writev) shm transfer that the copying process "
              "shares with the peer whose memory it copies: both claim chunks of it, so both "
              "processes' CPUs copy. Off when the node runs more local ranks than CPUs. 0: never")
XP_CONFIG_VAR(shm_split_chunk, SIZE, "XP_SHM_SPLIT_CHUNK", "512k", 4096, 1073741824, "",
              "Largest claim of a shared (split) shm transfer, which is cut into about four "
              "chunks of at least 16k (see XP_SHM_SPLIT_MIN)")
/* clang-format on */
/* clang-format off */
XP_CONFIG_VAR(shm_bounce, ENUM, "XP_SHM_BOUNCE", "auto", 0, 0, "auto|on|off",
              "Whether shm puts and gets above one packet stage their data in bounce blocks "
              "(on, up to XP_SHM_BOUNCE_MAX) or copy once with process_vm_readv/writev (off: "
              "single copies above XP_SHM_EAGER_MAX, and large copies from a peer's shared heap "
              "shared by both CPUs); auto: each process times both copies once at start "
              "(~0.1 ms) and stages where the pinned copy costs over 6 memcpys (xpinfo prints "
              "the choice); where it does not, blocks still take transfers up to 512k if the "
              "node's eager probe (XP_SHM_EAGER_MAX) found copies through shared memory "
              "faster at every size it timed")
XP_CONFIG_VAR(shm_eager_max, SIZE, "XP_SHM_EAGER_MAX", "0", 0, 1073741824, "",
              "Largest shm put or get payload sent inline in ring packets (at most one packet, "
              "32k less a header); larger ones go by bounce block or single copy. 0: auto: "
              "where single copies were chosen (XP_SHM_BOUNCE off, or auto found their pinning "
              "cheap), the node's first two local ranks time both ways at 8, 16 and 32 KiB, "
              "with data untouched since the last send and just written, when they start "
              "(~1 ms; XP_LOG_LEVEL=info prints it) and every local rank takes the largest "
              "size up to which copies through shared memory won, both weighed alike (4k if "
              "none did, the probe failed, or the node runs more ranks than CPUs); where "
              "bounce blocks were chosen, a whole packet")
XP_CONFIG_VAR(shm_eager_probe, ENUM, "XP_SHM_EAGER_PROBE", "auto", 0, 0, "auto|on|off",
              "The node's eager probe (XP_SHM_EAGER_MAX, XP_SHM_BOUNCE auto): auto runs it "
              "where the node has at least as many CPUs as local ranks; on also where it has "
              "fewer (the timings then include the scheduler's); off never (4k where single "
              "copies were chosen, and no mid-size bounce blocks)")
XP_CONFIG_VAR(shm_bounce_max, SIZE, "XP_SHM_BOUNCE_MAX", "4m", 0, 1073741824, "",
              "Largest shm put or get (above one packet) whose data the side that has it stages "
              "in its shared heap, from where the other side copies it with one memcpy (behind "
              "the stager, above 64k) instead of a process_vm_readv/writev that pins pages; "
              "staged data takes at most a quarter of XP_SHM_HEAP_SIZE at a time, the rest "
              "(and larger transfers) use process_vm_readv/writev. 0: never. Only where "
              "XP_SHM_BOUNCE is on or auto chooses blocks")
/* clang-format on */
/* clang-format off */
XP_CONFIG_VAR(shm_pair_ring_size, SIZE, "XP_SHM_PAIR_RING_SIZE", "128k", 0, 1073741824, "",
              "Bytes of each shm pair lane (rounded down to a power of two, at least 128k): every "
              "process gets two single-producer rings into each local peer, one for the requests "
              "of one of its threads and one for its answers, so small sends need no locked "
              "instruction (pages are allocated on first use). 0: every packet goes through the "
              "peer's shared inbox ring")
/* clang-format on */
