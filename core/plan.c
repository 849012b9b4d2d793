/* plan.c -- placement plans: initial locations, moves, and the built-in all-fast, all-slow and random plans */
#include <stdlib.h>
#include <string.h>

#include "atm_core.h"

struct atm_plan {
	const atm_graph *g;
	unsigned *loc; /* per tensor */
	atm_move *moves;
	int32_t n_moves, cap_moves;
	atm_recompute *recs;
	int32_t n_recs, cap_recs;
	int8_t *algo; /* per node, NULL while every node runs its default algorithm */
	int64_t *ws;  /* per node: workspace in the fast arena, NULL while there is none */
	atm_plan_info info;
};

atm_status atm_plan_new(atm_plan **out, const atm_graph *g)
{
	int32_t nt = atm_graph_n_tensors(g);
	atm_plan *p = calloc(1, sizeof *p);
	*out = NULL;
	if (!p || !(p->loc = malloc((size_t)(nt ? nt : 1) * sizeof *p->loc))) {
		free(p);
		return atm_err(ATM_E_NOMEM, "out of memory creating a plan for '%s'", atm_graph_name(g));
	}
	p->g = g;
	for (int32_t t = 0; t < nt; t++)
		p->loc[t] = ATM_LOC_FAST;
	snprintf(p->info.formulation, sizeof p->info.formulation, "all-fast");
	p->info.predicted_runtime_s = p->info.predicted_recompute_s = -1;
	p->info.creation_s = p->info.solve_s = p->info.mip_gap = -1;
	*out = p;
	return ATM_OK;
}

void atm_plan_destroy(atm_plan *p)
{
	if (!p)
		return;
	free(p->loc);
	free(p->moves);
	free(p->recs);
	free(p->algo);
	free(p->ws);
	free(p);
}

atm_status atm_plan_set_algo(atm_plan *p, int32_t node, int algo)
{
	const atm_node *n = atm_graph_node(p->g, node);
	if (!n)
		return atm_err(ATM_E_INPUT, "node %d does not exist (valid: 0 to %d)", node,
		               atm_graph_n_nodes(p->g) - 1);
	if (algo < 0 || algo >= ATM_MAX_ALGOS)
		return atm_err(ATM_E_INPUT, "node '%s': algorithm %d is not valid (0 to %d)", n->name, algo,
		               ATM_MAX_ALGOS - 1);
	if (!p->algo) {
		if (!algo)
			return ATM_OK;
		p->algo = calloc((size_t)atm_graph_n_nodes(p->g), sizeof *p->algo);
		if (!p->algo)
			return atm_err(ATM_E_NOMEM, "out of memory choosing algorithms");
	}
	p->algo[node] = (int8_t)algo;
	return ATM_OK;
}

int atm_plan_algo(const atm_plan *p, int32_t node)
{
	return p->algo && node >= 0 && node < atm_graph_n_nodes(p->g) ? p->algo[node] : 0;
}

int32_t atm_plan_algos_differ(const atm_plan *a, const atm_plan *b)
{
	int32_t k = 0;
	for (int32_t i = 0; i < atm_graph_n_nodes(a->g); i++)
		k += atm_plan_algo(a, i) != atm_plan_algo(b, i);
	return k;
}

atm_status atm_plan_set_workspace(atm_plan *p, int32_t node, int64_t bytes)
{
	const atm_node *n = atm_graph_node(p->g, node);
	if (!n)
		return atm_err(ATM_E_INPUT, "node %d does not exist (valid: 0 to %d)", node,
		               atm_graph_n_nodes(p->g) - 1);
	if (bytes < 0 || bytes > ATM_MAX_BYTES)
		return atm_err(ATM_E_INPUT, "node '%s': a workspace of %lld bytes is not valid", n->name,
		               (long long)bytes);
	if (!p->ws) {
		if (!bytes)
			return ATM_OK;
		p->ws = calloc((size_t)atm_graph_n_nodes(p->g), sizeof *p->ws);
		if (!p->ws)
			return atm_err(ATM_E_NOMEM, "out of memory recording workspaces");
	}
	p->ws[node] = bytes;
	return ATM_OK;
}

