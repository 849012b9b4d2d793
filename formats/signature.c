/* signature.c -- a kernel's signature: its op, the attributes that op reads, its operands' dtypes and shapes */
#include <stdlib.h>
#include <string.h>

#include "formats_internal.h"

/* float_str -- the shortest decimal that reads back as f ("1e-05", not 9.99999975e-06) */
static const char *float_str(float f, char *buf, size_t len)
{
	for (int prec = 6; prec <= 9; prec++) {
		snprintf(buf, len, "%.*g", prec, (double)f);
		if (strtof(buf, NULL) == f)
			break;
	}
	return buf;
}

/* one_if_zero -- a stride of 0 means 1 */
static int one_if_zero(int32_t v)
{
	return v ? v : 1;
}

/* sig_tensors -- "f32[8,3,64,64],f32[64]" */
static void sig_tensors(atm_text *s, const atm_graph *g, int n, const int32_t *ids)
{
	for (int i = 0; i < n; i++) {
		const atm_tensor *t = atm_graph_tensor(g, ids[i]);
		atm_text_add(s, "%s%s[", i ? "," : "", atm_dtype_name(t->dtype));
		for (int d = 0; d < t->ndim; d++)
			atm_text_add(s, "%s%lld", d ? "," : "", (long long)t->dims[d]);
		atm_text_str(s, "]");
	}
}

/* sig_build -- op, the attributes its entry says it reads (so that a field it ignores
 * cannot split identical kernels), in the ATM_ATTR_* order, then operand dtypes and shapes */
static void sig_build(atm_text *s, const atm_graph *g, const atm_node *n)
{
	const atm_attrs *a = &n->attrs;
	const atm_op_desc *d = atm_op_describe(n->op);
	unsigned attrs = d ? d->attrs : 0;
	char f[32];
	atm_text_str(s, atm_op_name(n->op));
	if (attrs & ATM_ATTR_KERNEL)
		atm_text_add(s, "/k%d,%d", a->kernel[0], a->kernel[1]);
	if (attrs & ATM_ATTR_STRIDE)
		atm_text_add(s, "/s%d,%d", one_if_zero(a->stride[0]), one_if_zero(a->stride[1]));
	if (attrs & ATM_ATTR_PAD)
		atm_text_add(s, "/p%d,%d,%d,%d", a->pad[0], a->pad[1], a->pad[2], a->pad[3]);
	if (attrs & ATM_ATTR_EXCLUDE_PAD)
		atm_text_add(s, "/x%d", a->exclude_pad ? 1 : 0);
	if (attrs & ATM_ATTR_EPSILON)
		atm_text_add(s, "/e%s", float_str(a->epsilon, f, sizeof f));
	if (attrs & ATM_ATTR_AXIS)
		atm_text_add(s, "/a%d", a->axis);
	if (attrs & ATM_ATTR_LR)
		atm_text_add(s, "/lr%s", float_str(a->lr, f, sizeof f));
	if (attrs & ATM_ATTR_TRANS_A)
		atm_text_add(s, "/ta%d", a->trans_a ? 1 : 0);
	if (attrs & ATM_ATTR_TRANS_B)
		atm_text_add(s, "/tb%d", a->trans_b ? 1 : 0);
	if (attrs & ATM_ATTR_SCALE)
		atm_text_add(s, "/sc%s", float_str(a->scale ? a->scale : 1.0f, f, sizeof f));
	if (attrs & ATM_ATTR_CAUSAL)
		atm_text_add(s, "/c%d", a->causal ? 1 : 0);
	if (attrs & ATM_ATTR_TANH)
		atm_text_add(s, "/t%d", a->tanh ? 1 : 0);
	if (attrs & ATM_ATTR_POSITIONS)
		atm_text_add(s, "/pos%d", a->positions ? 1 : 0);
	if (attrs & ATM_ATTR_THETA)
		atm_text_add(s, "/th%s", float_str(a->theta, f, sizeof f));
	if (attrs & ATM_ATTR_MOMENTUM)
		atm_text_add(s, "/m%s", float_str(a->momentum, f, sizeof f));
	if (attrs & ATM_ATTR_BETA1)
		atm_text_add(s, "/b1%s", float_str(a->beta1, f, sizeof f));
	if (attrs & ATM_ATTR_BETA2)
		atm_text_add(s, "/b2%s", float_str(a->beta2, f, sizeof f));
	if (attrs & ATM_ATTR_WEIGHT_DECAY)
		atm_text_add(s, "/wd%s", float_str(a->weight_decay, f, sizeof f));
	if ((attrs & ATM_ATTR_GROUPS) && a->groups > 1) /* so ungrouped kernels keep their keys */
		atm_text_add(s, "/g%d", a->groups);
	if (attrs & ATM_ATTR_RANKS)
		atm_text_add(s, "/r%d", a->ranks);
	if (attrs & ATM_ATTR_PERM) {
		atm_text_str(s, "/perm");
		for (int i = 0; i < a->n_perm; i++)
			atm_text_add(s, "%s%d", i ? "," : "", a->perm[i]);
	}
	atm_text_str(s, "/");
	sig_tensors(s, g, n->n_in, n->in);
	atm_text_str(s, "->");
	sig_tensors(s, g, n->n_out, n->out);
}

/* atm_node_signature_alloc -- n's signature, malloc'd; NULL when out of memory */
char *atm_node_signature_alloc(const atm_graph *g, const atm_node *n)
{
	atm_text s = {0};
	char *sig = NULL;
	sig_build(&s, g, n);
	atm_text_finish(&s, &sig, NULL, "a kernel signature");
	return sig;
}

/* atm_node_signature -- node's signature into buf */
atm_status atm_node_signature(const atm_graph *g, int32_t node, char *buf, size_t len)
{
	const atm_node *n = atm_graph_node(g, node);
	if (len)
		buf[0] = '\0';
	if (!n)
		return atm_err(ATM_E_USAGE, "atm_node_signature: node %d is out of range (graph '%s' has "
		               "%d nodes)", node, atm_graph_name(g), atm_graph_n_nodes(g));
	char *s = atm_node_signature_alloc(g, n);
	if (!s)
		return atm_err(ATM_E_NOMEM, "out of memory making the signature of node '%s'", n->name);
	size_t need = strlen(s) + 1;
	if (need > len) {
		free(s);
		return atm_err(ATM_E_USAGE, "the signature of node '%s' needs %zu bytes, the buffer has %zu",
		               n->name, need, len);
	}
	memcpy(buf, s, need);
	free(s);
	return ATM_OK;
}
