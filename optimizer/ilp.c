/* ilp.c -- the placement model as a GLPK mixed-integer program: columns, rows, seeded branch and cut */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glpk.h>

#include "opt_internal.h"

/* Objective in microseconds and memory in KiB keep the coefficients within a few orders of
 * magnitude of 1, which GLPK's tolerances assume. */
#define US 1e6
/* How often GLPK reports its progress (milliseconds): the terminal hook that hears it is where
 * a Ctrl-C ends a long simplex */
#define GLPK_OUT_MS 100
/* binary columns above which branch and cut runs without Gomory and clique cuts */
#define LARGE_MODEL_BINARIES 20000
#define KIB (1.0 / 1024.0)

/* One row while it is assembled: duplicates are merged before GLPK sees it. */
struct row {
	int *ind;
	double *val;
	int n, cap;
};

struct build {
	const struct model *m;
	glp_prob *lp;
	struct row r;
	int64_t nnz;
	int n_bin;
	bool failed;
	/* memory deltas: (slot, column, KiB) triples, bucketed into the slots' rows */
	struct delta {
		int32_t slot;
		int col;
		double v;
	} *d;
	int64_t n_d, cap_d;
};

/* row_add -- v times column col joins the row being built */
static void row_add(struct build *b, int col, double v)
{
	struct row *r = &b->r;
	if (b->failed || col <= 0 || v == 0)
		return;
	if (r->n == r->cap) {
		int cap = r->cap ? r->cap * 2 : 64;
		int *ind = realloc(r->ind, ((size_t)cap + 1) * sizeof *ind);
		double *val = realloc(r->val, ((size_t)cap + 1) * sizeof *val);
		if (ind)
			r->ind = ind;
		if (val)
			r->val = val;
		if (!ind || !val) {
			b->failed = true;
			return;
		}
		r->cap = cap;
	}
	r->n++;
	r->ind[r->n] = col; /* GLPK arrays start at 1 */
	r->val[r->n] = v;
}

/* ent_cmp -- order (column, value) pairs by column */
static int ent_cmp(const void *a, const void *b)
{
	const int *x = a, *y = b;
	return (*x > *y) - (*x < *y);
}

/* row_flush -- merge duplicate columns and add the row with bounds (type, lo, hi) */
static void row_flush(struct build *b, int type, double lo, double hi)
{
	struct row *r = &b->r;
	if (b->failed)
		return;
	/* sort (column, value) pairs by column through an index array */
	struct pair {
		int col;
		double v;
	} *p = malloc(((size_t)r->n + 1) * sizeof *p);
	if (!p) {
		b->failed = true;
		return;
	}
	for (int i = 0; i < r->n; i++)
		p[i] = (struct pair){r->ind[i + 1], r->val[i + 1]};
	qsort(p, (size_t)r->n, sizeof *p, ent_cmp);
	int n = 0;
	for (int i = 0; i < r->n; i++) {
		if (n && r->ind[n] == p[i].col) {
			r->val[n] += p[i].v;
			continue;
		}
		n++;
		r->ind[n] = p[i].col;
		r->val[n] = p[i].v;
	}
	free(p);
	int k = 0;
	for (int i = 1; i <= n; i++)
		if (fabs(r->val[i]) > 1e-12) {
			k++;
			r->ind[k] = r->ind[i];
			r->val[k] = r->val[i];
		}
	r->n = 0;
	if (!k && (type == GLP_FX || type == GLP_DB) && fabs(lo) < 1e-9)
		return; /* an empty row 0 = 0 says nothing */
	int i = glp_add_rows(b->lp, 1);
	glp_set_row_bnds(b->lp, i, type, lo, hi);
	if (k)
		glp_set_mat_row(b->lp, i, k, r->ind, r->val);
	b->nnz += k;
}

/* add_col -- a new column: binary, or continuous with bounds; its objective coefficient */
static int add_col(struct build *b, int kind, int type, double lo, double hi, double obj)
{
	int j = glp_add_cols(b->lp, 1);
	glp_set_col_kind(b->lp, j, kind);
	if (kind != GLP_BV)
		glp_set_col_bnds(b->lp, j, type, lo, hi);
	else
		b->n_bin++;
	glp_set_obj_coef(b->lp, j, obj);
	return j;
}

/* delta_add -- column col changes the fast bytes of slot by v KiB */
static void delta_add(struct build *b, int32_t slot, int col, double v)
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

