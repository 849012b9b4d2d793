/* cmd_search.c -- autotm search: a searching baseline that checks the ILP, by the model and by measuring */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char search_help_head[] =
	"usage: autotm search --model NAME (--ratio S:F | --dram-limit SIZE)\n"
	"                     [--formulation static|synchronous|asynchronous]\n"
	"                     [--methods hill-ilp,hill-slow,hill-random,genetic]\n"
	"                     [--evaluations N] [--seed N] [--measured-steps N]\n"
	"                     [--plans DIR] [-o results.json] [--estimate]\n"
	"       autotm search --graph FILE ...\n"
	"\n"
	"Checks the ILP against plans it could have chosen. The formulation's ILP is solved\n"
	"as 'autotm plan' solves it (default asynchronous); then hill climbing (from the\n"
	"ILP's placement, from all slow, from a random one) and a genetic search explore\n"
	"the same placements (a state per tensor per phase, moves where the formulation's\n"
	"gates allow them, persistent tensors pinned or not) under the same limits, each\n"
	"candidate laid out in the fast arena. They are scored by the model; with\n"
	"--measured-steps also by measuring: candidates are trained beside the ILP's plan\n"
	"in comparisons in turns, the fastest measured is climbed from, and the search's\n"
	"best measured plan meets the ILP's in one final comparison (its results in -o).\n"
	"What a plan that measures faster than the ILP's does differently is printed.\n"
	"Plans are written to --plans DIR (ilp.json, METHOD.json, cand-N.json, best.json).\n"
	"\n"
	"options:\n";

/* the rows of the table of what was tried: each method, then the measured climb */
#define ROW_MEASURED ATM_OPT_SEARCH_N_METHODS
#define N_ROWS (ATM_OPT_SEARCH_N_METHODS + 1)
/* candidates measured at most */
#define MAX_MEASURED 512

/* What autotm search was asked to do. */
struct search_args {
	cli_graph_source src;
	atm_job_opts jo;
	int n_methods;
	atm_opt_search_method methods[ATM_OPT_SEARCH_N_METHODS];
	atm_opt_search_params sp;
	int64_t measured_steps, seed;
	int turns, final_turns, batch;
	const char *dir;
};

/* A row of the table of what was tried. */
struct row {
	bool ran;
	atm_opt_search_outcome r;
	double best_pred_s;             /* the best predicted of its candidates (< 0: none) */
	double ratio, lo, hi;           /* its best measured: per-turn ratio to the ILP (< 0: none) */
	int n_measured;
};

/* A candidate measured beside the ILP's plan. */
struct measured {
	int cand, row;
	char path[PATH_MAX];
	double ratio, lo, hi;           /* its last measurement (< 0: not yet) */
};

/* What the search has done. */
struct state {
	struct search_args *a;
	atm_job *j;
	atm_opt_search *S;
	const atm_graph *g;
	char ilp_path[PATH_MAX];
	struct row rows[N_ROWS];
	struct measured *m;
	int n_m;
	int64_t steps;
};

/* methods -- --methods "hill-ilp,genetic" into the search's arguments */
static atm_status methods(const cli_option *o, const char *list, void *base)
{
	struct search_args *a = base;
	char buf[256], *save = NULL;
	(void)o;
	if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
		return atm_err(ATM_E_USAGE, "--methods '%s' is too long", list);
	a->n_methods = 0;
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		atm_opt_search_method m;
		if (atm_opt_search_method_from_name(w, &m) < 0)
			return atm_err_prefix(ATM_E_USAGE, "--methods: ");
		for (int i = 0; i < a->n_methods; i++)
			if (a->methods[i] == m)
				return atm_err(ATM_E_USAGE, "--methods lists '%s' twice", w);
		a->methods[a->n_methods++] = m;
	}
	if (!a->n_methods)
		return atm_err(ATM_E_USAGE, "--methods names no method; valid methods: hill-ilp, "
		               "hill-slow, hill-random, genetic");
	return ATM_OK;
}

