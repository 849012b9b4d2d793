/* liveness.c -- live ranges of tensors and the footprint curve of a schedule */
#include <stdlib.h>

#include "atm_core.h"

struct atm_liveness {
	const atm_graph *g;
	int32_t *first, *last; /* per tensor */
	int64_t *bytes_at;     /* per node */
	int64_t peak_bytes;
	int32_t peak_node;
};

atm_status atm_liveness_new(atm_liveness **out, const atm_graph *g)
{
	int32_t nt = atm_graph_n_tensors(g), nn = atm_graph_n_nodes(g);
	atm_liveness *lv = calloc(1, sizeof *lv);
	*out = NULL;
	if (!lv)
		goto nomem;
	lv->g = g;
	lv->first = malloc((size_t)(nt + 1) * sizeof *lv->first);
	lv->last = malloc((size_t)(nt + 1) * sizeof *lv->last);
	/* one extra slot: a difference array over nodes */
	lv->bytes_at = calloc((size_t)nn + 1, sizeof *lv->bytes_at);
	if (!lv->first || !lv->last || !lv->bytes_at)
		goto nomem;

	for (int32_t t = 0; t < nt; t++) {
		bool whole = atm_tensor_is_persistent(atm_graph_tensor(g, t));
		lv->first[t] = whole ? 0 : -1;
		lv->last[t] = whole ? (nn ? nn - 1 : 0) : -1;
	}
	for (int32_t i = 0; i < nn; i++) {
		const atm_node *n = atm_graph_node(g, i);
		for (int k = 0; k < n->n_out; k++) {
			int32_t t = n->out[k];
			if (lv->first[t] < 0)
				lv->first[t] = lv->last[t] = i;
		}
		for (int k = 0; k < n->n_in; k++) {
			int32_t t = n->in[k];
			if (lv->first[t] < 0)
				lv->first[t] = i; /* an invalid graph: count it from first use */
			if (lv->last[t] < i)
				lv->last[t] = i;
		}
	}
	for (int32_t t = 0; t < nt && nn; t++) {
		if (lv->first[t] < 0)
			continue; /* never touched: takes no memory */
		int64_t b = atm_graph_tensor(g, t)->bytes;
		lv->bytes_at[lv->first[t]] += b;
		lv->bytes_at[lv->last[t] + 1] -= b;
	}
	int64_t run = 0;
	lv->peak_node = nn ? 0 : -1;
	for (int32_t i = 0; i < nn; i++) {
		run += lv->bytes_at[i];
		lv->bytes_at[i] = run + atm_graph_node(g, i)->workspace_bytes;
		if (lv->bytes_at[i] > lv->peak_bytes) {
			lv->peak_bytes = lv->bytes_at[i];
			lv->peak_node = i;
		}
	}
	*out = lv;
	return ATM_OK;
nomem:
	atm_liveness_destroy(lv);
	return atm_err(ATM_E_NOMEM, "out of memory computing liveness of '%s'", atm_graph_name(g));
}

void atm_liveness_destroy(atm_liveness *lv)
{
	if (!lv)
		return;
	free(lv->first);
	free(lv->last);
	free(lv->bytes_at);
	free(lv);
}

int32_t atm_liveness_first(const atm_liveness *lv, int32_t tensor)
{
	return tensor >= 0 && tensor < atm_graph_n_tensors(lv->g) ? lv->first[tensor] : -1;
}

int32_t atm_liveness_last(const atm_liveness *lv, int32_t tensor)
{
	return tensor >= 0 && tensor < atm_graph_n_tensors(lv->g) ? lv->last[tensor] : -1;
}

int64_t atm_liveness_bytes_at(const atm_liveness *lv, int32_t node)
{
	return node >= 0 && node < atm_graph_n_nodes(lv->g) ? lv->bytes_at[node] : 0;
}

int64_t atm_liveness_peak_bytes(const atm_liveness *lv)
{
	return lv->peak_bytes;
}

int32_t atm_liveness_peak_node(const atm_liveness *lv)
{
	return lv->peak_node;
}

atm_status atm_graph_stats_compute(const atm_graph *g, atm_graph_stats *out)
{
	atm_liveness *lv = NULL;
	atm_graph_stats s = {0};
	atm_status rc = atm_liveness_new(&lv, g);
	if (rc < 0)
		return rc;
	s.n_kernels = atm_graph_n_nodes(g);
	s.n_tensors = atm_graph_n_tensors(g);
	for (int32_t t = 0; t < s.n_tensors; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		s.total_bytes += x->bytes;
		if (x->kind == ATM_KIND_PARAM) {
			s.n_params += x->n_elems;
			s.param_bytes += x->bytes;
		}
		if (atm_tensor_is_persistent(x))
			s.io_bytes += x->bytes;
	}
	s.peak_bytes = atm_liveness_peak_bytes(lv);
	atm_liveness_destroy(lv);
	*out = s;
	return ATM_OK;
}