int64_t atm_plan_workspace(const atm_plan *p, int32_t node)
{
	return p->ws && node >= 0 && node < atm_graph_n_nodes(p->g) ? p->ws[node] : 0;
}

const atm_graph *atm_plan_graph(const atm_plan *p)
{
	return p->g;
}

atm_status atm_plan_set_location(atm_plan *p, int32_t tensor, unsigned loc)
{
	const atm_tensor *t = atm_graph_tensor(p->g, tensor);
	if (!t)
		return atm_err(ATM_E_INPUT, "tensor %d does not exist (valid: 0 to %d)", tensor,
		               atm_graph_n_tensors(p->g) - 1);
	if (loc != ATM_LOC_FAST && loc != ATM_LOC_SLOW)
		return atm_err(ATM_E_INPUT, "tensor '%s': a location is fast or slow", t->name);
	if (!(t->locations & loc))
		return atm_err(ATM_E_INPUT, "tensor '%s' may only live in %s memory", t->name,
		               t->locations == ATM_LOC_FAST ? "fast" : "slow");
	p->loc[tensor] = loc;
	return ATM_OK;
}

unsigned atm_plan_location(const atm_plan *p, int32_t tensor)
{
	return tensor >= 0 && tensor < atm_graph_n_tensors(p->g) ? p->loc[tensor] : 0;
}

atm_status atm_plan_add_move(atm_plan *p, const atm_move *m)
{
	int32_t nn = atm_graph_n_nodes(p->g);
	const atm_tensor *t = atm_graph_tensor(p->g, m->tensor);
	if (!t)
		return atm_err(ATM_E_INPUT, "move %d: tensor %d does not exist", p->n_moves, m->tensor);
	if (m->to != ATM_LOC_FAST && m->to != ATM_LOC_SLOW)
		return atm_err(ATM_E_INPUT, "move %d of '%s': the destination is fast or slow", p->n_moves,
		               t->name);
	if (!(t->locations & m->to))
		return atm_err(ATM_E_INPUT, "move %d: tensor '%s' may not live in %s memory", p->n_moves,
		               t->name, m->to == ATM_LOC_FAST ? "fast" : "slow");
	if (m->after < -1 || m->after >= nn)
		return atm_err(ATM_E_INPUT, "move %d of '%s': 'after' is node %d; valid: -1 (before the "
		               "first node) to %d", p->n_moves, t->name, m->after, nn - 1);
	if (m->async && (m->until <= m->after || m->until > nn))
		return atm_err(ATM_E_INPUT, "move %d of '%s': an asynchronous move after node %d must be "
		               "done before a later node (%d to %d), not %d", p->n_moves, t->name,
		               m->after, m->after + 1, nn, m->until);
	if (p->n_moves == p->cap_moves) {
		int32_t cap = p->cap_moves ? p->cap_moves * 2 : 64;
		atm_move *mv = realloc(p->moves, (size_t)cap * sizeof *mv);
		if (!mv)
			return atm_err(ATM_E_NOMEM, "out of memory adding a move");
		p->moves = mv;
		p->cap_moves = cap;
	}
	p->moves[p->n_moves] = *m;
	if (!m->async)
		p->moves[p->n_moves].until = m->after + 1;
	p->n_moves++;
	return ATM_OK;
}

int32_t atm_plan_n_moves(const atm_plan *p)
{
	return p->n_moves;
}

const atm_move *atm_plan_move(const atm_plan *p, int32_t i)
{
	return i >= 0 && i < p->n_moves ? &p->moves[i] : NULL;
}

/* ---------------------------------------------------------------- recomputations */

bool atm_recompute_eligible(const atm_graph *g, int32_t t, const char **why)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	const char *no = NULL;
	int32_t k = -1;
	if (!x)
		no = "no such tensor";
	else if (x->kind != ATM_KIND_ACTIVATION)
		no = "only activations (a forward op's output) are recomputed";
	else if (!(x->locations & ATM_LOC_FAST))
		no = "it may not live in fast memory, where a recomputation makes it";
	else if ((k = atm_graph_producer(g, t)) < 0)
		no = "no node produces it";
	else if (atm_op_is_inplace(atm_graph_node(g, k)->op))
		no = "its node writes an input in place";
	if (why)
		*why = no;
	return !no;
}

