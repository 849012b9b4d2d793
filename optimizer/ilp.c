/* ilp.c -- the placement model as a mixed-integer program: columns, rows, the seed, one solve */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "milp.h"
#include "opt_internal.h"

/* Objective in microseconds and memory in KiB keep the coefficients within a few orders of
 * magnitude of 1, which solvers' tolerances assume. */
#define US 1e6
#define KIB (1.0 / 1024.0)

/* Where the model's choices live among the program's columns (-1: none). */
struct cols {
	bool reduced;           /* the reduced program (see tensor_program); else every phase's
	                         * states as the edges into them (tensor_columns) */
	int32_t *gate;          /* by (tmodel.ph_off + gate) * N_EDGES + edge (reduced: moves only) */
	int32_t *st;            /* reduced: by (tmodel.ph_off + phase) * N_ST + state, where the
	                         * phase is kept */
	uint8_t *kept;          /* reduced: by tmodel.ph_off + phase, the phase has state columns */
	int32_t *home;          /* by tensor: persistent movable, "fast all its life, never moves" */
	int32_t *z, *y;         /* by node: its first configuration; max(kernel, copies) */
	int32_t *a;             /* by node with a choice: its first algorithm */
	bool *sep;              /* by node: separable, priced by its units' slow states */
	int32_t m0;             /* the first memory slot's fast bytes */
	/* by recomputation candidate: its choice; its kernel's units slow while it is chosen
	 * (one per unit, the first: -1 when none); its configurations (non-separable kernels) */
	int32_t *r, *rw, *ry;
};

/* One row while it is assembled: duplicates are merged before the program takes it. */
struct row {
	int32_t *ind;
	double *val;
	int32_t n, cap;
};

struct build {
	const struct model *m;
	struct milp *p;
	struct cols *c;
	struct row r;
	struct row e;           /* an expression: a tensor's fast copies over a range of slots */
	bool failed;
	/* memory deltas: (slot, column, KiB) triples, bucketed into the slots' rows */
	struct delta {
		int32_t slot;
		int32_t col;
		double v;
	} *d;
	int64_t n_d, cap_d;
};

/* push -- v times column col joins r (a row or an expression being built) */
static void push(struct build *b, struct row *r, int32_t col, double v)
{
	if (b->failed || col < 0 || v == 0)
		return;
	if (r->n == r->cap) {
		int32_t cap = r->cap ? r->cap * 2 : 64;
		int32_t *ind = realloc(r->ind, (size_t)cap * sizeof *ind);
		if (ind)
			r->ind = ind;
		double *val = ind ? realloc(r->val, (size_t)cap * sizeof *val) : NULL;
		if (val)
			r->val = val;
		if (!ind || !val) {
			b->failed = true;
			return;
		}
		r->cap = cap;
	}
	r->ind[r->n] = col;
	r->val[r->n++] = v;
}

/* row_add -- v times column col joins the row being built */
static void row_add(struct build *b, int32_t col, double v)
{
	push(b, &b->r, col, v);
}

/* ent_cmp -- order (column, value) pairs by column */
static int ent_cmp(const void *a, const void *b)
{
	const int32_t *x = a, *y = b;
	return (*x > *y) - (*x < *y);
}

/* row_flush -- merge duplicate columns, drop zeros, and add the row lo <= . <= hi */
static void row_flush(struct build *b, double lo, double hi)
{
	struct row *r = &b->r;
	if (b->failed)
		return;
	struct pair {
		int32_t col;
		double v;
	} *q = malloc(((size_t)r->n + 1) * sizeof *q);
	if (!q) {
		b->failed = true;
		return;
	}
	for (int32_t i = 0; i < r->n; i++)
		q[i] = (struct pair){r->ind[i], r->val[i]};
	qsort(q, (size_t)r->n, sizeof *q, ent_cmp);
	int32_t n = 0;
	for (int32_t i = 0; i < r->n; i++) {
		if (n && r->ind[n - 1] == q[i].col) {
			r->val[n - 1] += q[i].v;
			continue;
		}
		r->ind[n] = q[i].col;
		r->val[n++] = q[i].v;
	}
	free(q);
	int32_t k = 0;
	for (int32_t i = 0; i < n; i++)
		if (fabs(r->val[i]) > 1e-12) {
			r->ind[k] = r->ind[i];
			r->val[k++] = r->val[i];
		}
	r->n = 0;
	if (!k && !isinf(hi) && fabs(lo) < 1e-9)
		return; /* an empty row 0 = 0 says nothing */
	milp_row(b->p, r->ind, r->val, k, lo, hi);
}

/* add_col -- a new column: binary, or continuous within [lo, hi]; its objective coefficient */
static int32_t add_col(struct build *b, bool binary, double lo, double hi, double obj)
{
	int32_t j = milp_col(b->p, lo, hi, obj, binary);
	b->failed |= j < 0;
	return j;
}

/* delta_add -- column col changes the fast bytes of slot by v KiB */
static void delta_add(struct build *b, int32_t slot, int32_t col, double v)
{
	if (b->failed || slot >= b->m->n_slots)
		return;
	if (b->n_d == b->cap_d) {
		int64_t cap = b->cap_d ? b->cap_d * 2 : 1024;
		struct delta *d = realloc(b->d, (size_t)cap * sizeof *d);
		if (!d) {
			b->failed = true;
			return;
		}
		b->d = d;
		b->cap_d = cap;
	}
	b->d[b->n_d++] = (struct delta){slot, col, v};
}

/* delta_cmp -- order memory deltas by slot, then column */
static int delta_cmp(const void *a, const void *b)
{
	const struct delta *x = a, *y = b;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return (x->col > y->col) - (x->col < y->col);
}

/* presence -- add v times tensor t's fast bytes (KiB) over slots [lo, hi] for column col */
static void presence(struct build *b, const struct tmodel *t, int32_t col, int32_t lo, int32_t hi,
                     double v)
{
	if (lo > hi || col < 0)
		return;
	delta_add(b, lo, col, v * (double)t->abytes * KIB);
	delta_add(b, hi + 1, col, -v * (double)t->abytes * KIB);
}

/* gate_col -- the column of edge e of tensor t's gate i */
static int32_t *gate_col(const struct cols *c, const struct tmodel *t, int32_t i, int e)
{
	return &c->gate[((int64_t)t->ph_off + i) * N_EDGES + e];
}

/* st_col -- the column of state x in kept phase i of tensor t (reduced program) */
static int32_t st_col(const struct cols *c, const struct tmodel *t, int32_t i, int x)
{
	return c->st[((int64_t)t->ph_off + i) * N_ST + x];
}

/* is_kept -- phase i of t has columns of its own */
static bool is_kept(const struct cols *c, const struct tmodel *t, int32_t i)
{
	return !c->reduced || c->kept[t->ph_off + i];
}

/* move_terms -- sign times (the moves of t's gate g into x less those out of x) into r */
static void move_terms(struct build *b, struct row *r, const struct tmodel *t, int32_t g, int x,
                       double sign)
{
	for (int e = 0; e < N_EDGES; e++) {
		if (!(t->gates[g].edges >> e & 1u) || EDGE_FROM(e) == EDGE_TO(e))
			continue;
		if (EDGE_TO(e) == x)
			push(b, r, *gate_col(b->c, t, g, e), sign);
		if (EDGE_FROM(e) == x)
			push(b, r, *gate_col(b->c, t, g, e), -sign);
	}
}

/* state_terms -- sign times "t is in state x during phase ph" into r. The full program: the
 * edges of gate ph into x. The reduced one: x's column in the last kept phase up to ph, and
 * the moves of the gates since */
