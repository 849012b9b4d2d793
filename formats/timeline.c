/* timeline.c -- a plan's step as the picture of it needs it: fast memory by tensor kind at every kernel, the moves, the kernels with slow operands */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats_internal.h"

#define TL_FORMAT "autotm-timeline"
#define TL_VERSION 1
/* elements of a timeline file: one line each, keys in the order written */
#define TL_DUMP (JSON_COMPACT | JSON_PRESERVE_ORDER)
/* the kinds a kernel's fast bytes are split into: the graph's tensor kinds, then the
 * workspace the plan gives the kernel inside the fast arena */
#define TL_WORKSPACE ATM_N_KINDS
#define TL_N_KINDS (ATM_N_KINDS + 1)

/* What the walk over the schedule finds at every kernel. */
struct sample {
	int64_t kind_bytes[TL_N_KINDS];
	int64_t total_bytes; /* the kinds summed, workspace included */
	int64_t gap_bytes;   /* the most held between the previous kernel and this one */
	int64_t top_bytes;   /* the end of the highest fast copy (or workspace) in the arena */
	int64_t slow_bytes;  /* slow copies live while the kernel runs */
	const unsigned *cfg; /* where each operand is (the schedule's) */
};

/* Where each move of the plan happened in the schedule. */
struct move_at {
	bool copied;      /* a MOVE_START: bytes were copied (not a drop of a fast copy) */
	int32_t done_after; /* the node after which it was waited for (sync: its own node) */
};

/* Building state of the walk. */
struct tl_walk {
	const atm_graph *g;
	struct sample *at;   /* per node */
	struct move_at *mv;  /* per plan move */
	int32_t *live;       /* tensors holding a fast copy */
	int32_t *pos;        /* per tensor: its index in live, or -1 */
	int64_t *off;        /* per tensor: its fast copy's offset */
	int32_t n_live;
	int64_t kind_bytes[TL_N_KINDS], fast_bytes, slow_bytes;
	int64_t gap_high; /* the most held since the last kernel ran */
};

static json_t *real_or_null(double v)
{
	return v < 0 || !isfinite(v) ? json_null() : json_real(v);
}

/* kind_name -- the key of kind i in the file */
static const char *kind_name(int i)
{
	return i == TL_WORKSPACE ? "workspace" : atm_kind_name((atm_tensor_kind)i);
}

/* phase -- "update" for the in-place update of a parameter, "backward" for a kernel that
 * writes a gradient, "forward" for the rest */
static const char *phase(const atm_graph *g, const atm_node *n)
{
	if (atm_op_is_inplace(n->op))
		return "update";
	for (int i = 0; i < n->n_out; i++)
		if (atm_graph_tensor(g, n->out[i])->kind == ATM_KIND_GRAD)
			return "backward";
	return "forward";
}

/* copy_event -- an ALLOC or FREE changes what each memory holds */
static void copy_event(struct tl_walk *w, const atm_event *ev)
{
	const atm_tensor *x = atm_graph_tensor(w->g, ev->tensor);
	int64_t sign = ev->kind == ATM_EV_ALLOC ? 1 : -1;
	if (ev->loc != ATM_LOC_FAST) {
		w->slow_bytes += sign * x->bytes;
		return;
	}
	w->kind_bytes[x->kind] += sign * x->bytes;
	w->fast_bytes += sign * x->bytes;
	if (sign > 0) {
		w->off[ev->tensor] = ev->offset;
		w->pos[ev->tensor] = w->n_live;
		w->live[w->n_live++] = ev->tensor;
	} else if (w->pos[ev->tensor] >= 0) {
		int32_t i = w->pos[ev->tensor], last = w->live[--w->n_live];
		w->live[i] = last;
		w->pos[last] = i;
		w->pos[ev->tensor] = -1;
	}
	if (w->fast_bytes > w->gap_high)
		w->gap_high = w->fast_bytes;
}

