/* rank_mean.c -- the data-parallel ranks' mean the allreduce kernels call, set once by a process that runs under mpirun */
#include "backend.h"

/* The data-parallel ranks' mean, set once by a process under mpirun (job/). */
static struct {
	atm_allreduce_fn fn;
	void *ctx;
	int ranks;
	double waited_s; /* what the means waited for the other ranks, summed */
} allreduce = {NULL, NULL, 1, 0};

void atm_runtime_set_allreduce(atm_allreduce_fn fn, void *ctx, int ranks)
{
	allreduce.fn = fn;
	allreduce.ctx = ctx;
	allreduce.ranks = fn && ranks > 1 ? ranks : 1;
}

atm_status atm_bk_allreduce(float *const *bufs, const int64_t *counts, int n, int ranks)
{
	if (ranks != allreduce.ranks)
		return atm_err(ATM_E_UNSUPPORTED, "the graph averages its gradients over %d ranks but "
		               "this run has %d; run it under mpirun -np %d", ranks, allreduce.ranks,
		               ranks);
	double waited = 0;
	atm_status rc = allreduce.fn ? allreduce.fn(allreduce.ctx, bufs, counts, n, &waited) : ATM_OK;
	allreduce.waited_s += waited;
	return rc;
}

double atm_bk_allreduce_waited_s(void)
{
	return allreduce.waited_s;
}