#define SEARCH(field) .at = offsetof(struct search_args, field)

static const cli_option search_own[] = {
	{"methods", .value = "LIST", .help = "the searches to run, in order: hill-ilp, hill-slow, "
	 "hill-random, genetic", .def = "all", .set = methods},
	{"evaluations", .value = "N", .help = "candidates each search proposes, each priced by the "
	 "model or refused", .def = "2000", .set = cli_set_int, SEARCH(sp.evaluations), .lo = 1,
	 .hi = 100000000},
	{"population", .value = "N", .help = "the genetic search's placements (4 to 1000)",
	 .def = "12", .set = cli_set_int, SEARCH(sp.population), .lo = 4, .hi = 1000},
	{"seed", .value = "N", .help = "of every random choice of the search: a seed repeats a "
	 "search (the weights and data keep their own seed)", .def = "1", .set = cli_set_i64,
	 SEARCH(seed), .lo = 0, .hi = INT64_MAX},
	{"measured-steps", .value = "N", .help = "training steps the measured search may take (0: "
	 "scored by the model alone; docs/optimizer.md, \"A searching baseline\"); each comparison "
	 "of P plans takes P x (warmup + turns x iters), and a step more of each for every round "
	 "measured again (disturbed); the final comparison is extra", .def = "0",
	 .set = cli_set_i64, SEARCH(measured_steps), .lo = 0, .hi = 1000000000},
	{"candidates", .value = "N", .help = "new candidates per measured comparison (1 to 32)",
	 .def = "3", .set = cli_set_int, SEARCH(batch), .lo = 1, .hi = 32},
	{"turns", .value = "N", .help = "turns of each measured comparison", .def = "3",
	 .set = cli_set_int, SEARCH(turns), .lo = 1, .hi = 1000},
	{"final-turns", .value = "N", .help = "turns of the final comparison of the search's best "
	 "measured plan beside the ILP's", .def = "5", .set = cli_set_int, SEARCH(final_turns),
	 .lo = 1, .hi = 1000},
	{"iters", .value = "N", .help = "steps per turn", .def = "3", .set = cli_set_int,
	 SEARCH(jo.iters), .lo = 1, .hi = 1000000},
	{"warmup", .value = "N", .help = "steps run first and not measured", .def = "1",
	 .set = cli_set_int, SEARCH(jo.warmup), .lo = 0, .hi = 1000000},
	{"plans", .value = "DIR", .help = "where the search's plans go (made when missing)",
	 .def = "search-plans", .set = cli_set_text, SEARCH(dir)},
	{"output", 'o', "FILE", .help = "the final comparison's runs as results JSON ('autotm run "
	 "-o')", .set = cli_set_text, SEARCH(jo.results_path)},
	{"append", .help = "add them to FILE's runs", .set = cli_set_true, SEARCH(jo.append)},
	{"estimate", .help = "plan from estimated kernel times (the model mode only)",
	 .set = cli_set_true, SEARCH(jo.estimate)},
	CLI_QUIET_ROW(struct search_args, jo.quiet),
	{NULL},
};

const cli_command_options cmd_search_options = {
	"search", (const cli_option *const[]){cli_graph_options, cli_plan_options, search_own,
	                                      cli_memory_options, NULL}, search_help_head, NULL};

/* round_steps -- the steps one comparison of n placements over turns takes */
static int64_t round_steps(const atm_job_opts *jo, int n, int turns)
{
	return (int64_t)n * (jo->warmup + (int64_t)turns * jo->iters);
}

