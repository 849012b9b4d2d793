/* heuristic.c -- a fast feasible placement: per-tensor shortest paths through the gate chain, in rounds */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* opt_past -- the deadline (atm_now_s's clock) has passed, or the plan was interrupted: what
 * the heuristic's loops ask before each step */
static bool opt_past(const struct model *m, double deadline)
{
	return (m->o.stop && *m->o.stop) || atm_now_s() >= deadline;
}

/* Where a tensor meets a node: a member of a free group, or forced by its group. */
struct touch {
	int32_t node, phase;
	int8_t unit;  /* free group index, -1 when forced */
	int8_t force; /* forced: 0 fast, 1 slow */
};

struct heur {
	const struct model *m;
	struct solution *s;
	int64_t *used;     /* bytes per slot */
	double *kt;        /* kernel seconds per node under s */
	double *xfer;      /* per node k under s: its asynchronous copies' channel seconds at 2k,
	                    * the seconds they cost its kernel at 2k + 1 (opt_copy_cost) */
	int32_t *tstart;   /* CSR of touches by tensor */
	struct touch *tt;
	/* scratch for one tensor's shortest path */
	double *best;      /* [phase][state] */
	int8_t *prev;
	int64_t *res_ph, *res_g;
	int32_t cap;
	uint8_t *path;
	/* pricing: instead of hard room, every byte-slot of fast memory costs price[s] */
	bool priced;
	bool strict;          /* while priced: limits still hold (the GPU's feasible start) */
	double *pre;       /* prefix sums of the prices, n_slots + 1 */
	double eps;        /* polishing: a token cost per move, so ties go to fewer moves */
	uint8_t *must;     /* by phase: the states the chosen recomputations allow (0: any) */
};

/* node_cost -- node k's seconds (kernel against its copies) with group ux slow or not; the
 * members of that group other than x must agree unless relax; INFINITY when they do not */
static double node_cost(const struct heur *h, int32_t k, int ux, int32_t x, bool slow, bool relax)
{
	const struct model *m = h->m;
	const struct nmodel *nm = &m->n[k];
	int c = 0;
	for (int u = 0; u < nm->n_free; u++) {
		const struct unit *un = &nm->units[u];
		int us = 0, first = 1;
		if (u == ux) {
			c |= slow << u;
			if (relax)
				continue;
		}
		for (int j = 0; j < un->n_members; j++) {
			int32_t y = un->members[j];
			if (y == x)
				continue;
			int ys = !h->s->pinned[y] && h->s->st[m->t[y].ph_off + un->phase[j]] == ST_S;
			if (u == ux) {
				if (ys != (int)slow)
					return INFINITY;
				continue;
			}
			if (first) {
				us = ys;
				first = 0;
			} else if (ys != us) {
				return INFINITY;
			}
		}
		if (u != ux)
			c |= us << u;
	}
	double t = opt_node_time(m, h->s, k, c);
	if (t < 0)
		return INFINITY;
	return opt_overlapped(t, h->xfer[2 * k], h->xfer[2 * k + 1]);
}

/* refresh_node -- node k's kernel time under the current placement */
static void refresh_node(struct heur *h, int32_t k)
{
	int c = opt_node_config(h->m, h->s, k);
	double t = c < 0 ? -1 : opt_node_time(h->m, h->s, k, c);
	h->kt[k] = t < 0 ? INFINITY : t;
}

/* pick_algos -- each GPU kernel with a choice runs its fastest algorithm whose workspace fits
 * the room its slot has beside the placement's tensors; the smallest always does, since the
 * placement was searched with it */
static void pick_algos(struct heur *h)
{
	const struct model *m = h->m;
	for (int32_t k = 0; k < m->n_nodes; k++) {
		const struct nmodel *nm = &m->n[k];
		if (nm->n_algo < 2)
			continue;
		int32_t sl = SLOT_K(k);
		int64_t base = h->used[sl] - opt_algo_extra(m, h->s, k);
		for (int i = 0; i < nm->n_algo; i++) {
			int64_t need = base + nm->algo_ws[i] - nm->algo_ws[nm->n_algo - 1];
			if (m->limit[sl] == INT64_MAX || need <= m->limit[sl] || i == nm->n_algo - 1) {
				h->s->algo[k] = (uint8_t)i;
				h->used[sl] = need;
				break;
			}
		}
		refresh_node(h, k);
	}
}

/* gate_slots -- slots where gate g's copy holds a fast copy while it runs */
static void gate_slots(const struct gate *g, int32_t *lo, int32_t *hi)
{
	*lo = SLOT_M(g->at - 1);
	*hi = g->fetch ? SLOT_K(g->at) : SLOT_M(g->at);
}

/* place -- add (sign 1) or remove (sign -1) tensor x's bytes and copies under the current path */
static void place(struct heur *h, int32_t x, int sign)
{
	const struct model *m = h->m;
	const struct tmodel *t = &m->t[x];
	int64_t b = sign * t->abytes;
	if (h->s->pinned[x]) {
		for (int32_t s = t->slot_lo; s <= t->slot_hi; s++)
			h->used[s] += b;
		return;
	}
	for (int32_t i = 0; i < t->n_gates; i++) {
		uint8_t to = h->s->st[t->ph_off + i], from = i ? h->s->st[t->ph_off + i - 1] : ST_S;
		if (IS_FAST(to))
			for (int32_t s = t->ph_lo[i]; s <= t->ph_hi[i]; s++)
				h->used[s] += b;
		const struct gate *g = &t->gates[i];
		if (g->kind != G_ASYNC)
			continue;
		int e = EDGE(from, to);
		double *x2 = &h->xfer[2 * g->at];
		opt_copy_cost(m, e, g->cost[e], sign, &x2[0], &x2[1]);
		for (int j = 0; j < 2; j++)
			if (x2[j] < 1e-15)
				x2[j] = 0;
		if (opt_present_in_gate(e)) {
			int32_t lo, hi;
			gate_slots(g, &lo, &hi);
			for (int32_t s = lo; s <= hi; s++)
				h->used[s] += b;
		}
	}
}

/* price -- what holding one byte in fast memory over slots [lo, hi] costs (pricing only) */
static double price(const struct heur *h, int32_t lo, int32_t hi)
{
	return h->priced && lo <= hi ? h->pre[hi + 1] - h->pre[lo] : 0;
}

/* rebuild -- bytes per slot, copies per node and kernel times from the placement itself */
static void rebuild(struct heur *h)
{
	const struct model *m = h->m;
	opt_solution_bytes(m, h->s, h->used);
	memset(h->xfer, 0, 2 * (size_t)m->n_nodes * sizeof *h->xfer);
	for (int32_t x = 0; x < m->n_tensors; x++) {
		const struct tmodel *t = &m->t[x];
		if (t->cls != TC_MOVABLE || h->s->pinned[x])
			continue;
		for (int32_t i = 1; i < t->n_gates; i++)
			if (t->gates[i].kind == G_ASYNC) {
				int e = EDGE(h->s->st[t->ph_off + i - 1], h->s->st[t->ph_off + i]);
				int32_t at = t->gates[i].at;
				opt_copy_cost(m, e, t->gates[i].cost[e], 1, &h->xfer[2 * at],
				              &h->xfer[2 * at + 1]);
			}
	}
	for (int32_t k = 0; k < m->n_nodes; k++)
		refresh_node(h, k);
}

/* room -- the least free bytes over slots [lo, hi] (unbounded while pricing) */
static int64_t room(const struct heur *h, int32_t lo, int32_t hi)
{
	int64_t r = INT64_MAX;
	if (h->priced && !h->strict)
		return r;
	for (int32_t s = lo; s <= hi; s++) {
		int64_t v = h->m->limit[s] == INT64_MAX ? INT64_MAX : h->m->limit[s] - h->used[s];
		if (v < r)
			r = v;
	}
	return r;
}

/* phase_cost -- seconds of the nodes x meets in phase i when x is in state st there */
static double phase_cost(const struct heur *h, int32_t x, int32_t i, uint8_t st, int32_t force_node)
{
	double c = 0;
	for (int32_t j = h->tstart[x]; j < h->tstart[x + 1]; j++) {
		const struct touch *tc = &h->tt[j];
		if (tc->phase != i)
			continue;
		bool slow = st == ST_S;
		if (tc->node == force_node && slow)
			return INFINITY;
		if (tc->unit < 0) {
			if (tc->force != slow)
				return INFINITY;
			continue;
		}
		c += node_cost(h, tc->node, tc->unit, x, slow, tc->node == force_node);
	}
	return c;
}

/* pinned_cost -- seconds of x's nodes with x in fast memory all step */
static double pinned_cost(const struct heur *h, int32_t x, int32_t force_node)
{
	double c = 0;
	for (int32_t j = h->tstart[x]; j < h->tstart[x + 1]; j++) {
		const struct touch *tc = &h->tt[j];
		if (tc->unit < 0) {
			if (tc->force)
				return INFINITY;
			continue;
		}
		c += node_cost(h, tc->node, tc->unit, x, false, tc->node == force_node);
	}
	return c;
}

/* async_delta -- added seconds at node k when a copy along edge e of cost c joins its channel */
static double async_delta(const struct heur *h, int32_t k, int e, double c)
{
	double kt = h->kt[k], chan = h->xfer[2 * k], lost = h->xfer[2 * k + 1];
	double chan2 = chan, lost2 = lost;
	opt_copy_cost(h->m, e, c, 1, &chan2, &lost2);
	return opt_overlapped(kt, chan2, lost2) - opt_overlapped(kt, chan, lost);
}

/* path_cost -- seconds of x's current path under the same pricing as the search */
static double path_cost(const struct heur *h, int32_t x, int32_t force_node)
{
	const struct tmodel *t = &h->m->t[x];
	double b = (double)t->abytes;
	if (h->s->pinned[x])
		return pinned_cost(h, x, force_node) + b * price(h, t->slot_lo, t->slot_hi);
	double c = 0;
	for (int32_t i = 0; i < t->n_gates; i++) {
		uint8_t to = h->s->st[t->ph_off + i], from = i ? h->s->st[t->ph_off + i - 1] : ST_S;
		const struct gate *g = &t->gates[i];
		int e = EDGE(from, to);
		if (i && g->kind == G_ASYNC) {
			c += async_delta(h, g->at, e, g->cost[e]);
			if (opt_present_in_gate(e)) {
				int32_t lo, hi;
				gate_slots(g, &lo, &hi);
				c += b * price(h, lo, hi);
			}
		} else if (i) {
			c += g->cost[e];
		}
		if (i && from != to && e != EDGE(ST_B, ST_F))
			c += h->eps;
		c += phase_cost(h, x, i, to, force_node);
		if (IS_FAST(to))
			c += b * price(h, t->ph_lo[i], t->ph_hi[i]);
	}
	return c;
}

/* rooms -- the room the others leave x (taken out) in each of its phases and, for its
 * overlapped copy gates, while each copy runs: h->res_ph and h->res_g */
static void rooms(struct heur *h, int32_t x)
{
	const struct tmodel *t = &h->m->t[x];
	for (int32_t i = 0; i < t->n_gates; i++) {
		h->res_ph[i] = room(h, t->ph_lo[i], t->ph_hi[i]);
		h->res_g[i] = INT64_MAX;
		if (t->gates[i].kind == G_ASYNC) {
			int32_t lo, hi;
			gate_slots(&t->gates[i], &lo, &hi);
			h->res_g[i] = room(h, lo, hi);
		}
	}
}

/* fits_now -- x's current path fits the room the others leave (a repaired start may not) */
static bool fits_now(const struct heur *h, int32_t x)
{
	const struct tmodel *t = &h->m->t[x];
	if (h->s->pinned[x])
		return room(h, t->slot_lo, t->slot_hi) >= t->abytes;
	for (int32_t i = 0; i < t->n_gates; i++) {
		uint8_t to = h->s->st[t->ph_off + i], from = i ? h->s->st[t->ph_off + i - 1] : ST_S;
		if (IS_FAST(to) && t->abytes > h->res_ph[i])
			return false;
		if (t->gates[i].kind == G_ASYNC && opt_present_in_gate(EDGE(from, to)) &&
		    t->abytes > h->res_g[i])
			return false;
	}
	return true;
}

/* improve -- the cheapest path of x given every other tensor, taken when cheaper than its
 * current one (or forced through node force_node in fast memory); true when x changed */
static bool improve(struct heur *h, int32_t x, int32_t force_node)
{
	const struct model *m = h->m;
	const struct tmodel *t = &m->t[x];
	int32_t n = t->n_gates;
	place(h, x, -1);
	rooms(h, x);
	double cur = force_node < 0 && fits_now(h, x) ? path_cost(h, x, -1) : INFINITY;
	for (int32_t i = 0; i < n; i++) {
		const struct gate *g = &t->gates[i];
		for (uint8_t y = 0; y < N_ST; y++) {
			double *b = &h->best[i * N_ST + y];
			*b = INFINITY;
			if (!(t->ph_states[i] >> y & 1u) || (IS_FAST(y) && t->abytes > h->res_ph[i]) ||
			    (h->must && h->must[t->ph_off + i] && !(h->must[t->ph_off + i] >> y & 1u)))
				continue;
			double pc = -1;
			for (uint8_t a = 0; a < N_ST; a++) {
				int e = EDGE(a, y);
				if (!(g->edges >> e & 1u))
					continue;
				double v;
				if (i == 0) {
					v = 0;
				} else {
					v = h->best[(i - 1) * N_ST + a];
					if (!isfinite(v))
						continue;
					if (a != y && e != EDGE(ST_B, ST_F))
						v += h->eps;
					if (g->kind == G_ASYNC) {
						if (opt_present_in_gate(e) && t->abytes > h->res_g[i])
							continue;
						v += async_delta(h, g->at, e, g->cost[e]);
						if (h->priced && opt_present_in_gate(e)) {
							int32_t lo, hi;
							gate_slots(g, &lo, &hi);
							v += (double)t->abytes * price(h, lo, hi);
						}
					} else {
						v += g->cost[e];
					}
				}
				if (v < *b) {
					*b = v;
					h->prev[i * N_ST + y] = (int8_t)a;
				}
			}
			if (!isfinite(*b))
				continue;
			if (pc < 0)
				pc = phase_cost(h, x, i, y, force_node);
			*b += pc;
			if (IS_FAST(y))
				*b += (double)t->abytes * price(h, t->ph_lo[i], t->ph_hi[i]);
		}
	}
	double bestv = INFINITY;
	int8_t at = -1;
	for (uint8_t y = 0; y < N_ST; y++)
		if (h->best[(n - 1) * N_ST + y] < bestv) {
			bestv = h->best[(n - 1) * N_ST + y];
			at = (int8_t)y;
		}
	bool pin = false;
	if (t->persistent && room(h, t->slot_lo, t->slot_hi) >= t->abytes) {
		double pv = pinned_cost(h, x, force_node) +
		            (double)t->abytes * price(h, t->slot_lo, t->slot_hi);
		if (pv < bestv) {
			bestv = pv;
			pin = true;
		}
	}
	bool changed = false;
	/* take the new path only when it is cheaper by more than rounding */
	if (isfinite(bestv) && (!isfinite(cur) || bestv < cur - 1e-12 * (1 + fabs(cur)))) {
		changed = true;
		h->s->pinned[x] = pin;
		if (!pin) {
			for (int32_t i = n - 1; i >= 0; i--) {
				h->path[i] = (uint8_t)at;
				at = h->prev[i * N_ST + at];
			}
			memcpy(h->s->st + t->ph_off, h->path, (size_t)n);
		}
	}
	place(h, x, 1);
	if (changed)
		for (int32_t j = h->tstart[x]; j < h->tstart[x + 1]; j++)
			refresh_node(h, h->tt[j].node);
	return changed;
}

/* index_touches -- for each movable tensor, the nodes it meets and how */
static atm_status index_touches(struct heur *h)
{
	const struct model *m = h->m;
	h->tstart = calloc((size_t)m->n_tensors + 1, sizeof *h->tstart);
	if (!h->tstart)
		return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
	for (int pass = 0; pass < 2; pass++) {
		int32_t *fill = pass ? calloc((size_t)m->n_tensors + 1, sizeof *fill) : NULL;
		if (pass && !fill)
			return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
		for (int32_t k = 0; k < m->n_nodes; k++) {
			const struct nmodel *nm = &m->n[k];
			for (int u = 0; u < nm->n_free; u++)
				for (int j = 0; j < nm->units[u].n_members; j++) {
					int32_t x = nm->units[u].members[j];
					if (!pass)
						h->tstart[x + 1]++;
					else
						h->tt[h->tstart[x] + fill[x]++] = (struct touch){
							k, nm->units[u].phase[j], (int8_t)u, 0};
				}
			for (int j = 0; j < nm->n_forced; j++) {
				int32_t x = nm->forced[j].tensor;
				if (!pass)
					h->tstart[x + 1]++;
				else
					h->tt[h->tstart[x] + fill[x]++] = (struct touch){
						k, nm->forced[j].phase, -1, (int8_t)nm->forced[j].slow};
			}
		}
		if (!pass) {
			for (int32_t x = 0; x < m->n_tensors; x++)
				h->tstart[x + 1] += h->tstart[x];
			h->tt = malloc((size_t)(h->tstart[m->n_tensors] + 1) * sizeof *h->tt);
			if (!h->tt)
				return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
		}
		free(fill);
	}
	return ATM_OK;
}

/* Tensors in the order the first round visits them: most time saved per byte first. */
struct rank {
	int32_t x;
	double gain;
};

/* rank_cmp -- larger gain first, then tensor id */
static int rank_cmp(const void *a, const void *b)
{
	const struct rank *p = a, *q = b;
	if (p->gain != q->gain)
		return p->gain > q->gain ? -1 : 1;
	return p->x - q->x;
}

/* least_room -- on a GPU every tensor is forced fast at each use: give each tensor in xs (all
 * movable ones when xs is NULL) the path that holds the fewest byte-slots of fast memory
 * (fetched for its uses, dropped after) within the room the others leave, a price so high
 * it outweighs any copy; descent improves on it later */
static atm_status least_room(struct heur *h, const int32_t *xs, int32_t n)
{
	const struct model *m = h->m;
	double *kept = h->pre; /* pricing's own prices, when it ran before a repair */
	h->pre = calloc((size_t)m->n_slots + 1, sizeof *h->pre);
	if (!h->pre) {
		h->pre = kept;
		return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
	}
	for (int32_t s = 0; s < m->n_slots; s++)
		h->pre[s + 1] = h->pre[s] + 1.0;
	h->priced = h->strict = true;
	for (int32_t i = 0; i < (xs ? n : m->n_tensors); i++) {
		int32_t x = xs ? xs[i] : i;
		if (m->t[x].cls == TC_MOVABLE)
			improve(h, x, -1);
	}
	h->priced = h->strict = false;
	free(h->pre);
	h->pre = kept;
	return ATM_OK;
}

static atm_status start_feasible(struct heur *h)
{
	const struct model *m = h->m;
	atm_status rc;
	if (m->o.device_only && (rc = least_room(h, NULL, 0)) < 0)
		return rc;
	for (int32_t x = 0; x < m->n_tensors; x++) {
		if (m->t[x].cls != TC_MOVABLE)
			continue;
		bool need = false;
		for (int32_t j = h->tstart[x]; j < h->tstart[x + 1]; j++)
			need |= h->tt[j].unit < 0 && !h->tt[j].force;
		if (need && !isfinite(path_cost(h, x, -1)) && !improve(h, x, -1))
			return atm_err(ATM_E_INFEASIBLE, "tensor '%s' must be fast where a group partner "
			               "is, and does not fit there", atm_graph_tensor(m->g, x)->name);
	}
	return ATM_OK;
}

/* clear_over -- on a GPU all slow does not fit, so repair first takes every tensor that is
 * fast in a slot over its limit out to slow memory, and brings each back by the path of
 * least room; what is left over is repaired as on a CPU */
static atm_status clear_over(struct heur *h)
{
	const struct model *m = h->m;
	int32_t *xs = malloc((size_t)(m->n_tensors ? m->n_tensors : 1) * sizeof *xs), n = 0;
	if (!xs)
		return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
	for (int32_t x = 0; x < m->n_tensors; x++) {
		const struct tmodel *t = &m->t[x];
		bool over = false;
		if (t->cls != TC_MOVABLE)
			continue;
		for (int32_t i = 0; i < t->n_gates && !over; i++)
			if (h->s->pinned[x] || IS_FAST(h->s->st[t->ph_off + i]))
				for (int32_t s = t->ph_lo[i]; s <= t->ph_hi[i] && !over; s++)
					over = m->limit[s] != INT64_MAX && h->used[s] > m->limit[s];
		if (!over)
			continue;
		place(h, x, -1);
		memset(h->s->st + t->ph_off, ST_S, (size_t)t->n_gates);
		h->s->pinned[x] = false;
		place(h, x, 1);
		xs[n++] = x;
	}
	for (int32_t i = 0; i < n; i++)
		for (int32_t j = h->tstart[xs[i]]; j < h->tstart[xs[i] + 1]; j++)
			refresh_node(h, h->tt[j].node);
	atm_status rc = least_room(h, xs, n);
	/* a tensor still without a path that keeps it fast at its uses: this start cannot be
	 * repaired (the caller starts over) */
	for (int32_t i = 0; rc >= 0 && i < n; i++)
		if (!isfinite(path_cost(h, xs[i], -1)))
			rc = atm_err(ATM_E_INFEASIBLE, "tensor '%s' finds no room where kernels use it",
			             atm_graph_tensor(m->g, xs[i])->name);
	free(xs);
	return rc;
}

/* over_limit -- x's path does not fit the room the others leave it */
static bool over_limit(struct heur *h, int32_t x)
{
	place(h, x, -1);
	rooms(h, x);
	bool over = !fits_now(h, x);
	place(h, x, 1);
	return over;
}

/* mend -- repair without clearing first: each tensor over a limit takes its cheapest path
 * through the room left, in tensor order, in passes while some find none and others found
 * one (a kernel's operand on a GPU finds room once tensors after it have left); an error
 * when a pass mends nothing */
static atm_status mend(struct heur *h)
{
	const struct model *m = h->m;
	int32_t stuck = -1;
	for (int pass = 0; pass < 8; pass++) {
		int32_t failed = -1;
		bool mended = false;
		for (int32_t x = 0; x < m->n_tensors; x++) {
			if (m->t[x].cls != TC_MOVABLE || !over_limit(h, x))
				continue;
			if (improve(h, x, -1))
				mended = true;
			else if (failed < 0)
				failed = x;
		}
		if (failed < 0)
			return ATM_OK;
		stuck = failed;
		if (!mended)
			break;
	}
	return atm_err(ATM_E_INTERNAL, "the placement heuristic could not repair tensor '%s'",
	               atm_graph_tensor(m->g, stuck)->name);
}

/* repair -- a placement made for a looser limit: every tensor in fast memory where a slot is
 * over its limit takes its cheapest path through the room left, which keeps it out of slots
 * without room (mend); all slow fits, so on a CPU this ends feasible; on a GPU the tensors
 * over a limit are cleared first (clear_over) */
static atm_status repair(struct heur *h)
{
	atm_status rc;
	if (h->m->o.device_only && (rc = clear_over(h)) < 0)
		return rc;
	return mend(h);
}

/* group_flips -- groups (a grouped node's inputs) stay slow when tensors move one at a time:
 * try each slow group with every member brought fast at once, keep it when cheaper */
static atm_status group_flips(struct heur *h, double deadline)
{
	const struct model *m = h->m;
	uint8_t *save = malloc((size_t)(m->n_phases ? m->n_phases : 1));
	bool *save_pin = malloc((size_t)(m->n_tensors ? m->n_tensors : 1) * sizeof *save_pin);
	int64_t *save_used = malloc((size_t)m->n_slots * sizeof *save_used);
	double *save_x = malloc(2 * (size_t)(m->n_nodes ? m->n_nodes : 1) * sizeof *save_x);
	double *save_k = malloc((size_t)(m->n_nodes ? m->n_nodes : 1) * sizeof *save_k);
	if (!save || !save_pin || !save_used || !save_x || !save_k) {
		free(save);
		free(save_pin);
		free(save_used);
		free(save_x);
		free(save_k);
		return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
	}
	double cost = opt_solution_cost(m, h->s);
	for (int32_t k = 0; k < m->n_nodes && !opt_past(m, deadline); k++) {
		const struct nmodel *nm = &m->n[k];
		for (int u = 0; u < nm->n_free; u++) {
			const struct unit *un = &nm->units[u];
			if (un->n_members < 2)
				continue;
			int c = opt_node_config(m, h->s, k);
			if (c < 0 || !(c >> u & 1))
				continue;
			memcpy(save, h->s->st, (size_t)m->n_phases);
			memcpy(save_pin, h->s->pinned, (size_t)m->n_tensors * sizeof *save_pin);
			memcpy(save_used, h->used, (size_t)m->n_slots * sizeof *save_used);
			memcpy(save_x, h->xfer, 2 * (size_t)m->n_nodes * sizeof *save_x);
			memcpy(save_k, h->kt, (size_t)m->n_nodes * sizeof *save_k);
			bool ok = true;
			for (int j = 0; j < un->n_members && ok; j++)
				ok = improve(h, un->members[j], k);
			double after = ok ? opt_solution_cost(m, h->s) : INFINITY;
			if (ok && after < cost - 1e-12 * (1 + cost)) {
				cost = after;
				continue;
			}
			memcpy(h->s->st, save, (size_t)m->n_phases);
			memcpy(h->s->pinned, save_pin, (size_t)m->n_tensors * sizeof *save_pin);
			memcpy(h->used, save_used, (size_t)m->n_slots * sizeof *save_used);
			memcpy(h->xfer, save_x, 2 * (size_t)m->n_nodes * sizeof *save_x);
			memcpy(h->kt, save_k, (size_t)m->n_nodes * sizeof *save_k);
		}
	}
	free(save);
	free(save_pin);
	free(save_used);
	free(save_x);
	free(save_k);
	return ATM_OK;
}

/* slow_cost_per_byte -- what a byte in slow memory adds to a kernel, on average over the nodes */
static double slow_cost_per_byte(const struct model *m)
{
	double sum = 0;
	int n = 0;
	for (int32_t k = 0; k < m->n_nodes; k++) {
		const struct nmodel *nm = &m->n[k];
		if (!nm->n_free)
			continue;
		int64_t bytes = 0;
		for (int u = 0; u < nm->n_free; u++)
			for (int j = 0; j < nm->units[u].n_members; j++)
				bytes += m->t[nm->units[u].members[j]].bytes;
		double d = nm->time[nm->n_cfg - 1] - nm->time[0];
		if (bytes > 0 && d > 0) {
			sum += d / (double)bytes;
			n++;
		}
	}
	return n ? sum / n : 1 / m->to_fast_bps;
}

/* priced -- Lagrangian pricing of fast memory: every tensor takes its cheapest path with each
 * byte-slot of fast memory priced, and prices rise where slots are over their limit and fall
 * where they have room; a few dozen rounds give every tensor a sense of the whole schedule,
 * which one-at-a-time descent under hard limits lacks. The round that fits best is kept (or,
 * when none fits, the last, which repair then makes fit). */
static atm_status priced(struct heur *h, double deadline, struct rank *order, int32_t n_order)
{
	const struct model *m = h->m;
	double *lambda = calloc((size_t)m->n_slots, sizeof *lambda), best = INFINITY;
	uint8_t *keep = malloc((size_t)(m->n_phases ? m->n_phases : 1));
	bool *keep_pin = malloc((size_t)(m->n_tensors ? m->n_tensors : 1) * sizeof *keep_pin);
	free(h->pre); /* an earlier search's prices */
	h->pre = calloc((size_t)m->n_slots + 1, sizeof *h->pre);
	if (!lambda || !h->pre || !keep || !keep_pin) {
		free(lambda);
		free(keep);
		free(keep_pin);
		return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
	}
	double g = slow_cost_per_byte(m);
	h->priced = true;
	for (int it = 0; it < 40 && !opt_past(m, deadline); it++) {
		for (int32_t s = 0; s < m->n_slots; s++)
			h->pre[s + 1] = h->pre[s] + lambda[s];
		for (int32_t i = 0; i < n_order && !opt_past(m, deadline); i++)
			improve(h, order[i].x, -1);
		bool over = false;
		double step = g / (2 + it / 2.0);
		for (int32_t s = 0; s < m->n_slots; s++) {
			if (m->limit[s] == INT64_MAX)
				continue;
			double d = (double)(h->used[s] - m->limit[s]) / (double)(m->limit[s] + 1);
			over |= d > 0;
			lambda[s] += step * (d > 1 ? 1 : d < -1 ? -1 : d);
			if (lambda[s] < 0)
				lambda[s] = 0;
		}
		double c = over ? INFINITY : opt_solution_cost(m, h->s);
		if (c < best) {
			best = c;
			memcpy(keep, h->s->st, (size_t)m->n_phases);
			memcpy(keep_pin, h->s->pinned, (size_t)m->n_tensors * sizeof *keep_pin);
		}
	}
	h->priced = false;
	if (isfinite(best)) {
		memcpy(h->s->st, keep, (size_t)m->n_phases);
		memcpy(h->s->pinned, keep_pin, (size_t)m->n_tensors * sizeof *keep_pin);
	}
	rebuild(h);
	free(lambda);
	free(keep);
	free(keep_pin);
	return ATM_OK;
}

/* heur_open -- the accumulators and scratch of a search over m's placement s */
static atm_status heur_open(struct heur *h, const struct model *m, struct solution *s)
{
	int32_t max_ph = 1;
	memset(h, 0, sizeof *h);
	h->m = m;
	h->s = s;
	for (int32_t x = 0; x < m->n_tensors; x++)
		if (m->t[x].n_gates > max_ph)
			max_ph = m->t[x].n_gates;
	h->used = malloc((size_t)m->n_slots * sizeof *h->used);
	h->kt = calloc((size_t)(m->n_nodes ? m->n_nodes : 1), sizeof *h->kt);
	h->xfer = calloc(2 * (size_t)(m->n_nodes ? m->n_nodes : 1), sizeof *h->xfer);
	h->best = malloc((size_t)max_ph * N_ST * sizeof *h->best);
	h->prev = malloc((size_t)max_ph * N_ST);
	h->res_ph = malloc((size_t)max_ph * sizeof *h->res_ph);
	h->res_g = malloc((size_t)max_ph * sizeof *h->res_g);
	h->path = malloc((size_t)max_ph);
	if (!h->used || !h->kt || !h->xfer || !h->best || !h->prev || !h->res_ph || !h->res_g ||
	    !h->path)
		return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
	return index_touches(h);
}

/* heur_close -- release what heur_open made */
static void heur_close(struct heur *h)
{
	free(h->used);
	free(h->kt);
	free(h->xfer);
	free(h->best);
	free(h->prev);
	free(h->res_ph);
	free(h->res_g);
	free(h->path);
	free(h->tstart);
	free(h->tt);
	free(h->pre);
	free(h->must);
}

/* opt_polish -- drop moves that buy nothing: each tensor in turn takes, among its paths that
 * are no slower, the one with fewest moves (a copy hidden under a kernel costs the model
 * nothing but costs the machine bandwidth) */
/* recomputed -- a recomputation chosen in s depends on x's places (polishing, which does not
 * price recomputations, leaves x alone) */
static bool recomputed(const struct model *m, const struct solution *s, int32_t x)
{
	for (int32_t i = 0; i < m->n_rc; i++)
		if (s->rc[i] && opt_recompute_touches(m, i, x))
			return true;
	return false;
}

atm_status opt_polish(const struct model *m, struct solution *s)
{
	struct heur h;
	atm_status rc = heur_open(&h, m, s);
	uint8_t *save = malloc((size_t)(m->n_phases ? m->n_phases : 1));
	if (rc < 0 || !save) {
		heur_close(&h);
		free(save);
		return rc < 0 ? rc : atm_err(ATM_E_NOMEM, "out of memory polishing the placement");
	}
	rebuild(&h);
	for (int32_t x = 0; x < m->n_tensors; x++) {
		const struct tmodel *t = &m->t[x];
		if (t->cls != TC_MOVABLE || s->pinned[x] || recomputed(m, s, x))
			continue;
		h.eps = 0;
		place(&h, x, -1);
		double before = path_cost(&h, x, -1);
		place(&h, x, 1);
		memcpy(save, s->st + t->ph_off, (size_t)t->n_gates);
		h.eps = 1e-9;
		if (!improve(&h, x, -1))
			continue;
		h.eps = 0;
		place(&h, x, -1);
		double after = s->pinned[x] ? INFINITY : path_cost(&h, x, -1);
		if (after > before) {
			/* fewer moves but slower: put the old path back */
			s->pinned[x] = false;
			memcpy(s->st + t->ph_off, save, (size_t)t->n_gates);
		}
		place(&h, x, 1);
		for (int32_t j = h.tstart[x]; j < h.tstart[x + 1]; j++)
			refresh_node(&h, h.tt[j].node);
	}
	heur_close(&h);
	free(save);
	return ATM_OK;
}

/* local_cost -- what candidate c's change touches, under the current placement: the copies of
 * its tensor's gates after d up to the one after u, blocking ones at their cost and overlapped
 * ones as the nodes beside them take longer */
static double local_cost(const struct heur *h, const struct rcand *c)
{
	const struct model *m = h->m;
	const struct tmodel *t = &m->t[c->t];
	double v = 0;
	int32_t last = c->pu + 1 < t->n_gates ? c->pu + 1 : c->pu;
	for (int32_t g = c->pd + 1; g <= last; g++) {
		const struct gate *gt = &t->gates[g];
		int e = EDGE(h->s->st[t->ph_off + g - 1], h->s->st[t->ph_off + g]);
		if (gt->kind != G_ASYNC)
			v += gt->cost[e];
		else
			v += opt_overlapped(h->kt[gt->at], h->xfer[2 * gt->at], h->xfer[2 * gt->at + 1]);
	}
	return v;
}

/* refund -- add (sign 1) or take back (-1) the bytes candidate c gives back while dropped */
static void refund(struct heur *h, const struct rcand *c, int sign)
{
	for (int32_t sl = SLOT_M(c->d); sl <= SLOT_M(c->u - 1); sl++)
		h->used[sl] -= sign * h->m->t[c->t].abytes;
	h->used[SLOT_K(c->u)] += sign * c->scratch;
}

/* try_recompute -- candidate i instead of what its tensor does across the gap now, when that
 * is faster and fits: fast (no valid slow copy) from d to u with no move, and no memory taken
 * in between; true when taken */
static bool try_recompute(struct heur *h, int32_t i, uint8_t *save)
{
	const struct model *m = h->m;
	const struct rcand *c = &m->rc[i];
	const struct tmodel *t = &m->t[c->t];
	uint8_t *st = h->s->st + t->ph_off;
	if (h->s->pinned[c->t] || st[c->pd] != ST_F)
		return false;
	/* the gate after u must take the tensor on from "fast, no valid slow copy" */
	if (c->pu + 1 < t->n_gates && !(t->gates[c->pu + 1].edges >> EDGE(ST_F, st[c->pu + 1]) & 1u))
		return false;
	double before = local_cost(h, c);
	memcpy(save, st, (size_t)t->n_gates);
	place(h, c->t, -1);
	memset(st + c->pd, ST_F, (size_t)(c->pu - c->pd + 1));
	place(h, c->t, 1);
	h->s->rc[i] = 1;
	refund(h, c, 1);
	double after = local_cost(h, c) + opt_recompute_time(m, h->s, i);
	if (room(h, t->slot_lo, t->slot_hi) >= 0 && after < before - 1e-12 * (1 + before))
		return true;
	refund(h, c, -1);
	h->s->rc[i] = 0;
	place(h, c->t, -1);
	memcpy(st, save, (size_t)t->n_gates);
	place(h, c->t, 1);
	return false;
}

/* hold -- mark candidate i's tensor and its kernels' operands as held: their places price it */
static void hold(const struct model *m, int32_t i, bool *held)
{
	held[m->rc[i].t] = true;
	for (int32_t j = 0; j < m->rc[i].n_ops; j++)
		held[m->rc[i].ops[j]] = true;
}

/* Room to undo a step of the recomputation pass: the placement before it. */
struct undo {
	uint8_t *st;
	bool *pinned;
};

/* drop_held -- candidate i whose tensor is held fast across its gap with no move: dropped
 * there, the room it frees given to the tensors live in the gap (each improved, in order),
 * and kept when what they gain beats the kernel run again; else everything as it was */
static bool drop_held(struct heur *h, int32_t i, const struct rank *order, int32_t n_order,
                      const bool *held, struct undo *u)
{
	const struct model *m = h->m;
	const struct rcand *c = &m->rc[i];
	const struct tmodel *t = &m->t[c->t];
	const uint8_t *st = h->s->st + t->ph_off;
	if (h->s->pinned[c->t] || held[c->t])
		return false;
	for (int32_t ph = c->pd; ph <= c->pu; ph++)
		if (st[ph] != ST_F)
			return false;
	memcpy(u->st, h->s->st, (size_t)m->n_phases);
	memcpy(u->pinned, h->s->pinned, (size_t)m->n_tensors * sizeof *u->pinned);
	h->s->rc[i] = 1;
	refund(h, c, 1);
	double gain = 0;
	int32_t lo = SLOT_M(c->d), hi = SLOT_M(c->u - 1);
	for (int32_t j = 0; j < n_order; j++) {
		int32_t x = order[j].x;
		const struct tmodel *o = &m->t[x];
		if (held[x] || x == c->t || o->slot_hi < lo || o->slot_lo > hi)
			continue;
		double before = path_cost(h, x, -1);
		if (improve(h, x, -1))
			gain += before - path_cost(h, x, -1);
	}
	double again = opt_recompute_time(m, h->s, i);
	if (isfinite(again) && gain > again + 1e-12 * (1 + again))
		return true;
	h->s->rc[i] = 0;
	memcpy(h->s->st, u->st, (size_t)m->n_phases);
	memcpy(h->s->pinned, u->pinned, (size_t)m->n_tensors * sizeof *u->pinned);
	rebuild(h);
	return false;
}

/* recompute_pass -- each recomputation that beats moving its tensor out and back is taken;
 * then, in a share of the time left, one that frees room where its tensor is held fast, when
 * the others gain more from that room than the kernel run again costs; then the others' paths
 * are improved into the room freed. Tensors a recomputation depends on keep their places (their
 * paths would change its price). The step never ends slower than it started: if it would, the
 * placement-only plan is put back. */
static void recompute_pass(struct heur *h, const struct rank *order, int32_t n_order,
                           double deadline)
{
	const struct model *m = h->m;
	struct undo first = {0}, step = {0};
	bool *held = calloc((size_t)(m->n_tensors ? m->n_tensors : 1), sizeof *held);
	size_t np = (size_t)m->n_phases + 1, nt = (size_t)(m->n_tensors ? m->n_tensors : 1);
	first.st = malloc(np);
	step.st = malloc(np);
	first.pinned = malloc(nt * sizeof *first.pinned);
	step.pinned = malloc(nt * sizeof *step.pinned);
	if (!held || !first.st || !step.st || !first.pinned || !step.pinned)
		goto done; /* the placement-only plan stands */
	double cost = opt_solution_cost(m, h->s);
	memcpy(first.st, h->s->st, np - 1);
	memcpy(first.pinned, h->s->pinned, nt * sizeof *first.pinned);
	int32_t taken = 0;
	for (int32_t i = 0; i < m->n_rc && !opt_past(m, deadline); i++)
		if (try_recompute(h, i, step.st)) {
			hold(m, i, held);
			taken++;
		}
	/* dropping a tensor held fast pays only through the others: a quarter of what is left */
	double share = atm_now_s() + (deadline - atm_now_s()) / 4;
	for (int32_t i = 0; i < m->n_rc && !opt_past(m, share < deadline ? share : deadline); i++)
		if (!h->s->rc[i] && drop_held(h, i, order, n_order, held, &step)) {
			hold(m, i, held);
			taken++;
		}
	for (int32_t i = 0; taken && i < n_order && !opt_past(m, deadline); i++)
		if (!held[order[i].x])
			improve(h, order[i].x, -1);
	if (taken && !(opt_solution_cost(m, h->s) <= cost)) {
		memset(h->s->rc, 0, (size_t)m->n_rc);
		memcpy(h->s->st, first.st, np - 1);
		memcpy(h->s->pinned, first.pinned, nt * sizeof *first.pinned);
		rebuild(h);
	}
done:
	free(held);
	free(first.st);
	free(step.st);
	free(first.pinned);
	free(step.pinned);
}

/* search -- from a feasible start (warm: a repaired placement), Lagrangian pricing (cold
 * starts only), then each tensor its cheapest path in turn, most promising first, in rounds
 * until nothing improves or the deadline */
static atm_status search(struct heur *h, struct rank *order, int32_t n_order, bool warm,
                         double budget_s, double deadline)
{
	const struct model *m = h->m;
	struct solution *s = h->s;
	atm_status rc;
	if (!warm && m->o.device_only) {
		/* on a GPU all slow does not fit, so an over-full priced round may be past repair:
		 * then the feasible start stands */
		uint8_t *st = malloc((size_t)(m->n_phases ? m->n_phases : 1));
		bool *pin = malloc((size_t)(m->n_tensors ? m->n_tensors : 1) * sizeof *pin);
		if (!st || !pin) {
			free(st);
			free(pin);
			return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
		}
		memcpy(st, s->st, (size_t)m->n_phases);
		memcpy(pin, s->pinned, (size_t)m->n_tensors * sizeof *pin);
		rc = priced(h, atm_now_s() + budget_s / 2, order, n_order);
		if (rc >= 0 && repair(h) < 0) {
			atm_err_clear();
			memcpy(s->st, st, (size_t)m->n_phases);
			memcpy(s->pinned, pin, (size_t)m->n_tensors * sizeof *pin);
			rebuild(h);
		}
		free(st);
		free(pin);
		if (rc < 0)
			return rc;
	} else if (!warm) {
		if ((rc = priced(h, atm_now_s() + budget_s / 2, order, n_order)) < 0 ||
		    (rc = repair(h)) < 0)
			return rc;
	}
	double cost = opt_solution_cost(m, s);
	for (int round = 0; round < 8; round++) {
		for (int32_t i = 0; i < n_order && !opt_past(m, deadline); i++)
			improve(h, order[i].x, -1);
		if ((rc = group_flips(h, deadline)) < 0)
			return rc;
		double now = opt_solution_cost(m, s);
		if (!(now < cost - 1e-9 * cost) || opt_past(m, deadline))
			break;
		cost = now;
	}
	return ATM_OK;
}

/* set_must -- the states the recomputations chosen in s leave their tensors and operands: each
 * dropped tensor fast with no valid slow copy from d to u, and each operand its kernels read
 * fast before u where the kernels are priced so (on a GPU, and every chain), on both sides of
 * an overlapped copy gate spanning u */
static void set_must(struct heur *h)
{
	const struct model *m = h->m;
	const uint8_t fast = 1u << ST_F | 1u << ST_B;
	memset(h->must, 0, (size_t)m->n_phases);
	for (int32_t i = 0; i < m->n_rc; i++) {
		const struct rcand *c = &m->rc[i];
		if (!h->s->rc[i])
			continue;
		for (int32_t ph = c->pd; ph <= c->pu; ph++)
			h->must[m->t[c->t].ph_off + ph] = 1u << ST_F;
		if (!c->n_links && !m->o.device_only)
			continue;
		for (int32_t j = 0; j < c->n_ops; j++) {
			const struct tmodel *x = &m->t[c->ops[j]];
			int32_t ph = x->cls == TC_MOVABLE ? opt_recompute_phase_u(x, c->u) : -1;
			int32_t g = ph >= 0 ? opt_recompute_async_gate(c, x) : -1;
			for (int32_t p = g > 0 ? g - 1 : ph; p >= 0 && p <= ph; p++) {
				uint8_t *w = &h->must[x->ph_off + p];
				*w = *w ? *w & fast : fast;
			}
		}
	}
}

/* choose_first -- into s, at most cap of the recomputations that cost less than moving their
 * tensor out and back at its cheapest copies, those that free the most byte-kernels for each
 * second run again first, none excluding one chosen before; *n_chosen how many */
static atm_status choose_first(struct heur *h, int32_t cap, int32_t *n_chosen)
{
	const struct model *m = h->m;
	struct rank *by = malloc((size_t)(m->n_rc ? m->n_rc : 1) * sizeof *by);
	int32_t n = 0;
	if (!by)
		return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
	for (int32_t i = 0; i < m->n_rc; i++) {
		const struct tmodel *t = &m->t[m->rc[i].t];
		double out = INFINITY, back = INFINITY, again = opt_recompute_again_s(m, i);
		for (int32_t g = 1; g < t->n_gates; g++) {
			if (t->gates[g].edges >> EDGE(ST_F, ST_S) & 1u)
				out = fmin(out, t->gates[g].cost[EDGE(ST_F, ST_S)]);
			if (t->gates[g].edges >> EDGE(ST_S, ST_F) & 1u)
				back = fmin(back, t->gates[g].cost[EDGE(ST_S, ST_F)]);
		}
		if (again >= 0 && again < out + back)
			by[n++] = (struct rank){i, (double)t->abytes * (m->rc[i].u - m->rc[i].d) /
			                               (again + 1e-9)};
	}
	qsort(by, (size_t)n, sizeof *by, rank_cmp);
	memset(h->s->rc, 0, (size_t)m->n_rc);
	*n_chosen = 0;
	for (int32_t j = 0; j < n && *n_chosen < cap; j++) {
		int32_t i = by[j].x;
		bool free_of = true;
		for (int32_t e = m->excl_at[i]; e < m->excl_at[i + 1] && free_of; e++)
			free_of = !h->s->rc[m->excl_with[e]];
		h->s->rc[i] = free_of;
		*n_chosen += free_of;
	}
	free(by);
	return ATM_OK;
}

/* prune -- each recomputation chosen in s whose tensor now fits fast through its gap is given
 * up, the dearest per byte first: the room was not needed there, and the kernels run again
 * cost time */
static atm_status prune(struct heur *h)
{
	const struct model *m = h->m;
	struct rank *by = malloc((size_t)(m->n_rc ? m->n_rc : 1) * sizeof *by);
	int32_t n = 0;
	if (!by)
		return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
	for (int32_t i = 0; i < m->n_rc; i++)
		if (h->s->rc[i])
			by[n++] = (struct rank){i, opt_recompute_again_s(m, i) /
			                               (double)(m->t[m->rc[i].t].abytes + 1)};
	qsort(by, (size_t)n, sizeof *by, rank_cmp);
	for (int32_t j = 0; j < n; j++) {
		const struct rcand *c = &m->rc[by[j].x];
		refund(h, c, -1);
		if (room(h, SLOT_M(c->d), SLOT_M(c->u - 1)) >= 0)
			h->s->rc[by[j].x] = 0;
		else
			refund(h, c, 1);
	}
	free(by);
	return ATM_OK;
}

/* settle -- the recomputations chosen in s (h->must allocated) made good after a search: those
 * the placement does not honour given up and the placement repaired around the rest, then
 * those whose tensor fits anyway given up, and every tensor's path improved into the room
 * left; *ok false when no repair was found (s is then no plan) */
static atm_status settle(struct heur *h, struct rank *order, int32_t n_order, double deadline,
                         bool *ok)
{
	const struct model *m = h->m;
	struct solution *s = h->s;
	atm_status rc;
	bool dropped = false;
	*ok = false;
	for (int32_t i = 0; i < m->n_rc; i++)
		if (s->rc[i] && !isfinite(opt_recompute_time(m, s, i))) {
			s->rc[i] = 0;
			dropped = true;
		}
	if (dropped) {
		set_must(h);
		rebuild(h);
		if (repair(h) < 0) {
			atm_err_clear();
			return ATM_OK;
		}
	}
	/* the search may have found room the choices did not need: give those up, and let the
	 * others use what is left */
	if ((rc = prune(h)) < 0)
		return rc;
	set_must(h);
	for (int32_t i = 0; i < n_order && !opt_past(m, deadline); i++)
		improve(h, order[i].x, -1);
	*ok = true;
	return ATM_OK;
}

/* trial_open -- a trial of other recomputations: the placement in s kept (keep, new) with its
 * price (*before), and h->must allocated; trial_close ends it either way */
static atm_status trial_open(struct heur *h, struct solution *keep, double *before)
{
	atm_status rc = opt_solution_new(h->m, keep);
	if (rc < 0)
		return rc;
	*before = opt_solution_cost(h->m, h->s);
	opt_solution_copy(h->m, keep, h->s);
	if (!(h->must = calloc((size_t)h->m->n_phases + 1, 1)))
		return atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
	return ATM_OK;
}

static void trial_close(struct heur *h, struct solution *keep)
{
	free(h->must);
	h->must = NULL;
	rebuild(h);
	opt_solution_free(keep);
}

/* recompute_first -- the placement searched again with recomputations chosen first (those
 * cheaper than a round trip of their tensor), kept only when the step comes out faster than
 * the plan in s: what placing first and recomputing after cannot find where the room a
 * recomputation frees is what lets the others stay fast (a GPU whose link is slow beside its
 * kernels). Chosen recomputations the search could not honour are given up, and the placement
 * repaired around them. */
static atm_status recompute_first(struct heur *h, struct rank *order, int32_t n_order,
                                  double budget_s, double deadline)
{
	const struct model *m = h->m;
	struct solution *s = h->s, keep = {0};
	double before;
	atm_status rc;
	if (opt_past(m, deadline))
		return ATM_OK;
	if ((rc = trial_open(h, &keep, &before)) < 0)
		goto done;
	/* all the choices, or where no placement is found around them (what they hold fast
	 * does not fit beside what the kernels need), the better half of them, and so on */
	bool placed = false;
	for (int32_t cap = m->n_rc, n = 1; cap > 0 && n > 0 && !placed && !opt_past(m, deadline);
	     cap = n * 3 / 4) {
		opt_solution_all_slow(m, s);
		if ((rc = choose_first(h, cap, &n)) < 0)
			goto done;
		set_must(h);
		rebuild(h);
		/* the tensors the choices constrain take their paths first */
		for (int32_t i = 0; i < m->n_rc; i++)
			if (s->rc[i]) {
				improve(h, m->rc[i].t, -1);
				for (int32_t j = 0; j < m->rc[i].n_ops; j++)
					if (m->t[m->rc[i].ops[j]].cls == TC_MOVABLE)
						improve(h, m->rc[i].ops[j], -1);
			}
		placed = start_feasible(h) == ATM_OK;
		atm_err_clear();
	}
	if (!placed || search(h, order, n_order, false, budget_s, deadline) < 0) {
		atm_err_clear();
		goto restore;
	}
	if ((rc = settle(h, order, n_order, deadline, &placed)) < 0)
		goto done;
	if (placed && opt_solution_cost(m, s) < before)
		goto done;
restore:
	opt_solution_copy(m, s, &keep);
	rc = ATM_OK;
done:
	trial_close(h, &keep);
	return rc;
}

/* keep_last -- a warm start's recomputations (the last round's plan, made for a looser limit)
 * kept, the placement repaired around them, when that is faster than what the search found
 * without them: a round tightened around a few slots where its plan did not fit the arena
 * would otherwise lose every recomputation the solver chose, and start far behind the last
 * round (ResNet-200's asynchronous 1:1 plan on the h100 model: 1.11x all fast in round 1,
 * 1.24x from the heuristic in round 2) */
static atm_status keep_last(struct heur *h, const struct solution *last, struct rank *order,
                            int32_t n_order, double deadline)
{
	const struct model *m = h->m;
	struct solution *s = h->s, keep = {0};
	bool ok = false;
	double before;
	atm_status rc;
	if ((rc = trial_open(h, &keep, &before)) < 0)
		goto done;
	opt_solution_copy(m, s, last);
	set_must(h);
	rebuild(h);
	/* mended, not repaired: clearing every tensor over a limit first (on a GPU) breaks the
	 * recomputations' holds wholesale */
	if (mend(h) < 0)
		atm_err_clear();
	else if ((rc = settle(h, order, n_order, deadline, &ok)) < 0)
		goto done;
	if (!ok || !(opt_solution_cost(m, s) < before))
		opt_solution_copy(m, s, &keep);
done:
	trial_close(h, &keep);
	return rc;
}

/* opt_heuristic -- start with every movable tensor slow (feasible when the fixed tensors fit),
 * or with warm from s as it is (a placement for a looser limit, repaired first), then give each tensor in turn its cheapest path through its gates given all the others, most
 * promising first, in rounds until nothing improves or the budget is spent. Each step can only
 * lower the step time, so s is always feasible and never worse than all-slow. */
atm_status opt_heuristic(const struct model *m, struct solution *s, double budget_s, bool warm)
{
	struct heur h;
	struct rank *order = NULL;
	struct solution last = {0};
	double deadline = atm_now_s() + budget_s;
	atm_status rc = heur_open(&h, m, s);
	if (rc < 0)
		goto done;
	order = malloc((size_t)(m->n_tensors ? m->n_tensors : 1) * sizeof *order);
	if (!order) {
		rc = atm_err(ATM_E_NOMEM, "out of memory in the placement heuristic");
		goto done;
	}
	/* a warm start's recomputations are tried again at the end (keep_last) */
	bool had_rc = false;
	for (int32_t i = 0; warm && i < m->n_rc; i++)
		had_rc |= s->rc[i] != 0;
	if (had_rc) {
		if ((rc = opt_solution_new(m, &last)) < 0)
			goto done;
		opt_solution_copy(m, &last, s);
	}
	/* the heuristic places tensors first, with no recomputation (a placement-only plan), then
	 * takes the recomputations that beat moving their tensors (recompute_pass) */
	memset(s->rc, 0, (size_t)m->n_rc);
	/* tensors are placed beside the smallest workspaces; faster algorithms take the room
	 * left at the end (pick_algos) */
	if (!warm)
		opt_solution_all_slow(m, s);
	else
		opt_solution_small_algos(m, s);
	rebuild(&h);
	if (warm && repair(&h) < 0) {
		/* a group tie the tighter limit cannot keep: start over from all slow */
		atm_err_clear();
		warm = false;
		opt_solution_all_slow(m, s);
		rebuild(&h);
	}
	if (!warm && (rc = start_feasible(&h)) < 0)
		goto done;
	int32_t n_order = 0;
	for (int32_t x = 0; x < m->n_tensors; x++) {
		if (m->t[x].cls != TC_MOVABLE)
			continue;
		double gain = 0;
		for (int32_t j = h.tstart[x]; j < h.tstart[x + 1]; j++) {
			const struct touch *tc = &h.tt[j];
			if (tc->unit < 0)
				continue;
			double fast = node_cost(&h, tc->node, tc->unit, x, false, true);
			double slow = node_cost(&h, tc->node, tc->unit, x, true, true);
			if (isfinite(fast) && isfinite(slow))
				gain += slow - fast;
		}
		order[n_order++] = (struct rank){x, gain / (double)(m->t[x].bytes + 1)};
	}
	qsort(order, (size_t)n_order, sizeof *order, rank_cmp);
	double split = m->n_rc ? atm_now_s() + budget_s / 2 : deadline;
	if ((rc = search(&h, order, n_order, warm, m->n_rc ? budget_s / 2 : budget_s, split)) < 0)
		goto done;
	if (m->n_rc) {
		recompute_pass(&h, order, n_order, split);
		if ((rc = recompute_first(&h, order, n_order, budget_s / 2, deadline)) < 0)
			goto done;
	}
	if (had_rc && (rc = keep_last(&h, &last, order, n_order, deadline)) < 0)
		goto done;
	pick_algos(&h);
	rc = ATM_OK;
done:
	opt_solution_free(&last);
	free(order);
	heur_close(&h);
	return rc;
}
