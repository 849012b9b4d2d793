/* atm_twolm.h -- the 2LM cache model: fast memory as Memory Mode's direct-mapped,
 * address-indexed cache in front of slow memory, which the runtime's executor emulates 2LM with
 * and the optimizer predicts 2LM with.
 *
 * Usage:
 *
 *     atm_twolm *c = NULL;
 *     atm_twolm_traffic t = {0};
 *     if (atm_twolm_new(&c, 1 << 30, ATM_2LM_LINE_BYTES) < 0) { ...atm_errmsg()... }
 *     atm_twolm_access(c, addr, bytes, false, &t);      // a read of a tensor at addr
 *     atm_twolm_flush(c, &t);                           // the dirty lines written back
 *     double s = atm_twolm_wait_s(&t, read_gbps, write_gbps, fast_gbps);
 *     atm_twolm_destroy(c);
 *
 * A module of its own: both the runtime and the optimizer use it, neither may link the other,
 * and it is neither the graph IR nor a file format.
 */
#ifndef ATM_TWOLM_H
#define ATM_TWOLM_H

#include "atm_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Memory Mode (2LM) puts fast memory in front of slow memory as a cache the hardware manages:
 * direct-mapped, indexed by address, in lines of 64 bytes, as large as the fast memory. The
 * model does the same over addresses the caller gives (a tensor's place in the slow heap), so
 * tensors whose lines share sets evict each other even when the cache has room, and a tensor
 * larger than the cache evicts its own first part. The hardware never learns that a tensor
 * died: its dirty lines stay until something evicts them and are written back then, and a
 * tensor given a dead one's address hits what that one left. Every miss, a write's too, reads
 * the line from slow memory (Hildebrand et al., ISPASS 2021, measured Memory Mode filling on a
 * write miss). The runtime uses the model to emulate 2LM on machines without Memory Mode, the
 * optimizer to predict it (docs/tiers.md, "2LM emulation"). */

typedef struct atm_twolm atm_twolm;

/* Memory Mode's line. */
#define ATM_CACHE_LINE_BYTES 64
/* The line the executor's emulation and the optimizer's prediction model: a page, 64 of
 * Memory Mode's lines. Simulating 64-byte lines costs 30-230 ms a step for the large networks
 * at the small preset, time the emulated step would count; whole pages change the slow
 * traffic by under 0.6% on them (docs/tiers.md, "2LM emulation"). */
#define ATM_2LM_LINE_BYTES 4096

/* Slow-memory traffic accesses caused. */
typedef struct {
	int64_t read_bytes;    /* lines filled from slow memory (every miss, reads and writes) */
	int64_t fill_bytes;    /* of those, lines filled for a write that missed */
	int64_t written_bytes; /* dirty lines written back to slow memory when evicted or flushed */
	int64_t n_misses;      /* lines that missed */
} atm_twolm_traffic;

/* atm_twolm_new -- an empty direct-mapped cache of capacity_bytes (rounded down to whole
 * lines) in lines of line_bytes (a power of two); ATM_E_USAGE naming the value when the line is
 * not a power of two or the cache holds no whole line (a capacity of 0 among them) */
atm_status atm_twolm_new(atm_twolm **c, int64_t capacity_bytes, int64_t line_bytes);
void atm_twolm_destroy(atm_twolm *c);
/* atm_twolm_line_bytes -- c's line */
int64_t atm_twolm_line_bytes(const atm_twolm *c);
/* atm_twolm_access -- the bytes at addr (any integer; the set of a line is its number modulo the
 * cache's lines) are read or written; every line the range touches, partly or whole, is looked
 * up in turn; adds the traffic to t */
void atm_twolm_access(atm_twolm *c, int64_t addr, int64_t bytes, bool write,
                      atm_twolm_traffic *t);
/* atm_twolm_flush -- write back every dirty line (the end of a measurement) */
void atm_twolm_flush(atm_twolm *c, atm_twolm_traffic *t);
/* atm_twolm_node -- the accesses kernel event ev of g makes through the cache, in order: each
 * operand ev's cfg leaves slow, inputs read (and written again where the op writes one),
 * outputs written, at the address addr(ctx, tensor) gives; adds the traffic to t. The executor's
 * emulation and the optimizer's prediction both walk a kernel through this. */
void atm_twolm_node(atm_twolm *c, const atm_graph *g, const atm_event *ev,
                    int64_t (*addr)(const void *ctx, int32_t tensor), const void *ctx,
                    atm_twolm_traffic *t);
/* atm_twolm_traffic_add -- sum += t */
void atm_twolm_traffic_add(atm_twolm_traffic *sum, const atm_twolm_traffic *t);
/* atm_twolm_wait_s -- what traffic t adds to a kernel whose operands, timed in fast memory (at
 * fast_gbps), live behind the 2LM cache of a slow tier (read_gbps, write_gbps; 1e9 bytes/s):
 * a read miss serves a read the kernel makes anyway, from slow memory instead of fast, and
 * costs its slow time less its fast time (atm_emulated_extra_s); a write miss's fill and a
 * write-back are traffic the kernel never asked for and cost their whole slow time. The
 * executor's 2LM emulation waits this, and the optimizer's 2LM prediction adds it. fast_gbps
 * <= 0 (unknown) counts every miss whole. */
double atm_twolm_wait_s(const atm_twolm_traffic *t, double read_gbps, double write_gbps,
                      double fast_gbps);

#ifdef __cplusplus
}
#endif

#endif /* ATM_TWOLM_H */