/* kernel_event -- the sample of the kernel ev runs */
static void kernel_event(struct tl_walk *w, const atm_event *ev)
{
	struct sample *s = &w->at[ev->node];
	int64_t top = 0;
	memcpy(s->kind_bytes, w->kind_bytes, sizeof s->kind_bytes);
	s->kind_bytes[TL_WORKSPACE] = ev->workspace_bytes;
	s->total_bytes = w->fast_bytes + ev->workspace_bytes;
	s->gap_bytes = w->gap_high;
	for (int32_t i = 0; i < w->n_live; i++) {
		int32_t t = w->live[i];
		int64_t end = w->off[t] + atm_arena_align_up(atm_graph_tensor(w->g, t)->bytes);
		if (end > top)
			top = end;
	}
	if (ev->workspace_bytes > 0 && ev->offset + atm_arena_align_up(ev->workspace_bytes) > top)
		top = ev->offset + atm_arena_align_up(ev->workspace_bytes);
	s->top_bytes = top;
	s->slow_bytes = w->slow_bytes;
	s->cfg = ev->cfg;
	w->gap_high = w->fast_bytes; /* the next gap starts from what the kernel leaves */
}

/* walk -- replay the schedule's events: per node what fast memory holds, per move where it ran */
static atm_status walk(struct tl_walk *w, const atm_schedule *s, int32_t nn)
{
	for (int32_t i = 0; i < atm_schedule_n_setup(s); i++)
		copy_event(w, atm_schedule_setup(s, i));
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		const atm_event *ev = atm_schedule_event(s, i);
		switch (ev->kind) {
		case ATM_EV_ALLOC:
		case ATM_EV_FREE:
			copy_event(w, ev);
			break;
		case ATM_EV_KERNEL:
			kernel_event(w, ev);
			break;
		case ATM_EV_MOVE_START:
			w->mv[ev->move].copied = true;
			break;
		case ATM_EV_MOVE_WAIT:
			w->mv[ev->move].done_after = ev->node;
			break;
		case ATM_EV_RECOMPUTE:
			/* its copy's ALLOC is the memory it keeps; a workspace it takes while it runs
			 * counts in the gap before the next kernel */
			if (w->fast_bytes + ev->workspace_bytes > w->gap_high)
				w->gap_high = w->fast_bytes + ev->workspace_bytes;
			break;
		}
	}
	for (int32_t k = 0; k < nn; k++)
		if (!w->at[k].cfg)
			return atm_err(ATM_E_INTERNAL, "the schedule runs no kernel for node %d", k);
	return ATM_OK;
}

