/* model.c -- the placement model: gate chains per tensor, configuration groups per node, slots, solutions, plans */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* Gates of one tensor while they are being made. */
struct gbuf {
	struct gate *g;
	int32_t n, cap;
	bool failed;
};

/* Edges of each kind of gate; an in-place gate follows a kernel that overwrote the tensor,
 * so a fast copy's slow copy is stale (B becomes F, and evicting it writes). */
#define E_STAY ((1u << EDGE(ST_S, ST_S)) | (1u << EDGE(ST_F, ST_F)) | (1u << EDGE(ST_B, ST_B)))
#define E_EVICT ((1u << EDGE(ST_F, ST_S)) | (1u << EDGE(ST_B, ST_S)))
#define E_FETCH (1u << EDGE(ST_S, ST_B))
#define E_INPLACE ((1u << EDGE(ST_S, ST_S)) | (1u << EDGE(ST_F, ST_F)) | (1u << EDGE(ST_B, ST_F)) | \
                   (1u << EDGE(ST_F, ST_S)) | (1u << EDGE(ST_B, ST_S)))

/* gate_add -- append a gate; kind, position and edges */
static void gate_add(struct gbuf *b, uint8_t kind, int32_t at, bool inplace, unsigned edges)
{
	if (b->failed)
		return;
	if (b->n == b->cap) {
		int32_t cap = b->cap ? b->cap * 2 : 8;
		struct gate *g = realloc(b->g, (size_t)cap * sizeof *g);
		if (!g) {
			b->failed = true;
			return;
		}
		b->g = g;
		b->cap = cap;
	}
	struct gate *g = &b->g[b->n++];
	memset(g, 0, sizeof *g);
	g->kind = kind;
	g->at = at;
	g->inplace = inplace;
	g->edges = (uint16_t)edges;
	g->fetch = kind == G_ASYNC && (edges & E_FETCH);
}

/* sync_gate -- moves after node a: evictions, fetches or both */
static void sync_gate(struct gbuf *b, int32_t a, bool inplace, bool evict, bool fetch)
{
	unsigned e = inplace ? E_INPLACE : E_STAY | (evict ? E_EVICT : 0);
	if (inplace && !evict)
		e &= ~(1u << EDGE(ST_F, ST_S) | 1u << EDGE(ST_B, ST_S));
	if (fetch)
		e |= E_FETCH;
	gate_add(b, G_SYNC, a, inplace, e);
}

/* gap_gates -- the gates between two uses of a tensor at nodes a and b (a < 0: the step's
 * start, b == n_nodes: its end). Evictions go right after a use and fetches right before the
 * next, where they cost least memory; the asynchronous formulation adds a copy overlapping
 * the kernel after a and copies overlapping the window kernels before b. */
static void gap_gates(struct gbuf *gb, atm_opt_formulation f, int32_t a, int32_t b, int32_t nn,
                      bool wrote_a, int window)
{
	bool start = a < 0, end = b >= nn, async = f == ATM_OPT_ASYNCHRONOUS;
	if (f == ATM_OPT_STATIC)
		return;
	if (end) {
		sync_gate(gb, a, wrote_a, true, false);
		if (async && a + 1 <= nn - 1)
			gate_add(gb, G_ASYNC, a + 1, false, E_STAY | (1u << EDGE(ST_F, ST_S)));
		return;
	}
	if (!start && b == a + 1) {
		sync_gate(gb, a, wrote_a, true, true);
		return;
	}
	int32_t lo = start ? 0 : a + 1;
	if (!start) {
		sync_gate(gb, a, wrote_a, true, false);
		/* an overlapped eviction must be waited for before a fetch may start */
		if (async && b - a - 1 >= 2) {
			gate_add(gb, G_ASYNC, a + 1, false, E_STAY | (1u << EDGE(ST_F, ST_S)));
			lo = a + 3;
		}
	}
	if (async)
		for (int32_t j = b - window > lo ? b - window : lo; j <= b - 1; j++)
			gate_add(gb, G_ASYNC, j, false, E_STAY | E_FETCH);
	sync_gate(gb, b - 1, false, false, true);
}

/* gate_is_fetch -- an asynchronous gate whose only move is a fetch */
static bool gate_is_fetch(const struct gate *g)
{
	return g->fetch;
}

/* phase_slots -- slot ranges of the phases between a tensor's gates */
static void phase_slots(struct tmodel *t)
{
	for (int32_t i = 0; i < t->n_gates; i++) {
		const struct gate *g = &t->gates[i];
		/* where phase i starts: after gate i takes effect */
		if (g->kind == G_SOURCE)
			t->ph_lo[i] = t->slot_lo;
		else if (g->kind == G_SYNC)
			t->ph_lo[i] = SLOT_M(g->at);
		else /* a fetch's destination counts from M(at); an eviction's source until M(at) */
			t->ph_lo[i] = gate_is_fetch(g) ? SLOT_M(g->at) : SLOT_K(g->at + 1);
		/* where it ends: before gate i + 1 */
		if (i + 1 == t->n_gates) {
			t->ph_hi[i] = t->slot_hi;
		} else {
			const struct gate *h = &t->gates[i + 1];
			t->ph_hi[i] = h->kind == G_SYNC ? SLOT_K(h->at) : SLOT_K(h->at - 1);
		}
	}
}

