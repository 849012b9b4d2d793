/* schedule.c -- lay out one step of a plan: events, copy lifetimes, fast-arena offsets, and the plan's checks */
#include <stdlib.h>
#include <string.h>

#include "atm_core.h"

struct span {
	int64_t off, len;
};

/* First-fit allocator over an unbounded arena (the limit is checked against the finished
 * layout, check_arena): free spans sorted by offset. */
struct arena {
	struct span *free;
	int32_t n, cap;
	int64_t end;   /* highest offset handed out */
	int64_t used;
};

struct tstate {
	bool fast, slow;
	int64_t fast_off;
	int32_t inflight; /* move index or -1 */
	int32_t wait_at;  /* node before which the in-flight move is waited for */
};

struct atm_schedule {
	const atm_plan *p;
	atm_event *ev;
	int32_t n_ev, cap_ev;
	atm_event *setup;
	int32_t n_setup, cap_setup;
	unsigned *cfg; /* per node: n_in + n_out locations, at cfg_at[node] */
	int64_t *cfg_at;
	unsigned *rcfg; /* per recomputation: its node's n_in + n_out locations, at rcfg_at[i] */
	int64_t *rcfg_at;
	int64_t *fast_at;
	atm_schedule_stats stats;
};

static atm_status arena_init(struct arena *a)
{
	memset(a, 0, sizeof *a);
	a->cap = 64;
	a->free = malloc((size_t)a->cap * sizeof *a->free);
	if (!a->free)
		return atm_err(ATM_E_NOMEM, "out of memory laying out the fast arena");
	a->free[0] = (struct span){0, ATM_MAX_BYTES};
	a->n = 1;
	return ATM_OK;
}

/* arena_take -- first fit; -1 when no free span is large enough */
static int64_t arena_take(struct arena *a, int64_t bytes)
{
	int64_t len = atm_arena_align_up(bytes);
	for (int32_t i = 0; i < a->n; i++) {
		if (a->free[i].len < len)
			continue;
		int64_t off = a->free[i].off;
		a->free[i].off += len;
		a->free[i].len -= len;
		if (!a->free[i].len) {
			memmove(&a->free[i], &a->free[i + 1], (size_t)(a->n - i - 1) * sizeof *a->free);
			a->n--;
		}
		if (off + len > a->end)
			a->end = off + len;
		a->used += len;
		return off;
	}
	return -1;
}

/* arena_give -- return a span, merging with its neighbours */
static atm_status arena_give(struct arena *a, int64_t off, int64_t bytes)
{
	int64_t len = atm_arena_align_up(bytes);
	int32_t i = 0;
	while (i < a->n && a->free[i].off < off)
		i++;
	bool left = i > 0 && a->free[i - 1].off + a->free[i - 1].len == off;
	bool right = i < a->n && off + len == a->free[i].off;
	a->used -= len;
	if (left && right) {
		a->free[i - 1].len += len + a->free[i].len;
		memmove(&a->free[i], &a->free[i + 1], (size_t)(a->n - i - 1) * sizeof *a->free);
		a->n--;
	} else if (left) {
		a->free[i - 1].len += len;
	} else if (right) {
		a->free[i].off = off;
		a->free[i].len += len;
	} else {
		if (a->n == a->cap) {
			struct span *s = realloc(a->free, (size_t)a->cap * 2 * sizeof *s);
			if (!s)
				return atm_err(ATM_E_NOMEM, "out of memory laying out the fast arena");
			a->free = s;
			a->cap *= 2;
		}
		memmove(&a->free[i + 1], &a->free[i], (size_t)(a->n - i) * sizeof *a->free);
		a->free[i] = (struct span){off, len};
		a->n++;
	}
	return ATM_OK;
}

/* Building state: the schedule plus what the walk tracks. */
struct walk {
	atm_schedule *s;
	const atm_graph *g;
	const atm_plan *p;
	atm_liveness *lv;
	struct tstate *ts;
	struct arena arena;
	int64_t limit;     /* the plan's fast limit (0: none): what live copies may add up to */
	int64_t fast_bytes, slow_bytes;
	int32_t *flying;   /* tensors with a move in flight */
	int32_t n_flying;
	int32_t *by_after; /* moves sorted by 'after' (stable) */
	int32_t *after_at; /* first index in by_after of moves after node k (k + 1 indexes) */
	/* recomputations bucketed by the node they are dropped after (in plan order within a
	 * node: by_drop[drop_at[k] .. drop_at[k + 1])) and the node they are made again before (in
	 * the order of their producers, plan order among equals) */
	int32_t *by_drop, *drop_at, *by_before, *before_at;
	int32_t *producer;   /* per recomputation: the node it runs again */
	bool *link;          /* per recomputation: a link (made again only for the others there) */
	int32_t *dropped_by; /* per tensor: the recomputation that dropped it, -1 while it is not */
	int32_t *written_at; /* per tensor: the last node that wrote it this step (-1: none) */
};

static atm_status push(struct walk *w, atm_event ev, bool setup)
{
	atm_event **arr = setup ? &w->s->setup : &w->s->ev;
	int32_t *n = setup ? &w->s->n_setup : &w->s->n_ev, *cap = setup ? &w->s->cap_setup : &w->s->cap_ev;
	if (*n == *cap) {
		int32_t ncap = *cap ? *cap * 2 : 256;
		atm_event *e = realloc(*arr, (size_t)ncap * sizeof *e);
		if (!e)
			return atm_err(ATM_E_NOMEM, "out of memory laying out the schedule");
		*arr = e;
		*cap = ncap;
	}
	(*arr)[(*n)++] = ev;
	return ATM_OK;
}

static const char *node_name(const atm_graph *g, int32_t k)
{
	return k < 0 ? "(start of step)" : atm_graph_node(g, k)->name;
}