static void state_terms(struct build *b, struct row *r, const struct tmodel *t, int32_t ph, int x,
                        double sign)
{
	if (!b->c->reduced) {
		const struct gate *g = &t->gates[ph];
		for (int e = 0; e < N_EDGES; e++)
			if ((g->edges >> e & 1u) && EDGE_TO(e) == x)
				push(b, r, *gate_col(b->c, t, ph, e), sign);
		return;
	}
	int32_t i = ph;
	while (!is_kept(b->c, t, i))
		i--;
	push(b, r, st_col(b->c, t, i, x), sign);
	for (int32_t g = i + 1; g <= ph; g++)
		move_terms(b, r, t, g, x, sign);
}

/* edge_terms -- sign times "t takes edge e of gate g" into r: its column, or in the reduced
 * program a stay's: the state before the gate less the moves out of it */
static void edge_terms(struct build *b, struct row *r, const struct tmodel *t, int32_t g, int e,
                       double sign)
{
	if (!b->c->reduced || EDGE_FROM(e) != EDGE_TO(e)) {
		push(b, r, *gate_col(b->c, t, g, e), sign);
		return;
	}
	state_terms(b, r, t, g - 1, EDGE_FROM(e), sign);
	for (int f = 0; f < N_EDGES; f++)
		if ((t->gates[g].edges >> f & 1u) && EDGE_FROM(f) == EDGE_FROM(e) && f != e)
			push(b, r, *gate_col(b->c, t, g, f), -sign);
}

/* slow_expr -- add sign * "t is slow in phase ph" to the current row */
static void slow_expr(struct build *b, const struct tmodel *t, int32_t ph, double sign)
{
	state_terms(b, &b->r, t, ph, ST_S, sign);
}

/* presence_expr -- t's fast bytes (KiB) over slots [lo, hi] as the expression e says */
static void presence_expr(struct build *b, const struct tmodel *t, struct row *e, int32_t lo,
                          int32_t hi)
{
	for (int32_t i = 0; i < e->n; i++)
		presence(b, t, e->ind[i], lo, hi, e->val[i]);
	e->n = 0;
}

/* tensor_presence -- t's fast bytes at every slot of its life: the fast states of each phase,
 * and the edges of an asynchronous gate that hold a fast copy while its copy runs */
static void tensor_presence(struct build *b, const struct tmodel *t)
{
	struct row *e = &b->e;
	if (b->c->home[t->id] >= 0)
		presence(b, t, b->c->home[t->id], t->slot_lo, t->slot_hi, 1);
	for (int32_t i = 0; i < t->n_gates; i++) {
		const struct gate *g = &t->gates[i];
		if (t->ph_lo[i] <= t->ph_hi[i]) {
			state_terms(b, e, t, i, ST_F, 1);
			state_terms(b, e, t, i, ST_B, 1);
			presence_expr(b, t, e, t->ph_lo[i], t->ph_hi[i]);
		}
		if (g->kind != G_ASYNC)
			continue;
		for (int x = 0; x < N_EDGES; x++)
			if ((g->edges >> x & 1u) && opt_present_in_gate(x))
				edge_terms(b, e, t, i, x, 1);
		presence_expr(b, t, e, SLOT_M(g->at - 1), g->fetch ? SLOT_K(g->at) : SLOT_M(g->at));
	}
}

/* tensor_columns -- the full program of a movable tensor: the edges of every gate, its source
 * and flow rows */
static void tensor_columns(struct build *b, const struct tmodel *t)
{
	for (int32_t i = 0; i < t->n_gates; i++) {
		const struct gate *g = &t->gates[i];
		for (int e = 0; e < N_EDGES; e++)
			if (g->edges >> e & 1u)
				*gate_col(b->c, t, i, e) = add_col(b, true, 0, 1, i && g->kind == G_SYNC ?
				                                   g->cost[e] * US : 0);
	}
	int32_t home = b->c->home[t->id] = t->persistent ? add_col(b, true, 0, 1, 0) : -1;
	/* one unit of flow leaves the source, or the tensor is pinned in fast memory */
	for (int e = 0; e < N_EDGES; e++)
		row_add(b, *gate_col(b->c, t, 0, e), 1);
	row_add(b, home, 1);
	row_flush(b, 1, 1);
	/* what enters a state in a phase leaves it at the next gate */
	for (int32_t i = 0; i + 1 < t->n_gates; i++)
		for (int x = 0; x < N_ST; x++) {
			if (!(t->ph_states[i] >> x & 1u))
				continue;
			for (int e = 0; e < N_EDGES; e++) {
				if ((t->gates[i].edges >> e & 1u) && EDGE_TO(e) == x)
					row_add(b, *gate_col(b->c, t, i, e), 1);
				if ((t->gates[i + 1].edges >> e & 1u) && EDGE_FROM(e) == x)
					row_add(b, *gate_col(b->c, t, i + 1, e), -1);
			}
			row_flush(b, 0, 0);
		}
}

/* enters_later -- some move of t's gates g..j enters state x */
static bool enters_later(const struct tmodel *t, int32_t g, int32_t j, int x)
{
	for (; g <= j; g++)
		for (int e = 0; e < N_EDGES; e++)
			if ((t->gates[g].edges >> e & 1u) && EDGE_TO(e) == x && EDGE_FROM(e) != x)
				return true;
	return false;
}

/* stay_rows -- in the reduced program a gate's stays are no columns: what stays in x at gate g
 * (the state before it less the moves out) must not be negative, and is nothing where the gate
 * has no stay in x. A row says so where nothing else does: where x is entered again before
 * the next kept phase j (else that phase's column, at least 0, bounds it) */
static void stay_rows(struct build *b, const struct tmodel *t, int32_t g, int32_t j)
{
	for (int x = 0; x < N_ST; x++) {
		if (!(t->ph_states[g - 1] >> x & 1u))
			continue;
		bool stay = t->gates[g].edges >> EDGE(x, x) & 1u, out = false;
		for (int e = 0; e < N_EDGES; e++)
			out |= (t->gates[g].edges >> e & 1u) && EDGE_FROM(e) == x && EDGE_TO(e) != x;
		if (stay && (!out || !enters_later(t, g, j, x)))
			continue;
		edge_terms(b, &b->r, t, g, EDGE(x, x), 1);
		if (!stay) {
			/* no stay column: the state before the gate less its moves out, which is what
			 * edge_terms adds for a stay, must be nothing */
			row_flush(b, 0, 0);
			continue;
		}
		row_flush(b, 0, INFINITY);
	}
}

/* tensor_program -- the reduced program of a movable tensor: a column per state of each kept
 * phase (the first, the last, and those a kernel reads the tensor in: where its place prices
 * a kernel) and per move of each gate, not per stay. Between kept phases i and j the states
 * are i's and the moves since, so the phases in between (where the tensor is only carried
 * from one use to the next) and their stays cost no columns and no rows: a linear
 * substitution of the full program (tensor_columns), whose relaxation it keeps exactly */