/* prune -- keep only edges on some path from the source to an allowed final state */
static void prune(struct tmodel *t)
{
	uint8_t *reach = t->ph_states;
	int32_t n = t->n_gates;
	for (int32_t i = 0; i < n; i++) {
		struct gate *g = &t->gates[i];
		uint8_t from = i ? reach[i - 1] : 1u << ST_S, to = 0;
		for (int e = 0; e < N_EDGES; e++)
			if ((g->edges >> e & 1u) && (from >> EDGE_FROM(e) & 1u))
				to |= (uint8_t)(1u << EDGE_TO(e));
			else
				g->edges &= (uint16_t)~(1u << e);
		reach[i] = to;
	}
	/* a persistent tensor ends the step with a valid copy at home (slow) */
	uint8_t alive = reach[n - 1] & (t->persistent ? (1u << ST_S | 1u << ST_B) : 7u);
	for (int32_t i = n - 1; i >= 0; i--) {
		struct gate *g = &t->gates[i];
		uint8_t from = 0;
		reach[i] = alive;
		for (int e = 0; e < N_EDGES; e++) {
			if (!(g->edges >> e & 1u))
				continue;
			if (alive >> EDGE_TO(e) & 1u)
				from |= (uint8_t)(1u << EDGE_FROM(e));
			else
				g->edges &= (uint16_t)~(1u << e);
		}
		alive = i ? (uint8_t)(reach[i - 1] & from) : 0;
	}
}

/* gate_costs -- copy seconds of every edge: a fetch reads the tensor, a write-back writes it */
static void gate_costs(struct tmodel *t, double to_fast_bps, double to_slow_bps)
{
	for (int32_t i = 1; i < t->n_gates; i++) {
		struct gate *g = &t->gates[i];
		g->cost[EDGE(ST_S, ST_B)] = (double)t->bytes / to_fast_bps;
		g->cost[EDGE(ST_F, ST_S)] = (double)t->bytes / to_slow_bps;
		/* evicting a valid copy is free, unless the kernel before made it stale */
		g->cost[EDGE(ST_B, ST_S)] = g->inplace ? (double)t->bytes / to_slow_bps : 0;
	}
}

/* build_chain -- gates and phases of a movable tensor touched by the nodes in touch[] */
static atm_status build_chain(struct model *m, struct tmodel *t, const int32_t *touch, int32_t nt)
{
	struct gbuf gb = {0};
	int32_t nn = m->n_nodes;
	gate_add(&gb, G_SOURCE, -1, false,
	         t->persistent ? 1u << EDGE(ST_S, ST_S) : (1u << EDGE(ST_S, ST_S) | 1u << EDGE(ST_S, ST_F)));
	if (t->persistent)
		gap_gates(&gb, m->f, -1, nt ? touch[0] : nn, nn, false, m->o.async_window);
	for (int32_t i = 0; i + 1 < nt; i++)
		gap_gates(&gb, m->f, touch[i], touch[i + 1], nn,
		          opt_writes_over(m->g, atm_graph_node(m->g, touch[i]), t->id), m->o.async_window);
	if (t->persistent && nt)
		gap_gates(&gb, m->f, touch[nt - 1], nn, nn,
		          opt_writes_over(m->g, atm_graph_node(m->g, touch[nt - 1]), t->id), m->o.async_window);
	if (gb.failed) {
		free(gb.g);
		return atm_err(ATM_E_NOMEM, "out of memory building the model of '%s'",
		               atm_graph_tensor(m->g, t->id)->name);
	}
	t->gates = gb.g;
	t->n_gates = gb.n;
	t->ph_lo = malloc((size_t)gb.n * sizeof *t->ph_lo);
	t->ph_hi = malloc((size_t)gb.n * sizeof *t->ph_hi);
	t->ph_states = malloc((size_t)gb.n);
	if (!t->ph_lo || !t->ph_hi || !t->ph_states)
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	phase_slots(t);
	prune(t);
	gate_costs(t, m->to_fast_bps, m->to_slow_bps);
	for (int32_t i = 0; i < gb.n; i++)
		if (t->gates[i].kind == G_ASYNC)
			m->n[t->gates[i].at].has_async = true;
	t->ph_off = m->n_phases;
	m->n_phases += gb.n;
	return ATM_OK;
}

/* closed_time -- node k's time in config mask, never less than in a configuration with fewer
 * slow groups: a slow operand does not make a kernel faster, and measurements that say so are
 * noise the plan must not chase (the checker applies the same rule) */
static atm_status closed_time(const struct model *m, int32_t k, uint32_t mask, double *t)
{
	atm_profile_entry e;
	atm_status rc = atm_profile_get(m->prof, m->g, k, mask, &e);
	if (rc < 0)
		return atm_err_prefix(rc, "run 'autotm profile' for this network first: ");
	*t = e.min_s;
	/* every proper sub-mask that is a configuration of the node */
	for (uint32_t sub = (mask - 1) & mask; sub != mask; sub = (sub - 1) & mask) {
		if (atm_profile_get(m->prof, m->g, k, sub, &e) == ATM_OK && e.min_s > *t)
			*t = e.min_s;
		if (!sub)
			break;
	}
	atm_err_clear();
	return ATM_OK;
}

/* operand -- node n's i-th operand (inputs, then outputs) */
static int32_t operand(const atm_node *n, int i)
{
	return i < n->n_in ? n->in[i] : n->out[i - n->n_in];
}

/* add_forced -- tensor x must be fast (or slow) at node k: its group has a fixed partner */
static void add_forced(struct model *m, struct nmodel *nm, int32_t x, int32_t k, bool slow)
{
	for (int j = 0; j < nm->n_forced; j++)
		if (nm->forced[j].tensor == x)
			return;
	nm->forced[nm->n_forced++] = (struct forced){x, opt_phase_at(&m->t[x], SLOT_K(k)), slow};
}

