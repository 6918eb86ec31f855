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
XP_CONFIG_VAR(spin_count, INT, "XP_SPIN_COUNT", "2000", 0, 100000000, "",
              "Polls before a waiting thread sleeps on a futex")
/* clang-format on */
