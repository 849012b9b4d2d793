/* bench_predict.c -- the optimizer's predicted step against the measured one, every formulation and ratio */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atm_job.h"
#include "atm_zoo.h"
#include "bench_util.h"

static const char usage[] =
	"usage: bench_predict [--models LIST] [--preset P] [--ratios LIST] [--formulations LIST]\n"
	"                     [--iters N] [--turns N] [--time-limit S] [--emulate P] [--cache FILE]\n"
	"                     [--isolated] [-o FILE] [--quiet]\n"
	"\n"
	"For every network: profiles what the cache lacks, then at each ratio plans every\n"
	"formulation and compares them as 'autotm run --formulation LIST' does, trained in\n"
	"turns in this process (all-fast in every comparison), and prints each one's\n"
	"predicted step, the measured one (the median over --turns of each turn's fastest\n"
	"of N steps) and the error (predicted - measured) / measured, and its slowdown\n"
	"against all-fast predicted and measured turn by turn (median [range]) with its\n"
	"error; then the slowdown errors against their target, the absolute errors beside\n"
	"the machine's drift over the benchmark (all-fast's step in each network's first\n"
	"and last comparison, and against the profile's calibration step), the geomean\n"
	"measured slowdown against all-fast per formulation and ratio, and asynchronous\n"
	"against synchronous per network (median [range] of the per-turn ratios).\n"
	"Targets: slowdown error <= 2% on every run but all-fast's own; asynchronous no\n"
	"slower than synchronous on any network; synchronous at 4:1 at most 1.10x\n"
	"all-fast (geomean). The absolute error has no target: a step in seconds is\n"
	"predicted only as well as the machine holds still since it was profiled.\n"
	"-o appends every comparison's runs to a results file per network\n"
	"(FILE-NETWORK.json).\n"
	"--isolated prices kernels by their times alone, without the profile's in-step\n"
	"calibration (as autotm's --isolated), to show what the calibration changes.\n"
	"Defaults: vgg19,resnet200,inception_v4,densenet264; small; 8:1,4:1,1:1;\n"
	"all-fast,all-slow,numa,static,synchronous,asynchronous; 5 steps; 3 turns; the\n"
	"optimizer's time limit (60 s) for each plan; optane;\n"
	"/tmp/autotm-bench-predict-profiles.json.\n";

#define MAX_RATIOS 8
#define MAX_FORMS 8
#define MAX_TURNS 64

struct opts {
	const char *models, *preset, *ratios, *forms, *emulate, *cache, *out;
	int iters, turns;
	double time_limit; /* 0: the optimizer's */
	bool quiet, isolated;
};

/* One network's measured steps: [ratio][formulation], < 0 where the run failed. */
struct net {
	char name[32];
	double actual[MAX_RATIOS][MAX_FORMS];
	double slowdown[MAX_RATIOS][MAX_FORMS]; /* measured against all-fast, per-turn median */
	/* asynchronous over synchronous turn by turn, per ratio */
	double pair[MAX_RATIOS][MAX_TURNS];
	int n_pair[MAX_RATIOS];
	bool no_async[MAX_RATIOS]; /* the asynchronous plan has no asynchronous move */
	/* all-fast's median step in the network's first and last comparison, and each over the
	 * profile's calibration step (<= 0: unknown) */
	double fast_first_s, fast_last_s, drift_first, drift_last;
};

/* The errors over every run: absolute ((predicted - measured) / measured) and of the slowdown
 * against all-fast (all-fast's own, 0 by definition, left out). */
struct summary {
	int n, n_sd, within_sd;
	double worst, sum_abs, worst_sd, sum_abs_sd;
	char worst_run[96], worst_sd_run[96];
};

/* SLOWDOWN_TARGET -- the largest slowdown error a run may have */
#define SLOWDOWN_TARGET 0.02

/* count_error -- err of run (its name) into the sum, the worst kept */
static void count_error(double err, const char *run, int *n, double *sum, double *worst,
                        char *worst_run, size_t len)
{
	(*n)++;
	*sum += fabs(err);
	if (fabs(err) > *worst) {
		*worst = fabs(err);
		snprintf(worst_run, len, "%s", run);
	}
}