/* build_floor -- the fast bytes no plan can avoid at each slot: the fixed ones, and on a GPU
 * every phase of a movable tensor in which a kernel uses it (forced fast there) */
static atm_status build_floor(struct model *m)
{
	bool *need = calloc((size_t)(m->n_phases ? m->n_phases : 1), sizeof *need);
	m->floor = malloc((size_t)m->n_slots * sizeof *m->floor);
	if (!need || !m->floor) {
		free(need);
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	}
	memcpy(m->floor, m->fixed, (size_t)m->n_slots * sizeof *m->floor);
	for (int32_t k = 0; m->o.device_only && k < m->n_nodes; k++)
		for (int j = 0; j < m->n[k].n_forced; j++) {
			const struct forced *f = &m->n[k].forced[j];
			const struct tmodel *t = &m->t[f->tensor];
			if (f->slow || f->phase < 0 || need[t->ph_off + f->phase])
				continue;
			need[t->ph_off + f->phase] = true;
			for (int32_t s = t->ph_lo[f->phase]; s <= t->ph_hi[f->phase]; s++)
				m->floor[s] += t->abytes;
		}
	free(need);
	return ATM_OK;
}

/* One algorithm a kernel may run. */
struct cand {
	double s;
	int64_t ws;
	int algo;
};

/* cand_cmp -- by time, then workspace, then index */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	if (x->ws != y->ws)
		return x->ws < y->ws ? -1 : 1;
	return x->algo - y->algo;
}

/* build_algos -- on a GPU, the algorithms node k may run: every one profiled with its operands
 * fast whose workspace fits ATM_GPU_WORKSPACE_BYTES (the default always), less those both no
 * faster and needing no less workspace than another, which no plan would choose. When the
 * workspace is not counted that leaves the fastest alone */
static atm_status build_algos(struct model *m, int32_t k, struct nmodel *nm)
{
	bool count = opt_counts_algo_ws(&m->o);
	struct cand c[ATM_MAX_ALGOS];
	int n = 0;
	atm_profile_entry e;
	atm_status rc = atm_profile_get(m->prof, m->g, k, 0, &e);
	if (rc < 0)
		return atm_err_prefix(rc, "run 'autotm profile' for this network first: ");
	for (int a = 0; a < ATM_MAX_ALGOS; a++) {
		if (a && (atm_profile_get_algo(m->prof, m->g, k, 0, a, &e) < 0 ||
		          e.scratch_bytes > ATM_GPU_WORKSPACE_BYTES))
			continue;
		c[n++] = (struct cand){e.min_s, count ? atm_arena_align_up(e.scratch_bytes) : 0, a};
	}
	atm_err_clear();
	/* fastest first: each kept one needs less workspace than every faster one */
	qsort(c, (size_t)n, sizeof c[0], cand_cmp);
	nm->n_algo = 0;
	for (int i = 0; i < n; i++) {
		if (nm->n_algo && c[i].ws >= nm->algo_ws[nm->n_algo - 1])
			continue;
		nm->algos[nm->n_algo] = (int8_t)c[i].algo;
		nm->algo_time[nm->n_algo] = c[i].s;
		nm->algo_ws[nm->n_algo++] = c[i].ws;
	}
	nm->time[0] = nm->algo_time[0];
	m->fixed[SLOT_K(k)] += nm->algo_ws[nm->n_algo - 1];
	return ATM_OK;
}

/* build_node -- node k's configuration groups: the free ones the model chooses, the ones a
 * fixed partner forces, and the profile's time for every choice of the free ones */
