/* data_parallel.c -- a training step made data-parallel: its updates' gradients averaged over the
 * ranks in buckets, each bucket one allreduce node placed and priced like any kernel */
#include "core_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A bucket: the updates whose gradients one allreduce averages, in schedule order. */
struct bucket {
	int32_t node[ATM_ALLREDUCE_BUCKET_TENSORS]; /* the updates, ids in g */
	int n;
	int64_t bytes;
};

/* copy_update -- update node n of g into c, reading its gradient (input 1) from mean */
static atm_status copy_update(atm_graph *c, const atm_node *n, int32_t mean)
{
	int32_t in[8];
	if (n->n_in > (int)(sizeof in / sizeof in[0]))
		return atm_err(ATM_E_INTERNAL, "update '%s': %d inputs", n->name, n->n_in);
	memcpy(in, n->in, (size_t)n->n_in * sizeof *in);
	in[1] = mean;
	return atm_graph_copy_node(c, n, in);
}

/* flush -- bucket k's allreduce into c (the gradients of its updates in, "G.mean" out), then
 * its updates reading the means; the bucket is emptied */
static atm_status flush(const atm_graph *g, atm_graph *c, struct bucket *b, int k, int ranks)
{
	int32_t grads[ATM_ALLREDUCE_BUCKET_TENSORS], means[ATM_ALLREDUCE_BUCKET_TENSORS], id;
	atm_status rc = ATM_OK;
	if (!b->n)
		return ATM_OK;
	for (int i = 0; i < b->n && rc == ATM_OK; i++) {
		const atm_tensor *dw = atm_graph_tensor(g, atm_graph_node(g, b->node[i])->in[1]);
		char name[1100];
		grads[i] = dw->id;
		snprintf(name, sizeof name, "%.1024s.mean", dw->name);
		rc = atm_graph_add_tensor(c, name, dw->dtype, dw->ndim, dw->dims, ATM_KIND_GRAD,
		                          dw->locations, &means[i]);
	}
	char name[32];
	snprintf(name, sizeof name, "allreduce.%d", k);
	atm_attrs a = {.ranks = ranks};
	if (rc == ATM_OK)
		rc = atm_graph_add_node(c, name, ATM_OP_ALLREDUCE, &a, b->n, grads, b->n, means, &id);
	for (int i = 0; i < b->n && rc == ATM_OK; i++)
		rc = copy_update(c, atm_graph_node(g, b->node[i]), means[i]);
	b->n = 0;
	b->bytes = 0;
	return rc;
}

atm_status atm_graph_with_allreduce(const atm_graph *g, int ranks, int64_t bucket_bytes,
                                    atm_graph **out)
{
	atm_graph *c = NULL;
	struct bucket b = {0};
	int32_t n_updates = 0;
	int k = 0;
	atm_status rc = ATM_OK;
	*out = NULL;
	if (ranks < 2)
		return atm_err(ATM_E_USAGE, "an allreduce over %d rank%s: data parallelism takes 2 or "
		               "more", ranks, ranks == 1 ? "" : "s");
	if (bucket_bytes <= 0)
		bucket_bytes = ATM_ALLREDUCE_BUCKET_BYTES;
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
		const atm_node *n = atm_graph_node(g, i);
		if (n->op == ATM_OP_ALLREDUCE)
			return atm_err(ATM_E_USAGE, "graph '%s' averages its gradients already (node '%s')",
			               atm_graph_name(g), n->name);
		n_updates += atm_op_is_update(n->op);
	}
	if (!n_updates)
		return atm_err(ATM_E_USAGE, "graph '%s' has no update whose gradient to average",
		               atm_graph_name(g));
	if ((rc = atm_graph_copy_tensors(g, &c)) < 0)
		return rc;
	/* an update waits in its bucket; the bucket goes out once it is full, after the last of
	 * its gradients (each update follows its gradient's last part) */
	for (int32_t i = 0; i < atm_graph_n_nodes(g) && rc == ATM_OK; i++) {
		const atm_node *n = atm_graph_node(g, i);
		if (!atm_op_is_update(n->op)) {
			rc = atm_graph_copy_node(c, n, NULL);
			continue;
		}
		int64_t bytes = atm_graph_tensor(g, n->in[1])->bytes;
		if (b.n && (b.bytes + bytes > bucket_bytes || b.n == ATM_ALLREDUCE_BUCKET_TENSORS))
			rc = flush(g, c, &b, k++, ranks);
		b.node[b.n++] = i;
		b.bytes += bytes;
	}
	if (rc == ATM_OK)
		rc = flush(g, c, &b, k, ranks);
	return atm_graph_rewritten(c, rc, out);
}

int atm_graph_ranks(const atm_graph *g)
{
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++)
		if (atm_graph_node(g, i)->op == ATM_OP_ALLREDUCE)
			return atm_graph_node(g, i)->attrs.ranks;
	return 1;
}
