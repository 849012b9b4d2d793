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
	"                     [--iters N] [--time-limit S] [--emulate P] [--cache FILE]\n"
	"                     [--pairs N] [--isolated] [-o FILE] [--quiet]\n"
	"\n"
	"For every network: profiles what the cache lacks, then plans and runs each\n"
	"formulation at each ratio (all-fast once: it has no ratio) and prints the\n"
	"predicted step, the measured one (the fastest of N after a warm-up) and the\n"
	"error (predicted - measured) / measured; then the largest |error|, the geomean\n"
	"measured slowdown against all-fast per formulation and ratio, and asynchronous\n"
	"against synchronous per network: the first runs' ratio and, over --pairs more\n"
	"runs of the same two plans in turns (default 3), the median ratio and its range.\n"
	"Targets: |error| <= 5% on every run;\n"
	"asynchronous no slower than synchronous on any network; synchronous at 4:1 at\n"
	"most 1.10x all-fast (geomean). -o appends every run to a results file per\n"
	"network (FILE-NETWORK.json) for 'autotm run --explain'-style reading.\n"
	"--isolated prices kernels by their times alone, without the profile's in-step\n"
	"calibration (as autotm's --isolated), to show what the calibration changes.\n"
	"Defaults: vgg19,resnet200,inception_v4,densenet264; small; 8:1,4:1,1:1;\n"
	"all-fast,all-slow,numa,static,synchronous,asynchronous; 5 steps; the\n"
	"optimizer's time limit (60 s) for each plan; optane;\n"
	"/tmp/autotm-bench-predict-profiles.json.\n";

#define MAX_RATIOS 8
#define MAX_FORMS 8
#define MAX_PAIRS 16

struct opts {
	const char *models, *preset, *ratios, *forms, *emulate, *cache, *out;
	int iters, pairs;
	double time_limit; /* 0: the optimizer's */
	bool quiet, isolated;
};

/* One network's measured steps: [ratio][formulation], < 0 where the run failed. */
struct net {
	char name[32];
	double actual[MAX_RATIOS][MAX_FORMS];
	double fast; /* all-fast */
	/* asynchronous over synchronous, the first runs' then --pairs more ([0]: the first) */
	double pair[MAX_RATIOS][MAX_PAIRS + 1];
	int n_pair[MAX_RATIOS];
	bool no_async[MAX_RATIOS]; /* the asynchronous plan has no asynchronous move */
};

struct summary {
	int n, within;
	double worst;
	char worst_run[96];
};

/* run_one -- plan and run one formulation at one ratio; false (row printed) when it failed.
 * With keep, the job is kept there for more runs of its plan (the caller destroys it). */
static bool run_one(const struct opts *o, const atm_graph *g, const atm_zoo_preset_sizes *ps,
                    const char *ratio, const char *form_name, double *pred, double *actual,
                    atm_job **keep)
{
	atm_job_opts jo;
	atm_job *j = NULL;
	char path[512];
	atm_job_opts_default(&jo);
	jo.who = "bench_predict";
	jo.optimize = true;
	jo.mem.emulate = o->emulate;
	jo.cache = o->cache;
	jo.iters = o->iters;
	jo.quiet = true;
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
	atm_status rc = atm_opt_formulation_from_name(form_name, &jo.formulation);
	if (rc == ATM_OK)
		rc = atm_opt_parse_ratio(ratio, &jo.ratio_slow, &jo.ratio_fast);
	if (rc == ATM_OK && (rc = atm_job_new(&j, g, &jo)) == ATM_OK && (rc = atm_job_plan(j)) == ATM_OK &&
	    (rc = atm_job_execute(j)) == ATM_OK && o->out)
		rc = atm_job_write_results(j);
	if (rc == ATM_OK) {
		*pred = atm_plan_info_get(atm_job_plan_get(j))->predicted_runtime_s;
		*actual = atm_job_exec_result(j)->actual_runtime_s;
	} else {
		printf("| %-12s | %-5s | %-12s | failed: %s\n", atm_graph_name(g), ratio, form_name,
		       atm_errmsg());
	}
	if (keep && rc == ATM_OK)
		*keep = j;
	else
		atm_job_destroy(j);
	return rc == ATM_OK;
}

/* n_async_moves -- the plan's asynchronous moves */
static int32_t n_async_moves(const atm_plan *p)
{
	int32_t n = 0;
	for (int32_t i = 0; i < atm_plan_n_moves(p); i++)
		n += atm_plan_move(p, i)->async;
	return n;
}

/* run_pairs -- the synchronous and asynchronous plans run o->pairs more times in turns (which
 * goes first alternates), each pair's ratio into n's row ri after the first runs' */
static void run_pairs(const struct opts *o, atm_job *sync, atm_job *async, struct net *n, int ri)
{
	n->no_async[ri] = n_async_moves(atm_job_plan_get(async)) == 0;
	n->pair[ri][0] = atm_job_exec_result(async)->actual_runtime_s /
	                 atm_job_exec_result(sync)->actual_runtime_s;
	n->n_pair[ri] = 1;
	for (int r = 0; r < o->pairs; r++) {
		double t[2];
		atm_job *turn[2] = {r % 2 ? async : sync, r % 2 ? sync : async};
		for (int k = 0; k < 2; k++)
			if (atm_job_execute_again(turn[k], &t[k]) < 0) {
				fprintf(stderr, "bench_predict: %s, another run: %s\n", n->name, atm_errmsg());
				return;
			}
		n->pair[ri][n->n_pair[ri]++] = r % 2 ? t[0] / t[1] : t[1] / t[0];
	}
}