static atm_status build_node(struct model *m, int32_t k)
{
	const atm_graph *g = m->g;
	const atm_node *n = atm_graph_node(g, k);
	struct nmodel *nm = &m->n[k];
	int n_ops = n->n_in + n->n_out, n_units = 0;
	uint32_t units[ATM_CONFIG_MAX_OPERANDS];
	/* on a GPU no operand group is free: every operand is forced into fast memory */
	int n_all = m->o.device_only ? 1 : atm_node_n_configs(g, k);
	while ((1 << n_units) < n_all && n_units < ATM_CONFIG_MAX_OPERANDS)
		n_units++;
	bool *covered = calloc((size_t)n_ops + 1, sizeof *covered);
	nm->forced = malloc(((size_t)n_ops + 1) * sizeof *nm->forced);
	if (!covered || !nm->forced) {
		free(covered);
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	}
	for (int u = 0; u < n_units; u++)
		units[u] = atm_node_config_at(g, k, 1 << u);
	/* operands in no group stay fast (a group with a fast-only tensor is never slow) */
	for (int u = 0; u < n_units; u++)
		for (int i = 0; i < n_ops; i++)
			if (atm_node_config_loc(g, k, units[u], i) == ATM_LOC_SLOW)
				covered[i] = true;
	for (int i = 0; i < n_ops; i++) {
		const struct tmodel *t = &m->t[operand(n, i)];
		if (covered[i] || t->cls == TC_FAST)
			continue;
		if (t->cls == TC_SLOW) {
			free(covered);
			return atm_err(ATM_E_NOTFOUND, "node '%s' (%s): tensor '%s' may only be in slow "
			               "memory, but the profile keeps its group fast", n->name,
			               atm_op_name(n->op), atm_graph_tensor(g, t->id)->name);
		}
		add_forced(m, nm, t->id, k, false);
	}
	free(covered);
	for (int u = 0; u < n_units; u++) {
		struct unit un = {.mask = units[u]};
		bool fast = false, slow = false;
		un.members = malloc((size_t)n_ops * sizeof *un.members);
		un.phase = malloc((size_t)n_ops * sizeof *un.phase);
		if (!un.members || !un.phase) {
			free(un.members);
			free(un.phase);
			return atm_err(ATM_E_NOMEM, "out of memory building the model");
		}
		for (int i = 0; i < n_ops; i++) {
			if (atm_node_config_loc(g, k, units[u], i) != ATM_LOC_SLOW)
				continue;
			const struct tmodel *t = &m->t[operand(n, i)];
			fast |= t->cls == TC_FAST;
			slow |= t->cls == TC_SLOW;
			bool dup = false;
			for (int j = 0; j < un.n_members; j++)
				dup |= un.members[j] == t->id;
			if (t->cls == TC_MOVABLE && !dup) {
				un.phase[un.n_members] = opt_phase_at(t, SLOT_K(k));
				un.members[un.n_members++] = t->id;
			}
		}
		if (fast && slow) {
			free(un.members);
			free(un.phase);
			return atm_err(ATM_E_NOTFOUND, "node '%s' (%s): one of its groups holds a tensor "
			               "that must be fast and one that must be slow", n->name,
			               atm_op_name(n->op));
		}
		if (slow)
			nm->base |= un.mask;
		if (fast || slow)
			for (int j = 0; j < un.n_members; j++)
				add_forced(m, nm, un.members[j], k, slow);
		if (fast || slow || !un.n_members) {
			free(un.members);
			free(un.phase);
			continue;
		}
		nm->units[nm->n_free++] = un;
	}
	nm->n_cfg = 1 << nm->n_free;
	nm->time = malloc((size_t)nm->n_cfg * sizeof *nm->time);
	if (!nm->time)
		return atm_err(ATM_E_NOMEM, "out of memory reading the profile");
	/* on a GPU the kernel's one configuration is all fast, with an algorithm of the profile */
	if (m->o.device_only)
		return build_algos(m, k, nm);
	nm->n_algo = 1;
	for (int c = 0; c < nm->n_cfg; c++) {
		uint32_t mask = nm->base;
		for (int u = 0; u < nm->n_free; u++)
			if (c >> u & 1)
				mask |= nm->units[u].mask;
		atm_status rc = closed_time(m, k, mask, &nm->time[c]);
		if (rc < 0)
			return rc;
	}
	return ATM_OK;
}

/* pin_threshold -- tensors up to this size are kept fast outside the model */
static int64_t pin_threshold(const atm_opt_options *o, const atm_liveness *lv)
{
	if (o->pin_bytes >= 0)
		return o->pin_bytes;
	int64_t p = atm_liveness_peak_bytes(lv) / 4096;
	return p < 65536 ? p : 65536;
}

/* copy_speeds -- the profile's copy bandwidths, in bytes per second */
static atm_status copy_speeds(struct model *m)
{
	atm_profile_moves mv;
	atm_status rc = atm_profile_get_moves(m->prof, &mv);
	if (rc < 0)
		return atm_err_prefix(rc, "the profile has no copy bandwidths; run 'autotm profile' "
		                      "first: ");
	if (!(mv.to_fast_gbps > 0) || !(mv.to_slow_gbps > 0))
		return atm_err(ATM_E_INPUT, "the profile's copy bandwidths must be positive (to fast %g "
		               "GB/s, to slow %g GB/s)", mv.to_fast_gbps, mv.to_slow_gbps);
	m->to_fast_bps = mv.to_fast_gbps * 1e9;
	m->to_slow_bps = mv.to_slow_gbps * 1e9;
	atm_profile_overlap(&mv, ATM_LOC_FAST, &m->kernel_loss[0], &m->copy_stretch[0]);
	atm_profile_overlap(&mv, ATM_LOC_SLOW, &m->kernel_loss[1], &m->copy_stretch[1]);
	return ATM_OK;
}

/* touch_lists -- the distinct nodes touching each tensor, in schedule order (CSR: tensor x's
 * are (*touch)[(*tstart)[x]] up to (*tstart)[x + 1]); the caller frees both */
static atm_status touch_lists(const atm_graph *g, int32_t **tstart, int32_t **touch)
{
	int32_t nn = atm_graph_n_nodes(g), ntn = atm_graph_n_tensors(g);
	int32_t *start = calloc((size_t)ntn + 1, sizeof *start), *fill = NULL, *t = NULL;
	*tstart = start;
	*touch = NULL;
	if (!start)
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	for (int32_t k = 0; k < nn; k++) {
		const atm_node *n = atm_graph_node(g, k);
		for (int i = 0; i < n->n_in + n->n_out; i++) {
			int32_t x = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
			bool seen = false;
			for (int j = 0; j < i; j++)
				seen |= (j < n->n_in ? n->in[j] : n->out[j - n->n_in]) == x;
			if (!seen)
				start[x + 1]++;
		}
	}
	for (int32_t x = 0; x < ntn; x++)
		start[x + 1] += start[x];
	*touch = t = malloc((size_t)(start[ntn] ? start[ntn] : 1) * sizeof *t);
	fill = malloc((size_t)(ntn ? ntn : 1) * sizeof *fill);
	if (!t || !fill) {
		free(fill);
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	}
	memcpy(fill, start, (size_t)ntn * sizeof *fill);
	for (int32_t k = 0; k < nn; k++) {
		const atm_node *n = atm_graph_node(g, k);
		for (int i = 0; i < n->n_in + n->n_out; i++) {
			int32_t x = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
			if (fill[x] == start[x] || t[fill[x] - 1] != k)
				t[fill[x]++] = k;
		}
	}
	free(fill);
	return ATM_OK;
}

/* classify -- each tensor's life in slots and its class: fast-only, slow-only, pinned fast
 * (small, or no limit) or movable; what is fixed in fast memory counts in every slot it spans */