/* check_args -- what the options say together */
static atm_status check_args(struct search_args *a, const cli_given *given)
{
	atm_job_opts *jo = &a->jo;
	atm_status rc;
	if ((rc = cli_plan_check(jo, given)) < 0)
		return rc;
	if (!atm_opt_is_ilp(jo->formulation))
		return atm_err(ATM_E_USAGE, "--formulation %s is a baseline; a search checks an "
		               "ILP's plan: give static, synchronous or asynchronous",
		               atm_opt_formulation_name(jo->formulation));
	if (jo->opt.recompute)
		return atm_err(ATM_E_USAGE, "--recompute: the search places tensors and moves; it "
		               "does not choose recomputations");
	if (a->measured_steps && jo->estimate)
		return atm_err(ATM_E_USAGE, "--measured-steps trains plans, --estimate only plans "
		               "them: give one");
	int64_t least = round_steps(jo, 2, a->turns);
	if (a->measured_steps && a->measured_steps < least)
		return atm_err(ATM_E_USAGE, "--measured-steps %lld cannot pay for one comparison "
		               "of a candidate beside the ILP's plan: that takes 2 x (warmup %d "
		               "+ turns %d x iters %d) = %lld steps; give at least that",
		               (long long)a->measured_steps, jo->warmup, a->turns, jo->iters,
		               (long long)least);
	if (jo->append && !jo->results_path)
		return atm_err(ATM_E_USAGE, "--append needs -o FILE");
	if (jo->results_path && !a->measured_steps)
		return atm_err(ATM_E_USAGE, "-o writes the final comparison's measurements: give "
		               "--measured-steps too");
	if ((rc = atm_make_dirs(a->dir, 0777)) < 0)
		return rc;
	char probe[PATH_MAX];
	snprintf(probe, sizeof probe, "%s/ilp.json", a->dir);
	if ((rc = atm_check_writable(probe)) < 0 ||
	    (jo->results_path && (rc = atm_check_writable(jo->results_path)) < 0))
		return rc;
	return ATM_OK;
}

/* parse_args -- the command line into a, checked */
static atm_status parse_args(int argc, char **argv, struct search_args *a, cli_given *given)
{
	atm_job_opts *jo = &a->jo;
	atm_status rc;
	cli_job_begin(jo, "search");
	jo->optimize = true;
	jo->keep_search = true;
	jo->formulation = ATM_OPT_ASYNCHRONOUS;
	jo->iters = 3;
	jo->warmup = 1;
	a->seed = 1;
	a->turns = 3;
	a->final_turns = 5;
	a->batch = 3;
	a->dir = "search-plans";
	a->n_methods = ATM_OPT_SEARCH_N_METHODS;
	for (int i = 0; i < ATM_OPT_SEARCH_N_METHODS; i++)
		a->methods[i] = (atm_opt_search_method)i;
	if ((rc = cli_parse(&cmd_search_options, (void *const[]){&a->src, jo, a, &jo->mem}, argc,
	                    argv, given)) < 0 || given->help)
		return rc;
	a->sp.seed = (uint64_t)a->seed;
	return check_args(a, given);
}

/* ---------------------------------------------------------------- the search */

/* save_candidate -- candidate i's plan into path */
static atm_status save_candidate(const struct state *st, int i, const char *path)
{
	atm_plan *p = NULL;
	atm_status rc = atm_opt_search_plan(st->S, i, &p);
	if (rc == ATM_OK)
		rc = atm_plan_save(p, path);
	atm_plan_destroy(p);
	return rc;
}

/* same_as -- candidates a and b place every tensor alike */
static bool same_as(const struct state *st, int a, int b)
{
	return atm_opt_search_diff(st->S, a, b, "", "", 0, NULL) == 0;
}