/* operands_json -- the names of node n's inputs (or outputs) that cfg puts in slow memory */
static json_t *operands_json(const atm_graph *g, const atm_node *n, const unsigned *cfg,
                             bool outputs)
{
	json_t *a = json_array();
	int from = outputs ? n->n_in : 0, to = outputs ? n->n_in + n->n_out : n->n_in;
	for (int i = from; a && i < to; i++) {
		if (cfg[i] != ATM_LOC_SLOW)
			continue;
		int32_t t = outputs ? n->out[i - n->n_in] : n->in[i];
		if (json_array_append_new(a, json_string(atm_graph_tensor(g, t)->name)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* kernel_json -- one kernel's line */
static json_t *kernel_json(const atm_graph *g, int32_t k, const struct sample *s,
                           const double *pred_s)
{
	const atm_node *n = atm_graph_node(g, k);
	bool ok = true;
	json_t *o = json_object(), *kinds = json_object();
	atm_json_set_new(o, "index", json_integer(k), &ok);
	atm_json_set_new(o, "name", json_string(n->name), &ok);
	atm_json_set_new(o, "op", json_string(atm_op_name(n->op)), &ok);
	atm_json_set_new(o, "phase", json_string(phase(g, n)), &ok);
	for (int i = 0; i < TL_N_KINDS; i++)
		atm_json_set_new(kinds, kind_name(i), json_integer(s->kind_bytes[i]), &ok);
	atm_json_set_new(o, "fast_bytes", kinds, &ok);
	atm_json_set_new(o, "fast_total_bytes", json_integer(s->total_bytes), &ok);
	atm_json_set_new(o, "gap_high_bytes", json_integer(s->gap_bytes), &ok);
	atm_json_set_new(o, "arena_top_bytes", json_integer(s->top_bytes), &ok);
	atm_json_set_new(o, "slow_bytes", json_integer(s->slow_bytes), &ok);
	atm_json_set_new(o, "slow_inputs", operands_json(g, n, s->cfg, false), &ok);
	atm_json_set_new(o, "slow_outputs", operands_json(g, n, s->cfg, true), &ok);
	atm_json_set_new(o, "predicted_s", pred_s ? real_or_null(pred_s[k]) : json_null(), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* move_json -- one move's line */
static json_t *move_json(const atm_plan *p, int32_t m, const struct move_at *at)
{
	const atm_graph *g = atm_plan_graph(p);
	const atm_move *mv = atm_plan_move(p, m);
	const atm_tensor *x = atm_graph_tensor(g, mv->tensor);
	bool ok = true;
	json_t *o = json_object();
	atm_json_set_new(o, "index", json_integer(m), &ok);
	atm_json_set_new(o, "tensor", json_string(x->name), &ok);
	atm_json_set_new(o, "kind", json_string(atm_kind_name(x->kind)), &ok);
	atm_json_set_new(o, "bytes", json_integer(x->bytes), &ok);
	atm_json_set_new(o, "to", json_string(mv->to == ATM_LOC_FAST ? "fast" : "slow"), &ok);
	atm_json_set_new(o, "mode", json_string(mv->async ? "async" : "sync"), &ok);
	atm_json_set_new(o, "after", json_integer(mv->after), &ok);
	atm_json_set_new(o, "done_after", json_integer(at->done_after), &ok);
	atm_json_set_new(o, "copied", json_boolean(at->copied), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* profile_json -- the machine the plan was priced on and its move speeds; null when unknown */
static json_t *profile_json(const atm_profile *prof)
{
	if (!prof)
		return json_null();
	json_t *o = atm_profile_machine_json(atm_profile_machine_get(prof));
	atm_profile_moves mv;
	bool ok = o != NULL, have = atm_profile_get_moves(prof, &mv) == ATM_OK;
	atm_err_clear(); /* a profile without move speeds is no failure here */
	atm_json_set_new(o, "to_fast_gbps", have ? json_real(mv.to_fast_gbps) : json_null(), &ok);
	atm_json_set_new(o, "to_slow_gbps", have ? json_real(mv.to_slow_gbps) : json_null(), &ok);
	atm_json_set_new(o, "overlap_loss", have ? json_real(mv.overlap_loss) : json_null(), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* field -- ",\n  \"key\": " and v (stolen) on one line: a top-level field of the file */
static void field(atm_text *t, const char *key, json_t *v)
{
	atm_text_add(t, ",\n  \"%s\": ", key);
	atm_text_json_new(t, v, TL_DUMP);
}

/* head_json -- the fields before the kernels: what the plan is, of what, on what */
static void head_json(atm_text *t, const atm_plan *p, const atm_schedule *s,
                      const atm_timeline_opts *o, bool *ok)
{
	const atm_graph *g = atm_plan_graph(p);
	const atm_plan_info *info = atm_plan_info_get(p);
	const atm_results_workload *wl = o ? o->workload : NULL;
	const atm_schedule_stats *st = atm_schedule_stats_get(s);
	char digest[17];
	atm_graph_digest(g, digest);
	int64_t batch = wl && wl->batch > 0 ? wl->batch : atm_graph_batch(g);
	json_t *gr = json_object(), *solver = json_object(), *kinds = json_array();
	atm_json_set_new(gr, "name", json_string(atm_graph_name(g)), ok);
	atm_json_set_new(gr, "digest", json_string(digest), ok);
	atm_json_set_new(gr, "n_tensors", json_integer(atm_graph_n_tensors(g)), ok);
	atm_json_set_new(gr, "n_nodes", json_integer(atm_graph_n_nodes(g)), ok);
	atm_json_set_new(gr, "batch", batch > 0 ? json_integer(batch) : json_null(), ok);
	atm_json_set_new(gr, "preset", wl && wl->preset ? json_string(wl->preset) : json_null(), ok);
	atm_json_set_new(gr, "image", wl && wl->image > 0 ? json_integer(wl->image) : json_null(), ok);
	atm_json_set_new(solver, "name", info->solver[0] ? json_string(info->solver) : json_null(), ok);
	atm_json_set_new(solver, "status", json_string(info->solver_status), ok);
	atm_json_set_new(solver, "mip_gap", real_or_null(info->mip_gap), ok);
	for (int i = 0; kinds && i < TL_N_KINDS; i++)
		if (json_array_append_new(kinds, json_string(kind_name(i))) < 0)
			*ok = false;
	atm_text_add(t, "{\n  \"format\": \"" TL_FORMAT "\",\n  \"version\": %d,\n  \"graph\": ",
	             TL_VERSION);
	atm_text_json_new(t, gr, TL_DUMP);
	field(t, "formulation", json_string(info->formulation));
	field(t, "fast_limit_bytes",
	      info->fast_limit_bytes ? json_integer(info->fast_limit_bytes) : json_null());
	field(t, "ratio", info->ratio_slow + info->ratio_fast > 0
	      ? json_pack("{s:f, s:f}", "slow", info->ratio_slow, "fast", info->ratio_fast)
	      : json_null());
	field(t, "predicted_runtime_s", real_or_null(info->predicted_runtime_s));
	field(t, "estimated", json_boolean(info->estimated));
	field(t, "solver", solver);
	field(t, "profile", profile_json(o ? o->profile : NULL));
	field(t, "fast_peak_bytes", json_integer(st->fast_peak_bytes));
	field(t, "fast_arena_bytes", json_integer(st->fast_arena_bytes));
	field(t, "persistent_fast_bytes", json_integer(st->persistent_fast_bytes));
	field(t, "persistent_slow_bytes", json_integer(st->persistent_slow_bytes));
	field(t, "kinds", kinds);
}

atm_status atm_timeline_dump(const atm_plan *p, const atm_schedule *s, const atm_timeline_opts *o,
                             char **out)
{
	const atm_graph *g = atm_plan_graph(p);
	int32_t nn = atm_graph_n_nodes(g), nt = atm_graph_n_tensors(g), nm = atm_plan_n_moves(p);
	atm_schedule *own = NULL;
	struct tl_walk w = {.g = g};
	atm_text t = {0};
	bool ok = true; /* every field set: a failed allocation fails the dump, it drops nothing */
	atm_status rc;
	*out = NULL;
	if (!s) {
		if ((rc = atm_schedule_new(&own, p)) < 0)
			return rc;
		s = own;
	}
	w.at = calloc((size_t)(nn ? nn : 1), sizeof *w.at);
	w.mv = calloc((size_t)(nm ? nm : 1), sizeof *w.mv);
	w.live = malloc((size_t)(nt ? nt : 1) * sizeof *w.live);
	w.pos = malloc((size_t)(nt ? nt : 1) * sizeof *w.pos);
	w.off = calloc((size_t)(nt ? nt : 1), sizeof *w.off);
	if (!w.at || !w.mv || !w.live || !w.pos || !w.off) {
		rc = atm_err(ATM_E_NOMEM, "out of memory writing a timeline");
		goto done;
	}
	for (int32_t i = 0; i < nt; i++)
		w.pos[i] = -1;
	for (int32_t m = 0; m < nm; m++)
		w.mv[m].done_after = atm_plan_move(p, m)->after; /* a drop is done where it starts */
	if ((rc = walk(&w, s, nn)) < 0)
		goto done;
	head_json(&t, p, s, o, &ok);
	atm_text_str(&t, ",\n  \"kernels\": [");
	for (int32_t k = 0; k < nn; k++) {
		atm_text_str(&t, k ? ",\n    " : "\n    ");
		atm_text_json_new(&t, kernel_json(g, k, &w.at[k], o ? o->kernel_pred_s : NULL), TL_DUMP);
	}
	atm_text_str(&t, nn ? "\n  ],\n  \"moves\": [" : "],\n  \"moves\": [");
	for (int32_t m = 0; m < nm; m++) {
		atm_text_str(&t, m ? ",\n    " : "\n    ");
		atm_text_json_new(&t, move_json(p, m, &w.mv[m]), TL_DUMP);
	}
	atm_text_str(&t, nm ? "\n  ]" : "]");
	/* after the last kernel: the moves back and the frees that end the step */
	field(&t, "end_gap_high_bytes", json_integer(w.gap_high));
	atm_text_str(&t, "\n}\n");
	if (!ok)
		t.failed = true;
	rc = atm_text_finish(&t, out, NULL, "a timeline");
done:
	free(w.off);
	free(w.pos);
	free(w.live);
	free(w.mv);
	free(w.at);
	atm_schedule_destroy(own);
	return rc;
}

atm_status atm_timeline_write(const char *path, const atm_plan *p, const atm_schedule *s,
                              const atm_timeline_opts *o)
{
	char *text = NULL;
	atm_status rc = atm_timeline_dump(p, s, o, &text);
	if (rc < 0)
		return rc;
	rc = atm_write_file_atomic(path, text, strlen(text));
	free(text);
	return rc;
}
