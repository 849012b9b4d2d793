/* limits.c -- fast-memory limits: slow:fast ratios, the least limit a graph can meet, the error for one below it */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* parse_part -- one non-negative finite number filling [s, end) */
static bool parse_part(const char *s, const char *end, double *out)
{
	char buf[64], *stop = NULL;
	size_t n = (size_t)(end - s);
	if (!n || n >= sizeof buf)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	double v = strtod(buf, &stop);
	if (stop == buf || *stop || errno || !isfinite(v) || v < 0)
		return false;
	*out = v;
	return true;
}

atm_status atm_opt_parse_ratio(const char *s, double *slow, double *fast)
{
	const char *colon = s ? strchr(s, ':') : NULL;
	double a, b;
	*slow = *fast = 0;
	if (!colon || strchr(colon + 1, ':') || !parse_part(s, colon, &a) ||
	    !parse_part(colon + 1, colon + strlen(colon), &b))
		return atm_err(ATM_E_USAGE, "ratio '%s' is not valid; expected SLOW:FAST with two "
		               "non-negative numbers, e.g. 4:1 (fast = peak / 5), 0:1 (all fast), 1:0 "
		               "(all slow)", s ? s : "(null)");
	if (a == 0 && b == 0)
		return atm_err(ATM_E_USAGE, "ratio '%s' is not valid: slow and fast cannot both be 0", s);
	*slow = a;
	*fast = b;
	return ATM_OK;
}

/* least_workspace -- the workspace node k needs at least: on a GPU whose profile is known,
 * the smallest of the algorithms the optimizer may choose (their workspace within
 * ATM_GPU_WORKSPACE_BYTES, the default's always), rounded up as the arena places it; without
 * the profile none; on a CPU the graph's */
static int64_t least_workspace(const atm_graph *g, const atm_profile *prof,
                               const atm_opt_options *o, int32_t k)
{
	if (!o || !o->workspace_in_limit)
		return 0;
	if (!o->device_only)
		return atm_graph_node(g, k)->workspace_bytes;
	int64_t least = -1;
	atm_profile_entry e;
	for (int a = 0; prof && a < ATM_MAX_ALGOS; a++)
		if (atm_profile_get_algo(prof, g, k, 0, a, &e) == ATM_OK &&
		    (!a || e.scratch_bytes <= ATM_GPU_WORKSPACE_BYTES) &&
		    (least < 0 || atm_arena_align_up(e.scratch_bytes) < least))
			least = atm_arena_align_up(e.scratch_bytes);
	atm_err_clear();
	return least > 0 ? least : 0;
}

atm_status atm_opt_min_limit(const atm_graph *g, const atm_opt_options *o, int64_t *bytes,
                             int32_t *node)
{
	return atm_opt_min_limit_profiled(g, NULL, o, bytes, node);
}

atm_status atm_opt_min_limit_profiled(const atm_graph *g, const atm_profile *prof,
                                      const atm_opt_options *o, int64_t *bytes, int32_t *node)
{
	atm_liveness *lv = NULL;
	int32_t nn = atm_graph_n_nodes(g), nt = atm_graph_n_tensors(g);
	*bytes = 0;
	*node = -1;
	atm_status rc = atm_liveness_new(&lv, g);
	if (rc < 0)
		return rc;
	int64_t *at = calloc((size_t)(nn ? nn : 1), sizeof *at);
	if (!at) {
		atm_liveness_destroy(lv);
		return atm_err(ATM_E_NOMEM, "out of memory computing the least fast limit");
	}
	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (x->locations != ATM_LOC_FAST)
			continue;
		/* the arena places copies at multiples of 64 bytes */
		for (int32_t k = atm_liveness_first(lv, t); k <= atm_liveness_last(lv, t); k++)
			at[k] += (x->bytes + 63) / 64 * 64;
	}
	/* on a GPU a kernel's operands are all in device memory while it runs */
	for (int32_t k = 0; o && o->device_only && k < nn; k++) {
		const atm_node *n = atm_graph_node(g, k);
		for (int i = 0; i < n->n_in + n->n_out; i++) {
			int32_t t = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
			bool seen = atm_graph_tensor(g, t)->locations == ATM_LOC_FAST;
			for (int j = 0; j < i && !seen; j++)
				seen = (j < n->n_in ? n->in[j] : n->out[j - n->n_in]) == t;
			if (!seen)
				at[k] += (atm_graph_tensor(g, t)->bytes + 63) / 64 * 64;
		}
	}
	for (int32_t k = 0; k < nn; k++) {
		int64_t b = at[k] + least_workspace(g, prof, o, k);
		if (b > *bytes) {
			*bytes = b;
			*node = k;
		}
	}
	free(at);
	atm_liveness_destroy(lv);
	return ATM_OK;
}