/* presence -- add tensor t's fast bytes (KiB, times sign) over slots [lo, hi] for column col */
static void presence(struct build *b, const struct tmodel *t, int col, int32_t lo, int32_t hi)
{
	if (lo > hi)
		return;
	delta_add(b, lo, col, (double)t->abytes * KIB);
	delta_add(b, hi + 1, col, -(double)t->abytes * KIB);
}

/* slow_expr -- add sign * "t is slow in phase ph" to the current row */
static void slow_expr(struct build *b, const struct tmodel *t, int32_t ph, double sign)
{
	const struct gate *g = &t->gates[ph];
	for (int e = 0; e < N_EDGES; e++)
		if ((g->edges >> e & 1u) && EDGE_TO(e) == ST_S)
			row_add(b, g->col[e], sign);
}

/* tensor_columns -- the edges of every gate of a movable tensor, its source and flow rows,
 * and its memory deltas */
static void tensor_columns(struct build *b, struct tmodel *t)
{
	for (int32_t i = 0; i < t->n_gates; i++) {
		struct gate *g = &t->gates[i];
		for (int e = 0; e < N_EDGES; e++)
			if (g->edges >> e & 1u)
				g->col[e] = add_col(b, GLP_BV, GLP_DB, 0, 1,
				                    i && g->kind == G_SYNC ? g->cost[e] * US : 0);
	}
	t->h_col = t->persistent ? add_col(b, GLP_BV, GLP_DB, 0, 1, 0) : 0;
	/* one unit of flow leaves the source, or the tensor is pinned in fast memory */
	for (int e = 0; e < N_EDGES; e++)
		row_add(b, t->gates[0].col[e], 1);
	row_add(b, t->h_col, 1);
	row_flush(b, GLP_FX, 1, 1);
	/* what enters a state in a phase leaves it at the next gate */
	for (int32_t i = 0; i + 1 < t->n_gates; i++)
		for (int x = 0; x < N_ST; x++) {
			if (!(t->ph_states[i] >> x & 1u))
				continue;
			for (int e = 0; e < N_EDGES; e++) {
				if ((t->gates[i].edges >> e & 1u) && EDGE_TO(e) == x)
					row_add(b, t->gates[i].col[e], 1);
				if ((t->gates[i + 1].edges >> e & 1u) && EDGE_FROM(e) == x)
					row_add(b, t->gates[i + 1].col[e], -1);
			}
			row_flush(b, GLP_FX, 0, 0);
		}
	if (t->h_col)
		presence(b, t, t->h_col, t->slot_lo, t->slot_hi);
	for (int32_t i = 0; i < t->n_gates; i++) {
		const struct gate *g = &t->gates[i];
		for (int e = 0; e < N_EDGES; e++) {
			if (!(g->edges >> e & 1u))
				continue;
			if (IS_FAST(EDGE_TO(e)))
				presence(b, t, g->col[e], t->ph_lo[i], t->ph_hi[i]);
			if (g->kind == G_ASYNC && opt_present_in_gate(e))
				presence(b, t, g->col[e], SLOT_M(g->at - 1),
				         g->fetch ? SLOT_K(g->at) : SLOT_M(g->at));
		}
	}
}

/* node_rows -- node k's configuration columns, their ties to its tensors' places, and its
 * cost: the kernel time, or with overlapping copies the larger of kernel and copies */
static void node_rows(struct build *b, struct nmodel *nm, double *constant)
{
	const struct model *m = b->m;
	if (nm->has_async)
		nm->y_col = add_col(b, GLP_CV, GLP_LO, nm->n_free ? 0 : nm->time[0] * US, 0, 1);
	if (!nm->n_free) {
		if (!nm->has_async)
			*constant += nm->time[0] * US;
	} else {
		nm->z_col = 0;
		for (int c = 0; c < nm->n_cfg; c++) {
			int j = add_col(b, GLP_CV, GLP_DB, 0, 1, nm->has_async ? 0 : nm->time[c] * US);
			if (!c)
				nm->z_col = j;
		}
		for (int c = 0; c < nm->n_cfg; c++)
			row_add(b, nm->z_col + c, 1);
		row_flush(b, GLP_FX, 1, 1);
		for (int u = 0; u < nm->n_free; u++)
			for (int j = 0; j < nm->units[u].n_members; j++) {
				for (int c = 0; c < nm->n_cfg; c++)
					if (c >> u & 1)
						row_add(b, nm->z_col + c, 1);
				slow_expr(b, &m->t[nm->units[u].members[j]], nm->units[u].phase[j], -1);
				row_flush(b, GLP_FX, 0, 0);
			}
		if (nm->has_async) {
			row_add(b, nm->y_col, 1);
			for (int c = 0; c < nm->n_cfg; c++)
				row_add(b, nm->z_col + c, -nm->time[c] * US);
			row_flush(b, GLP_LO, 0, 0);
		}
	}
	for (int j = 0; j < nm->n_forced; j++) {
		const struct forced *fc = &nm->forced[j];
		slow_expr(b, &m->t[fc->tensor], fc->phase, 1);
		row_flush(b, GLP_FX, fc->slow, fc->slow);
	}
}

