/* twolm.c -- fast memory as Memory Mode's direct-mapped, address-indexed cache (2LM) */
#include <stdlib.h>

#include "atm_twolm.h"

/* One entry per set: the line it holds, shifted left by two, with bit 1 set when the entry is
 * valid and bit 0 when the line is dirty. Line numbers are signed (addresses are relative to a
 * base the caller picks), and the shift keeps them whole for any address below 2^61 lines. */
#define ENTRY_VALID 2u
#define ENTRY_DIRTY 1u

struct atm_twolm {
	int64_t line_bytes;
	int64_t n_sets;
	uint64_t *sets;
};

/* floor_div -- a / b rounded towards minus infinity (b > 0) */
static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && a < 0) ? q - 1 : q;
}

atm_status atm_twolm_new(atm_twolm **out, int64_t capacity_bytes, int64_t line_bytes)
{
	*out = NULL;
	if (line_bytes <= 0 || (line_bytes & (line_bytes - 1)))
		return atm_err(ATM_E_USAGE, "a 2LM cache line of %lld bytes: a line is a power of two "
		               "bytes long (64 in Memory Mode)", (long long)line_bytes);
	if (capacity_bytes < line_bytes)
		return atm_err(ATM_E_USAGE, "a 2LM cache of %lld bytes holds no %lld-byte line: give a "
		               "cache of at least %lld bytes (the fast memory caching the slow memory)",
		               (long long)capacity_bytes, (long long)line_bytes, (long long)line_bytes);
	int64_t n_sets = capacity_bytes / line_bytes;
	if ((uint64_t)n_sets > SIZE_MAX / sizeof(uint64_t))
		return atm_err(ATM_E_NOMEM, "a 2LM cache of %lld bytes has too many lines to model",
		               (long long)capacity_bytes);
	atm_twolm *c = calloc(1, sizeof *c);
	if (!c || !(c->sets = calloc((size_t)n_sets, sizeof *c->sets))) {
		free(c);
		return atm_err(ATM_E_NOMEM, "out of memory creating the 2LM cache model (%lld lines)",
		               (long long)n_sets);
	}
	c->line_bytes = line_bytes;
	c->n_sets = n_sets;
	*out = c;
	return ATM_OK;
}

void atm_twolm_destroy(atm_twolm *c)
{
	if (!c)
		return;
	free(c->sets);
	free(c);
}

int64_t atm_twolm_line_bytes(const atm_twolm *c)
{
	return c->line_bytes;
}

void atm_twolm_access(atm_twolm *c, int64_t addr, int64_t bytes, bool write,
                      atm_twolm_traffic *t)
{
	if (bytes <= 0)
		return;
	int64_t first = floor_div(addr, c->line_bytes);
	int64_t last = floor_div(addr + bytes - 1, c->line_bytes);
	int64_t set = first - floor_div(first, c->n_sets) * c->n_sets;
	uint64_t *sets = c->sets;
	uint64_t dirty = write ? ENTRY_DIRTY : 0;
	int64_t misses = 0, evicted_dirty = 0;
	for (int64_t line = first; line <= last; line++) {
		uint64_t want = (uint64_t)line << 2 | ENTRY_VALID;
		uint64_t e = sets[set];
		if ((e & ~(uint64_t)ENTRY_DIRTY) == want) {
			sets[set] = e | dirty;
		} else {
			/* a miss fills the whole line from slow memory, a write miss too (the hardware
			 * reads before it merges the write), and writes back the dirty line it evicts,
			 * whether or not the tensor that wrote it is still alive */
			misses++;
			evicted_dirty += (int64_t)(e & ENTRY_DIRTY);
			sets[set] = want | dirty;
		}
		if (++set == c->n_sets)
			set = 0;
	}
	t->read_bytes += misses * c->line_bytes;
	t->fill_bytes += write ? misses * c->line_bytes : 0;
	t->written_bytes += evicted_dirty * c->line_bytes;
	t->n_misses += misses;
}

void atm_twolm_flush(atm_twolm *c, atm_twolm_traffic *t)
{
	for (int64_t s = 0; s < c->n_sets; s++)
		if (c->sets[s] & ENTRY_DIRTY) {
			c->sets[s] &= ~(uint64_t)ENTRY_DIRTY;
			t->written_bytes += c->line_bytes;
		}
}

void atm_twolm_node(atm_twolm *c, const atm_graph *g, const atm_event *ev,
                    int64_t (*addr)(const void *ctx, int32_t tensor), const void *ctx,
                    atm_twolm_traffic *t)
{
	const atm_node *n = atm_graph_node(g, ev->node);
	for (int i = 0; i < n->n_in; i++)
		if (ev->cfg[i] != ATM_LOC_FAST) {
			const atm_tensor *x = atm_graph_tensor(g, n->in[i]);
			int64_t at = addr(ctx, x->id);
			atm_twolm_access(c, at, x->bytes, false, t);
			if (atm_op_writes_input(n->op, i))
				atm_twolm_access(c, at, x->bytes, true, t);
		}
	for (int i = 0; i < n->n_out; i++)
		if (ev->cfg[n->n_in + i] != ATM_LOC_FAST) {
			const atm_tensor *x = atm_graph_tensor(g, n->out[i]);
			atm_twolm_access(c, addr(ctx, x->id), x->bytes, true, t);
		}
}

void atm_twolm_traffic_add(atm_twolm_traffic *sum, const atm_twolm_traffic *t)
{
	sum->read_bytes += t->read_bytes;
	sum->fill_bytes += t->fill_bytes;
	sum->written_bytes += t->written_bytes;
	sum->n_misses += t->n_misses;
}

double atm_twolm_wait_s(const atm_twolm_traffic *t, double read_gbps, double write_gbps,
                      double fast_gbps)
{
	if (!(read_gbps > 0) || !(write_gbps > 0))
		return 0;
	double demand = (double)(t->read_bytes - t->fill_bytes);
	double whole = (double)t->fill_bytes / (read_gbps * 1e9) +
	               (double)t->written_bytes / (write_gbps * 1e9);
	if (!(fast_gbps > 0))
		return whole + demand / (read_gbps * 1e9);
	return whole + atm_emulated_extra_s(demand, 0, read_gbps, write_gbps, fast_gbps);
}