static void classify(struct model *m, const atm_liveness *lv, int64_t limit)
{
	const atm_graph *g = m->g;
	int32_t nn = m->n_nodes;
	int64_t pin = pin_threshold(&m->o, lv);
	for (int32_t x = 0; x < m->n_tensors; x++) {
		const atm_tensor *a = atm_graph_tensor(g, x);
		struct tmodel *t = &m->t[x];
		t->id = x;
		t->bytes = a->bytes;
		/* what it takes in the arena (ATM_ARENA_ALIGN): only fragmentation can then make a
		 * plan not fit */
		t->abytes = atm_arena_align_up(a->bytes);
		t->persistent = atm_tensor_is_persistent(a);
		t->first = t->persistent ? 0 : atm_liveness_first(lv, x);
		t->last = t->persistent ? nn - 1 : atm_liveness_last(lv, x);
		t->slot_lo = t->persistent ? 0 : SLOT_K(t->first);
		t->slot_hi = t->persistent ? m->n_slots - 1 : SLOT_M(t->last);
		if (a->locations == ATM_LOC_FAST) {
			t->cls = TC_FAST;
		} else if (a->locations == ATM_LOC_SLOW) {
			t->cls = TC_SLOW;
		} else if (a->bytes <= pin || limit <= 0) {
			t->cls = TC_FAST;
			t->pinned = true;
			m->pinned_bytes += a->bytes;
		} else {
			t->cls = TC_MOVABLE;
		}
		if (t->cls == TC_FAST)
			for (int32_t s = t->slot_lo; s <= t->slot_hi; s++)
				m->fixed[s] += t->abytes;
	}
	/* a grouped node's operands move together: one pinned member would pin them all */
	for (int32_t k = 0; k < nn; k++) {
		const atm_node *n = atm_graph_node(g, k);
		if (n->n_in + n->n_out <= ATM_CONFIG_MAX_OPERANDS)
			continue;
		for (int i = 0; i < n->n_in + n->n_out; i++) {
			struct tmodel *t = &m->t[i < n->n_in ? n->in[i] : n->out[i - n->n_in]];
			if (!t->pinned)
				continue;
			t->pinned = false;
			t->cls = TC_MOVABLE;
			m->pinned_bytes -= t->bytes;
			for (int32_t s = t->slot_lo; s <= t->slot_hi; s++)
				m->fixed[s] -= t->abytes;
		}
	}
	/* on a GPU the workspace is the chosen algorithm's (build_algos) */
	if (m->o.workspace_in_limit && !m->o.device_only)
		for (int32_t k = 0; k < nn; k++)
			m->fixed[SLOT_K(k)] += atm_graph_node(g, k)->workspace_bytes;
}

/* model_stopped -- ATM_E_INTERRUPTED once the plan's stop flag is set */
static atm_status model_stopped(const struct model *m)
{
	if (!m->o.stop || !*m->o.stop)
		return ATM_OK;
	return atm_err(ATM_E_INTERRUPTED, "planning interrupted while building the model");
}

atm_status opt_model_new(struct model **out, const atm_graph *g, const atm_profile *prof,
                         atm_opt_formulation f, const atm_opt_options *o, int64_t limit,
                         const int64_t *slot_limit)
{
	int32_t nn = atm_graph_n_nodes(g), ntn = atm_graph_n_tensors(g);
	atm_liveness *lv = NULL;
	int32_t *tstart = NULL, *touch = NULL;
	atm_status rc;
	struct model *m = calloc(1, sizeof *m);
	*out = NULL;
	if (!m)
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	m->g = g;
	m->prof = prof;
	m->f = f;
	m->o = *o;
	m->n_nodes = nn;
	m->n_tensors = ntn;
	m->n_slots = 2 * nn + 1;
	if ((rc = copy_speeds(m)) < 0 || (rc = atm_liveness_new(&lv, g)) < 0)
		goto fail;
	m->t = calloc((size_t)(ntn ? ntn : 1), sizeof *m->t);
	m->n = calloc((size_t)(nn ? nn : 1), sizeof *m->n);
	m->limit = malloc((size_t)m->n_slots * sizeof *m->limit);
	m->fixed = calloc((size_t)m->n_slots, sizeof *m->fixed);
	if (!m->t || !m->n || !m->limit || !m->fixed) {
		rc = atm_err(ATM_E_NOMEM, "out of memory building the model");
		goto fail;
	}
	/* the arena is the limit rounded down to the alignment */
	for (int32_t s = 0; s < m->n_slots; s++)
		m->limit[s] = slot_limit ? atm_arena_align_down(slot_limit[s])
		                         : limit > 0 ? atm_arena_align_down(limit) : INT64_MAX;
	if ((rc = touch_lists(g, &tstart, &touch)) < 0)
		goto fail;
	classify(m, lv, limit);
	for (int32_t x = 0; x < ntn; x++)
		if (m->t[x].cls == TC_MOVABLE) {
			if ((rc = build_chain(m, &m->t[x], touch + tstart[x], tstart[x + 1] - tstart[x])) < 0)
				goto fail;
			m->n_movable++;
		}
	/* a large graph's kernel times take a second to look up: Ctrl-C ends that too */
	for (int32_t k = 0; k < nn; k++)
		if ((k % 256 == 0 && (rc = model_stopped(m)) < 0) || (rc = build_node(m, k)) < 0)
			goto fail;
	if ((rc = build_floor(m)) < 0 || (rc = opt_recompute_build(m, lv, tstart, touch)) < 0)
		goto fail;
	free(touch);
	free(tstart);
	atm_liveness_destroy(lv);
	*out = m;
	return ATM_OK;
fail:
	free(touch);
	free(tstart);
	atm_liveness_destroy(lv);
	opt_model_destroy(m);
	return rc;
}

