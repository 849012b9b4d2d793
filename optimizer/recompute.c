/* recompute.c -- the recomputations the model may choose, and their price under a placement
 *
 * A candidate is a gap between two consecutive uses d < u of a movable, eligible tensor
 * (atm_recompute_eligible) with at least one node between them, where every input of the node
 * k that made it is still available at u: a persistent tensor not written in place since k, or
 * one whose life reaches u. Chosen, the tensor is fast at d, stays so through the gap (no move)
 * and takes no memory from M(d) to M(u - 1); before u, k runs again in the configuration its
 * operands have at K(u), the tensor fast. An input that another chosen candidate drops at u
 * excludes the pair: chains are not recomputed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* written_between -- persistent x is written (in place, or as an output) by a node in (k, u) */
static bool written_between(const atm_graph *g, int32_t x, int32_t k, int32_t u)
{
	for (int32_t j = k + 1; j < u; j++)
		if (opt_writes_over(g, atm_graph_node(g, j), x))
			return true;
	return false;
}

/* inputs_available -- every input of k has a copy at u by the graph's liveness */
static bool inputs_available(const struct model *m, const atm_liveness *lv, int32_t k, int32_t u)
{
	const atm_node *n = atm_graph_node(m->g, k);
	for (int i = 0; i < n->n_in; i++) {
		int32_t x = n->in[i];
		if (m->t[x].persistent ? written_between(m->g, x, k, u) : atm_liveness_last(lv, x) < u)
			return false;
	}
	return true;
}

/* at_u -- the phase at K(u) of tensor x, a member of k's groups: -1 for the tensor made again,
 * -2 when x has none there (not live: the candidate is void) */
static int32_t at_u(const struct model *m, const struct rcand *c, int32_t x)
{
	if (x == c->t)
		return -1;
	int32_t ph = opt_phase_at(&m->t[x], SLOT_K(c->u));
	return ph >= 0 ? ph : -2;
}

/* fill -- candidate c's phases at K(u) of k's operands; false when one has none */
static bool fill(const struct model *m, struct rcand *c)
{
	const struct nmodel *nm = &m->n[c->k];
	int32_t n = 0;
	c->t_unit = -1;
	for (int u = 0; u < nm->n_free; u++)
		for (int j = 0; j < nm->units[u].n_members; j++) {
			int32_t x = nm->units[u].members[j];
			if ((c->uph[n++] = at_u(m, c, x)) == -2)
				return false;
			if (x == c->t)
				c->t_unit = u;
		}
	for (int j = 0; j < nm->n_forced; j++) {
		const struct forced *f = &nm->forced[j];
		if (f->tensor == c->t && f->slow)
			return false; /* made again in fast memory, where its group may not be */
		if ((c->fph[j] = at_u(m, c, f->tensor)) == -2)
			return false;
	}
	c->max_algo_s = 0;
	for (int i = 0; i < nm->n_algo; i++)
		c->max_algo_s = fmax(c->max_algo_s, nm->algo_time[i]);
	return true;
}

/* add -- candidate (t, k, d, u) when it is one; false on running out of memory */
static bool add(struct model *m, int32_t *cap, int32_t t, int32_t k, int32_t d, int32_t u)
{
	const struct nmodel *nm = &m->n[k];
	const struct tmodel *tm = &m->t[t];
	struct rcand c = {.t = t, .k = k, .d = d, .u = u};
	c.pd = opt_phase_at(tm, SLOT_K(d));
	c.pu = opt_phase_at(tm, SLOT_K(u));
	if (c.pd < 0 || c.pu < c.pd)
		return true;
	int32_t n_members = 0;
	for (int i = 0; i < nm->n_free; i++)
		n_members += nm->units[i].n_members;
	c.uph = malloc(((size_t)n_members + 1) * sizeof *c.uph);
	c.fph = malloc(((size_t)nm->n_forced + 1) * sizeof *c.fph);
	if (!c.uph || !c.fph || !fill(m, &c)) {
		bool oom = !c.uph || !c.fph;
		free(c.uph);
		free(c.fph);
		return !oom;
	}
	if (m->n_rc == *cap) {
		int32_t ncap = *cap ? *cap * 2 : 64;
		struct rcand *r = realloc(m->rc, (size_t)ncap * sizeof *r);
		if (!r) {
			free(c.uph);
			free(c.fph);
			return false;
		}
		m->rc = r;
		*cap = ncap;
	}
	m->rc[m->n_rc++] = c;
	return true;
}

/* exclusions -- pairs where one candidate drops, at the other's u, an input of its kernel */
static atm_status exclusions(struct model *m)
{
	int32_t cap = 0;
	for (int32_t a = 0; a < m->n_rc; a++) {
		const atm_node *n = atm_graph_node(m->g, m->rc[a].k);
		for (int32_t b = 0; b < m->n_rc; b++) {
			const struct rcand *x = &m->rc[b];
			bool input = false;
			for (int i = 0; i < n->n_in; i++)
				input |= n->in[i] == x->t;
			if (!input || !(x->d < m->rc[a].u && m->rc[a].u <= x->u))
				continue;
			if (m->n_excl == cap) {
				cap = cap ? cap * 2 : 64;
				int32_t(*e)[2] = realloc(m->excl, (size_t)cap * sizeof *e);
				if (!e)
					return atm_err(ATM_E_NOMEM, "out of memory building the model");
				m->excl = e;
			}
			m->excl[m->n_excl][0] = a;
			m->excl[m->n_excl++][1] = b;
		}
	}
	return ATM_OK;
}

