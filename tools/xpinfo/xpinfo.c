/*
 * xpinfo - how this copy of Xportals was built and how it is configured.
 *
 *   xpinfo        version, build options, transports
 *   xpinfo -c     also every XP_* setting: value, default, accepted values, help
 *
 * Exits 1 when an XP_* variable in the environment has a bad value (after
 * saying which and why), 2 on a bad command line.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "util/config.h"
#include "xportals/build_config.h"
#ifdef XPINFO_HAVE_TRANSPORTS
#include "transport/shm_seg.h"
#include "transport/transport.h"
#endif

static void usage(FILE *out)
{
    fprintf(out,
            "usage: xpinfo [-c] [-h]\n"
            "  -c, --config   print every XP_* setting: current value, default, accepted values\n"
            "                 and help; settings taken from the environment are marked [set]\n"
            "  -h, --help     print this help\n");
}

#ifdef XPINFO_HAVE_TRANSPORTS
/* How shm moves a put or get above one packet here (XP_SHM_BOUNCE: auto
 * runs the same copy probe as each process's shm transport at start). */
static void print_shm_copies(void)
{
    const xp_config_t *c = xp_config();
    xp_shm_copy_probe_t p;
    size_t max = xp_shm_bounce_limit(&p);
    int single = xp_shm_single_copies(&p);
    if (max && c->shm_heap_size)
        printf("  shm copies:  bounce blocks of the shared heap up to %zu bytes, then single copy",
               max);
    else if (single && c->shm_eager_max)
        printf("  shm copies:  single copy above %zu bytes (XP_SHM_EAGER_MAX)", c->shm_eager_max);
    else if (single && c->shm_eager_probe == XP_SHM_PROBE_OFF)
        printf("  shm copies:  single copy above %u bytes (XP_SHM_EAGER_PROBE=off)",
               XP_SHM_AUTO_EAGER_MAX);
    else if (single) {
        size_t mid = xp_shm_mid_bounce_limit(); /* (shm_bounce.c, xp_shm_bounce_mid) */
        printf("  shm copies:  single copy above the node's eager probe's verdict (4 KiB to a "
               "packet; timed by the first two local ranks at start, XP_LOG_LEVEL=info prints "
               "it)");
        if (mid)
            printf(", bounce blocks up to %zu bytes where the verdict was a packet", mid);
    }
    else
        printf("  shm copies:  single copy above one packet");
    if (p.len)
        printf(" (probe of %zu bytes: process_vm_readv %.0f ns%s, memcpy %.0f ns)", p.len,
               p.cma_ns, p.cma_ok ? "" : " not allowed", p.copy_ns);
    printf("\n");
}
#endif

static void print_build(void)
{
    const char *san = XP_SANITIZE_STRING;
    printf("Xportals %s\n", XP_VERSION_STRING);
    printf("  CUDA:        %s\n", XP_ENABLE_CUDA ? "yes" : "no");
    printf("  PMIx:        %s\n", XP_HAVE_PMIX ? "yes" : "no");
    printf("  sanitizers:  %s\n", san[0] ? san : "none");
#ifdef XPINFO_HAVE_TRANSPORTS
    printf("  transports: ");
    for (const char *const *n = xp_tl_names(); n && *n; n++)
        printf(" %s", *n);
    printf("\n");
    print_shm_copies();
#else
    printf("  transports:  (transport layer not built)\n");
#endif
}

/* Human-readable size bound: 131072 -> "128k". */
static void format_size(long v, char *buf, size_t len)
{
    static const char units[] = "kmgt";
    int u = -1;
    while (v >= 1024 && v % 1024 == 0 && u < 3) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%ld", v);
    else
        snprintf(buf, len, "%ld%c", v, units[u]);
}

static void print_accepted(const xp_config_info_t *ci)
{
    char lo[32], hi[32];
    switch (ci->type) {
    case XP_CFG_BOOL: printf("      accepts: yes|no (also 1|0, on|off, true|false)\n"); break;
    case XP_CFG_ENUM: printf("      accepts: %s\n", ci->choices); break;
    case XP_CFG_INT: printf("      accepts: an integer in [%ld, %ld]\n", ci->min, ci->max); break;
    case XP_CFG_SIZE:
        format_size(ci->min, lo, sizeof lo);
        format_size(ci->max, hi, sizeof hi);
        printf("      accepts: a size in [%s, %s] (suffixes k, m, g, t)\n", lo, hi);
        break;
    case XP_CFG_STRING: printf("      accepts: text\n"); break;
    }
}

/* Print help text indented, wrapped before column 80. */
static void print_wrapped(const char *text, int indent)
{
    const int width = 80 - indent;
    while (*text) {
        int len = (int)strlen(text);
        if (len > width) {
            len = width;
            while (len > 0 && text[len] != ' ')
                len--;
            if (len == 0)
                len = width;
        }
        printf("%*s%.*s\n", indent, "", len, text);
        text += len;
        while (*text == ' ')
            text++;
    }
}

static void print_config(void)
{
    printf("\nSettings (environment variables):\n");
    for (size_t i = 0; i < xp_config_count(); i++) {
        const xp_config_info_t *ci = xp_config_info(i);
        char value[512];
        int set = 0;
        xp_config_value_string(i, value, sizeof value, &set);
        printf("\n  %s=%s%s\n", ci->name, value, set ? "   [set]" : "");
        printf("      default: %s\n", ci->def[0] ? ci->def : "(empty)");
        print_accepted(ci);
        print_wrapped(ci->help, 6);
    }
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", no_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int show_config = 0, opt;
    while ((opt = getopt_long(argc, argv, "ch", options, NULL)) != -1) {
        switch (opt) {
        case 'c': show_config = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "xpinfo: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }

    /* Reading the configuration reports bad values and unknown names on stderr. */
    xp_status_t st = xp_config_status();
    print_build();
    if (show_config)
        print_config();
    fflush(stdout);
    if (st != XP_OK) {
        fprintf(stderr, "xpinfo: error: some XP_* environment variables have invalid values "
                        "(see the messages above; 'xpinfo -c' lists what each accepts)\n");
        return 1;
    }
    return 0;
}