/* alloc_copy -- give tensor t a copy in loc after node k */
static atm_status alloc_copy(struct walk *w, int32_t t, unsigned loc, int32_t k, bool setup)
{
	const atm_tensor *x = atm_graph_tensor(w->g, t);
	atm_event ev = {.kind = ATM_EV_ALLOC, .node = k, .tensor = t, .move = -1, .recompute = -1,
	                .loc = loc};
	if (loc == ATM_LOC_FAST) {
		int64_t limit = w->limit;
		if (limit && w->fast_bytes + x->bytes > limit)
			return atm_err(ATM_E_INFEASIBLE, "at node %d ('%s') tensor '%s' (%lld bytes) does not "
			               "fit: fast memory would hold %lld bytes, over the limit of %lld", k,
			               node_name(w->g, k), x->name, (long long)x->bytes,
			               (long long)(w->fast_bytes + x->bytes), (long long)limit);
		int64_t off = arena_take(&w->arena, x->bytes);
		if (off < 0)
			return atm_err(ATM_E_INTERNAL, "tensor '%s' (%lld bytes) finds no room in an "
			               "unbounded arena", x->name, (long long)x->bytes);
		w->ts[t].fast = true;
		w->ts[t].fast_off = off;
		ev.offset = off;
		w->fast_bytes += x->bytes;
		if (w->fast_bytes > w->s->stats.fast_peak_bytes) {
			w->s->stats.fast_peak_bytes = w->fast_bytes;
			w->s->stats.fast_peak_node = k;
		}
	} else {
		w->ts[t].slow = true;
		w->slow_bytes += x->bytes;
		if (w->slow_bytes > w->s->stats.slow_peak_bytes)
			w->s->stats.slow_peak_bytes = w->slow_bytes;
	}
	return push(w, ev, setup);
}

/* free_copy -- release tensor t's copy in loc after node k */
static atm_status free_copy(struct walk *w, int32_t t, unsigned loc, int32_t k)
{
	const atm_tensor *x = atm_graph_tensor(w->g, t);
	atm_event ev = {.kind = ATM_EV_FREE, .node = k, .tensor = t, .move = -1, .recompute = -1,
	                .loc = loc};
	if (loc == ATM_LOC_FAST) {
		atm_status rc = arena_give(&w->arena, w->ts[t].fast_off, x->bytes);
		if (rc < 0)
			return rc;
		w->ts[t].fast = false;
		w->fast_bytes -= x->bytes;
		ev.offset = w->ts[t].fast_off;
	} else {
		w->ts[t].slow = false;
		w->slow_bytes -= x->bytes;
	}
	return push(w, ev, false);
}

/* finish_move -- wait for tensor t's in-flight move; an eviction then drops the fast copy */
static atm_status finish_move(struct walk *w, int32_t t, int32_t k)
{
	int32_t m = w->ts[t].inflight;
	if (m < 0)
		return ATM_OK;
	const atm_move *mv = atm_plan_move(w->p, m);
	atm_status rc = push(w, (atm_event){.kind = ATM_EV_MOVE_WAIT, .node = k, .tensor = t,
	                                    .move = m, .recompute = -1, .loc = mv->to}, false);
	w->ts[t].inflight = -1;
	for (int32_t i = 0; i < w->n_flying; i++)
		if (w->flying[i] == t) {
			w->flying[i] = w->flying[--w->n_flying];
			break;
		}
	if (rc < 0 || mv->to == ATM_LOC_FAST)
		return rc;
	return free_copy(w, t, ATM_LOC_FAST, k);
}

/* start_move -- move m after node k */
static atm_status start_move(struct walk *w, int32_t m, int32_t k)
{
	const atm_move *mv = atm_plan_move(w->p, m);
	int32_t t = mv->tensor;
	const atm_tensor *x = atm_graph_tensor(w->g, t);
	struct tstate *ts = &w->ts[t];
	atm_schedule_stats *st = &w->s->stats;
	atm_status rc;
	bool persistent = atm_tensor_is_persistent(x);
	bool live = persistent ? (ts->fast || ts->slow)
	                       : (atm_liveness_first(w->lv, t) <= k && atm_liveness_last(w->lv, t) > k);
	if (!live)
		return atm_err(ATM_E_INPUT, "move %d: tensor '%s' is not live after node %d ('%s'); it "
		               "lives from node %d to node %d", m, x->name, k, node_name(w->g, k),
		               atm_liveness_first(w->lv, t), atm_liveness_last(w->lv, t));
	/* the arena layout at the start of every step is the same, so a persistent
	 * tensor whose home is fast memory keeps its place for the whole step */
	if (persistent && atm_plan_location(w->p, t) == ATM_LOC_FAST)
		return atm_err(ATM_E_INPUT, "move %d: tensor '%s' (%s) starts every step in fast memory "
		               "and stays there; give it slow memory as its initial location to move it",
		               m, x->name, atm_kind_name(x->kind));
	if (ts->inflight >= 0)
		return atm_err(ATM_E_INPUT, "move %d: tensor '%s' is still moving (move %d) after node %d "
		               "('%s')", m, x->name, ts->inflight, k, node_name(w->g, k));
	if (mv->to == ATM_LOC_FAST && ts->fast)
		return atm_err(ATM_E_INPUT, "move %d: tensor '%s' is already in fast memory after node %d "
		               "('%s')", m, x->name, k, node_name(w->g, k));
	if (mv->to == ATM_LOC_SLOW && !ts->fast)
		return atm_err(ATM_E_INPUT, "move %d: tensor '%s' has no fast copy to move to slow memory "
		               "after node %d ('%s')", m, x->name, k, node_name(w->g, k));
	if (mv->to == ATM_LOC_SLOW && ts->slow) {
		/* a valid slow copy exists: eviction only drops the fast copy */
		st->n_moves_to_slow++;
		return free_copy(w, t, ATM_LOC_FAST, k);
	}
	rc = alloc_copy(w, t, mv->to, k, false);
	if (rc < 0)
		return atm_err_prefix(rc, "move %d: ", m);
	if (mv->to == ATM_LOC_FAST) {
		st->n_moves_to_fast++;
		st->bytes_to_fast += x->bytes;
		st->n_async_to_fast += mv->async;
		st->bytes_async_to_fast += mv->async ? x->bytes : 0;
	} else {
		st->n_moves_to_slow++;
		st->bytes_to_slow += x->bytes;
		st->n_async_to_slow += mv->async;
		st->bytes_async_to_slow += mv->async ? x->bytes : 0;
	}
	rc = push(w, (atm_event){.kind = ATM_EV_MOVE_START, .node = k, .tensor = t, .move = m,
	                         .recompute = -1, .loc = mv->to}, false);
	if (rc < 0)
		return rc;
	ts->inflight = m;
	if (!mv->async)
		return finish_move(w, t, k);
	ts->wait_at = mv->until;
	w->flying[w->n_flying++] = t;
	return ATM_OK;
}