int32_t atm_recompute_producer(const atm_graph *g, int32_t t)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	return x && !atm_tensor_is_persistent(x) ? atm_graph_producer(g, t) : -1;
}

bool atm_recompute_is_link(const atm_graph *g, const atm_recompute *r)
{
	for (int32_t k = r->before; k >= 0 && k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		for (int i = 0; i < n->n_in + n->n_out; i++)
			if ((i < n->n_in ? n->in[i] : n->out[i - n->n_in]) == r->tensor)
				return false;
	}
	return true;
}

atm_status atm_plan_add_recompute(atm_plan *p, const atm_recompute *r)
{
	int32_t nn = atm_graph_n_nodes(p->g), i = p->n_recs;
	const atm_tensor *t = atm_graph_tensor(p->g, r->tensor);
	const char *why = NULL;
	if (!t)
		return atm_err(ATM_E_INPUT, "recomputation %d: tensor %d does not exist (valid: 0 to %d)",
		               i, r->tensor, atm_graph_n_tensors(p->g) - 1);
	if (!atm_recompute_eligible(p->g, r->tensor, &why))
		return atm_err(ATM_E_INPUT, "recomputation %d: tensor '%s' (%s) may not be recomputed: %s",
		               i, t->name, atm_kind_name(t->kind), why);
	if (r->drop_after < 0 || r->drop_after >= nn)
		return atm_err(ATM_E_INPUT, "recomputation %d of '%s': 'drop_after' is node %d; valid: 0 "
		               "to %d", i, t->name, r->drop_after, nn - 1);
	if (r->before < 0 || r->before >= nn)
		return atm_err(ATM_E_INPUT, "recomputation %d of '%s': 'before' is node %d; valid: 0 to %d",
		               i, t->name, r->before, nn - 1);
	if (p->n_recs == p->cap_recs) {
		int32_t cap = p->cap_recs ? p->cap_recs * 2 : 16;
		atm_recompute *rs = realloc(p->recs, (size_t)cap * sizeof *rs);
		if (!rs)
			return atm_err(ATM_E_NOMEM, "out of memory adding a recomputation");
		p->recs = rs;
		p->cap_recs = cap;
	}
	p->recs[p->n_recs++] = *r;
	return ATM_OK;
}

int32_t atm_plan_n_recomputes(const atm_plan *p)
{
	return p->n_recs;
}

const atm_recompute *atm_plan_recompute(const atm_plan *p, int32_t i)
{
	return i >= 0 && i < p->n_recs ? &p->recs[i] : NULL;
}

atm_plan_info *atm_plan_info_of(atm_plan *p)
{
	return &p->info;
}

const atm_plan_info *atm_plan_info_get(const atm_plan *p)
{
	return &p->info;
}

atm_status atm_plan_uniform(atm_plan **out, const atm_graph *g, unsigned loc)
{
	atm_status rc = atm_plan_new(out, g);
	if (rc < 0)
		return rc;
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		if (atm_graph_tensor(g, t)->locations & loc)
			(*out)->loc[t] = loc;
	snprintf((*out)->info.formulation, sizeof (*out)->info.formulation, "%s",
	         loc == ATM_LOC_FAST ? "all-fast" : "all-slow");
	return ATM_OK;
}

/* ---------------------------------------------------------------- random plans */

/* atm_splitmix64 -- a small, well-mixed generator; plans must not depend on libc's rand */
uint64_t atm_splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rand_below(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(atm_splitmix64(s) % n) : 0;
}

/* What the random generator tracks per tensor, mirroring the schedule's rules. */
struct rstate {
	bool fast, slow;  /* valid copies */
	int32_t busy_to;  /* an in-flight move is waited for before this node */
};

/* next_touch -- first node after k that reads or writes t, or n_nodes */
static int32_t next_touch(const atm_graph *g, int32_t t, int32_t k)
{
	int32_t nn = atm_graph_n_nodes(g);
	for (int32_t i = k + 1; i < nn; i++) {
		const atm_node *n = atm_graph_node(g, i);
		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] == t)
				return i;
		for (int j = 0; j < n->n_out; j++)
			if (n->out[j] == t)
				return i;
	}
	return nn;
}