/* async_rows -- the copies overlapping each node bound its cost from below */
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
	struct ref {
		int32_t x, i;
	} *refs = malloc((size_t)(cnt[m->n_nodes] + 1) * sizeof *refs);
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
				refs[fill[m->t[x].gates[i].at]++] = (struct ref){x, i};
	for (int32_t k = 0; k < m->n_nodes; k++) {
		if (!m->n[k].has_async)
			continue;
		row_add(b, m->n[k].y_col, 1);
		for (int32_t r = cnt[k]; r < cnt[k + 1]; r++) {
			const struct gate *g = &m->t[refs[r].x].gates[refs[r].i];
			for (int e = 0; e < N_EDGES; e++)
				if ((g->edges >> e & 1u) && g->cost[e] > 0)
					row_add(b, g->col[e], -g->cost[e] * US);
		}
		row_flush(b, GLP_LO, 0, 0);
	}
	free(cnt);
	free(refs);
	free(fill);
}

/* memory_rows -- m_s = m_(s-1) + what enters fast memory at s - what leaves, m_s within the
 * slot's room; a running sum keeps each tensor's column in two rows, not in every slot */
static void memory_rows(struct build *b, int *m0)
{
	const struct model *m = b->m;
	*m0 = 0;
	for (int32_t s = 0; s < m->n_slots; s++) {
		double ub = m->limit[s] == INT64_MAX ? 0 : (double)(m->limit[s] - m->fixed[s]) * KIB;
		int type = m->limit[s] == INT64_MAX ? GLP_LO : ub > 0 ? GLP_DB : GLP_FX;
		int j = add_col(b, GLP_CV, type, 0, ub > 0 ? ub : 0, 0);
		if (!s)
			*m0 = j;
	}
	if (b->failed)
		return;
	qsort(b->d, (size_t)b->n_d, sizeof *b->d, delta_cmp);
	int64_t i = 0;
	for (int32_t s = 0; s < m->n_slots; s++) {
		row_add(b, *m0 + s, 1);
		if (s)
			row_add(b, *m0 + s - 1, -1);
		for (; i < b->n_d && b->d[i].slot == s; i++)
			row_add(b, b->d[i].col, -b->d[i].v);
		row_flush(b, GLP_FX, 0, 0);
	}
}

/* ---------------------------------------------------------------- the seed */

/* seed_vector -- the column values of placement s */
static double *seed_vector(const struct model *m, const struct solution *s, glp_prob *lp, int m0)
{
	int n = glp_get_num_cols(lp);
	double *x = calloc((size_t)n + 1, sizeof *x);
	double *xfer = calloc((size_t)m->n_nodes + 1, sizeof *xfer);
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
		if (t->h_col)
			x[t->h_col] = s->pinned[id];
		if (s->pinned[id])
			continue;
		for (int32_t i = 0; i < t->n_gates; i++) {
			uint8_t to = s->st[t->ph_off + i], from = i ? s->st[t->ph_off + i - 1] : ST_S;
			const struct gate *g = &t->gates[i];
			x[g->col[EDGE(from, to)]] = 1;
			if (g->kind == G_ASYNC)
				xfer[g->at] += g->cost[EDGE(from, to)];
		}
	}
	for (int32_t k = 0; k < m->n_nodes; k++) {
		const struct nmodel *nm = &m->n[k];
		int c = opt_node_config(m, s, k);
		if (c < 0)
			c = 0;
		if (nm->n_free)
			x[nm->z_col + c] = 1;
		if (nm->y_col)
			x[nm->y_col] = (nm->time[c] > xfer[k] ? nm->time[c] : xfer[k]) * US;
	}
	if (m0) {
		opt_solution_bytes(m, s, bytes);
		for (int32_t sl = 0; sl < m->n_slots; sl++)
			x[m0 + sl] = (double)(bytes[sl] - m->fixed[sl]) * KIB;
	}
	free(xfer);
	free(bytes);
	return x;
}