/* kernel -- node k: wait for moves of its tensors, allocate outputs, run, drop stale copies */
static atm_status kernel(struct walk *w, int32_t k)
{
	const atm_node *n = atm_graph_node(w->g, k);
	unsigned *cfg = w->s->cfg + w->s->cfg_at[k];
	atm_status rc;
	/* a kernel touches no tensor that is still moving: readers need the copy,
	 * writers (in place, or the loss) must not race the copy */
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		rc = finish_move(w, i < n->n_in ? n->in[i] : n->out[i - n->n_in], k - 1);
		if (rc < 0)
			return rc;
	}
	for (int i = 0; i < n->n_out; i++) {
		int32_t t = n->out[i];
		if (atm_tensor_is_persistent(atm_graph_tensor(w->g, t)))
			continue; /* the loss lives from setup on */
		rc = alloc_copy(w, t, atm_plan_location(w->p, t), k, false);
		if (rc < 0)
			return rc;
	}
	for (int i = 0; i < n->n_in; i++)
		cfg[i] = w->ts[n->in[i]].fast ? ATM_LOC_FAST : ATM_LOC_SLOW;
	for (int i = 0; i < n->n_out; i++)
		cfg[n->n_in + i] = w->ts[n->out[i]].fast ? ATM_LOC_FAST : ATM_LOC_SLOW;
	w->s->fast_at[k] = w->fast_bytes;
	/* a workspace the plan counts in the limit is a block of the arena live only while the
	 * kernel runs, taken after its outputs and given back before anything after it */
	int64_t ws = atm_plan_workspace(w->p, k), ws_off = 0;
	if (ws > 0) {
		if (w->limit && w->fast_bytes + ws > w->limit)
			return atm_err(ATM_E_INFEASIBLE, "at node %d ('%s') the kernel's workspace (%lld "
			               "bytes) does not fit: fast memory would hold %lld bytes, over the "
			               "limit of %lld", k, n->name, (long long)ws,
			               (long long)(w->fast_bytes + ws), (long long)w->limit);
		if ((ws_off = arena_take(&w->arena, ws)) < 0)
			return atm_err(ATM_E_INTERNAL, "the workspace of node '%s' (%lld bytes) finds no "
			               "room in an unbounded arena", n->name, (long long)ws);
	}
	rc = push(w, (atm_event){.kind = ATM_EV_KERNEL, .node = k, .tensor = -1, .move = -1,
	                         .recompute = -1, .offset = ws_off, .cfg = NULL,
	                         .workspace_bytes = ws}, false);
	if (rc < 0 || (ws > 0 && (rc = arena_give(&w->arena, ws_off, ws)) < 0))
		return rc;
	/* a tensor written in fast memory makes its slow copy stale: in-place updates,
	 * and persistent outputs (the loss) that live from setup on */
	for (int i = -n->n_in; i < n->n_out; i++) {
		int32_t t = i < 0 ? (atm_op_writes_input(n->op, i + n->n_in) ? n->in[i + n->n_in] : -1)
		                  : n->out[i];
		if (t >= 0)
			w->written_at[t] = k; /* what a recomputation's inputs must not have since */
		if (t < 0 || (i >= 0 && !atm_tensor_is_persistent(atm_graph_tensor(w->g, t))))
			continue;
		if (w->ts[t].fast && w->ts[t].slow && (rc = free_copy(w, t, ATM_LOC_SLOW, k)) < 0)
			return rc;
	}
	return ATM_OK;
}

/* sort_moves -- moves bucketed by the node they follow, in plan order within a node */
static atm_status sort_moves(struct walk *w)
{
	int32_t nm = atm_plan_n_moves(w->p), nn = atm_graph_n_nodes(w->g);
	w->by_after = malloc((size_t)(nm ? nm : 1) * sizeof *w->by_after);
	w->after_at = calloc((size_t)nn + 2, sizeof *w->after_at);
	if (!w->by_after || !w->after_at)
		return atm_err(ATM_E_NOMEM, "out of memory sorting moves");
	for (int32_t m = 0; m < nm; m++)
		w->after_at[atm_plan_move(w->p, m)->after + 2]++;
	for (int32_t k = 1; k < nn + 2; k++)
		w->after_at[k] += w->after_at[k - 1];
	int32_t *fill = malloc((size_t)(nn + 2) * sizeof *fill);
	if (!fill)
		return atm_err(ATM_E_NOMEM, "out of memory sorting moves");
	memcpy(fill, w->after_at, (size_t)(nn + 2) * sizeof *fill);
	for (int32_t m = 0; m < nm; m++)
		w->by_after[fill[atm_plan_move(w->p, m)->after + 1]++] = m;
	free(fill);
	return ATM_OK;
}

/* ---------------------------------------------------------------- recomputations */

/* bucket -- n items by key (each in 0..nn-1), stable: by[at[k] .. at[k + 1]) have key k */
static atm_status bucket(const atm_plan *p, int32_t n, int32_t nn, bool by_drop, int32_t **by,
                         int32_t **at)
{
	*by = malloc((size_t)(n ? n : 1) * sizeof **by);
	*at = calloc((size_t)nn + 2, sizeof **at);
	int32_t *fill = malloc((size_t)(nn + 2) * sizeof *fill);
	if (!*by || !*at || !fill) {
		free(fill);
		return atm_err(ATM_E_NOMEM, "out of memory sorting recomputations");
	}
	for (int32_t i = 0; i < n; i++) {
		const atm_recompute *r = atm_plan_recompute(p, i);
		(*at)[(by_drop ? r->drop_after : r->before) + 1]++;
	}
	for (int32_t k = 1; k < nn + 2; k++)
		(*at)[k] += (*at)[k - 1];
	memcpy(fill, *at, (size_t)(nn + 2) * sizeof *fill);
	for (int32_t i = 0; i < n; i++) {
		const atm_recompute *r = atm_plan_recompute(p, i);
		(*by)[fill[by_drop ? r->drop_after : r->before]++] = i;
	}
	free(fill);
	return ATM_OK;
}

/* node_uses -- node k has tensor t among its inputs (or among its outputs too) */
static bool node_uses(const atm_graph *g, int32_t k, int32_t t, bool inputs_only)
{
	const atm_node *n = atm_graph_node(g, k);
	for (int i = 0; i < n->n_in + (inputs_only ? 0 : n->n_out); i++)
		if ((i < n->n_in ? n->in[i] : n->out[i - n->n_in]) == t)
			return true;
	return false;
}

/* check_recompute -- the rules recomputation i keeps that do not depend on the step's state
 * (those are checked as the walk meets them: drop_copies, remake) */