/* print_model_table -- what each method found, as the model prices it */
static void print_model_table(const struct state *st)
{
	const struct search_args *a = st->a;
	double ilp_s = atm_opt_search_predicted(st->S, 0);
	char b[32];
	printf("%s, batch %lld: the %s ILP's plan against a search of its placements, fast limit "
	       "%s, seed %llu\n", atm_graph_name(st->g), (long long)a->jo.workload.batch,
	       atm_opt_formulation_name(a->jo.formulation),
	       atm_format_bytes(atm_plan_info_get(atm_job_plan_get(st->j))->fast_limit_bytes, b,
	                        sizeof b),
	       (unsigned long long)a->sp.seed);
	printf("  %-12s %12s %12s %7s %8s %8s %7s  %s\n", "method", "start", "best", "/ ILP",
	       "proposed", "refused", "better", "plan");
	printf("  %-12s %12s %10.6f s %7.4f %8s %8s %7s  %s\n", "ilp", "-", ilp_s, 1.0, "-", "-",
	       "-", st->ilp_path);
	for (int k = 0; k < a->n_methods; k++) {
		atm_opt_search_method m = a->methods[k];
		const atm_opt_search_outcome *r = &st->rows[m].r;
		if (!st->rows[m].ran) {
			printf("  %-12s %12s  left out: its start is no placement here\n",
			       atm_opt_search_method_name(m), "-");
			continue;
		}
		printf("  %-12s %10.6f s %10.6f s %7.4f %8d %8d %7d  %s/%s.json\n",
		       atm_opt_search_method_name(m), r->start_s, r->best_s, r->best_s / ilp_s,
		       r->evaluations, r->refused, r->improvements, a->dir,
		       atm_opt_search_method_name(m));
	}
}

/* model_verdict -- whether the model prices any method's plan below the ILP's, and if so how
 * it differs */
static void model_verdict(const struct state *st)
{
	const struct search_args *a = st->a;
	double ilp_s = atm_opt_search_predicted(st->S, 0);
	int best = -1;
	for (int k = 0; k < a->n_methods; k++) {
		const atm_opt_search_outcome *r = &st->rows[a->methods[k]].r;
		if (!st->rows[a->methods[k]].ran)
			continue;
		if (best < 0 || r->best_s < atm_opt_search_predicted(st->S, best))
			best = r->candidate;
	}
	if (best < 0 || atm_opt_search_predicted(st->S, best) >= ilp_s * (1 - 1e-9)) {
		printf("  by the model: no search found a plan priced below the ILP's (%s)\n",
		       atm_plan_info_get(atm_job_plan_get(st->j))->solver_status);
		return;
	}
	printf("  by the model: a search found a plan priced %.4f of the ILP's (the ILP stopped "
	       "%s); where they differ:\n", atm_opt_search_predicted(st->S, best) / ilp_s,
	       atm_plan_info_get(atm_job_plan_get(st->j))->solver_status);
	atm_opt_search_diff(st->S, 0, best, "ILP", "search", 12, stdout);
}

/* run_methods -- each method asked for, its best plan written */
static atm_status run_methods(struct state *st)
{
	const struct search_args *a = st->a;
	char path[PATH_MAX];
	atm_status rc;
	for (int k = 0; k < a->n_methods; k++) {
		atm_opt_search_method m = a->methods[k];
		struct row *r = &st->rows[m];
		if (!a->jo.quiet)
			fprintf(stderr, "autotm search: %s, %d candidates...\n", atm_opt_search_method_name(m),
			        a->sp.evaluations ? a->sp.evaluations : 2000);
		rc = atm_opt_search_run(st->S, m, &a->sp, &r->r);
		if (rc == ATM_E_INFEASIBLE) {
			/* all slow on a GPU: the other methods go on */
			fprintf(stderr, "autotm search: %s left out: %s\n", atm_opt_search_method_name(m),
			        atm_errmsg());
			atm_err_clear();
			continue;
		}
		if (rc < 0)
			return rc;
		r->ran = true;
		r->best_pred_s = r->r.best_s;
		snprintf(path, sizeof path, "%s/%s.json", a->dir, atm_opt_search_method_name(m));
		if ((rc = save_candidate(st, r->r.candidate, path)) < 0)
			return rc;
	}
	return ATM_OK;
}