/* written_between -- a node after node from and before node to writes persistent tensor u (in
 * place, as SGD does, or as an output, as the loss is) */
static bool written_between(const atm_graph *g, int32_t u, int32_t from, int32_t to)
{
	for (int32_t k = from + 1; k < to; k++) {
		const atm_node *n = atm_graph_node(g, k);
		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] == u && atm_op_writes_input(n->op, j))
				return true;
		for (int j = 0; j < n->n_out; j++)
			if (n->out[j] == u)
				return true;
	}
	return false;
}

/* Recomputations a random plan has chosen (the plan's, then those of the candidate being
 * tried, pending), with their nodes and whether each is a link. */
struct rchoice {
	const atm_graph *g;
	const atm_liveness *lv;
	const int32_t *pk;  /* per tensor: the first node that writes it */
	uint64_t *rs;       /* the recomputations' generator */
	atm_recompute *all;
	int32_t *pks;
	bool *link;
	int32_t n_all;
};

/* Links a chain goes down at most: a recomputation's input made again from its input's, ... */
#define RANDOM_CHAIN_DEPTH 3

/* random_clash -- r (made by node pk; a link or not) breaks a rule beside the recomputations
 * chosen: one recomputation per tensor, and no input of one dropped by another (a link drops
 * nothing) while it is made again */
static bool random_clash(const struct rchoice *c, const atm_recompute *r, int32_t pk, bool link)
{
	const atm_node *pn = atm_graph_node(c->g, pk);
	for (int32_t i = 0; i < c->n_all; i++) {
		const atm_recompute *q = &c->all[i];
		if (q->tensor == r->tensor)
			return true;
		const atm_node *qn = atm_graph_node(c->g, c->pks[i]);
		for (int a = 0; !c->link[i] && a < pn->n_in; a++) /* r's input dropped by q */
			if (pn->in[a] == q->tensor && q->drop_after < r->before && r->before <= q->before)
				return true;
		for (int a = 0; !link && a < qn->n_in; a++) /* q's input dropped by r */
			if (qn->in[a] == r->tensor && r->drop_after < q->before && q->before <= r->before)
				return true;
	}
	return false;
}

/* random_choose -- r (made by node pk) joins the pending recomputations */
static void random_choose(struct rchoice *c, const atm_recompute *r, int32_t pk, bool link)
{
	c->all[c->n_all] = *r;
	c->pks[c->n_all] = pk;
	c->link[c->n_all++] = link;
}

/* random_inputs -- every input of node pk holds a copy fit to read before node b: a persistent
 * one not written since pk ran, one live at b, or one dead there made again by a link before b
 * (chosen already, or chosen now, half the time, when the rules allow, its own inputs likewise
 * down to RANDOM_CHAIN_DEPTH links) */
static bool random_inputs(struct rchoice *c, int32_t pk, int32_t b, int depth)
{
	const atm_node *pn = atm_graph_node(c->g, pk);
	for (int a = 0; a < pn->n_in; a++) {
		int32_t u = pn->in[a];
		if (atm_tensor_is_persistent(atm_graph_tensor(c->g, u))) {
			if (written_between(c->g, u, pk, b))
				return false;
			continue;
		}
		if (atm_liveness_last(c->lv, u) >= b)
			continue;
		bool have = false;
		for (int32_t i = 0; i < c->n_all && !have; i++)
			have = c->link[i] && c->all[i].tensor == u && c->all[i].before == b;
		if (have)
			continue;
		atm_recompute l = {.tensor = u, .drop_after = atm_liveness_last(c->lv, u), .before = b};
		if (depth >= RANDOM_CHAIN_DEPTH || !atm_recompute_eligible(c->g, u, NULL) ||
		    c->pk[u] < 0 || rand_below(c->rs, 2) || random_clash(c, &l, c->pk[u], true))
			return false;
		random_choose(c, &l, c->pk[u], true);
		if (!random_inputs(c, c->pk[u], b, depth + 1))
			return false;
	}
	return true;
}