/* seed_check -- every row holds for x (the heuristic is trusted only as far as this) */
static atm_status seed_check(glp_prob *lp, const double *x)
{
	int n = glp_get_num_cols(lp);
	int *ind = malloc(((size_t)n + 1) * sizeof *ind);
	double *val = malloc(((size_t)n + 1) * sizeof *val);
	atm_status rc = ATM_OK;
	if (!ind || !val) {
		free(ind);
		free(val);
		return atm_err(ATM_E_NOMEM, "out of memory checking the seed");
	}
	for (int i = 1; i <= glp_get_num_rows(lp) && rc == ATM_OK; i++) {
		int len = glp_get_mat_row(lp, i, ind, val);
		double a = 0, mag = 1;
		for (int j = 1; j <= len; j++) {
			a += val[j] * x[ind[j]];
			mag += fabs(val[j] * x[ind[j]]);
		}
		int type = glp_get_row_type(lp, i);
		double lo = glp_get_row_lb(lp, i), hi = glp_get_row_ub(lp, i), tol = 1e-7 * mag;
		if (((type == GLP_LO || type == GLP_DB || type == GLP_FX) && a < lo - tol) ||
		    ((type == GLP_UP || type == GLP_DB || type == GLP_FX) && a > hi + tol))
			rc = atm_err(ATM_E_INTERNAL, "the heuristic placement breaks row %d of the model "
			             "(%g not in [%g, %g])", i, a, lo, hi);
	}
	for (int j = 1; j <= n && rc == ATM_OK; j++) {
		int type = glp_get_col_type(lp, j);
		double lo = glp_get_col_lb(lp, j), hi = glp_get_col_ub(lp, j);
		double tol = 1e-7 * (1 + fabs(x[j]));
		if (((type == GLP_LO || type == GLP_DB || type == GLP_FX) && x[j] < lo - tol) ||
		    ((type == GLP_UP || type == GLP_DB || type == GLP_FX) && x[j] > hi + tol))
			rc = atm_err(ATM_E_INTERNAL, "the heuristic placement breaks the bounds of column "
			             "%d of the model (%g not in [%g, %g])", j, x[j], lo, hi);
	}
	free(ind);
	free(val);
	return rc;
}

/* lp_objective -- GLPK's objective at x, in seconds */
static double lp_objective(glp_prob *lp, const double *x)
{
	double v = glp_get_obj_coef(lp, 0);
	for (int j = 1; j <= glp_get_num_cols(lp); j++)
		v += glp_get_obj_coef(lp, j) * x[j];
	return v / US;
}

/* floor_s -- a bound no plan of m beats: every kernel in its fastest configuration and no
 * copy paid. When the seed is already within the gap of it there is nothing to solve, and when
 * GLPK proves nothing better it still bounds the final gap */
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

struct cb {
	const double *seed;
	bool seeded;
	double gap, bound;
	volatile sig_atomic_t *stop;
};

/* callback -- hand GLPK the heuristic's placement once, follow the gap, stop on Ctrl-C */
static void callback(glp_tree *tree, void *info)
{
	struct cb *c = info;
	int reason = glp_ios_reason(tree);
	if (c->stop && *c->stop) {
		glp_ios_terminate(tree);
		return;
	}
	if (reason == GLP_IHEUR && c->seed && !c->seeded) {
		c->seeded = true;
		glp_ios_heur_sol(tree, c->seed);
	}
	/* GLPK tests the gap and the time limit just before GLP_IPREPRO: what it sees there is
	 * what it stopped on, give or take the last subproblem */
	if (reason == GLP_IPREPRO || reason == GLP_ISELECT || reason == GLP_IBINGO ||
	    reason == GLP_IHEUR) {
		int best = glp_ios_best_node(tree);
		if (best)
			c->bound = glp_ios_node_bound(tree, best);
		double gap = glp_ios_mip_gap(tree);
		if (gap < DBL_MAX)
			c->gap = gap;
	}
}