/* add_measured -- candidate cand (found by row) to measure, its plan written; false when it is
 * measured already, or the ILP's */
static atm_status add_measured(struct state *st, int cand, int row, bool *added)
{
	*added = false;
	if (st->n_m == MAX_MEASURED || same_as(st, 0, cand))
		return ATM_OK;
	for (int i = 0; i < st->n_m; i++)
		if (same_as(st, st->m[i].cand, cand))
			return ATM_OK;
	struct measured *m = &st->m[st->n_m];
	*m = (struct measured){.cand = cand, .row = row, .ratio = -1};
	snprintf(m->path, sizeof m->path, "%s/cand-%d.json", st->a->dir, cand);
	atm_status rc = save_candidate(st, cand, m->path);
	if (rc == ATM_OK) {
		st->n_m++;
		*added = true;
	}
	return rc;
}

/* steps_taken -- the steps comparison c took (run with o), rounds measured again included: by
 * step a round is a step of every placement, by turn a turn is warm-up and iters steps */
static int64_t steps_taken(const atm_job_compare *c, const atm_job_opts *o)
{
	bool by_step = !strcmp(atm_job_compare_interleave(c), "step");
	int64_t n = 0;
	for (int i = 0; i < atm_job_compare_n(c); i++) {
		const atm_job_compared *m = atm_job_compare_get(c, i);
		if (m->left_out)
			continue;
		n += by_step ? o->warmup : 0;
		for (int t = 0; t < m->n_turns; t++)
			n += by_step ? o->iters + m->turn_reruns[t]
			             : (int64_t)(1 + m->turn_reruns[t]) * (o->warmup + o->iters);
	}
	return n;
}

/* compare -- the ILP's plan and the plans of the measured candidates ms[0 .. n) compared in
 * turns (results into results when given): each one's per-turn ratio to the ILP's */
static atm_status compare(struct state *st, const int *ms, int n, int turns, const char *results,
                          atm_job_compare **out)
{
	atm_job_opts o = st->a->jo;
	atm_job_placement pl[1 + 2 * 32 + 1];
	atm_job_compare_opts co = {.turns = turns};
	atm_job_compare *c = NULL;
	atm_status rc;
	*out = NULL;
	o.optimize = false;
	o.keep_search = false;
	o.results_path = results;
	pl[0] = (atm_job_placement){.placement = st->ilp_path};
	for (int i = 0; i < n; i++)
		pl[1 + i] = (atm_job_placement){.placement = st->m[ms[i]].path};
	if ((rc = atm_job_compare_new(&c, st->g, &o, pl, 1 + n, &co)) < 0 ||
	    (rc = atm_job_compare_plan(c)) < 0 || (rc = atm_job_compare_run(c)) < 0) {
		atm_job_compare_destroy(c);
		return rc;
	}
	for (int i = 0; i < n; i++) {
		struct measured *m = &st->m[ms[i]];
		if (!atm_job_compare_ratio(c, 1 + i, 0, &m->ratio, &m->lo, &m->hi))
			m->ratio = -1;
		struct row *r = &st->rows[m->row];
		r->n_measured++;
		if (m->ratio > 0 && (r->ratio < 0 || m->ratio < r->ratio)) {
			r->ratio = m->ratio;
			r->lo = m->lo;
			r->hi = m->hi;
		}
		double pred = atm_opt_search_predicted(st->S, m->cand);
		if (r->best_pred_s < 0 || pred < r->best_pred_s)
			r->best_pred_s = pred;
	}
	st->steps += steps_taken(c, &o);
	*out = c;
	return ATM_OK;
}

/* incumbent -- the measured candidate with the lowest last ratio to the ILP's (-1: none) */
static int incumbent(const struct state *st)
{
	int best = -1;
	for (int i = 0; i < st->n_m; i++)
		if (st->m[i].ratio > 0 && (best < 0 || st->m[i].ratio < st->m[best].ratio))
			best = i;
	return best;
}

