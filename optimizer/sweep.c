/* sweep.c -- plans of one formulation over several limits, the smallest first, each starting
 * from the plan before it (a file of its own: it calls the optimizer, which calls starts.c) */
#include <stdio.h>
#include <stdlib.h>

#include "opt_internal.h"

/* cmp_limit -- ascending limits, 0 (no limit) the largest */
static int cmp_limit(int64_t a, int64_t b)
{
	if (a == b)
		return 0;
	if (a == 0 || (b != 0 && a > b))
		return 1;
	return -1;
}

atm_status atm_opt_plan_sweep(atm_plan **plans, const atm_graph *g, const atm_profile *prof,
                              const int64_t *limits, int n, atm_opt_formulation f,
                              const atm_opt_options *o, atm_opt_report *reps)
{
	atm_opt_options oo;
	const atm_plan **starts = NULL;
	int *order = NULL, n_found = 0, n_own;
	atm_status rc = ATM_OK, last = ATM_OK;
	if (o)
		oo = *o;
	else
		atm_opt_options_default(&oo);
	if (!plans || !limits || n < 1)
		return atm_err(ATM_E_USAGE, "atm_opt_plan_sweep needs limits (at least one) and room "
		               "for a plan of each");
	for (int i = 0; i < n; i++)
		plans[i] = NULL;
	if (g && f >= 0 && f < ATM_OPT_N_FORMULATIONS && (rc = opt_starts_match(g, f, &oo)) < 0)
		return rc;
	n_own = oo.n_starts;
	order = malloc((size_t)n * sizeof *order);
	starts = malloc(((size_t)n_own + 1) * sizeof *starts);
	if (!order || !starts) {
		rc = atm_err(ATM_E_NOMEM, "out of memory planning a sweep of %d limits", n);
		goto done;
	}
	for (int i = 0; i < n_own; i++)
		starts[i] = oo.starts[i];
	/* smallest limit first (insertion sort: a sweep is a few dozen limits) */
	for (int i = 0; i < n; i++) {
		int k = i;
		for (; k > 0 && cmp_limit(limits[order[k - 1]], limits[i]) > 0; k--)
			order[k] = order[k - 1];
		order[k] = i;
	}
	for (int k = 0; k < n; k++) {
		int i = order[k];
		/* the last plan found is no slower than any before it, and fits this limit */
		oo.starts = starts;
		oo.n_starts = n_own + (n_found > 0);
		rc = atm_opt_plan(&plans[i], g, prof, limits[i], f, &oo, reps ? &reps[i] : NULL);
		if (rc == ATM_E_INFEASIBLE) {
			/* this limit has no plan; the larger ones may */
			last = rc;
			if (oo.verbosity)
				fprintf(stderr, "optimizer: sweep: no plan at %lld bytes: %s\n",
				        (long long)limits[i], atm_errmsg());
			continue;
		}
		if (rc < 0)
			goto done;
		starts[n_own] = plans[i];
		n_found++;
	}
	rc = n_found ? ATM_OK : last;
	if (rc == ATM_OK)
		atm_err_clear();
done:
	if (rc < 0 && rc != ATM_E_INFEASIBLE)
		for (int i = 0; i < n; i++) {
			atm_plan_destroy(plans[i]);
			plans[i] = NULL;
		}
	free(order);
	free(starts);
	return rc;
}