void opt_model_destroy(struct model *m)
{
	if (!m)
		return;
	for (int32_t x = 0; m->t && x < m->n_tensors; x++) {
		free(m->t[x].gates);
		free(m->t[x].ph_lo);
		free(m->t[x].ph_hi);
		free(m->t[x].ph_states);
	}
	for (int32_t k = 0; m->n && k < m->n_nodes; k++) {
		for (int u = 0; u < m->n[k].n_free; u++) {
			free(m->n[k].units[u].members);
			free(m->n[k].units[u].phase);
		}
		free(m->n[k].forced);
		free(m->n[k].time);
	}
	opt_recompute_free(m);
	free(m->t);
	free(m->n);
	free(m->limit);
	free(m->fixed);
	free(m->floor);
	free(m);
}

/* opt_min_fixed -- the worst slot's fixed fast bytes against its limit: need is the bytes,
 * slot where; ATM_E_INFEASIBLE when some slot's fixed bytes exceed its limit */
atm_status opt_min_fixed(const struct model *m, int64_t *need, int32_t *slot)
{
	int64_t worst = 0;
	int32_t at = -1;
	bool over = false;
	for (int32_t s = 0; s < m->n_slots; s++) {
		if (m->floor[s] > worst) {
			worst = m->floor[s];
			at = s;
		}
		over |= m->floor[s] > m->limit[s];
	}
	*need = worst;
	*slot = at;
	return over ? ATM_E_INFEASIBLE : ATM_OK;
}

/* ---------------------------------------------------------------- solutions */

atm_status opt_solution_new(const struct model *m, struct solution *s)
{
	s->st = calloc((size_t)(m->n_phases ? m->n_phases : 1), 1);
	s->pinned = calloc((size_t)(m->n_tensors ? m->n_tensors : 1), sizeof *s->pinned);
	s->algo = calloc((size_t)(m->n_nodes ? m->n_nodes : 1), sizeof *s->algo);
	s->rc = calloc((size_t)(m->n_rc ? m->n_rc : 1), 1);
	if (!s->st || !s->pinned || !s->algo || !s->rc) {
		opt_solution_free(s);
		return atm_err(ATM_E_NOMEM, "out of memory for a placement");
	}
	return ATM_OK;
}

void opt_solution_free(struct solution *s)
{
	free(s->st);
	free(s->pinned);
	free(s->algo);
	free(s->rc);
	s->st = NULL;
	s->pinned = NULL;
	s->algo = NULL;
	s->rc = NULL;
}

void opt_solution_copy(const struct model *m, struct solution *dst, const struct solution *src)
{
	memcpy(dst->st, src->st, (size_t)m->n_phases);
	memcpy(dst->pinned, src->pinned, (size_t)m->n_tensors * sizeof *dst->pinned);
	memcpy(dst->algo, src->algo, (size_t)m->n_nodes * sizeof *dst->algo);
	memcpy(dst->rc, src->rc, (size_t)m->n_rc);
}

/* nest_tensor -- tensor x's states under src (of from) as to's: the state src has after each
 * gate both models have, kept through the overlapped copy gates only to has; false when the
 * gates do not line up or to lacks a stay */
static bool nest_tensor(const struct model *to, struct solution *dst, const struct model *from,
                        const struct solution *src, int32_t x)
{
	const struct tmodel *tt = &to->t[x], *ft = &from->t[x];
	uint8_t st = ST_S;
	int32_t j = 0;
	for (int32_t i = 0; i < tt->n_gates; i++) {
		const struct gate *g = &tt->gates[i];
		uint8_t prev = st;
		if (g->kind != G_ASYNC) {
			if (j == ft->n_gates || ft->gates[j].kind != g->kind || ft->gates[j].at != g->at)
				return false;
			st = src->st[ft->ph_off + j++];
		}
		if (!src->pinned[x] && !(g->edges >> EDGE(prev, st) & 1u))
			return false;
		dst->st[tt->ph_off + i] = st;
	}
	return j == ft->n_gates;
}

bool opt_solution_nest(const struct model *to, struct solution *dst, const struct model *from,
                       const struct solution *src)
{
	if (to->n_tensors != from->n_tensors || to->n_nodes != from->n_nodes)
		return false;
	for (int32_t x = 0; x < to->n_tensors; x++) {
		if (to->t[x].cls != from->t[x].cls)
			return false;
		dst->pinned[x] = src->pinned[x];
		if (to->t[x].cls == TC_MOVABLE && !nest_tensor(to, dst, from, src, x))
			return false;
	}
	for (int32_t k = 0; k < to->n_nodes; k++) {
		if (to->n[k].n_algo != from->n[k].n_algo)
			return false;
		dst->algo[k] = src->algo[k];
	}
	/* candidates are made in the same order, tensor by tensor and gap by gap: each chosen one
	 * is found again by its tensor and uses */
	memset(dst->rc, 0, (size_t)(to->n_rc ? to->n_rc : 1));
	for (int32_t i = 0, j = 0; i < from->n_rc; i++) {
		const struct rcand *a = &from->rc[i];
		while (j < to->n_rc && (to->rc[j].t < a->t || (to->rc[j].t == a->t && to->rc[j].d < a->d)))
			j++;
		bool same = j < to->n_rc && to->rc[j].t == a->t && to->rc[j].d == a->d &&
		            to->rc[j].u == a->u;
		if (src->rc[i] && !same)
			return false;
		if (same)
			dst->rc[j] = src->rc[i];
	}
	return true;
}