static atm_status check_recompute(struct walk *w, int32_t i)
{
	const atm_graph *g = w->g;
	const atm_recompute *r = atm_plan_recompute(w->p, i);
	const atm_tensor *x = atm_graph_tensor(g, r->tensor);
	int32_t d = r->drop_after, b = r->before, pk = atm_recompute_producer(g, r->tensor);
	int32_t last = atm_liveness_last(w->lv, r->tensor);
	const char *why = NULL;
	if (!atm_recompute_eligible(g, r->tensor, &why) || pk < 0)
		return atm_err(ATM_E_INPUT, "recomputation %d: tensor '%s' may not be recomputed: %s", i,
		               x->name, why ? why : "no node produces it");
	w->producer[i] = pk;
	if (d >= b)
		return atm_err(ATM_E_INPUT, "recomputation %d of '%s': it is dropped after node %d ('%s') "
		               "and made again before node %d ('%s'); the drop must come first "
		               "(drop_after < before)", i, x->name, d, node_name(g, d), b, node_name(g, b));
	if (d < pk)
		return atm_err(ATM_E_INPUT, "recomputation %d of '%s': it is dropped after node %d ('%s'), "
		               "before node %d ('%s') produces it (drop_after must be %d or later)", i,
		               x->name, d, node_name(g, d), pk, node_name(g, pk), pk);
	/* a tensor dead at b is made again there only as a link, for the other recomputations
	 * before b, from where it was freed */
	w->link[i] = last < b;
	if (w->link[i] && d != last)
		return atm_err(ATM_E_INPUT, "recomputation %d of '%s': the tensor is not live at node %d "
		               "('%s') (it lives from node %d to node %d), so it is made again there only "
		               "as a link, for the recomputations before node %d that read it; a link's "
		               "drop_after must be %d, its last use, where it is freed (not %d)", i,
		               x->name, b, node_name(g, b), atm_liveness_first(w->lv, r->tensor), last, b,
		               last, d);
	if (!w->link[i] && !node_uses(g, b, r->tensor, true))
		return atm_err(ATM_E_INPUT, "recomputation %d of '%s': node %d ('%s') does not read it; "
		               "'before' must be a node that does", i, x->name, b, node_name(g, b));
	for (int32_t k = d + 1; k < b; k++)
		if (node_uses(g, k, r->tensor, false))
			return atm_err(ATM_E_INPUT, "recomputation %d of '%s': node %d ('%s') uses it while it "
			               "is dropped (after node %d, until before node %d); drop it after that "
			               "use", i, x->name, k, node_name(g, k), d, b);
	for (int32_t m = 0; m < atm_plan_n_moves(w->p); m++) {
		const atm_move *mv = atm_plan_move(w->p, m);
		if (mv->tensor == r->tensor && mv->after >= d && mv->after < b)
			return atm_err(ATM_E_INPUT, "recomputation %d of '%s': move %d moves it after node %d "
			               "('%s'), while it is dropped (after node %d, until before node %d)", i,
			               x->name, m, mv->after, node_name(g, mv->after), d, b);
	}
	for (int32_t j = 0; j < i; j++) {
		const atm_recompute *q = atm_plan_recompute(w->p, j);
		if (q->tensor != r->tensor)
			continue;
		if (w->link[i] && w->link[j] && q->before == b)
			return atm_err(ATM_E_INPUT, "recomputations %d and %d of '%s' are both links before "
			               "node %d ('%s'): one makes it again for every recomputation there; "
			               "remove the other", j, i, x->name, b, node_name(g, b));
		/* a link drops nothing, so it overlaps no other recomputation of its tensor */
		if (!w->link[i] && !w->link[j] && q->drop_after < b && d < q->before)
			return atm_err(ATM_E_INPUT, "recomputations %d and %d of '%s' overlap: one drops it "
			               "after node %d until before node %d, the other after node %d until "
			               "before node %d", j, i, x->name, q->drop_after, q->before, d, b);
	}
	return ATM_OK;
}

/* reads_before -- recomputation i's tensor is read by the producer of another recomputation
 * before the same node */
static bool reads_before(const struct walk *w, int32_t i)
{
	const atm_recompute *r = atm_plan_recompute(w->p, i);
	for (int32_t j = 0; j < atm_plan_n_recomputes(w->p); j++)
		if (j != i && atm_plan_recompute(w->p, j)->before == r->before &&
		    node_uses(w->g, w->producer[j], r->tensor, true))
			return true;
	return false;
}

/* check_links -- every link feeds a recomputation before its node (once every producer is
 * known) */
static atm_status check_links(const struct walk *w)
{
	for (int32_t i = 0; i < atm_plan_n_recomputes(w->p); i++) {
		const atm_recompute *r = atm_plan_recompute(w->p, i);
		if (!w->link[i] || reads_before(w, i))
			continue;
		return atm_err(ATM_E_INPUT, "recomputation %d of '%s' is a link before node %d ('%s') "
		               "(the tensor's last use is node %d), but nothing before node %d reads it; "
		               "a tensor dead at a node is made again there only for the recomputations "
		               "before it whose nodes read it", i, atm_graph_tensor(w->g, r->tensor)->name,
		               r->before, node_name(w->g, r->before), r->drop_after, r->before);
	}
	return ATM_OK;
}

/* drop_copies -- the recomputations dropped after node k: every copy of each freed, once a
 * move of it in flight is done (a link drops nothing: it was freed at its last use) */
static atm_status drop_copies(struct walk *w, int32_t k)
{
	atm_status rc;
	for (int32_t j = w->drop_at[k]; j < w->drop_at[k + 1]; j++) {
		int32_t i = w->by_drop[j], t = atm_plan_recompute(w->p, i)->tensor;
		if (w->link[i])
			continue;
		if ((rc = finish_move(w, t, k)) < 0)
			return rc;
		if (!w->ts[t].fast && !w->ts[t].slow)
			return atm_err(ATM_E_INPUT, "recomputation %d of '%s': the tensor holds no copy to "
			               "drop after node %d ('%s')", i, atm_graph_tensor(w->g, t)->name, k,
			               node_name(w->g, k));
		if (w->ts[t].fast && (rc = free_copy(w, t, ATM_LOC_FAST, k)) < 0)
			return rc;
		if (w->ts[t].slow && (rc = free_copy(w, t, ATM_LOC_SLOW, k)) < 0)
			return rc;
		w->dropped_by[t] = i;
	}
	return ATM_OK;
}

/* unavailable -- why input u of recomputation i's node holds no copy fit to read before node
 * k, into buf; NULL when it holds one */
