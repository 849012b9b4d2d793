/* starts.c -- a job's start plans: plan files read against the graph, passed to the optimizer when they fit */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_internal.h"

atm_status atm_job_plan_file_formulation(const atm_graph *g, const char *path, char *buf,
                                         size_t len)
{
	atm_plan *p = NULL;
	atm_status rc = atm_plan_load(&p, g, path);
	if (rc < 0)
		return atm_err_prefix(rc, "--start: ");
	snprintf(buf, len, "%s", atm_plan_info_get(p)->formulation);
	atm_plan_destroy(p);
	return ATM_OK;
}

/* label -- the formulation a plan of the job names ("synchronous+recompute") */
static void label(const atm_job *j, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", atm_opt_formulation_name(j->o.formulation),
	         j->o.opt.recompute && atm_opt_is_ilp(j->o.formulation) ? ATM_OPT_RECOMPUTE_SUFFIX : "");
}

atm_status job_starts_load(atm_job *j)
{
	const atm_job_opts *o = &j->o;
	char want[48];
	atm_status rc;
	if (o->n_starts <= 0)
		return ATM_OK;
	if (!o->optimize)
		return atm_err(ATM_E_USAGE, "--start plans start the optimizer's plan; a placement (%s) "
		               "is not planned", o->placement ? o->placement : "all-fast");
	if (o->n_starts > ATM_JOB_MAX_STARTS || !o->starts)
		return atm_err(ATM_E_USAGE, "%d --start plans is not valid; expected 1 to %d",
		               o->n_starts, ATM_JOB_MAX_STARTS);
	if (!(j->starts = calloc((size_t)o->n_starts, sizeof *j->starts)))
		return atm_err(ATM_E_NOMEM, "out of memory reading the --start plans");
	label(j, want, sizeof want);
	for (int i = 0; i < o->n_starts; i++) {
		if ((rc = atm_plan_load(&j->starts[i], j->g, o->starts[i])) < 0)
			return atm_err_prefix(rc, "--start: ");
		j->n_starts = i + 1;
		const char *have = atm_plan_info_get(j->starts[i])->formulation;
		if (strcmp(have, want))
			return atm_err(ATM_E_INPUT, "--start %s is a %s plan, and this plan is %s: a start "
			               "must be a plan of the same formulation", o->starts[i], have, want);
	}
	return ATM_OK;
}

void job_starts_free(atm_job *j)
{
	for (int i = 0; i < j->n_starts; i++)
		atm_plan_destroy(j->starts[i]);
	free(j->starts);
	j->starts = NULL;
	j->n_starts = 0;
}

atm_status job_starts_fit(atm_job *j, const atm_opt_options *oo, const atm_plan **fit, int *map,
                          int *n_fit)
{
	*n_fit = 0;
	for (int i = 0; i < j->n_starts; i++) {
		double s = 0;
		atm_status rc = atm_opt_start_check(j->starts[i], j->g, j->prof, j->limit,
		                                    j->o.formulation, oo, NULL, &s);
		if (rc == ATM_E_INFEASIBLE) {
			if (!j->o.quiet)
				fprintf(stderr, "autotm %s: --start %s is passed over: %s\n", j->who,
				        j->o.starts[i], atm_errmsg());
			atm_err_clear();
			continue;
		}
		if (rc < 0)
			return atm_err_prefix(rc, "--start %s: ", j->o.starts[i]);
		map[*n_fit] = i;
		fit[(*n_fit)++] = j->starts[i];
	}
	return ATM_OK;
}

void job_starts_said(const atm_job *j, const int *map)
{
	const atm_opt_report *r = &j->rep;
	char a[32], b[32], found[96] = "no plan was found here";
	if (j->o.quiet || r->start_used < 0)
		return;
	int64_t from = atm_plan_info_get(j->starts[map[r->start_used]])->fast_limit_bytes;
	if (r->found_s >= 0)
		snprintf(found, sizeof found, "the plan found here was %.9g s", r->found_s);
	fprintf(stderr, "autotm %s: --start %s's plan (planned for %s) is kept, re-labelled with this "
	        "limit (%s): predicted %.9g s; %s\n", j->who, j->o.starts[map[r->start_used]],
	        from ? atm_format_bytes(from, a, sizeof a) : "no limit",
	        j->limit ? atm_format_bytes(j->limit, b, sizeof b) : "none", r->start_s, found);
}

atm_status job_plans_out(const atm_job *j)
{
	const char *dir = j->o.plans_out;
	char path[4096];
	if (!dir)
		return ATM_OK;
	atm_status rc = atm_make_dirs(dir, 0777);
	if (rc < 0)
		return atm_err_prefix(rc, "--plans-out: ");
	const char *name = atm_plan_info_get(j->plan)->formulation;
	if (snprintf(path, sizeof path, "%s/%s.json", dir, name) >= (int)sizeof path)
		return atm_err(ATM_E_USAGE, "--plans-out %s: the folder's name is too long", dir);
	rc = atm_plan_save(j->plan, path);
	return rc < 0 ? atm_err_prefix(rc, "--plans-out: ") : ATM_OK;
}