/* measured_rounds -- comparisons within the budget: first each method's best, then climbing
 * from the fastest measured (the ILP's plan while nothing beats it) by the neighbours the
 * model prices best */
static atm_status measured_rounds(struct state *st)
{
	const struct search_args *a = st->a;
	int ms[1 + 32], n = 0;
	bool added;
	atm_status rc;
	for (int k = 0; k < a->n_methods && n < 32; k++) {
		atm_opt_search_method m = a->methods[k];
		if (!st->rows[m].ran)
			continue;
		if ((rc = add_measured(st, st->rows[m].r.candidate, m, &added)) < 0)
			return rc;
		if (added)
			ms[n++] = st->n_m - 1;
	}
	int64_t per = round_steps(&a->jo, 1, a->turns);
	for (int round = 0; ; round++) {
		int inc = incumbent(st);
		bool beats = inc >= 0 && st->m[inc].ratio < 1;
		/* what the steps left pay for beside the ILP's plan */
		int64_t room = (a->measured_steps - st->steps) / per - 1;
		if (room < 1 + beats)
			break;
		if (round > 0 || n == 0) {
			/* the incumbent measured again beside its neighbours */
			int from = beats ? st->m[inc].cand : 0, idx[32], got = 0;
			int want = room - beats < a->batch ? (int)(room - beats) : a->batch;
			n = 0;
			if (beats)
				ms[n++] = inc;
			if ((rc = atm_opt_search_neighbours(st->S, from, want, 50 * want,
			                                    a->sp.seed + (uint64_t)round, idx, &got)) < 0)
				return rc;
			for (int i = 0; i < got; i++) {
				if ((rc = add_measured(st, idx[i], ROW_MEASURED, &added)) < 0)
					return rc;
				if (added)
					ms[n++] = st->n_m - 1;
			}
			if (n == (beats ? 1 : 0))
				break;
		}
		if (n > room)
			n = (int)room; /* the first round's methods beyond the budget wait */
		if (!a->jo.quiet)
			fprintf(stderr, "autotm search: measured round %d: %d candidate%s beside the ILP's "
			        "plan (%lld of %lld steps taken)\n", round + 1, n, n == 1 ? "" : "s",
			        (long long)st->steps, (long long)a->measured_steps);
		atm_job_compare *c = NULL;
		rc = compare(st, ms, n, a->turns, NULL, &c);
		atm_job_compare_destroy(c);
		if (rc < 0)
			return rc;
	}
	return ATM_OK;
}

/* print_measured_table -- per method, its best predicted and its best measured ratio */
static void print_measured_table(const struct state *st)
{
	double ilp_s = atm_opt_search_predicted(st->S, 0);
	printf("  measured: %lld of %lld steps in comparisons of %d turns beside the ILP's plan\n",
	       (long long)st->steps, (long long)st->a->measured_steps, st->a->turns);
	printf("  %-14s %10s %26s %9s\n", "method", "best pred", "best measured / ILP [range]",
	       "measured");
	for (int m = 0; m < N_ROWS; m++) {
		const struct row *r = &st->rows[m];
		if (!r->ran && !r->n_measured)
			continue;
		char meas[64] = "-";
		if (r->ratio > 0)
			snprintf(meas, sizeof meas, "%.3f [%.3f-%.3f]", r->ratio, r->lo, r->hi);
		printf("  %-14s %10.4f %26s %9d\n",
		       m == ROW_MEASURED ? "measured-hill" : atm_opt_search_method_name(m),
		       r->best_pred_s / ilp_s, meas, r->n_measured);
	}
}

/* final -- the search's best measured plan beside the ILP's in one comparison, its results
 * written; what differs when it measured faster in every turn */
