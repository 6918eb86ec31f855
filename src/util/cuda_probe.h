/*
 * util/cuda_probe.h - is the CUDA driver loaded in this process?
 *
 * Only a process that has libcuda loaded can hold device pointers, so the
 * CUDA plugins (datatypes, agents) are loaded only once the answer is yes.
 * A dlopen(RTLD_NOLOAD) probe costs tens of microseconds; the loader's count
 * of loaded objects costs tens of nanoseconds to read, so probe again only
 * when that count moved since the caller's last negative probe.
 */
#ifndef XP_UTIL_CUDA_PROBE_H
#define XP_UTIL_CUDA_PROBE_H

/* *probed_adds: the caller's cache (start at 0; updated on a negative probe). */
int xp_cuda_driver_loaded(unsigned long long *probed_adds);

#endif