/* decode -- the placement GLPK's columns describe */
static atm_status decode(const struct model *m, glp_prob *lp, struct solution *s)
{
	for (int32_t id = 0; id < m->n_tensors; id++) {
		const struct tmodel *t = &m->t[id];
		if (t->cls != TC_MOVABLE)
			continue;
		s->pinned[id] = t->h_col && glp_mip_col_val(lp, t->h_col) > 0.5;
		if (s->pinned[id])
			continue;
		for (int32_t i = 0; i < t->n_gates; i++) {
			const struct gate *g = &t->gates[i];
			int taken = -1;
			for (int e = 0; e < N_EDGES; e++)
				if ((g->edges >> e & 1u) && glp_mip_col_val(lp, g->col[e]) > 0.5)
					taken = e;
			uint8_t from = i ? s->st[t->ph_off + i - 1] : ST_S;
			if (taken < 0 || EDGE_FROM(taken) != from)
				return atm_err(ATM_E_INTERNAL, "GLPK's solution breaks the flow of tensor '%s' "
				               "at gate %d", atm_graph_tensor(m->g, id)->name, i);
			s->st[t->ph_off + i] = (uint8_t)EDGE_TO(taken);
		}
	}
	return ATM_OK;
}

/* One solve: the GLPK problem of a model, the heuristic's placement as its seed, and the
 * share of the plan's time limit it may take. */
struct solve {
	const struct model *m;
	glp_prob *lp;       /* NULL once GLPK has been abandoned (see guarded) */
	jmp_buf escape;     /* where GLPK's hooks jump to */
	bool interrupted;   /* the terminal hook jumped: Ctrl-C */
	int m0;             /* the first memory row */
	double *seed;       /* the heuristic's placement as GLPK's columns */
	double seed_obj;    /* and its cost */
	double t_start;     /* the plan's start: the time limit counts from there */
	double reserve;     /* seconds kept back from GLPK */
	int msg;            /* GLPK's message level */
	struct ilp_result *r;
};

/* build_lp -- the GLPK problem of the model: columns of every movable tensor, rows of every
 * node, the asynchronous moves and, under a limit, the memory slots */
static atm_status build_lp(struct solve *v)
{
	const struct model *m = v->m;
	struct build b = {.m = m};
	double constant = 0;
	b.lp = v->lp = glp_create_prob();
	glp_set_obj_dir(b.lp, GLP_MIN);
	/* the model writes its columns into the tmodel and nmodel it was built from */
	struct model *mm = (struct model *)m;
	for (int32_t x = 0; x < m->n_tensors; x++)
		if (m->t[x].cls == TC_MOVABLE)
			tensor_columns(&b, &mm->t[x]);
	for (int32_t k = 0; k < m->n_nodes; k++)
		node_rows(&b, &mm->n[k], &constant);
	async_rows(&b);
	bool limited = false;
	for (int32_t sl = 0; sl < m->n_slots; sl++)
		limited |= m->limit[sl] != INT64_MAX;
	if (limited)
		memory_rows(&b, &v->m0);
	glp_set_obj_coef(b.lp, 0, constant);
	free(b.r.ind);
	free(b.r.val);
	free(b.d);
	if (b.failed)
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	v->r->n_columns = glp_get_num_cols(b.lp);
	v->r->n_rows = glp_get_num_rows(b.lp);
	v->r->n_binaries = b.n_bin;
	v->r->n_nonzeros = b.nnz;
	return ATM_OK;
}

/* time_left_ms -- GLPK's time limit: what is left of the plan's, less the reserve */
static int time_left_ms(const struct solve *v)
{
	double left = v->m->o.time_limit_s - v->reserve - (atm_now_s() - v->t_start);
	return (int)((left > 0.05 ? left : 0.05) * 1000);
}

/* on_glpk_error -- GLPK's assertions (a model it cannot solve numerically) would abort the
 * process: jump back to guarded instead */
static void on_glpk_error(void *info)
{
	struct solve *v = info;
	longjmp(v->escape, 1);
}

/* on_glpk_output -- every line GLPK prints (the simplex reports every GLPK_OUT_MS): jump back
 * to guarded on Ctrl-C, else pass it to stderr when the user asked for GLPK's output (stdout
 * is the command's: plan --json) */
static int on_glpk_output(void *info, const char *s)
{
	struct solve *v = info;
	if (v->m->o.stop && *v->m->o.stop) {
		v->interrupted = true;
		longjmp(v->escape, 1);
	}
	if (v->m->o.verbosity)
		fputs(s, stderr);
	return 1; /* GLPK itself prints nothing */
}