static atm_status final(struct state *st)
{
	const struct search_args *a = st->a;
	int inc = incumbent(st);
	char best[PATH_MAX];
	atm_job_compare *c = NULL;
	atm_status rc;
	if (inc < 0) {
		printf("  final: no candidate was measured; nothing to compare\n");
		return ATM_OK;
	}
	snprintf(best, sizeof best, "%s/best.json", a->dir);
	if ((rc = save_candidate(st, st->m[inc].cand, best)) < 0)
		return rc;
	if (!a->jo.quiet)
		fprintf(stderr, "autotm search: final comparison of %s (%s) and the ILP's plan, %d turns\n",
		        best, st->m[inc].path, a->final_turns);
	snprintf(st->m[inc].path, sizeof st->m[inc].path, "%s", best);
	if ((rc = compare(st, &inc, 1, a->final_turns, a->jo.results_path, &c)) < 0)
		return rc;
	const atm_job_compared *ilp = atm_job_compare_get(c, 0), *sb = atm_job_compare_get(c, 1);
	const struct measured *m = &st->m[inc];
	printf("  final comparison %s, %d turns\n", atm_job_compare_id(c), a->final_turns);
	printf("    %-22s predicted %.6f s, measured median %.6f s\n", "ILP's plan", ilp->predicted_raw_s,
	       ilp->median_s);
	printf("    %-22s predicted %.6f s, measured median %.6f s\n", best, sb->predicted_raw_s,
	       sb->median_s);
	if (m->ratio < 0) {
		printf("    the search's plan was left out: %s\n", sb->why ? sb->why : "?");
	} else {
		printf("    search / ILP per turn: %.3f [%.3f-%.3f]\n", m->ratio, m->lo, m->hi);
		if (m->hi < 1) {
			printf("  the search's plan measured faster than the ILP's in every turn, where the "
			       "model prices it %.4f of the ILP's; what the model missed:\n",
			       atm_opt_search_predicted(st->S, m->cand) / atm_opt_search_predicted(st->S, 0));
			atm_opt_search_diff(st->S, 0, m->cand, "ILP", "search", 12, stdout);
		} else {
			printf("  the search found no plan that measures faster than the ILP's beyond the "
			       "comparison's per-turn range\n");
		}
	}
	if (a->jo.results_path && (rc = atm_job_compare_write_results(c)) == ATM_OK)
		printf("  results          %s\n", a->jo.results_path);
	atm_job_compare_destroy(c);
	return rc;
}

/* search_job -- the search after the ILP's plan (arg: the search_args) */
static atm_status search_job(atm_job *j, void *arg)
{
	struct state st = {.a = arg, .j = j, .S = atm_job_search(j), .g = atm_job_graph(j)};
	atm_status rc;
	if (!st.S)
		return atm_err(ATM_E_INTERNAL, "the job kept no search of its plan");
	for (int i = 0; i < N_ROWS; i++)
		st.rows[i] = (struct row){.best_pred_s = -1, .ratio = -1};
	snprintf(st.ilp_path, sizeof st.ilp_path, "%s/ilp.json", st.a->dir);
	if ((rc = atm_plan_save(atm_job_plan_get(j), st.ilp_path)) < 0 || (rc = run_methods(&st)) < 0)
		return rc;
	print_model_table(&st);
	model_verdict(&st);
	if (!st.a->measured_steps)
		return ATM_OK;
	if (!(st.m = calloc(MAX_MEASURED, sizeof *st.m)))
		return atm_err(ATM_E_NOMEM, "out of memory for the measured search");
	fflush(stdout);
	if ((rc = measured_rounds(&st)) == ATM_OK) {
		print_measured_table(&st);
		rc = final(&st);
	}
	free(st.m);
	return rc;
}

/* cmd_search -- autotm search */
int cmd_search(int argc, char **argv)
{
	struct search_args a = {0};
	cli_given given;
	atm_status rc = parse_args(argc, argv, &a, &given);
	if (rc < 0 || given.help)
		return cli_fail("search", rc);
	return cli_job_main("search", &a.src, &a.jo, search_job, &a);
}