atm_status opt_recompute_build(struct model *m, const atm_liveness *lv, const int32_t *tstart,
                               const int32_t *touch)
{
	int32_t cap = 0;
	if (!m->o.recompute || !atm_opt_is_ilp(m->f))
		return ATM_OK;
	for (int32_t t = 0; t < m->n_tensors; t++) {
		if (m->t[t].cls != TC_MOVABLE || !atm_recompute_eligible(m->g, t, NULL))
			continue;
		int32_t k = atm_recompute_producer(m->g, t);
		for (int32_t i = tstart[t]; k >= 0 && i + 1 < tstart[t + 1]; i++) {
			int32_t d = touch[i], u = touch[i + 1];
			if (u - d < 2 || !inputs_available(m, lv, k, u))
				continue;
			if (!add(m, &cap, t, k, d, u))
				return atm_err(ATM_E_NOMEM, "out of memory building the model");
		}
	}
	return exclusions(m);
}

void opt_recompute_free(struct model *m)
{
	for (int32_t i = 0; i < m->n_rc; i++) {
		free(m->rc[i].uph);
		free(m->rc[i].fph);
	}
	free(m->rc);
	free(m->excl);
	m->rc = NULL;
	m->excl = NULL;
	m->n_rc = m->n_excl = 0;
}

/* slow_at -- tensor x in phase ph (-1: the tensor made again, fast) is slow under s */
static bool slow_at(const struct model *m, const struct solution *s, int32_t x, int32_t ph)
{
	if (ph < 0 || m->t[x].cls != TC_MOVABLE)
		return m->t[x].cls == TC_SLOW;
	return !s->pinned[x] && s->st[m->t[x].ph_off + ph] == ST_S;
}

/* stays_fast -- c's tensor is fast without a valid slow copy at d and moves nowhere to u */
static bool stays_fast(const struct model *m, const struct solution *s, const struct rcand *c)
{
	const struct tmodel *t = &m->t[c->t];
	for (int32_t ph = c->pd; ph <= c->pu; ph++)
		if (s->st[t->ph_off + ph] != ST_F)
			return false;
	return !s->pinned[c->t];
}

/* copies_beside -- an operand of c's kernel starts an overlapped copy after u - 1 under s (the
 * schedule would wait for it before making the tensor again, which the model does not price) */
static bool copies_beside(const struct model *m, const struct solution *s, const struct rcand *c)
{
	const atm_node *n = atm_graph_node(m->g, c->k);
	for (int j = 0; j < n->n_in; j++) {
		const struct tmodel *t = &m->t[n->in[j]];
		if (t->cls != TC_MOVABLE || s->pinned[t->id])
			continue;
		int32_t g = opt_recompute_async_gate(c, t);
		if (g >= 0 && s->st[t->ph_off + g] != s->st[t->ph_off + g - 1])
			return true;
	}
	return false;
}

int32_t opt_recompute_async_gate(const struct rcand *c, const struct tmodel *t)
{
	for (int32_t g = 1; g < t->n_gates; g++)
		if (t->gates[g].kind == G_ASYNC && t->gates[g].at == c->u)
			return g;
	return -1;
}

double opt_recompute_time(const struct model *m, const struct solution *s, int32_t i)
{
	const struct rcand *c = &m->rc[i];
	const struct nmodel *nm = &m->n[c->k];
	if (!stays_fast(m, s, c) || copies_beside(m, s, c))
		return INFINITY;
	for (int32_t e = 0; e < m->n_excl; e++)
		if ((m->excl[e][0] == i && s->rc[m->excl[e][1]]) ||
		    (m->excl[e][1] == i && s->rc[m->excl[e][0]]))
			return INFINITY;
	for (int j = 0; j < nm->n_forced; j++)
		if (slow_at(m, s, nm->forced[j].tensor, c->fph[j]) != nm->forced[j].slow)
			return INFINITY;
	if (nm->n_algo > 1 || m->o.device_only)
		return c->max_algo_s;
	int cfg = 0;
	for (int u = 0, n = 0; u < nm->n_free; u++) {
		const struct unit *un = &nm->units[u];
		bool slow = slow_at(m, s, un->members[0], c->uph[n]);
		for (int j = 0; j < un->n_members; j++, n++)
			if (slow_at(m, s, un->members[j], c->uph[n]) != slow)
				return INFINITY;
		cfg |= slow << u;
	}
	return nm->time[cfg] >= 0 ? nm->time[cfg] : INFINITY;
}

bool opt_recompute_touches(const struct model *m, int32_t i, int32_t x)
{
	const atm_node *n = atm_graph_node(m->g, m->rc[i].k);
	if (m->rc[i].t == x)
		return true;
	for (int j = 0; j < n->n_in; j++)
		if (n->in[j] == x)
			return true;
	return false;
}
