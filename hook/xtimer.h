/* The C API of libxtimer.so. Programs need none of it (the hook works on unmodified programs);
 * it lets a program or a test ask the hook what it does. Resolve the functions with dlsym when
 * the library may be absent. All are thread-safe and never touch the CUDA error state or errno.
 */
#ifndef XTIMER_HOOK_XTIMER_H_
#define XTIMER_HOOK_XTIMER_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Description: the hook's version and the ring/record format versions it writes.
 * Return: a static string, "xtimer <version> (ring v<N>, record v<M>)". */
const char* xtimer_version(void);

/* Description: whether this process times ops now. Starts the hook if no hooked call has yet.
 * Return: 1 when timing is on; 0 when it is off (XTIMER_DISABLE, a forked child, after exit
 * began). */
int xtimer_enabled(void);

/* Description: waits until every op queued before the call has completed on the GPU and been
 * written to the ring (or dropped and counted).
 * Input: timeout_ms, the longest wait.
 * Return: 0 on success, -1 on timeout or when timing is off. */
int xtimer_flush(int timeout_ms);

/* Counters of this process since the hook started. */
typedef struct xtimer_stats {
  uint64_t queued;        /* ops handed to the poller */
  uint64_t written;       /* records written to the ring */
  uint64_t ring_dropped;  /* records dropped because the ring was full */
  uint64_t queue_dropped; /* ops dropped because the poller's queue was full */
  uint64_t untimed;       /* ops passed through untimed (pending app error, no pool event...) */
} xtimer_stats;

/* Description: copies the counters into *stats (zeros before the hook starts).
 * Return: 0, or -1 when stats is NULL. */
int xtimer_get_stats(xtimer_stats* stats);

#ifdef __cplusplus
}
#endif

#endif /* XTIMER_HOOK_XTIMER_H_ */