static void tensor_program(struct build *b, const struct tmodel *t)
{
	for (int32_t i = 0; i < t->n_gates; i++) {
		const struct gate *g = &t->gates[i];
		if (is_kept(b->c, t, i))
			for (int x = 0; x < N_ST; x++)
				if (t->ph_states[i] >> x & 1u)
					b->c->st[((int64_t)t->ph_off + i) * N_ST + x] = add_col(b, true, 0, 1, 0);
		for (int e = 0; i && e < N_EDGES; e++)
			if ((g->edges >> e & 1u) && EDGE_FROM(e) != EDGE_TO(e))
				*gate_col(b->c, t, i, e) = add_col(b, true, 0, 1, g->kind == G_SYNC ?
				                                   g->cost[e] * US : 0);
	}
	int32_t home = b->c->home[t->id] = t->persistent ? add_col(b, true, 0, 1, 0) : -1;
	/* the first phase's state, or the tensor is pinned in fast memory */
	for (int x = 0; x < N_ST; x++)
		row_add(b, st_col(b->c, t, 0, x), 1);
	row_add(b, home, 1);
	row_flush(b, 1, 1);
	/* a kept phase's states are the kept phase's before it and the moves between */
	for (int32_t i = 0, j; i + 1 < t->n_gates; i = j) {
		for (j = i + 1; j + 1 < t->n_gates && !is_kept(b->c, t, j); j++)
			;
		for (int32_t g = i + 1; g <= j; g++)
			stay_rows(b, t, g, j);
		for (int x = 0; x < N_ST; x++) {
			row_add(b, st_col(b->c, t, j, x), 1);
			state_terms(b, &b->r, t, i, x, -1);
			for (int32_t g = i + 1; g <= j; g++)
				move_terms(b, &b->r, t, g, x, -1);
			row_flush(b, 0, 0);
		}
	}
}

/* separable -- node k's time is its all-fast time plus what each of its free units costs
 * slow on its own, in every configuration (to rounding): a roofline's memory-bound kernel, and
 * every node with one free unit. Its configurations then need no columns: the time is linear
 * in the units' slow states, and any slow states in [0, 1] are the marginals of some mix of
 * configurations, so the relaxation is the configuration columns' too */
static bool separable(const struct model *m, int32_t k)
{
	const struct nmodel *nm = &m->n[k];
	if (m->o.full_model || !nm->n_free || nm->n_algo > 1)
		return false;
	for (int c = 0; c < nm->n_cfg; c++) {
		double t = nm->time[0];
		for (int u = 0; u < nm->n_free; u++)
			if (c >> u & 1)
				t += nm->time[1 << u] - nm->time[0];
		if (nm->time[c] < 0 || fabs(t - nm->time[c]) > 1e-9 * nm->time[c])
			return false;
	}
	return true;
}

/* unit_terms -- sign times what node k's units cost slow over its all-fast time, each unit's
 * first member standing for it, into r */
static void unit_terms(struct build *b, struct row *r, int32_t k, double sign)
{
	const struct nmodel *nm = &b->m->n[k];
	for (int u = 0; u < nm->n_free; u++)
		state_terms(b, r, &b->m->t[nm->units[u].members[0]], nm->units[u].phase[0], ST_S,
		            sign * (nm->time[1 << u] - nm->time[0]) * US);
}

/* kernel_terms -- minus node k's kernel time into the row: over its algorithm columns, its
 * configuration columns, or (separable) its units' slow states; returns the time's constant
 * part, for the caller to put in the row's bound */
static double kernel_terms(struct build *b, int32_t k)
{
	const struct nmodel *nm = &b->m->n[k];
	const struct cols *c = b->c;
	if (c->a[k] >= 0) {
		for (int i = 0; i < nm->n_algo; i++)
			row_add(b, c->a[k] + i, -nm->algo_time[i] * US);
		return 0;
	}
	if (c->z[k] >= 0) {
		for (int i = 0; i < nm->n_cfg; i++)
			row_add(b, c->z[k] + i, -nm->time[i] * US);
		return 0;
	}
	if (c->sep[k])
		unit_terms(b, &b->r, k, -1);
	return nm->time[0] * US;
}

/* algo_rows -- a GPU kernel's algorithms: a binary each, exactly one chosen, its time the
 * kernel's (in the objective, or under y with overlapping copies) and the workspace it needs
 * beyond the smallest in the kernel's memory slot (the smallest is in the slot's fixed bytes) */
static void algo_rows(struct build *b, int32_t k, int32_t y)
{
	const struct nmodel *nm = &b->m->n[k];
	int32_t a = -1;
	for (int i = 0; i < nm->n_algo; i++) {
		int32_t j = add_col(b, true, 0, 1, nm->has_async ? 0 : nm->algo_time[i] * US);
		if (!i)
			a = j;
		int64_t extra = nm->algo_ws[i] - nm->algo_ws[nm->n_algo - 1];
		if (extra > 0 && j >= 0) {
			delta_add(b, SLOT_K(k), j, (double)extra * KIB);
			delta_add(b, SLOT_K(k) + 1, j, -(double)extra * KIB);
		}
	}
	b->c->a[k] = a;
	if (a < 0)
		return;
	for (int i = 0; i < nm->n_algo; i++)
		row_add(b, a + i, 1);
	row_flush(b, 1, 1);
	/* with a loss the row holds the copies too: async_rows writes it */
	if (nm->has_async && !opt_copies_cost(b->m)) {
		row_add(b, y, 1);
		row_flush(b, kernel_terms(b, k), INFINITY);
	}
}

/* node_rows -- node k's configuration columns, their ties to its tensors' places, and its
 * cost: the kernel time, or with overlapping copies the larger of kernel and copies */
static void node_rows(struct build *b, int32_t k)
{
	const struct model *m = b->m;
	const struct nmodel *nm = &m->n[k];
	int32_t y = -1, z = -1;
	if (nm->has_async)
		y = add_col(b, false, nm->n_free ? 0 : nm->time[0] * US, INFINITY, 1);
	if (nm->n_algo > 1) {
		algo_rows(b, k, y);
	} else if (!nm->n_free || b->c->sep[k]) {
		if (!nm->has_async) {
			b->p->obj_const += nm->time[0] * US;
			unit_terms(b, &b->e, k, 1);
			for (int32_t i = 0; i < b->e.n; i++)
				b->p->obj[b->e.ind[i]] += b->e.val[i];
			b->e.n = 0;
		}
		/* a unit's members share its place */
		for (int u = 0; u < nm->n_free; u++)
			for (int j = 1; j < nm->units[u].n_members; j++) {
				slow_expr(b, &m->t[nm->units[u].members[j]], nm->units[u].phase[j], 1);
				slow_expr(b, &m->t[nm->units[u].members[0]], nm->units[u].phase[0], -1);
				row_flush(b, 0, 0);
			}
		if (nm->has_async && nm->n_free && !opt_copies_cost(m)) {
			row_add(b, y, 1);
			row_flush(b, kernel_terms(b, k), INFINITY);
		}
	} else {
		for (int c = 0; c < nm->n_cfg; c++) {
			int32_t j = add_col(b, false, 0, 1, nm->has_async ? 0 : nm->time[c] * US);
			if (!c)
				z = b->c->z[k] = j;
		}
		for (int c = 0; c < nm->n_cfg; c++)
			row_add(b, z + c, 1);
		row_flush(b, 1, 1);
		for (int u = 0; u < nm->n_free; u++)
			for (int j = 0; j < nm->units[u].n_members; j++) {
				for (int c = 0; c < nm->n_cfg; c++)
					if (c >> u & 1)
						row_add(b, z + c, 1);
				slow_expr(b, &m->t[nm->units[u].members[j]], nm->units[u].phase[j], -1);
				row_flush(b, 0, 0);
			}
		/* with a loss the row holds the copies too: async_rows writes it */
		if (nm->has_async && !opt_copies_cost(m)) {
			row_add(b, y, 1);
			row_flush(b, kernel_terms(b, k), INFINITY);
		}
	}
	b->c->y[k] = y;
	b->c->z[k] = z;
	for (int j = 0; j < nm->n_forced; j++) {
		const struct forced *fc = &nm->forced[j];
		slow_expr(b, &m->t[fc->tensor], fc->phase, 1);
		row_flush(b, fc->slow, fc->slow);
	}
}