/* opt_solution_all_slow -- every movable tensor slow all its life: feasible whenever the fixed
 * tensors fit */
void opt_solution_all_slow(const struct model *m, struct solution *s)
{
	memset(s->st, ST_S, (size_t)m->n_phases);
	memset(s->pinned, 0, (size_t)m->n_tensors * sizeof *s->pinned);
	memset(s->rc, 0, (size_t)m->n_rc);
	opt_solution_small_algos(m, s);
}

void opt_solution_small_algos(const struct model *m, struct solution *s)
{
	for (int32_t k = 0; k < m->n_nodes; k++)
		s->algo[k] = (uint8_t)(m->n[k].n_algo - 1);
}

int64_t opt_algo_extra(const struct model *m, const struct solution *s, int32_t k)
{
	const struct nmodel *nm = &m->n[k];
	return nm->algo_ws[s->algo[k]] - nm->algo_ws[nm->n_algo - 1];
}

double opt_node_time(const struct model *m, const struct solution *s, int32_t k, int c)
{
	const struct nmodel *nm = &m->n[k];
	return nm->n_algo > 1 ? nm->algo_time[s->algo[k]] : nm->time[c];
}

/* state_slow -- is tensor x slow in phase ph under s */
static bool state_slow(const struct model *m, const struct solution *s, int32_t x, int32_t ph)
{
	return !s->pinned[x] && s->st[m->t[x].ph_off + ph] == ST_S;
}

int opt_node_config(const struct model *m, const struct solution *s, int32_t k)
{
	const struct nmodel *nm = &m->n[k];
	int c = 0;
	for (int u = 0; u < nm->n_free; u++) {
		const struct unit *un = &nm->units[u];
		bool slow = state_slow(m, s, un->members[0], un->phase[0]);
		for (int j = 1; j < un->n_members; j++)
			if (state_slow(m, s, un->members[j], un->phase[j]) != slow)
				return -1;
		c |= slow << u;
	}
	return c;
}

/* opt_present_in_gate -- does an asynchronous gate's edge hold a fast copy while it runs */
bool opt_present_in_gate(int e)
{
	return e != EDGE(ST_S, ST_S) && e != EDGE(ST_B, ST_S);
}

/* gate_edge -- the edge solution s takes through gate i of t (-1: pinned, no edge) */
static int gate_edge(const struct model *m, const struct solution *s, const struct tmodel *t,
                     int32_t i)
{
	if (s->pinned[t->id])
		return -1;
	uint8_t to = s->st[t->ph_off + i], from = i ? s->st[t->ph_off + i - 1] : ST_S;
	return EDGE(from, to);
}

double opt_solution_cost(const struct model *m, const struct solution *s)
{
	/* per node: the copies' channel time and the kernel's loss (opt_copy_cost) */
	double *xfer = calloc(2 * (size_t)(m->n_nodes ? m->n_nodes : 1), sizeof *xfer), total = 0;
	if (!xfer)
		return INFINITY;
	for (int32_t x = 0; x < m->n_tensors; x++) {
		const struct tmodel *t = &m->t[x];
		if (t->cls != TC_MOVABLE)
			continue;
		for (int32_t i = 1; i < t->n_gates; i++) {
			int e = gate_edge(m, s, t, i);
			if (e < 0)
				break;
			int32_t at = t->gates[i].at;
			if (t->gates[i].kind == G_ASYNC)
				opt_copy_cost(m, e, t->gates[i].cost[e], 1, &xfer[2 * at], &xfer[2 * at + 1]);
			else
				total += t->gates[i].cost[e];
		}
	}
	for (int32_t k = 0; k < m->n_nodes; k++) {
		int c = opt_node_config(m, s, k);
		double kt = c < 0 ? INFINITY : opt_node_time(m, s, k, c);
		if (kt < 0)
			kt = INFINITY;
		total += opt_overlapped(kt, xfer[2 * k], xfer[2 * k + 1]);
	}
	for (int32_t i = 0; i < m->n_rc; i++)
		if (s->rc[i])
			total += opt_recompute_time(m, s, i);
	free(xfer);
	return total;
}

void opt_solution_bytes(const struct model *m, const struct solution *s, int64_t *bytes)
{
	memcpy(bytes, m->fixed, (size_t)m->n_slots * sizeof *bytes);
	for (int32_t k = 0; k < m->n_nodes; k++)
		bytes[SLOT_K(k)] += opt_algo_extra(m, s, k);
	for (int32_t x = 0; x < m->n_tensors; x++) {
		const struct tmodel *t = &m->t[x];
		if (t->cls != TC_MOVABLE)
			continue;
		if (s->pinned[x]) {
			for (int32_t sl = t->slot_lo; sl <= t->slot_hi; sl++)
				bytes[sl] += t->abytes;
			continue;
		}
		for (int32_t i = 0; i < t->n_gates; i++) {
			if (IS_FAST(s->st[t->ph_off + i]))
				for (int32_t sl = t->ph_lo[i]; sl <= t->ph_hi[i]; sl++)
					bytes[sl] += t->abytes;
			const struct gate *g = &t->gates[i];
			if (g->kind != G_ASYNC || !opt_present_in_gate(gate_edge(m, s, t, i)))
				continue;
			/* an async copy holds its fast copy from M(at - 1); a fetch's destination
			 * phase covers M(at), an eviction's source copy is held until then */
			int32_t hi = gate_is_fetch(g) ? SLOT_K(g->at) : SLOT_M(g->at);
			for (int32_t sl = SLOT_M(g->at - 1); sl <= hi; sl++)
				bytes[sl] += t->abytes;
		}
	}
	/* a dropped tensor takes nothing from after its use to before it is made again; its links
	 * and scratch outputs are counted while u runs */
	for (int32_t i = 0; i < m->n_rc; i++)
		if (s->rc[i]) {
			for (int32_t sl = SLOT_M(m->rc[i].d); sl <= SLOT_M(m->rc[i].u - 1); sl++)
				bytes[sl] -= m->t[m->rc[i].t].abytes;
			bytes[SLOT_K(m->rc[i].u)] += m->rc[i].scratch;
		}
}