/* n_async_moves -- the plan's asynchronous moves */
static int32_t n_async_moves(const atm_plan *p)
{
	int32_t n = 0;
	for (int32_t i = 0; i < atm_plan_n_moves(p); i++)
		n += atm_plan_move(p, i)->async;
	return n;
}

/* compare -- every formulation of g at one ratio, compared in turns; its rows printed and its
 * figures into n's row ri */
static atm_status compare(const struct opts *o, const atm_graph *g, const atm_zoo_preset_sizes *ps,
                          const char *ratio, struct net *n, int ri, struct summary *sum)
{
	atm_job_placement pl[MAX_FORMS];
	atm_job_opts jo;
	atm_job_compare *c = NULL;
	char path[512], fbuf[32];
	int nf = 0, sync = -1, async = -1;
	atm_job_opts_default(&jo);
	jo.who = "bench_predict";
	jo.mem.emulate = o->emulate;
	jo.cache = o->cache;
	jo.iters = o->iters;
	jo.quiet = o->quiet;
	jo.isolated = o->isolated;
	if (o->time_limit > 0)
		jo.opt.time_limit_s = o->time_limit;
	jo.workload = (atm_results_workload){.preset = o->preset, .batch = ps->batch[0],
	                                     .image = ps->image};
	if (o->out) {
		snprintf(path, sizeof path, "%s-%s.json", o->out, atm_graph_name(g));
		jo.results_path = path;
		jo.append = true;
	}
	for (const char *fs = o->forms; nf < MAX_FORMS && bench_split(&fs, fbuf, sizeof fbuf); nf++) {
		pl[nf] = (atm_job_placement){.optimize = true};
		(void)atm_opt_formulation_from_name(fbuf, &pl[nf].formulation); /* checked in main */
		sync = pl[nf].formulation == ATM_OPT_SYNCHRONOUS ? nf : sync;
		async = pl[nf].formulation == ATM_OPT_ASYNCHRONOUS ? nf : async;
	}
	atm_job_compare_opts co = {.turns = o->turns};
	atm_status rc = atm_opt_parse_ratio(ratio, &jo.ratio_slow, &jo.ratio_fast);
	if (rc == ATM_OK && (rc = atm_job_compare_new(&c, g, &jo, pl, nf, &co)) == ATM_OK &&
	    (rc = atm_job_compare_plan(c)) == ATM_OK && (rc = atm_job_compare_run(c)) == ATM_OK &&
	    o->out)
		rc = atm_job_compare_write_results(c);
	if (rc < 0) {
		printf("| %-12s | %-5s | %-12s | failed: %s\n", atm_graph_name(g), ratio, "(all)",
		       atm_errmsg());
		atm_job_compare_destroy(c);
		return rc;
	}
	for (int fi = 0; fi < nf; fi++) {
		const atm_job_compared *m = atm_job_compare_get(c, fi);
		n->actual[ri][fi] = n->slowdown[ri][fi] = -1;
		if (m->left_out) {
			printf("| %-12s | %-5s | %-12s | left out: %s\n", atm_graph_name(g), ratio, m->name,
			       m->why);
			continue;
		}
		double pred = m->predicted_s, actual = m->median_s, err = (pred - actual) / actual;
		char run[96];
		snprintf(run, sizeof run, "%s %s %s", atm_graph_name(g), ratio, m->name);
		n->actual[ri][fi] = actual;
		n->slowdown[ri][fi] = m->measured_slowdown;
		count_error(err, run, &sum->n, &sum->sum_abs, &sum->worst, sum->worst_run,
		            sizeof sum->worst_run);
		printf("| %-12s | %-5s | %-12s | %9.4f | %9.4f | %+7.1f%% |", atm_graph_name(g), ratio,
		       m->name, pred, actual, err * 100);
		double sd_err = m->predicted_slowdown / m->measured_slowdown - 1;
		if (m->measured_slowdown > 0)
			printf(" %6.3f | %6.3f [%.3f-%.3f] | %+6.1f%% |", m->predicted_slowdown,
			       m->measured_slowdown, m->slowdown_min, m->slowdown_max, sd_err * 100);
		if (m->measured_slowdown > 0 && fi != atm_job_compare_all_fast(c)) {
			count_error(sd_err, run, &sum->n_sd, &sum->sum_abs_sd, &sum->worst_sd,
			            sum->worst_sd_run, sizeof sum->worst_sd_run);
			sum->within_sd += fabs(sd_err) <= SLOWDOWN_TARGET;
		}
		printf("%s\n", m->measured_slowdown > 0 && fabs(sd_err) > SLOWDOWN_TARGET ? " *" : "");
	}
	int fast = atm_job_compare_all_fast(c);
	if (fast >= 0) {
		const atm_job_compared *m = atm_job_compare_get(c, fast);
		if (!(n->fast_first_s > 0)) {
			n->fast_first_s = m->median_s;
			n->drift_first = m->profile_drift;
		}
		n->fast_last_s = m->median_s;
		n->drift_last = m->profile_drift;
	}
	fflush(stdout);
	const atm_job_compared *ms = sync >= 0 ? atm_job_compare_get(c, sync) : NULL;
	const atm_job_compared *ma = async >= 0 ? atm_job_compare_get(c, async) : NULL;
	if (ms && ma && !ms->left_out && !ma->left_out) {
		n->no_async[ri] = n_async_moves(atm_job_plan_get(atm_job_compare_job(c, async))) == 0;
		for (int t = 0; t < ma->n_turns && t < MAX_TURNS; t++)
			n->pair[ri][t] = ma->turn_s[t] / ms->turn_s[t];
		n->n_pair[ri] = ma->n_turns < MAX_TURNS ? ma->n_turns : MAX_TURNS;
	}
	atm_job_compare_destroy(c);
	return ATM_OK;
}

