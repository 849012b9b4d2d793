/* digest.c -- the graph digest, by which plans, profiles and results tell the graph they are of */
#include <stdio.h>
#include <string.h>

#include "core_internal.h"

/* fnv_i64 -- h extended by v's bytes */
static uint64_t fnv_i64(uint64_t h, int64_t v)
{
	return atm_fnv1a(h, &v, sizeof v);
}

void atm_graph_digest(const atm_graph *g, char out[17])
{
	uint64_t h = ATM_FNV1A_INIT;
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		h = atm_fnv1a(h, x->name, strlen(x->name) + 1);
		h = fnv_i64(h, x->dtype);
		h = fnv_i64(h, x->kind);
		h = fnv_i64(h, x->locations);
		for (int d = 0; d < x->ndim; d++)
			h = fnv_i64(h, x->dims[d]);
	}
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		const atm_attrs *a = &n->attrs;
		h = fnv_i64(h, atm_op_entry(n->op)->digest_id); /* not the enum's value: see ops.c */
		for (int i = 0; i < n->n_in; i++)
			h = fnv_i64(h, n->in[i]);
		h = fnv_i64(h, -1);
		for (int i = 0; i < n->n_out; i++)
			h = fnv_i64(h, n->out[i]);
		int32_t ints[] = {a->kernel[0], a->kernel[1], a->stride[0], a->stride[1], a->pad[0],
		                  a->pad[1],    a->pad[2],    a->pad[3],    a->axis, a->exclude_pad};
		h = atm_fnv1a(h, ints, sizeof ints);
		if (a->groups > 1) /* ungrouped graphs keep their digests */
			h = fnv_i64(h, a->groups);
		if (a->ranks > 0) /* so do graphs without allreduce nodes */
			h = fnv_i64(h, a->ranks);
		h = fnv_i64(h, n->workspace_bytes);
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}