static const char *unavailable(struct walk *w, int32_t i, int32_t u, int32_t k, char *buf,
                               size_t len)
{
	const atm_graph *g = w->g;
	int32_t pk = w->producer[i];
	if (atm_tensor_is_persistent(atm_graph_tensor(g, u))) {
		/* a persistent tensor always has a copy (slow ones too), but one written since
		 * the node ran holds other values */
		if (w->written_at[u] <= pk)
			return NULL;
		snprintf(buf, len, "node %d ('%s') wrote it after node %d ran", w->written_at[u],
		         node_name(g, w->written_at[u]), pk);
		return buf;
	}
	if (w->ts[u].fast || w->ts[u].slow)
		return NULL;
	if (w->dropped_by[u] >= 0) {
		const atm_recompute *q = atm_plan_recompute(w->p, w->dropped_by[u]);
		snprintf(buf, len, "recomputation %d dropped it after node %d until before node %d; an "
		         "input is made again with a recomputation only by a link, for a tensor no longer "
		         "live there", w->dropped_by[u], q->drop_after, q->before);
	} else if (atm_liveness_last(w->lv, u) < k) {
		snprintf(buf, len, "its last use is node %d, and it is freed there; a link (a "
		         "recomputation of it dropped after node %d, before node %d) would make it again",
		         atm_liveness_last(w->lv, u), atm_liveness_last(w->lv, u), k);
	} else {
		snprintf(buf, len, "it holds no copy there");
	}
	return buf;
}

/* free_links -- after the recomputation at position j of node k's bucket: the links its node
 * read that no later recomputation there reads are freed (after node k - 1, as it was made) */
static atm_status free_links(struct walk *w, int32_t k, int32_t j)
{
	const atm_node *n = atm_graph_node(w->g, w->producer[w->by_before[j]]);
	atm_status rc;
	for (int a = 0; a < n->n_in; a++) {
		int32_t u = n->in[a];
		bool made = false, later = false;
		for (int32_t l = w->before_at[k]; l < j && !made; l++)
			made = w->link[w->by_before[l]] &&
			       atm_plan_recompute(w->p, w->by_before[l])->tensor == u;
		for (int32_t l = j + 1; made && l < w->before_at[k + 1] && !later; l++)
			later = node_uses(w->g, w->producer[w->by_before[l]], u, true);
		/* the fast test: a node that reads u twice frees it once */
		if (made && !later && w->ts[u].fast && (rc = free_copy(w, u, ATM_LOC_FAST, k - 1)) < 0)
			return rc;
	}
	return ATM_OK;
}

/* remake -- the recomputations made again before node k, in the order of their producers: each
 * node's inputs settled, its output allocated in fast memory, its other outputs in scratch
 * beside its workspace, the node run again, and the links it was the last to read freed */
static atm_status remake(struct walk *w, int32_t k)
{
	const atm_graph *g = w->g;
	atm_schedule_stats *st = &w->s->stats;
	atm_status rc;
	char why[256];
	for (int32_t j = w->before_at[k]; j < w->before_at[k + 1]; j++) {
		int32_t i = w->by_before[j], pk = w->producer[i];
		int32_t t = atm_plan_recompute(w->p, i)->tensor;
		const atm_node *n = atm_graph_node(g, pk);
		const atm_tensor *x = atm_graph_tensor(g, t);
		unsigned *cfg = w->s->rcfg + w->s->rcfg_at[i];
		for (int a = 0; a < n->n_in; a++) {
			int32_t u = n->in[a];
			if ((rc = finish_move(w, u, k - 1)) < 0)
				return rc;
			if (unavailable(w, i, u, k, why, sizeof why))
				return atm_err(ATM_E_INPUT, "recomputation %d of '%s': input '%s' of node '%s' is "
				               "not available before node %d ('%s') (%s)", i, x->name,
				               atm_graph_tensor(g, u)->name, n->name, k, node_name(g, k), why);
		}
		if ((rc = alloc_copy(w, t, ATM_LOC_FAST, k - 1, false)) < 0)
			return atm_err_prefix(rc, "recomputation %d of '%s' before node %d: ", i, x->name, k);
		w->dropped_by[t] = -1;
		for (int a = 0; a < n->n_in; a++)
			cfg[a] = w->ts[n->in[a]].fast ? ATM_LOC_FAST : ATM_LOC_SLOW;
		/* the node's other outputs are written into scratch and discarded: aligned blocks
		 * after its workspace, all of it a block of the arena while the kernel runs */
		int64_t extra = 0;
		for (int o = 0; o < n->n_out; o++) {
			cfg[n->n_in + o] = ATM_LOC_FAST;
			if (n->out[o] != t)
				extra += atm_arena_align_up(atm_graph_tensor(g, n->out[o])->bytes);
		}
		int64_t ws = atm_plan_workspace(w->p, pk), block = ws + extra, ws_off = 0;
		if (block > 0) {
			char parts[96] = "";
			if (extra)
				snprintf(parts, sizeof parts, ": %lld of its kernel's, %lld of scratch for its "
				         "other outputs", (long long)ws, (long long)extra);
			if (w->limit && w->fast_bytes + block > w->limit)
				return atm_err(ATM_E_INFEASIBLE, "recomputation %d of '%s' before node %d ('%s'): "
				               "the workspace of node '%s' (%lld bytes%s) does not fit: fast "
				               "memory would hold %lld bytes, over the limit of %lld", i, x->name,
				               k, node_name(g, k), n->name, (long long)block, parts,
				               (long long)(w->fast_bytes + block), (long long)w->limit);
			if ((ws_off = arena_take(&w->arena, block)) < 0)
				return atm_err(ATM_E_INTERNAL, "the workspace of node '%s' (%lld bytes) finds no "
				               "room in an unbounded arena", n->name, (long long)block);
		}
		rc = push(w, (atm_event){.kind = ATM_EV_RECOMPUTE, .node = pk, .tensor = t, .move = -1,
		                         .recompute = i, .loc = ATM_LOC_FAST, .offset = ws_off,
		                         .cfg = NULL, .workspace_bytes = block}, false);
		if (rc < 0 || (block > 0 && (rc = arena_give(&w->arena, ws_off, block)) < 0))
			return rc;
		st->n_recomputes++;
		st->bytes_recomputed += x->bytes;
		if ((rc = free_links(w, k, j)) < 0)
			return rc;
	}
	return ATM_OK;
}

/* sort_by_producer -- each node's recomputations in the order of their producers (the graph's
 * order: a link before what reads it), stable */