/* bench_net -- every ratio's comparison of one network into n */
static atm_status bench_net(const struct opts *o, const char *model, struct net *n,
                            struct summary *sum)
{
	atm_zoo_preset_sizes ps;
	atm_graph *g = NULL;
	atm_status rc = atm_zoo_preset(model, o->preset, &ps);
	if (rc < 0)
		return rc;
	if (!ps.n_batch)
		return atm_err(ATM_E_USAGE, "preset '%s' has no size of '%s'", o->preset, model);
	atm_zoo_opts zo = {.batch = ps.batch[0], .image = ps.image, .seq = ps.seq};
	if ((rc = atm_zoo_build(&g, model, &zo)) < 0)
		return rc;
	snprintf(n->name, sizeof n->name, "%s", model);
	for (int ri = 0; ri < MAX_RATIOS; ri++)
		for (int fi = 0; fi < MAX_FORMS; fi++)
			n->actual[ri][fi] = n->slowdown[ri][fi] = -1;
	char rbuf[16];
	int ri = 0;
	for (const char *rs = o->ratios; ri < MAX_RATIOS && bench_split(&rs, rbuf, sizeof rbuf); ri++)
		(void)compare(o, g, &ps, rbuf, n, ri, sum); /* a failed comparison is a row; go on */
	atm_graph_destroy(g);
	return ATM_OK;
}

/* geomean -- the geomean measured slowdown against all-fast of formulation fi at ratio ri over
 * the networks that compared both; 0 when none did */
static double geomean(const struct net *nets, int n_nets, int ri, int fi)
{
	double logs = 0;
	int k = 0;
	for (int i = 0; i < n_nets; i++)
		if (nets[i].slowdown[ri][fi] > 0) {
			logs += log(nets[i].slowdown[ri][fi]);
			k++;
		}
	return k ? exp(logs / k) : 0;
}

/* print_slowdowns -- geomean measured slowdown against all-fast per ratio and formulation,
 * and asynchronous against synchronous per network */