atm_status atm_opt_limit_from_ratio(const atm_graph *g, double slow, double fast, int64_t *bytes)
{
	*bytes = 0;
	if (!isfinite(slow) || !isfinite(fast) || slow < 0 || fast < 0 || (slow == 0 && fast == 0))
		return atm_err(ATM_E_USAGE, "ratio %g:%g is not valid; both parts are non-negative and "
		               "not both 0", slow, fast);
	if (slow == 0)
		return ATM_OK; /* all fast: no limit */
	if (fast == 0) {
		int32_t node;
		atm_status rc = atm_opt_min_limit(g, NULL, bytes, &node);
		if (rc < 0)
			return rc;
		if (*bytes < 1)
			*bytes = 1;
		return ATM_OK;
	}
	atm_liveness *lv = NULL;
	atm_status rc = atm_liveness_new(&lv, g);
	if (rc < 0)
		return rc;
	double peak = (double)atm_liveness_peak_bytes(lv);
	atm_liveness_destroy(lv);
	double b = floor(peak * fast / (slow + fast));
	*bytes = b < 1 ? 1 : (int64_t)b;
	return ATM_OK;
}

/* opt_infeasible -- the error for a limit below what the graph's fast-only tensors need */
atm_status opt_infeasible(const atm_graph *g, const atm_profile *prof, int64_t limit,
                          atm_opt_formulation f, const atm_opt_options *o)
{
	int64_t need = 0;
	int32_t node = -1;
	char a[32], b[32], who[256] = "";
	atm_liveness *lv = NULL;
	atm_opt_min_limit_profiled(g, prof, o, &need, &node);
	if (node >= 0 && atm_liveness_new(&lv, g) == ATM_OK) {
		/* name the largest tensors that must be fast there */
		size_t used = 0;
		int32_t shown[3] = {-1, -1, -1};
		for (int r = 0; r < 3; r++) {
			int32_t best = -1;
			for (int32_t t = 0; t < atm_graph_n_tensors(g); t++) {
				const atm_tensor *x = atm_graph_tensor(g, t);
				if (x->locations != ATM_LOC_FAST || atm_liveness_first(lv, t) > node ||
				    atm_liveness_last(lv, t) < node || t == shown[0] || t == shown[1])
					continue;
				if (best < 0 || x->bytes > atm_graph_tensor(g, best)->bytes)
					best = t;
			}
			if (best < 0)
				break;
			shown[r] = best;
			used += (size_t)snprintf(who + used, sizeof who - used, "%s'%s'", r ? ", " : "",
			                         atm_graph_tensor(g, best)->name);
			if (used >= sizeof who)
				break;
		}
		atm_liveness_destroy(lv);
	}
	if (node < 0)
		return atm_err(ATM_E_INFEASIBLE, "a fast limit of %lld bytes is too small for '%s' (%s)",
		               (long long)limit, atm_graph_name(g), atm_opt_formulation_name(f));
	return atm_err(ATM_E_INFEASIBLE, "a fast limit of %lld bytes (%s) is too small for '%s' "
	               "(%s): at node %d ('%s') %lld bytes must be in fast memory (%stensors that may "
	               "only live there%s: %s); the smallest limit that could work is %lld bytes (%s)",
	               (long long)limit, atm_format_bytes(limit, a, sizeof a), atm_graph_name(g),
	               atm_opt_formulation_name(f), node, atm_graph_node(g, node)->name,
	               (long long)need, o->device_only ? "on a GPU every operand of the kernel, and "
	                                               : "",
	               !o->workspace_in_limit ? ""
	               : o->device_only ? ", and the smallest workspace of the kernel's algorithms"
	                                : ", and the kernel's workspace",
	               who[0] ? who : "none", (long long)need, atm_format_bytes(need, b, sizeof b));
}