static void sort_by_producer(struct walk *w, int32_t nn)
{
	for (int32_t k = 0; k < nn; k++)
		for (int32_t j = w->before_at[k] + 1; j < w->before_at[k + 1]; j++) {
			int32_t i = w->by_before[j], l = j;
			for (; l > w->before_at[k] && w->producer[w->by_before[l - 1]] > w->producer[i]; l--)
				w->by_before[l] = w->by_before[l - 1];
			w->by_before[l] = i;
		}
}

/* prepare_recomputes -- the walk's tables for the plan's recomputations, each checked */
static atm_status prepare_recomputes(struct walk *w)
{
	int32_t nr = atm_plan_n_recomputes(w->p), nn = atm_graph_n_nodes(w->g);
	int32_t nt = atm_graph_n_tensors(w->g);
	int64_t n_cfg = 0;
	atm_status rc;
	w->producer = malloc((size_t)(nr ? nr : 1) * sizeof *w->producer);
	w->link = calloc((size_t)(nr ? nr : 1), sizeof *w->link);
	w->dropped_by = malloc((size_t)(nt ? nt : 1) * sizeof *w->dropped_by);
	w->written_at = malloc((size_t)(nt ? nt : 1) * sizeof *w->written_at);
	w->s->rcfg_at = calloc((size_t)nr + 1, sizeof *w->s->rcfg_at);
	if (!w->producer || !w->link || !w->dropped_by || !w->written_at || !w->s->rcfg_at)
		return atm_err(ATM_E_NOMEM, "out of memory laying out the schedule");
	for (int32_t t = 0; t < nt; t++)
		w->dropped_by[t] = w->written_at[t] = -1;
	for (int32_t i = 0; i < nr; i++) {
		if ((rc = check_recompute(w, i)) < 0)
			return rc;
		w->s->rcfg_at[i] = n_cfg;
		n_cfg += atm_graph_node(w->g, w->producer[i])->n_in +
		         atm_graph_node(w->g, w->producer[i])->n_out;
	}
	if ((rc = check_links(w)) < 0)
		return rc;
	w->s->rcfg = calloc((size_t)(n_cfg ? n_cfg : 1), sizeof *w->s->rcfg);
	if (!w->s->rcfg)
		return atm_err(ATM_E_NOMEM, "out of memory laying out the schedule");
	if ((rc = bucket(w->p, nr, nn, true, &w->by_drop, &w->drop_at)) < 0 ||
	    (rc = bucket(w->p, nr, nn, false, &w->by_before, &w->before_at)) < 0)
		return rc;
	sort_by_producer(w, nn);
	return ATM_OK;
}

/* ---------------------------------------------------------------- layout by size */

/* One fast copy's life: events [start, end) of setup then step (end INT32_MAX: kept). */
struct life {
	atm_event *alloc, *free;
	int32_t start, end;
	int64_t len, off;
};

/* Above this many fast copies the quadratic pass is skipped: first fit stands. */
#define BY_SIZE_MAX_COPIES 30000