static void print_slowdowns(const struct opts *o, const struct net *nets, int n_nets)
{
	char rbuf[16], fbuf[32];
	int sync = -1, async = -1, nf = 0;
	for (const char *fs = o->forms; nf < MAX_FORMS && bench_split(&fs, fbuf, sizeof fbuf); nf++) {
		if (!strcmp(fbuf, "synchronous"))
			sync = nf;
		if (!strcmp(fbuf, "asynchronous"))
			async = nf;
	}
	printf("\ngeomean measured slowdown against all-fast:\n");
	int ri = 0;
	for (const char *rs = o->ratios; ri < MAX_RATIOS && bench_split(&rs, rbuf, sizeof rbuf); ri++) {
		printf("  %-5s", rbuf);
		int fi = 0;
		for (const char *fs = o->forms; fi < nf && bench_split(&fs, fbuf, sizeof fbuf); fi++) {
			double g = geomean(nets, n_nets, ri, fi);
			if (g > 0)
				printf("  %s %.3fx", fbuf, g);
		}
		printf("\n");
		double g = sync >= 0 && !strcmp(rbuf, "4:1") ? geomean(nets, n_nets, ri, sync) : 0;
		if (g > 0)
			printf("        target: synchronous at 4:1 <= 1.10x: %.3fx, %s\n", g,
			       g <= 1.10 ? "met" : "NOT met");
	}
	if (sync < 0 || async < 0)
		return;
	printf("\nasynchronous against synchronous (measured turn by turn; target <= 1.00): median "
	       "[range] of %d turns;\n'=': the asynchronous plan has no asynchronous move\n",
	       o->turns);
	bool met = true;
	for (int i = 0; i < n_nets; i++) {
		printf("  %-12s", nets[i].name);
		ri = 0;
		for (const char *rs = o->ratios; ri < MAX_RATIOS && bench_split(&rs, rbuf, sizeof rbuf);
		     ri++) {
			const double *r = nets[i].pair[ri];
			int n = nets[i].n_pair[ri];
			if (!n)
				continue;
			double sorted[MAX_TURNS];
			memcpy(sorted, r, (size_t)n * sizeof *r);
			double med = atm_sort_median(sorted, n);
			printf("  %s %.3f [%.3f-%.3f]%s", rbuf, med, sorted[0], sorted[n - 1],
			       nets[i].no_async[ri] ? "=" : "");
			met = met && med <= 1;
		}
		printf("\n");
	}
	printf("  target: asynchronous no slower than synchronous on any network: %s\n",
	       met ? "met" : "NOT met");
}

/* print_errors -- the slowdown errors against their target; the absolute errors beside the
 * machine's drift over each network's comparisons and since its profile was calibrated */