/* guarded -- step(v) with GLPK's hooks set. GLPK cannot be returned to from a hook, so when
 * one jumps, everything GLPK holds is freed (glp_free_env, as its error hook's documentation
 * asks), v->lp is gone, and the round goes on from the heuristic's plan: ATM_E_INTERRUPTED
 * on Ctrl-C, else ATM_OK with r's status saying the solver failed. */
static atm_status guarded(struct solve *v, atm_status (*step)(struct solve *v, void *arg),
                          void *arg)
{
	glp_error_hook(on_glpk_error, v);
	glp_term_hook(on_glpk_output, v);
	glp_term_out(GLP_ON);
	if (setjmp(v->escape)) {
		glp_free_env();
		v->lp = NULL;
		if (v->interrupted)
			return atm_err(ATM_E_INTERRUPTED, "planning interrupted while GLPK was solving");
		snprintf(v->r->status, sizeof v->r->status, "heuristic (solver failed)");
		if (v->m->o.verbosity)
			fprintf(stderr, "optimizer: GLPK failed on this model; the heuristic's plan stands\n");
		return ATM_OK;
	}
	atm_status rc = step(v, arg);
	glp_term_hook(NULL, NULL);
	glp_error_hook(NULL, NULL);
	return rc;
}

/* set_proved -- the seed is proved within the gap (optimal at 0): r's gap and status */
static void set_proved(struct ilp_result *r, double gap)
{
	r->gap = gap > 0 ? gap : 0;
	snprintf(r->status, sizeof r->status, r->gap > 0 ? "within gap" : "optimal");
}

/* root_lp -- the root relaxation. GLPK's MIP presolver renumbers columns, and the seed is given
 * in ours; so the LP presolver presolves the root and branch and bound runs on the original
 * columns. *stop when there is nothing to branch on: the relaxation proves the seed within the
 * gap, or it failed (r's status says which); *bound the relaxation's objective */
static atm_status root_lp(struct solve *v, double *bound, bool *stop)
{
	const struct model *m = v->m;
	struct ilp_result *r = v->r;
	glp_smcp sp;
	*stop = false;
	glp_init_smcp(&sp);
	sp.msg_lev = v->msg;
	sp.out_frq = GLPK_OUT_MS;
	sp.out_dly = 0;
	sp.meth = GLP_DUALP;
	sp.presolve = m->o.no_seed ? GLP_OFF : GLP_ON;
	sp.tm_lim = time_left_ms(v);
	double t_lp = atm_now_s();
	int ret = m->o.no_seed ? 0 : glp_simplex(v->lp, &sp);
	if (!m->o.no_seed && ret == 0 && glp_get_status(v->lp) == GLP_OPT) {
		/* the presolver gives back a solution but not always a basis branch and bound
		 * can start from: a warm pass without it is cheap and provides one */
		sp.presolve = GLP_OFF;
		sp.tm_lim = time_left_ms(v);
		ret = glp_simplex(v->lp, &sp);
	}
	if (m->o.verbosity)
		fprintf(stderr, "optimizer: model %d columns (%d binary), %d rows, %lld nonzeros built "
		        "in %.2f s; root LP %.2f s\n", r->n_columns, r->n_binaries, r->n_rows,
		        (long long)r->n_nonzeros, r->creation_s, atm_now_s() - t_lp);
	/* a relaxation GLPK cannot solve (its presolver calls a model with extreme times
	 * infeasible, a basis goes singular): the heuristic's plan stands */
	if (ret || (glp_get_status(v->lp) != GLP_OPT && !m->o.no_seed)) {
		snprintf(r->status, sizeof r->status, ret == GLP_ETMLIM ? "heuristic (lp time)" :
		         "heuristic (lp failed)");
		if (m->o.verbosity && ret && ret != GLP_ETMLIM)
			fprintf(stderr, "optimizer: GLPK could not solve the root relaxation (code %d); "
			        "the heuristic's plan stands\n", ret);
		*stop = true;
		return ATM_OK;
	}
	if (m->o.no_seed)
		return ATM_OK;
	*bound = glp_get_obj_val(v->lp);
	/* the relaxation already proves the seed within the gap: nothing to branch on */
	double lp = *bound / US, gap = (v->seed_obj - lp) / (v->seed_obj > 0 ? v->seed_obj : 1);
	if (gap <= m->o.mip_gap) {
		r->bound_s = lp;
		set_proved(r, gap);
		*stop = true;
	}
	return ATM_OK;
}