/* life_cmp -- larger first, then earlier */
static int life_cmp(const void *a, const void *b)
{
	const struct life *x = *(const struct life *const *)a, *y = *(const struct life *const *)b;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->start - y->start;
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* lay_by_size -- when first fit overflows the limit: place the largest copies first, each
 * at the lowest offset clear of every copy already placed that is alive with it (greedy by
 * size, as static planners of inference memory do; the whole step is known, so no copy
 * waits on the order of events), and keep that layout when it fits. First fit stands
 * otherwise: its overflows follow the order of events, which the optimizer's
 * defragmentation rounds tighten around. */
static atm_status lay_by_size(struct walk *w)
{
	int64_t limit = w->limit;
	if (!limit || w->arena.end <= atm_arena_align_down(limit))
		return ATM_OK;
	atm_schedule *s = w->s;
	int32_t n_all = s->n_setup + s->n_ev, nt = atm_graph_n_tensors(w->g), n = 0;
	atm_status rc = ATM_OK;
	struct life *lv = calloc((size_t)(n_all ? n_all : 1), sizeof *lv);
	struct life **order = calloc((size_t)(n_all ? n_all : 1), sizeof *order);
	struct span *busy = calloc((size_t)(n_all ? n_all : 1), sizeof *busy);
	int32_t *open = malloc((size_t)(nt ? nt : 1) * sizeof *open);
	if (!lv || !order || !busy || !open) {
		rc = atm_err(ATM_E_NOMEM, "out of memory laying out the fast arena");
		goto done;
	}
	for (int32_t t = 0; t < nt; t++)
		open[t] = -1;
	for (int32_t i = 0; i < n_all; i++) {
		atm_event *ev = i < s->n_setup ? &s->setup[i] : &s->ev[i - s->n_setup];
		if ((ev->kind == ATM_EV_KERNEL || ev->kind == ATM_EV_RECOMPUTE) &&
		    ev->workspace_bytes > 0) {
			/* a kernel's workspace lives for its own event alone (a recomputation's too) */
			lv[n++] = (struct life){ev, NULL, i, i + 1, atm_arena_align_up(ev->workspace_bytes), 0};
			continue;
		}
		if ((ev->kind != ATM_EV_ALLOC && ev->kind != ATM_EV_FREE) || ev->loc != ATM_LOC_FAST)
			continue;
		if (ev->kind == ATM_EV_ALLOC) {
			lv[n] = (struct life){ev, NULL, i, INT32_MAX,
			                      atm_arena_align_up(atm_graph_tensor(w->g, ev->tensor)->bytes), 0};
			open[ev->tensor] = n++;
		} else if (open[ev->tensor] >= 0) {
			lv[open[ev->tensor]].free = ev;
			lv[open[ev->tensor]].end = i;
			open[ev->tensor] = -1;
		}
	}
	if (n > BY_SIZE_MAX_COPIES)
		goto done;
	for (int32_t i = 0; i < n; i++)
		order[i] = &lv[i];
	qsort(order, (size_t)n, sizeof *order, life_cmp);
	int64_t extent = 0;
	for (int32_t i = 0; i < n; i++) {
		struct life *c = order[i];
		int32_t nb = 0;
		for (int32_t j = 0; j < i; j++) {
			const struct life *d = order[j];
			if (d->start < c->end && c->start < d->end)
				busy[nb++] = (struct span){d->off, d->len};
		}
		qsort(busy, (size_t)nb, sizeof *busy, span_cmp);
		int64_t at = 0;
		for (int32_t j = 0; j < nb && busy[j].off < at + c->len; j++)
			if (busy[j].off + busy[j].len > at)
				at = busy[j].off + busy[j].len;
		c->off = at;
		if (at + c->len > extent)
			extent = at + c->len;
	}
	if (extent > atm_arena_align_down(limit))
		goto done;
	for (int32_t i = 0; i < n; i++) {
		lv[i].alloc->offset = lv[i].off;
		if (lv[i].free)
			lv[i].free->offset = lv[i].off;
	}
	w->arena.end = extent;
done:
	free(open);
	free(busy);
	free(order);
	free(lv);
	return rc;
}

/* check_arena -- the laid out copies against the plan's limit: the first copy that ends
 * past it is reported as first fit would have */
static atm_status check_arena(struct walk *w)
{
	int64_t limit = w->limit;
	atm_schedule *s = w->s;
	int64_t arena = atm_arena_align_down(limit), fast = 0;
	if (!limit || w->arena.end <= arena)
		return ATM_OK;
	for (int32_t i = 0; i < s->n_setup + s->n_ev; i++) {
		const atm_event *ev = i < s->n_setup ? &s->setup[i] : &s->ev[i - s->n_setup];
		if ((ev->kind == ATM_EV_KERNEL || ev->kind == ATM_EV_RECOMPUTE) &&
		    ev->workspace_bytes > 0 && ev->offset + atm_arena_align_up(ev->workspace_bytes) > arena)
			return atm_err(ATM_E_INFEASIBLE, "at node %d ('%s') the %s workspace (%lld "
			               "bytes) does not fit in the fast arena of %lld bytes for "
			               "fragmentation (%lld bytes in use)", ev->node,
			               node_name(w->g, ev->node),
			               ev->kind == ATM_EV_KERNEL ? "kernel's" : "recomputation's",
			               (long long)ev->workspace_bytes, (long long)limit, (long long)fast);
		if ((ev->kind != ATM_EV_ALLOC && ev->kind != ATM_EV_FREE) || ev->loc != ATM_LOC_FAST)
			continue;
		const atm_tensor *x = atm_graph_tensor(w->g, ev->tensor);
		fast += ev->kind == ATM_EV_ALLOC ? x->bytes : -x->bytes;
		if (ev->kind == ATM_EV_ALLOC && ev->offset + atm_arena_align_up(x->bytes) > arena)
			return atm_err(ATM_E_INFEASIBLE, "at node %d ('%s') tensor '%s' (%lld bytes) does not "
			               "fit in the fast arena of %lld bytes for fragmentation (%lld bytes in "
			               "use)", ev->node, node_name(w->g, ev->node), x->name,
			               (long long)x->bytes, (long long)limit, (long long)(fast - x->bytes));
	}
	return atm_err(ATM_E_INTERNAL, "the fast arena of %lld bytes overflows, but no copy ends "
	               "past it", (long long)limit);
}

/* walk_step -- the events of one step, after the persistent tensors are set up */
static atm_status walk_step(struct walk *w)
{
	int32_t nn = atm_graph_n_nodes(w->g), nt = atm_graph_n_tensors(w->g);
	atm_status rc;
	for (int32_t k = -1; k < nn; k++) {
		if (k >= 0) {
			/* asynchronous moves due before node k */
			for (int32_t i = 0; i < w->n_flying;) {
				int32_t t = w->flying[i];
				if (w->ts[t].wait_at > k) {
					i++;
					continue;
				}
				if ((rc = finish_move(w, t, k - 1)) < 0) /* removes t from flying */
					return rc;
			}
			if ((rc = remake(w, k)) < 0 || (rc = kernel(w, k)) < 0)
				return rc;
		}
		for (int32_t i = w->after_at[k + 1]; i < w->after_at[k + 2]; i++)
			if ((rc = start_move(w, w->by_after[i], k)) < 0)
				return rc;
		if (k < 0)
			continue;
		/* tensors whose last use was node k */
		const atm_node *n = atm_graph_node(w->g, k);
		for (int i = 0; i < n->n_in + n->n_out; i++) {
			int32_t t = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
			if (atm_tensor_is_persistent(atm_graph_tensor(w->g, t)) ||
			    atm_liveness_last(w->lv, t) != k || (!w->ts[t].fast && !w->ts[t].slow))
				continue;
			if ((rc = finish_move(w, t, k)) < 0)
				return rc;
			if (w->ts[t].fast && (rc = free_copy(w, t, ATM_LOC_FAST, k)) < 0)
				return rc;
			if (w->ts[t].slow && (rc = free_copy(w, t, ATM_LOC_SLOW, k)) < 0)
				return rc;
		}
		if ((rc = drop_copies(w, k)) < 0)
			return rc;
	}
	/* the step's end: every move done, persistent tensors back where they started */
	for (int32_t t = 0; t < nt; t++)
		if ((rc = finish_move(w, t, nn - 1)) < 0)
			return rc;
	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(w->g, t);
		if (!atm_tensor_is_persistent(x))
			continue;
		unsigned home = atm_plan_location(w->p, t);
		bool has = home == ATM_LOC_FAST ? w->ts[t].fast : w->ts[t].slow;
		if (!has)
			return atm_err(ATM_E_INPUT, "tensor '%s' starts the step in %s memory but ends it "
			               "without a valid copy there; add a move back after the last node", x->name,
			               home == ATM_LOC_FAST ? "fast" : "slow");
		unsigned other = home == ATM_LOC_FAST ? ATM_LOC_SLOW : ATM_LOC_FAST;
		bool extra = other == ATM_LOC_FAST ? w->ts[t].fast : w->ts[t].slow;
		if (extra && (rc = free_copy(w, t, other, nn - 1)) < 0)
			return rc;
	}
	return ATM_OK;
}