/* An asynchronous gate: tensor x's gate i. */
struct gate_ref {
	int32_t x, i;
};

/* copy_terms -- minus the copies of gates refs[lo..hi) into the row, each times the scale of
 * its direction (scale[0] to fast memory, scale[1] to slow) */
static void copy_terms(struct build *b, const struct gate_ref *refs, int32_t lo, int32_t hi,
                       const double scale[2])
{
	for (int32_t r = lo; r < hi; r++) {
		const struct tmodel *t = &b->m->t[refs[r].x];
		const struct gate *g = &t->gates[refs[r].i];
		for (int e = 0; e < N_EDGES; e++)
			if ((g->edges >> e & 1u) && g->cost[e] > 0)
				row_add(b, *gate_col(b->c, t, refs[r].i, e),
				        -scale[EDGE_TO(e) == ST_S] * g->cost[e] * US);
	}
}

/* async_rows -- the copies overlapping each node, stretched as they run beside its kernel,
 * bound its cost from below; with a loss, so do the kernel and that share of the copies */
static void async_rows(struct build *b)
{
	const struct model *m = b->m;
	/* gates by node: one pass over the tensors per node would be quadratic */
	int32_t *cnt = calloc((size_t)m->n_nodes + 1, sizeof *cnt);
	if (!cnt) {
		b->failed = true;
		return;
	}
	for (int32_t x = 0; x < m->n_tensors; x++)
		for (int32_t i = 1; i < m->t[x].n_gates; i++)
			if (m->t[x].gates[i].kind == G_ASYNC)
				cnt[m->t[x].gates[i].at + 1]++;
	for (int32_t k = 0; k < m->n_nodes; k++)
		cnt[k + 1] += cnt[k];
	struct gate_ref *refs = malloc((size_t)(cnt[m->n_nodes] + 1) * sizeof *refs);
	int32_t *fill = malloc(((size_t)m->n_nodes + 1) * sizeof *fill);
	if (!refs || !fill) {
		free(cnt);
		free(refs);
		free(fill);
		b->failed = true;
		return;
	}
	memcpy(fill, cnt, ((size_t)m->n_nodes + 1) * sizeof *fill);
	for (int32_t x = 0; x < m->n_tensors; x++)
		for (int32_t i = 1; i < m->t[x].n_gates; i++)
			if (m->t[x].gates[i].kind == G_ASYNC)
				refs[fill[m->t[x].gates[i].at]++] = (struct gate_ref){x, i};
	for (int32_t k = 0; k < m->n_nodes; k++) {
		if (!m->n[k].has_async)
			continue;
		row_add(b, b->c->y[k], 1);
		copy_terms(b, refs, cnt[k], cnt[k + 1], m->copy_stretch);
		row_flush(b, 0, INFINITY);
		if (!opt_copies_cost(m))
			continue;
		row_add(b, b->c->y[k], 1);
		double t0 = kernel_terms(b, k);
		copy_terms(b, refs, cnt[k], cnt[k + 1], m->kernel_loss);
		row_flush(b, t0, INFINITY);
	}
	free(cnt);
	free(refs);
	free(fill);
}

/* memory_rows -- m_s = m_(s-1) + what enters fast memory at s - what leaves, m_s within the
 * slot's room; a running sum keeps each tensor's column in two rows, not in every slot */
static void memory_rows(struct build *b)
{
	const struct model *m = b->m;
	int32_t m0 = -1;
	for (int32_t s = 0; s < m->n_slots; s++) {
		double ub = m->limit[s] == INT64_MAX ? INFINITY : (double)(m->limit[s] - m->fixed[s]) * KIB;
		int32_t j = add_col(b, false, 0, ub > 0 ? ub : 0, 0);
		if (!s)
			m0 = j;
	}
	b->c->m0 = m0;
	if (b->failed)
		return;
	qsort(b->d, (size_t)b->n_d, sizeof *b->d, delta_cmp);
	int64_t i = 0;
	for (int32_t s = 0; s < m->n_slots; s++) {
		row_add(b, m0 + s, 1);
		if (s)
			row_add(b, m0 + s - 1, -1);
		for (; i < b->n_d && b->d[i].slot == s; i++)
			row_add(b, b->d[i].col, -b->d[i].v);
		row_flush(b, 0, 0);
	}
}

/* rc_slow -- sign times "operand x of candidate rc's kernel, in phase ph at K(u), is slow"
 * into r (nothing when x is fixed fast or is the tensor made again, ph -1) */
static void rc_slow(struct build *b, struct row *r, int32_t x, int32_t ph, double sign)
{
	if (ph >= 0 && b->m->t[x].cls == TC_MOVABLE)
		state_terms(b, r, &b->m->t[x], ph, ST_S, sign);
}

/* recompute_cfg_rows -- where recomputation i (column r) is not priced alone: its kernel's
 * configuration columns y_c, one chosen when r is (sum y_c = r), each unit u slow in the
 * chosen one exactly when w_u (columns from w0) is */
static void recompute_cfg_rows(struct build *b, int32_t i, int32_t r, int32_t w0)
{
	const struct model *m = b->m;
	const struct rcand *rc = &m->rc[i];
	const struct nmodel *nm = &m->n[rc->k];
	int32_t y0 = -1;
	for (int c = 0; c < nm->n_cfg; c++) {
		bool allowed = rc->t_unit < 0 || !(c >> rc->t_unit & 1);
		int32_t y = add_col(b, false, 0, allowed ? 1 : 0, allowed ? nm->time[c] * US : 0);
		if (!c)
			y0 = y;
	}
	b->c->ry[i] = y0;
	for (int c = 0; c < nm->n_cfg; c++)
		row_add(b, y0 + c, 1);
	row_add(b, r, -1);
	row_flush(b, 0, 0);
	for (int u = 0; u < nm->n_free; u++) {
		if (u == rc->t_unit)
			continue;
		for (int c = 0; c < nm->n_cfg; c++)
			if (c >> u & 1)
				row_add(b, y0 + c, 1);
		row_add(b, w0 + u, -1);
		row_flush(b, 0, 0);
	}
}

/* recompute_rows -- candidate i: its column r, with r at most the tensor's fast state (no
 * valid slow copy) at d and its stay in that state at every gate to u; the memory it gives
 * back from M(d) to M(u - 1); its kernel's price in the configuration of its operands at K(u):
 * the all-fast time plus each slow unit's cost alone (separable), or configuration columns
 * that sum to r and whose unit marginals are r * slow, linearised; the operands' places at u
 * must be a profiled configuration with the tensor fast */