/* random_recomputes -- about one eligible tensor in three dropped after one of its uses (or
 * after its node) and made again before its next use, where the rules allow: its node's inputs
 * dead there made again too, by links, half the time; drawn from a generator of their own, so
 * that the rest of a seed's plan stays what it was before recomputations existed, but for the
 * moves the drops leave out */
static atm_status random_recomputes(atm_plan *p, const atm_liveness *lv, uint64_t seed)
{
	const atm_graph *g = p->g;
	int32_t nt = atm_graph_n_tensors(g), nn = atm_graph_n_nodes(g);
	uint64_t rs = seed ^ 0x5ec0a7e5d15c0badull;
	atm_status rc = ATM_OK;
	size_t cap = (size_t)(nt ? nt : 1);
	int32_t *pk = malloc(cap * sizeof *pk);
	int32_t *uses = malloc((size_t)(nn + 1) * sizeof *uses);
	struct rchoice c = {.g = g, .lv = lv, .pk = pk, .rs = &rs, .all = malloc(cap * sizeof *c.all),
	                    .pks = malloc(cap * sizeof *c.pks), .link = malloc(cap * sizeof *c.link)};
	if (!pk || !uses || !c.all || !c.pks || !c.link) {
		rc = atm_err(ATM_E_NOMEM, "out of memory making a random plan");
		goto done;
	}
	for (int32_t t = 0; t < nt; t++)
		pk[t] = -1;
	for (int32_t k = nn - 1; k >= 0; k--) { /* the first node that writes each tensor */
		const atm_node *n = atm_graph_node(g, k);
		for (int j = 0; j < n->n_out; j++)
			pk[n->out[j]] = k;
	}
	for (int32_t t = 0; t < nt; t++) {
		if (!atm_recompute_eligible(g, t, NULL) || pk[t] < 0 || rand_below(&rs, 3))
			continue;
		/* its node, then every node that reads it: a gap between two is a drop */
		int32_t n_uses = 0;
		uses[n_uses++] = pk[t];
		for (int32_t k = pk[t] + 1; k <= atm_liveness_last(lv, t); k++) {
			const atm_node *n = atm_graph_node(g, k);
			for (int j = 0; j < n->n_in; j++)
				if (n->in[j] == t) {
					uses[n_uses++] = k;
					break;
				}
		}
		if (n_uses < 2)
			continue;
		int32_t at = (int32_t)rand_below(&rs, (uint32_t)(n_uses - 1)), chosen = c.n_all;
		atm_recompute r = {.tensor = t, .drop_after = uses[at], .before = uses[at + 1]};
		if (random_clash(&c, &r, pk[t], false))
			continue;
		random_choose(&c, &r, pk[t], false);
		/* at most one recomputation per tensor: the pending ones fit in the arrays */
		if (!random_inputs(&c, pk[t], r.before, 0)) {
			c.n_all = chosen;
			continue;
		}
		for (int32_t i = chosen; i < c.n_all; i++)
			if ((rc = atm_plan_add_recompute(p, &c.all[i])) < 0)
				goto done;
	}
done:
	free(c.link);
	free(c.pks);
	free(c.all);
	free(uses);
	free(pk);
	return rc;
}

/* dropped_at -- tensor t is dropped by one of p's recomputations after node k (from its drop up
 * to the node it is made again before): no move of it may start there */
static bool dropped_at(const atm_plan *p, int32_t t, int32_t k)
{
	for (int32_t i = 0; i < p->n_recs; i++)
		if (p->recs[i].tensor == t && p->recs[i].drop_after <= k && k < p->recs[i].before)
			return true;
	return false;
}

