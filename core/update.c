/* update.c -- the optimizer a training step ends in: SGD nodes rewritten to SGD with momentum
 * or AdamW, their states added as tensors of the graph */
#include "core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[ATM_N_UPDATES] = {"sgd", "momentum", "adamw"};

const char *atm_update_kind_name(atm_update_kind k)
{
	return (unsigned)k < ATM_N_UPDATES ? kind_names[k] : "?";
}

atm_status atm_update_kind_from_name(const char *s, atm_update_kind *out)
{
	int i = 0;
	atm_status rc = atm_name_lookup("optimizer", kind_names, ATM_N_UPDATES, s, &i);
	*out = (atm_update_kind)i;
	if (rc < 0) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s", atm_errmsg());
		return atm_err(ATM_E_USAGE, "%s", msg);
	}
	return ATM_OK;
}

atm_update atm_update_defaults(atm_update_kind kind)
{
	atm_update u = {.kind = kind, .momentum = 0.9f, .beta1 = 0.9f, .beta2 = 0.999f,
	                .eps = 1e-8f};
	if (kind == ATM_UPDATE_ADAMW) {
		u.lr = 1e-3f;
		u.weight_decay = 1e-2f;
	}
	return u;
}

/* check_update -- u's factors in their ranges, or a usage error naming the one that is not */
static atm_status check_update(const atm_update *u)
{
	if ((unsigned)u->kind >= ATM_N_UPDATES)
		return atm_err(ATM_E_USAGE, "unknown optimizer %d (valid: sgd, momentum, adamw)",
		               (int)u->kind);
	if (!isfinite(u->lr) || u->lr < 0)
		return atm_err(ATM_E_USAGE, "learning rate %g: expected a finite number > 0",
		               (double)u->lr);
	if (!isfinite(u->weight_decay) || u->weight_decay < 0)
		return atm_err(ATM_E_USAGE, "weight decay %g: expected a finite number >= 0",
		               (double)u->weight_decay);
	if (u->kind == ATM_UPDATE_MOMENTUM && !(isfinite(u->momentum) && u->momentum > 0))
		return atm_err(ATM_E_USAGE, "momentum %g: expected a finite number > 0 (plain SGD is "
		               "--optimizer sgd)", (double)u->momentum);
	if (u->kind == ATM_UPDATE_ADAMW) {
		if (!(u->beta1 >= 0 && u->beta1 < 1 && u->beta2 >= 0 && u->beta2 < 1))
			return atm_err(ATM_E_USAGE, "betas %g, %g: expected each in [0, 1)",
			               (double)u->beta1, (double)u->beta2);
		if (!(isfinite(u->eps) && u->eps > 0))
			return atm_err(ATM_E_USAGE, "eps %g: expected a finite number > 0", (double)u->eps);
	}
	return ATM_OK;
}

/* state -- a zero-started optimizer state of parameter w: its shape (one element for a step),
 * named "W.SUFFIX"; -1 on failure */
static int32_t state(atm_graph *g, const atm_tensor *w, const char *suffix, bool scalar)
{
	char name[1100];
	int32_t id = -1;
	int64_t one = 1;
	if (snprintf(name, sizeof name, "%s.%s", w->name, suffix) >= (int)sizeof name) {
		atm_err(ATM_E_INPUT, "parameter '%.60s...': its name is too long for its states",
		        w->name);
		return -1;
	}
	if (atm_graph_add_tensor(g, name, ATM_F32, scalar ? 1 : w->ndim, scalar ? &one : w->dims,
	                         ATM_KIND_OPTIMIZER_STATE, w->locations, &id) < 0)
		atm_err_prefix(ATM_E_INPUT, "the optimizer's state of '%s': ", w->name);
	return id;
}

/* add_update -- node n (an SGD) as u's update, its states added */
static atm_status add_update(atm_graph *g, const atm_node *n, const atm_update *u)
{
	/* a copy: adding the states may move the graph's tensor array */
	const atm_tensor w = *atm_graph_tensor(g, n->in[0]);
	atm_attrs a = n->attrs; /* the fields no update reads as the SGD node had them */
	a.lr = u->lr > 0 ? u->lr : n->attrs.lr;
	a.weight_decay = u->weight_decay;
	int32_t in[5] = {n->in[0], n->in[1], -1, -1, -1}, id;
	int n_in = 2;
	atm_op op = ATM_OP_SGD_MOMENTUM;
	if (u->kind == ATM_UPDATE_MOMENTUM) {
		a.momentum = u->momentum;
		if ((in[n_in++] = state(g, &w, "momentum_buffer", false)) < 0)
			return ATM_E_INPUT;
	} else if (u->kind == ATM_UPDATE_ADAMW) {
		op = ATM_OP_ADAMW;
		a.beta1 = u->beta1;
		a.beta2 = u->beta2;
		a.epsilon = u->eps;
		if ((in[n_in++] = state(g, &w, "exp_avg", false)) < 0 ||
		    (in[n_in++] = state(g, &w, "exp_avg_sq", false)) < 0 ||
		    (in[n_in++] = state(g, &w, "step", true)) < 0)
			return ATM_E_INPUT;
	} else if (u->weight_decay == 0) {
		op = ATM_OP_SGD;
	}
	/* "W.sgd" becomes "W.adamw"; an SGD that stays one keeps its name (names are at most 1024
	 * bytes: graph-format.md) */
	char name[1100];
	size_t len = strlen(n->name);
	if (len > 4 && strcmp(n->name + len - 4, ".sgd") == 0 && op != ATM_OP_SGD)
		len -= 4;
	snprintf(name, sizeof name, "%.*s%s%s", (int)(len < 1024 ? len : 1024), n->name,
	         op == ATM_OP_SGD ? "" : ".", op == ATM_OP_SGD ? "" : atm_op_name(op));
	atm_status rc = atm_graph_add_node(g, name, op, &a, n_in, in, 0, NULL, &id);
	if (rc == ATM_OK && n->workspace_bytes)
		rc = atm_graph_set_workspace(g, id, n->workspace_bytes);
	return rc;
}