static void recompute_rows(struct build *b, int32_t i)
{
	const struct model *m = b->m;
	const struct rcand *rc = &m->rc[i];
	const struct tmodel *t = &m->t[rc->t];
	const struct nmodel *nm = &m->n[rc->k];
	bool priced_alone = rc->n_links || nm->n_algo > 1 || m->o.device_only || !nm->n_free ||
	                    b->c->sep[rc->k];
	double base = rc->n_links ? rc->chain_s
	              : nm->n_algo > 1 || m->o.device_only ? rc->max_algo_s : nm->time[0];
	int32_t r = b->c->r[i] = add_col(b, true, 0, 1, priced_alone ? base * US : 0);
	if (r < 0)
		return;
	state_terms(b, &b->r, t, rc->pd, ST_F, 1);
	row_add(b, r, -1);
	row_flush(b, 0, INFINITY);
	for (int32_t g = rc->pd + 1; g <= rc->pu; g++) {
		edge_terms(b, &b->r, t, g, EDGE(ST_F, ST_F), 1);
		row_add(b, r, -1);
		row_flush(b, 0, INFINITY);
	}
	presence(b, t, r, SLOT_M(rc->d), SLOT_M(rc->u - 1), -1);
	if (rc->scratch) {
		delta_add(b, SLOT_K(rc->u), r, (double)rc->scratch * KIB);
		delta_add(b, SLOT_K(rc->u) + 1, r, -(double)rc->scratch * KIB);
	}
	/* no operand's overlapped copy starts beside u: each move there excludes r */
	for (int32_t j = 0; j < rc->n_ops; j++) {
		const struct tmodel *x = &m->t[rc->ops[j]];
		int32_t g = x->cls == TC_MOVABLE ? opt_recompute_async_gate(rc, x) : -1;
		for (int e = 0; g >= 0 && e < N_EDGES; e++)
			if ((x->gates[g].edges >> e & 1u) && EDGE_FROM(e) != EDGE_TO(e)) {
				row_add(b, r, 1);
				edge_terms(b, &b->r, x, g, e, 1);
				row_flush(b, -INFINITY, 1);
			}
	}
	/* a chain's movable operands are fast at u: r + slow <= 1 */
	for (int32_t j = 0; j < rc->n_roots; j++) {
		row_add(b, r, 1);
		rc_slow(b, &b->r, rc->root[j], rc->root_ph[j], 1);
		row_flush(b, -INFINITY, 1);
	}
	if (rc->n_links)
		return; /* priced all fast: chain_s */
	/* places the kernel's groups force: r + slow <= 1 (fast) or r - slow <= 0 (slow) */
	for (int j = 0; j < nm->n_forced; j++) {
		if (rc->fph[j] < 0 || m->t[nm->forced[j].tensor].cls != TC_MOVABLE)
			continue;
		row_add(b, r, 1);
		rc_slow(b, &b->r, nm->forced[j].tensor, rc->fph[j], nm->forced[j].slow ? -1 : 1);
		row_flush(b, -INFINITY, nm->forced[j].slow ? 0 : 1);
	}
	if (nm->n_algo > 1 || m->o.device_only)
		return;
	/* a unit's members agree while r is chosen, and the tensor's unit is fast */
	int32_t *first = malloc(((size_t)nm->n_free + 1) * sizeof *first);
	if (!first) {
		b->failed = true;
		return;
	}
	for (int u = 0, n = 0; u < nm->n_free; u++) {
		const struct unit *un = &nm->units[u];
		first[u] = n;
		for (int j = 1; j < un->n_members; j++)
			for (double sg = -1; sg <= 1; sg += 2) {
				row_add(b, r, 1);
				rc_slow(b, &b->r, un->members[j], rc->uph[n + j], sg);
				rc_slow(b, &b->r, un->members[0], rc->uph[n], -sg);
				row_flush(b, -INFINITY, 1);
			}
		if (u == rc->t_unit)
			for (int j = 0; j < un->n_members; j++) {
				row_add(b, r, 1);
				rc_slow(b, &b->r, un->members[j], rc->uph[n + j], 1);
				row_flush(b, -INFINITY, 1);
			}
		n += un->n_members;
	}
	/* w_u = r * slow_u: at most each, at least their sum less one */
	int32_t w0 = -1;
	for (int u = 0; u < nm->n_free; u++) {
		const struct unit *un = &nm->units[u];
		double cost = priced_alone ? (nm->time[1 << u] - nm->time[0]) * US : 0;
		int32_t w = add_col(b, false, 0, u == rc->t_unit ? 0 : 1, cost);
		if (!u)
			w0 = w;
		if (w < 0 || u == rc->t_unit)
			continue;
		row_add(b, w, 1);
		row_add(b, r, -1);
		rc_slow(b, &b->r, un->members[0], rc->uph[first[u]], -1);
		row_flush(b, -1, INFINITY);
		if (priced_alone)
			continue; /* its cost keeps it at that least */
		row_add(b, w, 1);
		row_add(b, r, -1);
		row_flush(b, -INFINITY, 0);
		row_add(b, w, 1);
		rc_slow(b, &b->r, un->members[0], rc->uph[first[u]], -1);
		row_flush(b, -INFINITY, 0);
	}
	b->c->rw[i] = w0;
	free(first);
	if (priced_alone)
		return;
	recompute_cfg_rows(b, i, r, w0);
}

/* mark_kept -- the phases of the reduced program with columns of their own: each tensor's
 * first and last, and every phase in which a kernel's configuration or a forced place reads
 * its state (node_rows) */
static void mark_kept(const struct model *m, struct cols *c)
{
	for (int32_t x = 0; x < m->n_tensors; x++) {
		const struct tmodel *t = &m->t[x];
		if (t->cls == TC_MOVABLE && t->n_gates) {
			c->kept[t->ph_off] = 1;
			c->kept[t->ph_off + t->n_gates - 1] = 1;
		}
	}
	for (int32_t k = 0; k < m->n_nodes; k++) {
		const struct nmodel *nm = &m->n[k];
		for (int u = 0; u < nm->n_free; u++)
			for (int j = 0; j < nm->units[u].n_members; j++)
				if (nm->units[u].phase[j] >= 0)
					c->kept[m->t[nm->units[u].members[j]].ph_off + nm->units[u].phase[j]] = 1;
		for (int j = 0; j < nm->n_forced; j++)
			if (nm->forced[j].phase >= 0)
				c->kept[m->t[nm->forced[j].tensor].ph_off + nm->forced[j].phase] = 1;
	}
	/* and where a recomputation reads its operands' places */
	for (int32_t i = 0; i < m->n_rc; i++) {
		const struct rcand *rc = &m->rc[i];
		const struct nmodel *nm = &m->n[rc->k];
		for (int32_t j = 0; j < rc->n_roots; j++)
			c->kept[m->t[rc->root[j]].ph_off + rc->root_ph[j]] = 1;
		if (rc->n_links)
			continue;
		for (int u = 0, n = 0; u < nm->n_free; u++)
			for (int j = 0; j < nm->units[u].n_members; j++, n++)
				if (rc->uph[n] >= 0)
					c->kept[m->t[nm->units[u].members[j]].ph_off + rc->uph[n]] = 1;
		for (int j = 0; j < nm->n_forced; j++)
			if (rc->fph[j] >= 0)
				c->kept[m->t[nm->forced[j].tensor].ph_off + rc->fph[j]] = 1;
	}
}