/* branch_and_cut -- GLPK's search from the root, seeded with the heuristic's placement; s
 * becomes GLPK's solution when that is no worse */
static atm_status branch_and_cut(struct solve *v, struct cb *cb, struct solution *s)
{
	const struct model *m = v->m;
	struct ilp_result *r = v->r;
	struct solution got = {0};
	glp_iocp ip;
	atm_status rc;
	glp_init_iocp(&ip);
	ip.msg_lev = v->msg;
	ip.br_tech = GLP_BR_PCH;
	ip.bt_tech = GLP_BT_BLB;
	ip.presolve = m->o.no_seed ? GLP_ON : GLP_OFF;
	ip.binarize = GLP_OFF;
	ip.fp_heur = GLP_ON;
	/* Gomory and clique cuts pay on small models; on large ones GLPK spends tens of seconds
	 * building the conflict graph and separating at the root, past its own time limit, and
	 * they do not close the gap there */
	bool large = r->n_binaries > LARGE_MODEL_BINARIES;
	ip.gmi_cuts = large ? GLP_OFF : GLP_ON;
	ip.mir_cuts = GLP_ON;
	ip.cov_cuts = GLP_ON;
	ip.clq_cuts = large ? GLP_OFF : GLP_ON;
	ip.mip_gap = m->o.mip_gap;
	ip.tm_lim = time_left_ms(v);
	ip.out_frq = GLPK_OUT_MS;
	ip.out_dly = 0;
	ip.cb_func = callback;
	ip.cb_info = cb;
	cb->seed = m->o.no_seed ? NULL : v->seed;
	cb->stop = m->o.stop;
	double t_bb = atm_now_s();
	int ret = glp_intopt(v->lp, &ip);
	if (m->o.verbosity)
		fprintf(stderr, "optimizer: branch and cut %.2f s (GLPK code %d)\n", atm_now_s() - t_bb, ret);
	if (ret == GLP_ESTOP && m->o.stop && *m->o.stop)
		return atm_err(ATM_E_INTERRUPTED, "planning interrupted while GLPK was solving");
	int st = glp_mip_status(v->lp);
	if (cb->bound > -DBL_MAX / 2 && cb->bound / US > r->bound_s)
		r->bound_s = cb->bound / US;
	if (st != GLP_OPT && st != GLP_FEAS) {
		/* GLPK calling the seeded model infeasible is GLPK's numerics failing, since the
		 * heuristic's placement satisfies every row: that plan stands */
		snprintf(r->status, sizeof r->status, ret == GLP_ETMLIM ? "heuristic (time limit)" :
		         st == GLP_NOFEAS && !m->o.no_seed ? "heuristic (solver failed)" :
		         st == GLP_NOFEAS ? "heuristic (no solution)" : "heuristic");
		return ATM_OK;
	}
	if ((rc = opt_solution_new(m, &got)) < 0 || (rc = decode(m, v->lp, &got)) < 0) {
		opt_solution_free(&got);
		return rc;
	}
	double obj = opt_solution_cost(m, &got);
	if (ret == 0) {
		r->gap = 0;
		snprintf(r->status, sizeof r->status, "optimal");
	} else {
		r->gap = cb->gap;
		/* stopping on the gap means it was within the tolerance then */
		if (ret == GLP_EMIPGAP && (r->gap < 0 || r->gap > m->o.mip_gap))
			r->gap = m->o.mip_gap;
		snprintf(r->status, sizeof r->status, ret == GLP_EMIPGAP ? "within gap" : ret == GLP_ETMLIM ?
		         "time-limit" : "stopped");
	}
	if (ret == 0 || ret == GLP_EMIPGAP)
		r->bound_s = obj * (1 - (r->gap > 0 ? r->gap : 0));
	if (obj <= v->seed_obj + 1e-12 * (1 + v->seed_obj)) {
		memcpy(s->st, got.st, (size_t)m->n_phases);
		memcpy(s->pinned, got.pinned, (size_t)m->n_tensors * sizeof *s->pinned);
		r->improved = obj < v->seed_obj - 1e-12 * (1 + v->seed_obj);
	}
	if (r->gap < 0 && r->bound_s > 0)
		r->gap = (obj - r->bound_s) / (obj > 0 ? obj : 1);
	opt_solution_free(&got);
	return ATM_OK;
}