/* ---------------------------------------------------------------- plans */

/* add_recompute -- chosen candidate i into p: its links first (each once before a node: a
 * link another chosen candidate at the same node has is made for both), then its tensor */
static atm_status add_recompute(const struct model *m, const struct solution *s, int32_t i,
                                atm_plan *p)
{
	const struct rcand *c = &m->rc[i];
	atm_status rc = ATM_OK;
	for (int l = 0; l < c->n_links && rc == ATM_OK; l++) {
		bool made = false;
		for (int32_t j = 0; j < i && !made; j++)
			if (s->rc[j] && m->rc[j].u == c->u)
				for (int q = 0; q < m->rc[j].n_links; q++)
					made |= m->rc[j].links[q] == c->links[l];
		if (!made)
			rc = atm_plan_add_recompute(p, &(atm_recompute){
			                                   .tensor = c->links[l],
			                                   .drop_after = m->t[c->links[l]].last,
			                                   .before = c->u});
	}
	if (rc < 0)
		return rc;
	return atm_plan_add_recompute(p, &(atm_recompute){.tensor = c->t, .drop_after = c->d,
	                                                  .before = c->u});
}

/* A move waiting to be added, in the order the schedule must see them. */
struct pmove {
	atm_move mv;
	int order; /* 0 sync evictions, 1 sync fetches, 2 async evictions, 3 async fetches */
};

/* pmove_cmp -- by node, then evictions before fetches and blocking before overlapped */
static int pmove_cmp(const void *a, const void *b)
{
	const struct pmove *x = a, *y = b;
	if (x->mv.after != y->mv.after)
		return x->mv.after < y->mv.after ? -1 : 1;
	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return x->mv.tensor < y->mv.tensor ? -1 : x->mv.tensor > y->mv.tensor;
}

atm_status opt_solution_to_plan(const struct model *m, const struct solution *s, atm_plan *p)
{
	struct pmove *mv = NULL;
	int32_t n = 0, cap = 0;
	atm_status rc = ATM_OK;
	/* each kernel's algorithm, and its workspace where the limit counts it: the schedule
	 * reserves that much of the arena while the kernel runs */
	for (int32_t k = 0; k < m->n_nodes && rc == ATM_OK; k++) {
		const struct nmodel *nm = &m->n[k];
		if (!m->o.device_only)
			continue;
		if ((rc = atm_plan_set_algo(p, k, nm->algos[s->algo[k]])) == ATM_OK &&
		    opt_counts_algo_ws(&m->o))
			rc = atm_plan_set_workspace(p, k, nm->algo_ws[s->algo[k]]);
	}
	for (int32_t x = 0; x < m->n_tensors && rc == ATM_OK; x++) {
		const struct tmodel *t = &m->t[x];
		unsigned home = t->cls == TC_SLOW ? ATM_LOC_SLOW : ATM_LOC_FAST;
		if (t->cls == TC_MOVABLE && !s->pinned[x])
			home = s->st[t->ph_off] == ST_S ? ATM_LOC_SLOW : ATM_LOC_FAST;
		if ((rc = atm_plan_set_location(p, x, home)) < 0)
			break;
		if (t->cls != TC_MOVABLE || s->pinned[x])
			continue;
		for (int32_t i = 1; i < t->n_gates; i++) {
			const struct gate *g = &t->gates[i];
			int e = gate_edge(m, s, t, i);
			if (!(g->edges >> e & 1u)) {
				rc = atm_err(ATM_E_INTERNAL, "placement of '%s' takes an edge gate %d lacks",
				             atm_graph_tensor(m->g, x)->name, i);
				break;
			}
			if (EDGE_FROM(e) == EDGE_TO(e) || e == EDGE(ST_B, ST_F))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				struct pmove *nm = realloc(mv, (size_t)cap * sizeof *nm);
				if (!nm) {
					rc = atm_err(ATM_E_NOMEM, "out of memory writing the plan");
					break;
				}
				mv = nm;
			}
			bool to_fast = EDGE_TO(e) != ST_S, async = g->kind == G_ASYNC;
			/* evicting a valid copy only frees it: a synchronous no-op copy */
			if (e == EDGE(ST_B, ST_S) && async)
				async = false;
			struct pmove *pm = &mv[n++];
			pm->mv = (atm_move){.tensor = x, .to = to_fast ? ATM_LOC_FAST : ATM_LOC_SLOW,
			                    .after = async ? g->at - 1 : g->at,
			                    .until = async ? g->at + 1 : g->at + 1, .async = async};
			pm->order = (async ? 2 : 0) + (to_fast ? 1 : 0);
		}
	}
	if (rc == ATM_OK && n)
		qsort(mv, (size_t)n, sizeof *mv, pmove_cmp);
	for (int32_t i = 0; i < n && rc == ATM_OK; i++)
		rc = atm_plan_add_move(p, &mv[i].mv);
	for (int32_t i = 0; i < m->n_rc && rc == ATM_OK; i++)
		if (s->rc[i])
			rc = add_recompute(m, s, i, p);
	free(mv);
	return rc;
}