/* cols_new -- an empty column map of m (reduced: of the reduced program); cols_free releases it */
static bool cols_new(const struct model *m, struct cols *c, bool reduced)
{
	size_t np = (size_t)m->n_phases + 1;
	memset(c, 0, sizeof *c);
	c->reduced = reduced;
	c->gate = malloc(np * N_EDGES * sizeof *c->gate);
	c->st = reduced ? malloc(np * N_ST * sizeof *c->st) : NULL;
	c->kept = reduced ? calloc(np, 1) : NULL;
	c->home = malloc(((size_t)m->n_tensors + 1) * sizeof *c->home);
	c->z = malloc(((size_t)m->n_nodes + 1) * sizeof *c->z);
	c->y = malloc(((size_t)m->n_nodes + 1) * sizeof *c->y);
	c->a = malloc(((size_t)m->n_nodes + 1) * sizeof *c->a);
	c->sep = malloc(((size_t)m->n_nodes + 1) * sizeof *c->sep);
	c->r = malloc(((size_t)m->n_rc + 1) * sizeof *c->r);
	c->rw = malloc(((size_t)m->n_rc + 1) * sizeof *c->rw);
	c->ry = malloc(((size_t)m->n_rc + 1) * sizeof *c->ry);
	c->m0 = -1;
	if (!c->gate || !c->home || !c->z || !c->y || !c->a || !c->sep ||
	    (reduced && (!c->st || !c->kept)) || !c->r || !c->rw || !c->ry)
		return false;
	for (int32_t i = 0; i < m->n_rc; i++)
		c->r[i] = c->rw[i] = c->ry[i] = -1;
	for (int32_t k = 0; k < m->n_nodes; k++)
		c->sep[k] = separable(m, k);
	memset(c->gate, 0xff, np * N_EDGES * sizeof *c->gate);
	if (reduced) {
		memset(c->st, 0xff, np * N_ST * sizeof *c->st);
		mark_kept(m, c);
	}
	memset(c->home, 0xff, ((size_t)m->n_tensors + 1) * sizeof *c->home);
	memset(c->z, 0xff, ((size_t)m->n_nodes + 1) * sizeof *c->z);
	memset(c->y, 0xff, ((size_t)m->n_nodes + 1) * sizeof *c->y);
	memset(c->a, 0xff, ((size_t)m->n_nodes + 1) * sizeof *c->a);
	return true;
}

static void cols_free(struct cols *c)
{
	free(c->gate);
	free(c->st);
	free(c->kept);
	free(c->home);
	free(c->z);
	free(c->y);
	free(c->a);
	free(c->sep);
	free(c->r);
	free(c->rw);
	free(c->ry);
}

/* build -- the program of the model: columns of every movable tensor, rows of every node, the
 * asynchronous moves and, under a limit, the memory slots */
static atm_status build(const struct model *m, struct milp *p, struct cols *c)
{
	struct build b = {.m = m, .p = p, .c = c};
	milp_init(p);
	b.failed = p->failed || !cols_new(m, c, !m->o.full_model);
	for (int32_t x = 0; !b.failed && x < m->n_tensors; x++) {
		if (m->t[x].cls != TC_MOVABLE)
			continue;
		if (c->reduced)
			tensor_program(&b, &m->t[x]);
		else
			tensor_columns(&b, &m->t[x]);
		tensor_presence(&b, &m->t[x]);
	}
	for (int32_t k = 0; k < m->n_nodes; k++)
		node_rows(&b, k);
	for (int32_t i = 0; i < m->n_rc; i++)
		recompute_rows(&b, i);
	for (int32_t e = 0; e < m->n_excl; e++) {
		row_add(&b, c->r[m->excl[e][0]], 1);
		row_add(&b, c->r[m->excl[e][1]], 1);
		row_flush(&b, -INFINITY, 1);
	}
	async_rows(&b);
	bool limited = false;
	for (int32_t sl = 0; sl < m->n_slots; sl++)
		limited |= m->limit[sl] != INT64_MAX;
	if (limited)
		memory_rows(&b);
	free(b.r.ind);
	free(b.r.val);
	free(b.e.ind);
	free(b.e.val);
	free(b.d);
	if (b.failed || p->failed)
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	return ATM_OK;
}

/* ---------------------------------------------------------------- the seed */

/* recompute_vector -- the columns of chosen candidate i under s: its choice, its kernel's slow
 * units and its configuration */
static void recompute_vector(const struct model *m, const struct cols *c, const struct solution *s,
                             int32_t i, double *x)
{
	const struct rcand *rc = &m->rc[i];
	const struct nmodel *nm = &m->n[rc->k];
	x[c->r[i]] = 1;
	if (c->rw[i] < 0)
		return;
	int cfg = 0;
	for (int u = 0, n = 0; u < nm->n_free; n += nm->units[u].n_members, u++) {
		int32_t x0 = nm->units[u].members[0], ph = rc->uph[n];
		bool slow = ph >= 0 && !s->pinned[x0] && s->st[m->t[x0].ph_off + ph] == ST_S;
		x[c->rw[i] + u] = slow;
		cfg |= slow << u;
	}
	if (c->ry[i] >= 0)
		x[c->ry[i] + cfg] = 1;
}

/* placement_vector -- the column values of placement s */
static double *placement_vector(const struct model *m, const struct cols *c, const struct milp *p,
                                const struct solution *s)
{
	double *x = calloc((size_t)p->n_cols + 1, sizeof *x);
	double *xfer = calloc(2 * ((size_t)m->n_nodes + 1), sizeof *xfer); /* opt_copy_cost's */
	int64_t *bytes = malloc((size_t)m->n_slots * sizeof *bytes);
	if (!x || !xfer || !bytes) {
		free(x);
		free(xfer);
		free(bytes);
		return NULL;
	}
	for (int32_t id = 0; id < m->n_tensors; id++) {
		const struct tmodel *t = &m->t[id];
		if (t->cls != TC_MOVABLE)
			continue;
		if (c->home[id] >= 0)
			x[c->home[id]] = s->pinned[id];
		if (s->pinned[id])
			continue;
		for (int32_t i = 0; i < t->n_gates; i++) {
			uint8_t to = s->st[t->ph_off + i], from = i ? s->st[t->ph_off + i - 1] : ST_S;
			const struct gate *g = &t->gates[i];
			int32_t col = *gate_col(c, t, i, EDGE(from, to));
			if (col >= 0)
				x[col] = 1;
			if (c->reduced && is_kept(c, t, i))
				x[st_col(c, t, i, to)] = 1;
			if (g->kind == G_ASYNC)
				opt_copy_cost(m, EDGE(from, to), g->cost[EDGE(from, to)], 1, &xfer[2 * g->at],
				              &xfer[2 * g->at + 1]);
		}
	}
	for (int32_t k = 0; k < m->n_nodes; k++) {
		int cfg = opt_node_config(m, s, k);
		if (cfg < 0)
			cfg = 0;
		double kt = opt_node_time(m, s, k, cfg);
		if (c->z[k] >= 0)
			x[c->z[k] + cfg] = 1;
		if (c->a[k] >= 0)
			x[c->a[k] + s->algo[k]] = 1;
		if (c->y[k] >= 0)
			x[c->y[k]] = opt_overlapped(kt, xfer[2 * k], xfer[2 * k + 1]) * US;
	}
	for (int32_t i = 0; i < m->n_rc; i++)
		if (c->r[i] >= 0 && s->rc[i])
			recompute_vector(m, c, s, i, x);
	if (c->m0 >= 0) {
		opt_solution_bytes(m, s, bytes);
		for (int32_t sl = 0; sl < m->n_slots; sl++)
			x[c->m0 + sl] = (double)(bytes[sl] - m->fixed[sl]) * KIB;
	}
	free(xfer);
	free(bytes);
	return x;
}

/* full_edge -- the edge of gate i of t that x takes from the state s has t in before it
 * (-1: none, or one from another state) */
static int full_edge(const struct cols *c, const struct tmodel *t, int32_t i, const double *x,
                     const struct solution *s)
{
	uint8_t from = i ? s->st[t->ph_off + i - 1] : ST_S;
	int taken = -1;
	for (int e = 0; e < N_EDGES; e++)
		if ((t->gates[i].edges >> e & 1u) && x[*gate_col(c, t, i, e)] > 0.5)
			taken = e;
	return taken >= 0 && EDGE_FROM(taken) == from ? taken : -1;
}

/* reduced_edge -- the same in the reduced program: the first phase's state, a move out of the
 * state before, or else the stay; a kept phase's column must agree */