/* What GLPK is given to do under guarded: the root relaxation, then branch and cut. */
struct glpk_work {
	struct cb *cb;
	struct solution *s;
};

/* solve_glpk -- scale, the root relaxation and, unless it settles the round, branch and cut
 * (arg: a glpk_work) */
static atm_status solve_glpk(struct solve *v, void *arg)
{
	struct glpk_work *w = arg;
	bool stop = false;
	atm_status rc;
	glp_scale_prob(v->lp, GLP_SF_AUTO);
	if ((rc = root_lp(v, &w->cb->bound, &stop)) < 0 || stop)
		return rc;
	return branch_and_cut(v, w->cb, w->s);
}

/* search -- from the seed to the solve's result: nothing to do, the seed proved within the gap
 * of the kernels' floor or of the root relaxation, or branch and cut */
static atm_status search(struct solve *v, struct solution *s)
{
	const struct model *m = v->m;
	struct ilp_result *r = v->r;
	struct cb cb = {.gap = -1, .bound = -DBL_MAX};
	atm_status rc;
	if (!(v->seed = seed_vector(m, s, v->lp, v->m0)))
		return atm_err(ATM_E_NOMEM, "out of memory seeding the solver");
	if ((rc = seed_check(v->lp, v->seed)) < 0)
		return rc;
	v->seed_obj = opt_solution_cost(m, s);
	snprintf(r->status, sizeof r->status, "heuristic");
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
	/* GLPK checks its clock between subproblems and may run past its limit by the length of
	 * one; keep some of the budget back for that, for polishing, and for the defragmentation
	 * rounds that may follow (each builds, repairs and lays out the plan again) */
	v->reserve = m->o.time_limit_s * 0.15 < 10 ? m->o.time_limit_s * 0.15 : 10;
	/* progress messages at least: they are what calls the terminal hook during a long simplex
	 * (which prints them only when asked) */
	v->msg = m->o.verbosity >= 2 ? GLP_MSG_ALL : GLP_MSG_ON;
	struct glpk_work w = {.cb = &cb, .s = s};
	return guarded(v, solve_glpk, &w);
}

/* price -- the round's plan, polished, priced by GLPK's own rows and objective: it must
 * satisfy every row (the memory rows among them) and its objective is the one the checker
 * recomputes from the profile */
static atm_status price(struct solve *v, struct solution *s)
{
	struct ilp_result *r = v->r;
	atm_status rc = opt_polish(v->m, s);
	if (rc == ATM_OK && r->gap < 0 && r->bound_s > 0) {
		/* GLPK proved nothing of its own: the gap to the best bound known */
		double fin = opt_solution_cost(v->m, s);
		r->gap = fin > r->bound_s ? (fin - r->bound_s) / fin : 0;
	}
	if (rc == ATM_OK && r->n_columns && v->lp) {
		double *x = seed_vector(v->m, s, v->lp, v->m0);
		if (!x)
			rc = atm_err(ATM_E_NOMEM, "out of memory pricing the plan");
		else if ((rc = seed_check(v->lp, x)) == ATM_OK)
			r->ilp_objective_s = lp_objective(v->lp, x);
		free(x);
	}
	return rc;
}

atm_status opt_ilp_solve(const struct model *m, struct solution *s, double t_start,
                         struct ilp_result *r)
{
	struct solve v = {.m = m, .t_start = t_start, .r = r};
	double t0 = atm_now_s();
	atm_status rc;
	memset(r, 0, sizeof *r);
	r->gap = -1;
	r->bound_s = -1;
	r->ilp_objective_s = -1;
	/* GLPK writes to the terminal unless told not to (restored below); while it solves, its
	 * output goes through guarded's hook instead */
	int term = glp_term_out(m->o.verbosity ? GLP_ON : GLP_OFF);
	if ((rc = build_lp(&v)) == ATM_OK) {
		r->creation_s = atm_now_s() - t0;
		t0 = atm_now_s();
		if ((rc = search(&v, s)) == ATM_OK)
			rc = price(&v, s);
		r->solve_s = atm_now_s() - t0;
	}
	free(v.seed);
	if (v.lp)
		glp_delete_prob(v.lp);
	glp_term_out(term);
	return rc;
}