atm_status atm_graph_with_update(const atm_graph *g, const atm_update *u, atm_graph **out)
{
	atm_graph *c = NULL;
	int32_t n_sgd = 0;
	atm_status rc = check_update(u);
	*out = NULL;
	if (rc < 0)
		return rc;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		atm_op op = atm_graph_node(g, k)->op;
		n_sgd += op == ATM_OP_SGD;
		if (op == ATM_OP_SGD_MOMENTUM || op == ATM_OP_ADAMW)
			return atm_err(ATM_E_USAGE, "graph '%s' ends in %s already (node '%s'); an optimizer "
			               "option rewrites a step that ends in SGD", atm_graph_name(g),
			               atm_op_name(op), atm_graph_node(g, k)->name);
	}
	if (n_sgd == 0)
		return atm_err(ATM_E_USAGE, "graph '%s' has no SGD update to rewrite to %s",
		               atm_graph_name(g), atm_update_kind_name(u->kind));
	if ((rc = atm_graph_copy_tensors(g, &c)) < 0)
		return rc;
	for (int32_t k = 0; k < atm_graph_n_nodes(g) && rc == ATM_OK; k++) {
		const atm_node *n = atm_graph_node(g, k);
		if (n->op == ATM_OP_SGD) {
			rc = add_update(c, n, u);
			continue;
		}
		rc = atm_graph_copy_node(c, n, NULL);
	}
	return atm_graph_rewritten(c, rc, out);
}

bool atm_graph_update_of(const atm_graph *g, atm_update *u, int64_t *state_bytes)
{
	const atm_node *first = NULL;
	*state_bytes = 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(g) && !first; k++)
		if (atm_op_is_inplace(atm_graph_node(g, k)->op))
			first = atm_graph_node(g, k);
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		if (atm_graph_tensor(g, t)->kind == ATM_KIND_OPTIMIZER_STATE)
			*state_bytes += atm_graph_tensor(g, t)->bytes;
	if (!first)
		return false;
	const atm_attrs *a = &first->attrs;
	*u = (atm_update){.kind = first->op == ATM_OP_ADAMW ? ATM_UPDATE_ADAMW
	                          : first->op == ATM_OP_SGD_MOMENTUM && first->n_in > 2
	                              ? ATM_UPDATE_MOMENTUM
	                              : ATM_UPDATE_SGD,
	                  .lr = a->lr, .weight_decay = a->weight_decay};
	if (u->kind == ATM_UPDATE_MOMENTUM)
		u->momentum = a->momentum;
	if (u->kind == ATM_UPDATE_ADAMW) {
		u->beta1 = a->beta1;
		u->beta2 = a->beta2;
		u->eps = a->epsilon;
	}
	return true;
}

atm_status atm_graph_copy_tensors(const atm_graph *g, atm_graph **out)
{
	atm_graph *c = NULL;
	int32_t id;
	atm_status rc = atm_graph_new(&c, atm_graph_name(g));
	for (int32_t t = 0; t < atm_graph_n_tensors(g) && rc == ATM_OK; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		rc = atm_graph_add_tensor(c, x->name, x->dtype, x->ndim, x->dims, x->kind, x->locations,
		                          &id);
		if (rc == ATM_OK && x->batched)
			rc = atm_graph_mark_batched(c, id);
	}
	if (rc < 0) {
		atm_graph_destroy(c);
		c = NULL;
	}
	*out = c;
	return rc;
}

atm_status atm_graph_copy_node(atm_graph *c, const atm_node *n, const int32_t *in)
{
	int32_t id;
	atm_status rc = atm_graph_add_node(c, n->name, n->op, &n->attrs, n->n_in, in ? in : n->in,
	                                   n->n_out, n->out, &id);
	if (rc == ATM_OK && n->workspace_bytes)
		rc = atm_graph_set_workspace(c, id, n->workspace_bytes);
	return rc;
}

atm_status atm_graph_rewritten(atm_graph *c, atm_status rc, atm_graph **out)
{
	if (rc == ATM_OK)
		rc = atm_graph_validate(c);
	if (rc < 0) {
		atm_graph_destroy(c);
		return rc;
	}
	*out = c;
	return ATM_OK;
}