static int reduced_edge(const struct cols *c, const struct tmodel *t, int32_t i, const double *x,
                        const struct solution *s)
{
	const struct gate *g = &t->gates[i];
	int taken = -1;
	if (!i) {
		for (int st = 0; st < N_ST; st++)
			if (st_col(c, t, 0, st) >= 0 && x[st_col(c, t, 0, st)] > 0.5)
				taken = EDGE(ST_S, st);
		return taken;
	}
	uint8_t from = s->st[t->ph_off + i - 1];
	for (int e = 0; e < N_EDGES; e++)
		if ((g->edges >> e & 1u) && EDGE_FROM(e) != EDGE_TO(e) && x[*gate_col(c, t, i, e)] > 0.5) {
			if (EDGE_FROM(e) != from || taken >= 0)
				return -1;
			taken = e;
		}
	if (taken < 0 && (g->edges >> EDGE(from, from) & 1u))
		taken = EDGE(from, from);
	if (taken >= 0 && is_kept(c, t, i) &&
	    !(st_col(c, t, i, EDGE_TO(taken)) >= 0 && x[st_col(c, t, i, EDGE_TO(taken))] > 0.5))
		return -1;
	return taken;
}

/* decode -- the placement columns x describe */
static atm_status decode(const struct model *m, const struct cols *c, const double *x,
                         struct solution *s)
{
	for (int32_t id = 0; id < m->n_tensors; id++) {
		const struct tmodel *t = &m->t[id];
		if (t->cls != TC_MOVABLE)
			continue;
		s->pinned[id] = c->home[id] >= 0 && x[c->home[id]] > 0.5;
		if (s->pinned[id])
			continue;
		for (int32_t i = 0; i < t->n_gates; i++) {
			int taken = c->reduced ? reduced_edge(c, t, i, x, s) : full_edge(c, t, i, x, s);
			if (taken < 0)
				return atm_err(ATM_E_INTERNAL, "the solver's solution breaks the flow of tensor "
				               "'%s' at gate %d", atm_graph_tensor(m->g, id)->name, i);
			s->st[t->ph_off + i] = (uint8_t)EDGE_TO(taken);
		}
	}
	for (int32_t k = 0; k < m->n_nodes; k++) {
		if (c->a[k] < 0)
			continue;
		int taken = -1;
		for (int i = 0; i < m->n[k].n_algo; i++)
			if (x[c->a[k] + i] > 0.5)
				taken = i;
		if (taken < 0)
			return atm_err(ATM_E_INTERNAL, "the solver's solution chooses no algorithm for node "
			               "'%s'", atm_graph_node(m->g, k)->name);
		s->algo[k] = (uint8_t)taken;
	}
	for (int32_t i = 0; i < m->n_rc; i++)
		s->rc[i] = c->r[i] >= 0 && x[c->r[i]] > 0.5;
	return ATM_OK;
}

/* floor_s -- a bound no plan of m beats: every kernel in its fastest configuration and no
 * copy paid. When the seed is already within the gap of it there is nothing to solve, and when
 * the solver proves nothing better it still bounds the final gap */
static double floor_s(const struct model *m)
{
	double v = 0;
	for (int32_t k = 0; k < m->n_nodes; k++) {
		const struct nmodel *nm = &m->n[k];
		double best = nm->time[0];
		for (int c = 1; c < (nm->n_free ? nm->n_cfg : 1); c++)
			if (nm->time[c] >= 0 && nm->time[c] < best)
				best = nm->time[c];
		v += best > 0 ? best : 0;
	}
	return v;
}

/* ---------------------------------------------------------------- solving */

static const char *const status_text[] = {
	[ILP_OPTIMAL] = "optimal",
	[ILP_WITHIN_GAP] = "within gap",
	[ILP_TIME_LIMIT] = "time-limit",
	[ILP_STOPPED] = "stopped",
	[ILP_HEURISTIC] = "heuristic",
	[ILP_HEUR_LP_TIME] = "heuristic (lp time)",
	[ILP_HEUR_LP_FAILED] = "heuristic (lp failed)",
	[ILP_HEUR_FAILED] = "heuristic (solver failed)",
	[ILP_HEUR_TIME_LIMIT] = "heuristic (time limit)",
	[ILP_HEUR_NO_SOLUTION] = "heuristic (no solution)",
};

const char *opt_ilp_status_text(enum ilp_status s)
{
	return s >= 0 && s < ILP_N_STATUS ? status_text[s] : "unknown";
}

/* set_proved -- the seed is proved within the gap (optimal at 0): r's gap and status */
static void set_proved(struct ilp_result *r, double gap)
{
	r->gap = gap > 0 ? gap : 0;
	r->st = r->gap > 0 ? ILP_WITHIN_GAP : ILP_OPTIMAL;
}

/* One solve: the program of a model, where its choices are, and the seed. */
struct solve {
	const struct model *m;
	const struct milp_solver *solver;
	struct milp p;
	struct cols c;
	double *seed;       /* the heuristic's placement as columns */
	double seed_obj;    /* and its cost */
	double t_start;     /* the plan's start: the time limit counts from there */
	struct ilp_result *r;
};

/* adopt -- the solver's solution x replaces s when it is no worse (it is decoded and priced by
 * the model, not by the solver's say) */
static atm_status adopt(struct solve *v, const struct milp_out *out, struct solution *s,
                        double *obj)
{
	const struct model *m = v->m;
	struct solution got = {0};
	atm_status rc;
	if ((rc = opt_solution_new(m, &got)) < 0 || (rc = decode(m, &v->c, out->x, &got)) < 0) {
		opt_solution_free(&got);
		return rc;
	}
	*obj = opt_solution_cost(m, &got);
	if (*obj <= v->seed_obj + 1e-12 * (1 + v->seed_obj)) {
		opt_solution_copy(m, s, &got);
		v->r->improved = *obj < v->seed_obj - 1e-12 * (1 + v->seed_obj);
	}
	opt_solution_free(&got);
	return ATM_OK;
}

/* outcome -- the round's status, bound and gap from what the solver reported */
static atm_status outcome(struct solve *v, struct milp_out *out, struct solution *s)
{
	const struct model *m = v->m;
	struct ilp_result *r = v->r;
	atm_status rc;
	if (out->bound > -1e300 && out->bound / US > r->bound_s)
		r->bound_s = out->bound / US;
	switch (out->status) {
	case MILP_LP_TIME:
		r->st = ILP_HEUR_LP_TIME;
		return ATM_OK;
	case MILP_LP_FAILED:
		r->st = ILP_HEUR_LP_FAILED;
		return ATM_OK;
	case MILP_FAILED:
		r->st = ILP_HEUR_FAILED;
		return ATM_OK;
	case MILP_INFEASIBLE:
		if (m->o.no_seed) {
			r->st = ILP_HEUR_NO_SOLUTION;
			return ATM_OK;
		}
		/* search checked that the seed satisfies every row and bound: the solver is wrong,
		 * and the seed stands (CBC does this on objectives near 1e12, every kernel priced
		 * at the profile's largest time, after finding a solution it then drops) */
		if (m->o.verbosity)
			fprintf(stderr, "optimizer: %s called the model infeasible, but its start "
			        "satisfies every row and bound: the start stands\n", v->solver->name);
		r->st = ILP_HEUR_FAILED;
		return ATM_OK;
	case MILP_NO_SOLUTION:
		r->st = ILP_HEUR_TIME_LIMIT;
		return ATM_OK;
	default:
		break;
	}
	if (!out->has_x) {
		/* proved within the gap with the start as its solution */
		if (out->status == MILP_OPTIMAL || out->status == MILP_WITHIN_GAP)
			set_proved(r, out->gap >= 0 ? out->gap : r->bound_s > 0 ?
			              (v->seed_obj - r->bound_s) / v->seed_obj : 0);
		else
			r->st = ILP_HEURISTIC;
		return ATM_OK;
	}
	double obj;
	if ((rc = adopt(v, out, s, &obj)) < 0)
		return rc;
	r->gap = out->gap;
	r->st = out->status == MILP_OPTIMAL ? ILP_OPTIMAL : out->status == MILP_WITHIN_GAP ?
	        ILP_WITHIN_GAP : out->status == MILP_TIME_LIMIT ? ILP_TIME_LIMIT : ILP_STOPPED;
	if (r->st == ILP_OPTIMAL)
		r->gap = 0;
	if (r->st == ILP_WITHIN_GAP && (r->gap < 0 || r->gap > m->o.mip_gap))
		r->gap = m->o.mip_gap; /* stopping on the gap means it was within the tolerance then */
	if (r->st == ILP_OPTIMAL || r->st == ILP_WITHIN_GAP)
		r->bound_s = fmax(r->bound_s, obj * (1 - (r->gap > 0 ? r->gap : 0)));
	if (r->gap < 0 && r->bound_s > 0)
		r->gap = (obj - r->bound_s) / (obj > 0 ? obj : 1);
	return ATM_OK;
}