/* bench_net -- every ratio and formulation of one network into n */
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
	atm_zoo_opts zo = {.batch = ps.batch[0], .image = ps.image};
	if ((rc = atm_zoo_build(&g, model, &zo)) < 0)
		return rc;
	snprintf(n->name, sizeof n->name, "%s", model);
	n->fast = -1;
	char rbuf[16], fbuf[32];
	int ri = 0;
	for (const char *rs = o->ratios; ri < MAX_RATIOS && bench_split(&rs, rbuf, sizeof rbuf); ri++) {
		atm_job *sync = NULL, *async = NULL;
		int fi = 0;
		for (const char *fs = o->forms; fi < MAX_FORMS && bench_split(&fs, fbuf, sizeof fbuf);
		     fi++) {
			double pred = -1, actual = -1;
			n->actual[ri][fi] = -1;
			bool fast = !strcmp(fbuf, "all-fast");
			if (fast && ri > 0) { /* no ratio: measured once */
				n->actual[ri][fi] = n->fast;
				continue;
			}
			atm_job **keep = !strcmp(fbuf, "synchronous") ? &sync
			                 : !strcmp(fbuf, "asynchronous") ? &async : NULL;
			if (!run_one(o, g, &ps, rbuf, fbuf, &pred, &actual, keep))
				continue;
			n->actual[ri][fi] = actual;
			if (fast)
				n->fast = actual;
			double err = (pred - actual) / actual;
			sum->n++;
			sum->within += fabs(err) <= 0.05;
			if (fabs(err) > sum->worst) {
				sum->worst = fabs(err);
				snprintf(sum->worst_run, sizeof sum->worst_run, "%s %s %s", model,
				         fast ? "-" : rbuf, fbuf);
			}
			printf("| %-12s | %-5s | %-12s | %9.4f | %9.4f | %+7.1f%% |%s\n", model,
			       fast ? "-" : rbuf, fbuf, pred, actual, err * 100,
			       fabs(err) <= 0.05 ? "" : " *");
			fflush(stdout);
		}
		if (sync && async)
			run_pairs(o, sync, async, n, ri);
		atm_job_destroy(sync);
		atm_job_destroy(async);
	}
	atm_graph_destroy(g);
	return ATM_OK;
}

/* geomean -- the geomean measured slowdown against all-fast of formulation fi at ratio ri over
 * the networks that ran both; 0 when none did */
static double geomean(const struct net *nets, int n_nets, int ri, int fi)
{
	double logs = 0;
	int k = 0;
	for (int i = 0; i < n_nets; i++)
		if (nets[i].fast > 0 && nets[i].actual[ri][fi] > 0) {
			logs += log(nets[i].actual[ri][fi] / nets[i].fast);
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
	printf("\nasynchronous against synchronous (measured; target <= 1.00): the first runs; "
	       "median [range] of them\nand %d more pair%s; '=': the asynchronous plan has no "
	       "asynchronous move\n", o->pairs, o->pairs == 1 ? "" : "s");
	bool met = true, met_median = true;
	for (int i = 0; i < n_nets; i++) {
		printf("  %-12s", nets[i].name);
		ri = 0;
		for (const char *rs = o->ratios; ri < MAX_RATIOS && bench_split(&rs, rbuf, sizeof rbuf);
		     ri++) {
			const double *r = nets[i].pair[ri];
			int n = nets[i].n_pair[ri];
			if (!n)
				continue;
			double sorted[MAX_PAIRS + 1];
			memcpy(sorted, r, (size_t)n * sizeof *r);
			double med = atm_sort_median(sorted, n);
			printf("  %s %.3f %.3f [%.3f-%.3f]%s", rbuf, r[0], med, sorted[0], sorted[n - 1],
			       nets[i].no_async[ri] ? "=" : "");
			met = met && r[0] <= 1;
			met_median = met_median && med <= 1;
		}
		printf("\n");
	}
	printf("  target: asynchronous no slower than synchronous on any network: first runs %s, "
	       "medians %s\n", met ? "met" : "NOT met", met_median ? "met" : "NOT met");
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
		{"pairs", required_argument, NULL, 'P'},
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
		.pairs = 3,
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
		case 'P':
			if (!bench_int("bench_predict", "pairs", optarg, 0, MAX_PAIRS, &v))
				return 2;
			o.pairs = (int)v;
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
	printf("bench_predict: preset %s, emulate %s, the fastest of %d steps\n", o.preset,
	       o.emulate ? o.emulate : "none", o.iters);
	printf("| %-12s | %-5s | %-12s | %9s | %9s | %8s |\n", "network", "ratio", "formulation",
	       "predicted", "measured", "error");
	int i = 0, failed = 0;
	for (const char *s = o.models; bench_split(&s, buf, sizeof buf); i++)
		if (bench_net(&o, buf, &nets[i], &sum) < 0) {
			fprintf(stderr, "bench_predict: %s: %s\n", buf, atm_errmsg());
			failed++;
		}
	printf("\n%d of %d runs within 5%%; largest |error| %.1f%% (%s)\n", sum.within, sum.n,
	       sum.worst * 100, sum.worst_run[0] ? sum.worst_run : "-");
	print_slowdowns(&o, nets, n_nets);
	free(nets);
	return failed ? 1 : 0;
}