static void print_errors(const struct summary *sum, const struct net *nets, int n_nets)
{
	printf("\nslowdown error (predicted / measured slowdown against all-fast - 1; all-fast's own "
	       "left out):\n");
	if (sum->n_sd)
		printf("  target <= %.0f%% on every run: %s: %d of %d runs within; mean |error| %.1f%%, "
		       "largest %.1f%% (%s)\n", SLOWDOWN_TARGET * 100,
		       sum->within_sd == sum->n_sd ? "met" : "NOT met", sum->within_sd, sum->n_sd,
		       sum->sum_abs_sd / sum->n_sd * 100, sum->worst_sd * 100, sum->worst_sd_run);
	else
		printf("  no run compared with all-fast\n");
	printf("\nabsolute error ((predicted - measured) / measured step), no target: mean |error| "
	       "%.1f%%, largest %.1f%% (%s) over %d runs\n", sum->n ? sum->sum_abs / sum->n * 100 : 0,
	       sum->worst * 100, sum->worst_run[0] ? sum->worst_run : "-", sum->n);
	printf("  the machine's drift: all-fast's step in each network's first and last comparison,"
	       "\n  and over its profile's calibration step (when the profile holds one)\n");
	for (int i = 0; i < n_nets; i++) {
		const struct net *n = &nets[i];
		if (!(n->fast_first_s > 0))
			continue;
		printf("  %-12s %.4f s -> %.4f s (x%.3f)", n->name, n->fast_first_s, n->fast_last_s,
		       n->fast_last_s / n->fast_first_s);
		if (n->drift_first > 0)
			printf("; against the calibration x%.3f -> x%.3f", n->drift_first, n->drift_last);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	atm_openmp_passive(argv); /* idle kernel threads sleep, not spin */
	static const struct option longopts[] = {
		{"models", required_argument, NULL, 'm'},
		{"preset", required_argument, NULL, 'p'},
		{"ratios", required_argument, NULL, 'r'},
		{"formulations", required_argument, NULL, 'f'},
		{"iters", required_argument, NULL, 'n'},
		{"time-limit", required_argument, NULL, 't'},
		{"emulate", required_argument, NULL, 'e'},
		{"cache", required_argument, NULL, 'c'},
		{"output", required_argument, NULL, 'o'},
		{"quiet", no_argument, NULL, 'q'},
		{"isolated", no_argument, NULL, 'i'},
		{"turns", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {
		.models = "vgg19,resnet200,inception_v4,densenet264",
		.preset = "small",
		.ratios = "8:1,4:1,1:1",
		.forms = "all-fast,all-slow,numa,static,synchronous,asynchronous",
		.emulate = "optane",
		.cache = "/tmp/autotm-bench-predict-profiles.json",
		.iters = 5,
		.turns = 3,
	};
	long long v;
	int opt;
	while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm': o.models = optarg; break;
		case 'p': o.preset = optarg; break;
		case 'r': o.ratios = optarg; break;
		case 'f': o.forms = optarg; break;
		case 'e': o.emulate = strcmp(optarg, "none") ? optarg : NULL; break;
		case 'c': o.cache = optarg; break;
		case 'o': o.out = optarg; break;
		case 'q': o.quiet = true; break;
		case 'i': o.isolated = true; break;
		case 'n':
			if (!bench_int("bench_predict", "iters", optarg, 1, 1000, &v))
				return 2;
			o.iters = (int)v;
			break;
		case 'T':
			if (!bench_int("bench_predict", "turns", optarg, 1, MAX_TURNS, &v))
				return 2;
			o.turns = (int)v;
			break;
		case 't':
			if (!bench_real("bench_predict", "time-limit", optarg, 0, true, 86400, &o.time_limit))
				return 2;
			break;
		default:
			return bench_other_option("bench_predict", opt, optind, argv, usage);
		}
	}
	if (optind < argc)
		return bench_usage_error("bench_predict", "unexpected argument '%s'", argv[optind]);
	/* every name checked before minutes of runs */
	char buf[32];
	int n_nets = 0;
	for (const char *s = o.ratios; bench_split(&s, buf, sizeof buf);) {
		double a, b;
		if (atm_opt_parse_ratio(buf, &a, &b) < 0)
			return bench_usage_error("bench_predict", "--ratios: %s", atm_errmsg());
	}
	for (const char *s = o.forms; bench_split(&s, buf, sizeof buf);) {
		atm_opt_formulation f;
		if (atm_opt_formulation_from_name(buf, &f) < 0)
			return bench_usage_error("bench_predict", "--formulations: %s", atm_errmsg());
	}
	for (const char *s = o.models; bench_split(&s, buf, sizeof buf); n_nets++) {
		const atm_zoo_model *m;
		atm_zoo_preset_sizes ps;
		if (atm_zoo_find(buf, &m) < 0)
			return bench_usage_error("bench_predict", "--models: %s", atm_errmsg());
		if (atm_zoo_preset(buf, o.preset, &ps) < 0)
			return bench_usage_error("bench_predict", "--preset: %s", atm_errmsg());
	}
	struct net *nets = calloc((size_t)n_nets + 1, sizeof *nets);
	struct summary sum = {0};
	if (!nets)
		return 1;
	printf("bench_predict: preset %s, emulate %s, each turn the fastest of %d steps, %d turns\n",
	       o.preset, o.emulate ? o.emulate : "none", o.iters, o.turns);
	printf("| %-12s | %-5s | %-12s | %9s | %9s | %8s | %6s | %21s | %7s |\n", "network", "ratio",
	       "formulation", "predicted", "measured", "error", "slowdown: predicted", "measured",
	       "error");
	int i = 0, failed = 0;
	for (const char *s = o.models; bench_split(&s, buf, sizeof buf); i++)
		if (bench_net(&o, buf, &nets[i], &sum) < 0) {
			fprintf(stderr, "bench_predict: %s: %s\n", buf, atm_errmsg());
			failed++;
		}
	print_errors(&sum, nets, n_nets);
	print_slowdowns(&o, nets, n_nets);
	free(nets);
	return failed ? 1 : 0;
}