atm_status atm_plan_random(atm_plan **out, const atm_graph *g, uint64_t seed)
{
	int32_t nt = atm_graph_n_tensors(g), nn = atm_graph_n_nodes(g);
	atm_liveness *lv = NULL;
	struct rstate *st = NULL;
	atm_plan *p = NULL;
	uint64_t rs = seed;
	atm_status rc = atm_plan_new(&p, g);
	if (rc < 0)
		return rc;
	snprintf(p->info.formulation, sizeof p->info.formulation, "random");
	rc = atm_liveness_new(&lv, g);
	if (rc < 0)
		goto fail;
	st = calloc((size_t)(nt ? nt : 1), sizeof *st);
	if (!st) {
		rc = atm_err(ATM_E_NOMEM, "out of memory making a random plan");
		goto fail;
	}
	if ((rc = random_recomputes(p, lv, seed)) < 0)
		goto fail;
	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		p->loc[t] = (x->locations == ATM_LOC_ANY) ? (rand_below(&rs, 2) ? ATM_LOC_SLOW : ATM_LOC_FAST)
		                                          : x->locations;
		bool here = atm_tensor_is_persistent(x);
		st[t].fast = here && p->loc[t] == ATM_LOC_FAST;
		st[t].slow = here && p->loc[t] == ATM_LOC_SLOW;
	}
	for (int32_t k = -1; k < nn; k++) {
		if (k >= 0) {
			const atm_node *n = atm_graph_node(g, k);
			for (int j = 0; j < n->n_out; j++) {
				struct rstate *o = &st[n->out[j]];
				if (atm_tensor_is_persistent(atm_graph_tensor(g, n->out[j]))) {
					o->slow = o->slow && !o->fast; /* written where it is: fast if it can */
					continue;
				}
				o->fast = p->loc[n->out[j]] == ATM_LOC_FAST;
				o->slow = !o->fast;
			}
			for (int j = 0; j < n->n_in; j++)
				if (atm_op_writes_input(n->op, j) && st[n->in[j]].fast)
					st[n->in[j]].slow = false;
			/* made again before node k, in fast (a link is freed again before it runs) */
			for (int32_t i = 0; i < p->n_recs; i++)
				if (p->recs[i].before == k && atm_liveness_last(lv, p->recs[i].tensor) >= k)
					st[p->recs[i].tensor] = (struct rstate){.fast = true};
		}
		/* up to two moves after each node but the last, on tensors live past it */
		for (int tries = 0, made = 0; k < nn - 1 && tries < 8 && made < 2; tries++) {
			int32_t t = (int32_t)rand_below(&rs, (uint32_t)nt);
			const atm_tensor *x = atm_graph_tensor(g, t);
			bool live = atm_liveness_first(lv, t) <= k && atm_liveness_last(lv, t) > k;
			if (atm_tensor_is_persistent(x))
				live = true;
			bool pinned = atm_tensor_is_persistent(x) && p->loc[t] == ATM_LOC_FAST;
			if (!live || pinned || x->locations != ATM_LOC_ANY || st[t].busy_to > k ||
			    (!st[t].fast && !st[t].slow) || dropped_at(p, t, k))
				continue;
			atm_move m = {.tensor = t, .after = k, .to = st[t].fast ? ATM_LOC_SLOW : ATM_LOC_FAST};
			m.async = rand_below(&rs, 2);
			int32_t touch = next_touch(g, t, k);
			m.until = k + 1 + (int32_t)rand_below(&rs, 4);
			if (m.until > nn - 1)
				m.until = nn - 1;
			if (m.until <= k)
				m.async = false;
			rc = atm_plan_add_move(p, &m);
			if (rc < 0)
				goto fail;
			st[t].busy_to = m.async ? (m.until < touch ? m.until : touch) : k + 1;
			if (m.to == ATM_LOC_FAST) {
				st[t].fast = true;
			} else {
				st[t].slow = true;
				st[t].fast = false;
			}
			made++;
		}
	}
	/* bring every persistent tensor back to where the next step expects it */
	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (!atm_tensor_is_persistent(x) || x->locations != ATM_LOC_ANY)
			continue;
		bool ok = p->loc[t] == ATM_LOC_FAST ? st[t].fast : st[t].slow;
		if (ok)
			continue;
		/* an in-place write after the last move may have left only the other copy */
		atm_move m = {.tensor = t, .after = nn - 1, .to = p->loc[t]};
		rc = atm_plan_add_move(p, &m);
		if (rc < 0)
			goto fail;
	}
	free(st);
	atm_liveness_destroy(lv);
	*out = p;
	return ATM_OK;
fail:
	free(st);
	atm_liveness_destroy(lv);
	atm_plan_destroy(p);
	*out = NULL;
	return rc;
}
