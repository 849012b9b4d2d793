/* phases.c -- what the model and its recomputations both read of a tensor's life: the phase
 * covering a slot, and the nodes that overwrite it */
#include "opt_internal.h"

int32_t opt_phase_at(const struct tmodel *t, int32_t s)
{
	for (int32_t i = 0; i < t->n_gates; i++)
		if (t->ph_lo[i] <= s && s <= t->ph_hi[i])
			return i;
	return -1;
}

bool opt_writes_over(const atm_graph *g, const atm_node *n, int32_t x)
{
	for (int i = 0; i < n->n_in; i++)
		if (n->in[i] == x && atm_op_writes_input(n->op, i))
			return true;
	if (!atm_tensor_is_persistent(atm_graph_tensor(g, x)))
		return false;
	for (int i = 0; i < n->n_out; i++)
		if (n->out[i] == x)
			return true;
	return false;
}