atm_status atm_schedule_new(atm_schedule **out, const atm_plan *p)
{
	const atm_graph *g = atm_plan_graph(p);
	int32_t nn = atm_graph_n_nodes(g), nt = atm_graph_n_tensors(g);
	struct walk w = {.g = g, .p = p};
	int64_t n_cfg = 0;
	atm_status rc;
	*out = NULL;
	w.s = calloc(1, sizeof *w.s);
	if (!w.s)
		return atm_err(ATM_E_NOMEM, "out of memory laying out the schedule");
	w.s->p = p;
	w.s->stats.fast_peak_node = -1;
	rc = atm_liveness_new(&w.lv, g);
	if (rc < 0)
		goto fail;
	/* the walk lays the step out by first fit in an unbounded arena, lay_by_size tries a
	 * smaller one, and only then is the limit held against it */
	w.limit = atm_plan_info_get(p)->fast_limit_bytes;
	rc = arena_init(&w.arena);
	if (rc < 0)
		goto fail;
	w.ts = calloc((size_t)(nt ? nt : 1), sizeof *w.ts);
	w.flying = calloc((size_t)(nt ? nt : 1), sizeof *w.flying);
	w.s->cfg_at = calloc((size_t)nn + 1, sizeof *w.s->cfg_at);
	w.s->fast_at = calloc((size_t)nn + 1, sizeof *w.s->fast_at);
	if (!w.ts || !w.flying || !w.s->cfg_at || !w.s->fast_at) {
		rc = atm_err(ATM_E_NOMEM, "out of memory laying out the schedule");
		goto fail;
	}
	for (int32_t k = 0; k < nn; k++) {
		w.s->cfg_at[k] = n_cfg;
		n_cfg += atm_graph_node(g, k)->n_in + atm_graph_node(g, k)->n_out;
	}
	w.s->cfg = calloc((size_t)(n_cfg ? n_cfg : 1), sizeof *w.s->cfg);
	if (!w.s->cfg) {
		rc = atm_err(ATM_E_NOMEM, "out of memory laying out the schedule");
		goto fail;
	}
	for (int32_t t = 0; t < nt; t++)
		w.ts[t].inflight = -1;
	if ((rc = sort_moves(&w)) < 0 || (rc = prepare_recomputes(&w)) < 0)
		goto fail;
	/* persistent tensors first: they keep their place in the arena for every step */
	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (!atm_tensor_is_persistent(x))
			continue;
		unsigned loc = atm_plan_location(p, t);
		if ((rc = alloc_copy(&w, t, loc, -1, true)) < 0)
			goto fail;
		if (loc == ATM_LOC_FAST)
			w.s->stats.persistent_fast_bytes += x->bytes;
		else
			w.s->stats.persistent_slow_bytes += x->bytes;
	}
	if ((rc = walk_step(&w)) < 0 || (rc = lay_by_size(&w)) < 0 || (rc = check_arena(&w)) < 0)
		goto fail;
	/* kernel events point at their node's configuration now that the arrays are final */
	for (int32_t i = 0; i < w.s->n_ev; i++)
		if (w.s->ev[i].kind == ATM_EV_KERNEL)
			w.s->ev[i].cfg = w.s->cfg + w.s->cfg_at[w.s->ev[i].node];
		else if (w.s->ev[i].kind == ATM_EV_RECOMPUTE)
			w.s->ev[i].cfg = w.s->rcfg + w.s->rcfg_at[w.s->ev[i].recompute];
	w.s->stats.fast_arena_bytes = w.arena.end;
	*out = w.s;
	w.s = NULL;
fail:
	/* the walk's state goes either way; the schedule only on failure */
	free(w.arena.free);
	free(w.flying);
	free(w.ts);
	free(w.by_after);
	free(w.after_at);
	free(w.by_drop);
	free(w.drop_at);
	free(w.by_before);
	free(w.before_at);
	free(w.producer);
	free(w.link);
	free(w.dropped_by);
	free(w.written_at);
	atm_liveness_destroy(w.lv);
	atm_schedule_destroy(w.s);
	return rc;
}

void atm_schedule_destroy(atm_schedule *s)
{
	if (!s)
		return;
	free(s->ev);
	free(s->setup);
	free(s->cfg);
	free(s->cfg_at);
	free(s->rcfg);
	free(s->rcfg_at);
	free(s->fast_at);
	free(s);
}

int32_t atm_schedule_n_events(const atm_schedule *s)
{
	return s->n_ev;
}

const atm_event *atm_schedule_event(const atm_schedule *s, int32_t i)
{
	return i >= 0 && i < s->n_ev ? &s->ev[i] : NULL;
}

double atm_emulated_extra_s(double read_bytes, double written_bytes, double read_gbps,
                            double write_gbps, double fast_gbps)
{
	double r = read_bytes > 0 ? read_bytes : 0, w = written_bytes > 0 ? written_bytes : 0;
	double slow = r / (read_gbps * 1e9) + w / (write_gbps * 1e9);
	double fast = (r + w) / (fast_gbps * 1e9);
	return slow > fast ? slow - fast : 0;
}

double atm_schedule_emulated_wait_s(const atm_schedule *s, double read_gbps, double write_gbps,
                                    double fast_gbps)
{
	if (!(read_gbps > 0 && write_gbps > 0 && fast_gbps > 0))
		return 0;
	const atm_graph *g = atm_plan_graph(s->p);
	double total = 0;
	for (int32_t i = 0; i < s->n_ev; i++) {
		const atm_event *ev = &s->ev[i];
		double r = 0, w = 0;
		if (ev->kind == ATM_EV_KERNEL || ev->kind == ATM_EV_RECOMPUTE) {
			const atm_node *n = atm_graph_node(g, ev->node);
			for (int k = 0; k < n->n_in; k++)
				if (ev->cfg[k] != ATM_LOC_FAST) {
					double b = (double)atm_graph_tensor(g, n->in[k])->bytes;
					r += b;
					w += atm_op_writes_input(n->op, k) ? b : 0;
				}
			for (int k = 0; k < n->n_out; k++)
				if (ev->cfg[n->n_in + k] != ATM_LOC_FAST)
					w += (double)atm_graph_tensor(g, n->out[k])->bytes;
		} else if (ev->kind == ATM_EV_MOVE_START && !atm_plan_move(s->p, ev->move)->async) {
			double b = (double)atm_graph_tensor(g, ev->tensor)->bytes;
			bool to_slow = atm_plan_move(s->p, ev->move)->to == ATM_LOC_SLOW;
			r += to_slow ? 0 : b;
			w += to_slow ? b : 0;
		}
		if (r > 0 || w > 0)
			total += atm_emulated_extra_s(r, w, read_gbps, write_gbps, fast_gbps);
	}
	return total;
}

int32_t atm_schedule_n_setup(const atm_schedule *s)
{
	return s->n_setup;
}

const atm_event *atm_schedule_setup(const atm_schedule *s, int32_t i)
{
	return i >= 0 && i < s->n_setup ? &s->setup[i] : NULL;
}

const atm_schedule_stats *atm_schedule_stats_get(const atm_schedule *s)
{
	return &s->stats;
}

int64_t atm_schedule_fast_bytes_at(const atm_schedule *s, int32_t node)
{
	return node >= 0 && node < atm_graph_n_nodes(atm_plan_graph(s->p)) ? s->fast_at[node] : 0;
}