/* A solver that fails with at least this many seconds left hands the round to GLPK. */
#define GLPK_AFTER_FAILURE_S 1.0

/* search -- from the seed to the solve's result: nothing to do, the seed proved within the gap
 * of the kernels' floor, or the solver's search */
static atm_status search(struct solve *v, struct solution *s)
{
	const struct model *m = v->m;
	struct ilp_result *r = v->r;
	atm_status rc;
	if (!(v->seed = placement_vector(m, &v->c, &v->p, s)))
		return atm_err(ATM_E_NOMEM, "out of memory seeding the solver");
	if ((rc = milp_check(&v->p, v->seed, "the heuristic placement")) < 0)
		return rc;
	v->seed_obj = opt_solution_cost(m, s);
	r->st = ILP_HEURISTIC;
	if (!r->n_columns) {
		/* nothing to place: the only placement is optimal */
		set_proved(r, 0);
		return ATM_OK;
	}
	r->bound_s = floor_s(m);
	if (!m->o.no_seed && v->seed_obj - r->bound_s <= m->o.mip_gap * v->seed_obj) {
		/* the seed is as fast as the kernels allow, to within the gap */
		set_proved(r, v->seed_obj > r->bound_s ? (v->seed_obj - r->bound_s) / v->seed_obj : 0);
		return ATM_OK;
	}
	/* solvers check their clock between steps and may run past it by one; keep some of the
	 * budget back for that, for polishing, and for the defragmentation rounds that may follow
	 * (each builds, repairs and lays out the plan again) */
	double reserve = m->o.time_limit_s * 0.15 < 10 ? m->o.time_limit_s * 0.15 : 10;
	double left = m->o.time_limit_s - reserve - (atm_now_s() - v->t_start);
	struct milp_params par = {
		.deadline = atm_now_s() + (left > 0.05 ? left : 0.05),
		.gap = m->o.mip_gap,
		.start = m->o.no_seed ? NULL : v->seed,
		.presolve = m->o.no_seed,
		.threads = m->o.threads,
		.verbosity = m->o.verbosity,
		.stop = m->o.stop,
	};
	struct milp_out out = {.bound = -INFINITY, .gap = -1, .root_s = -1};
	if (!(out.x = calloc((size_t)v->p.n_cols + 1, sizeof *out.x)))
		return atm_err(ATM_E_NOMEM, "out of memory solving the model");
	if (m->o.verbosity)
		fprintf(stderr, "optimizer: model %d columns (%d binary), %d rows, %lld nonzeros built "
		        "in %.2f s; solving with %s\n", r->n_columns, r->n_binaries, r->n_rows,
		        (long long)r->n_nonzeros, r->creation_s, v->solver->name);
	if ((rc = v->solver->solve(&v->p, &par, &out)) == ATM_OK && out.status == MILP_FAILED &&
	    v->solver != &milp_glpk && par.deadline - atm_now_s() > GLPK_AFTER_FAILURE_S) {
		/* CBC 2.10 crashes in Clp's presolve on some models (gpt2's asynchronous AdamW
		 * program at 8:1, after its search had improved the start): GLPK solves the round in
		 * the time left rather than the heuristic's plan standing */
		if (m->o.verbosity)
			fprintf(stderr, "optimizer: %s failed; GLPK solves the round in the %.1f s left\n",
			        v->solver->name, par.deadline - atm_now_s());
		out = (struct milp_out){.x = out.x, .bound = -INFINITY, .gap = -1, .root_s = -1};
		r->glpk_after_failure = true;
		rc = milp_glpk.solve(&v->p, &par, &out);
	}
	if (rc == ATM_OK)
		rc = outcome(v, &out, s);
	free(out.x);
	return rc;
}

/* price -- the round's plan, polished, priced by the program's rows and objective: it must
 * satisfy every row (the memory rows among them) and its objective is the one the checker
 * recomputes from the profile */
static atm_status price(struct solve *v, struct solution *s)
{
	struct ilp_result *r = v->r;
	atm_status rc = opt_polish(v->m, s);
	if (rc == ATM_OK && r->gap < 0 && r->bound_s > 0) {
		/* the solver proved nothing of its own: the gap to the best bound known */
		double fin = opt_solution_cost(v->m, s);
		r->gap = fin > r->bound_s ? (fin - r->bound_s) / fin : 0;
	}
	if (rc == ATM_OK && r->n_columns) {
		double *x = placement_vector(v->m, &v->c, &v->p, s);
		if (!x)
			rc = atm_err(ATM_E_NOMEM, "out of memory pricing the plan");
		else if ((rc = milp_check(&v->p, x, "the final placement")) == ATM_OK)
			r->ilp_objective_s = milp_objective(&v->p, x) / US;
		free(x);
	}
	return rc;
}

atm_status opt_ilp_solve(const struct model *m, struct solution *s, double t_start,
                         struct ilp_result *r)
{
	struct solve v = {.m = m, .t_start = t_start, .r = r};
	double t0 = atm_now_s();
	atm_opt_solver which;
	atm_status rc;
	memset(r, 0, sizeof *r);
	r->gap = -1;
	r->bound_s = -1;
	r->ilp_objective_s = -1;
	if ((rc = atm_opt_solver_resolve(m->o.solver, &which)) < 0)
		return rc;
	v.solver = milp_solver_of(which);
	snprintf(r->solver, sizeof r->solver, "%s", v.solver->name);
	if ((rc = build(m, &v.p, &v.c)) == ATM_OK) {
		r->n_columns = v.p.n_cols;
		r->n_rows = v.p.n_rows;
		r->n_binaries = v.p.n_bin;
		r->n_nonzeros = v.p.n_nz;
		if (m->o.write_model)
			rc = milp_write(&v.p, m->o.write_model);
	}
	if (rc == ATM_OK) {
		r->creation_s = atm_now_s() - t0;
		t0 = atm_now_s();
		if ((rc = search(&v, s)) == ATM_OK)
			rc = price(&v, s);
		r->solve_s = atm_now_s() - t0;
	}
	free(v.seed);
	milp_free(&v.p);
	cols_free(&v.c);
	return rc;
}
