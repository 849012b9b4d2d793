/* bench_optimizer.c -- the ILP formulations on the zoo, each solver side by side: model size, creation and solve time, final gap, predicted step */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atm_optimizer.h"
#include "atm_profiler.h"
#include "atm_runtime.h"
#include "atm_zoo.h"
#include "bench_util.h"

static const char usage[] =
	"usage: bench_optimizer [--models LIST] [--presets LIST] [--ratios LIST]\n"
	"                       [--formulations LIST] [--solver LIST] [--time-limit S]\n"
	"                       [--mip-gap G] [--cache FILE] [--emulate P]\n"
	"                       [--estimate-small LIST] [--recompute] [--optimizer O]\n"
	"                       [--quiet]\n"
	"\n"
	"For every network and preset, profiles what the cache lacks (small presets\n"
	"measured, paper presets estimated; --estimate-small estimates the small presets\n"
	"of the networks it lists too, or of all with 'all'), then plans each ratio with\n"
	"each formulation and each solver and prints one row per plan: model size,\n"
	"creation and solve seconds (all defragmentation rounds together) and their\n"
	"total, rounds, final gap and status, and the predicted step against all fast.\n"
	"The solvers of --solver (glpk, cbc, auto) plan the same models one after the\n"
	"other, a row each, so that glpk,cbc compares them side by side; each solver\n"
	"gets its own summary line. --recompute plans every formulation a second time\n"
	"with recomputation (autotm plan --recompute), its row ('sync+rc', 'async+rc')\n"
	"right after the one without. --optimizer (sgd, momentum, adamw: PyTorch's\n"
	"defaults) ends every step in that update, its states tensors the plan places.\n"
	"Lists are comma separated; --models all is the\n"
	"whole zoo.\n"
	"Defaults: vgg19, resnet200, inception_v4, densenet264 (the paper's networks),\n"
	"gpt2 and gpt2-xl (today's; gpt2-xl's small preset estimated too: --estimate-small);\n"
	"small,paper; 8:1,4:1,1:1; synchronous,asynchronous; auto (CBC when this build\n"
	"has it, else GLPK: what autotm plan uses); 60 s for each plan; 0.01; the cache\n"
	"/tmp/autotm-bench-profiles.json; --emulate optane.\n";

/* listed -- name is in the comma-separated list (or the list is "all") */
static bool listed(const char *list, const char *name)
{
	char buf[64];
	if (list && !strcmp(list, "all"))
		return true;
	for (const char *s = list; bench_split(&s, buf, sizeof buf);)
		if (!strcmp(buf, name))
			return true;
	return false;
}

struct opts {
	const char *models, *presets, *ratios, *forms, *cache, *emulate, *solver_list;
	double time_limit, gap;
	const char *estimate_small;
	bool quiet, recompute;
	const char *optimizer; /* NULL: the zoo's SGD */
	/* --solver resolved to what this build runs, each once, in the order given */
	atm_opt_solver solvers[ATM_OPT_N_SOLVERS];
	int n_solvers;
};

/* open_profile -- the profile of g on this machine, everything g needs in it */
static atm_status open_profile(const struct opts *o, const atm_graph *g, bool estimate,
                               atm_prof **pr, atm_profile **p)
{
	atm_prof_opts po = {.emulate = o->emulate, .seed = 1, .estimate = estimate,
	                    .progress = !o->quiet && isatty(STDERR_FILENO)};
	atm_profile_machine m;
	atm_prof_report r;
	atm_status rc = atm_prof_new(pr, g, &po);
	if (rc < 0)
		return rc;
	atm_prof_get_machine(*pr, &m);
	if ((rc = atm_prof_cache_open(p, o->cache, &m, false)) < 0)
		return rc;
	if ((rc = atm_prof_run(*pr, *p, &r)) < 0)
		return rc;
	if (!o->quiet && r.n_configs_measured)
		fprintf(stderr, "bench_optimizer: %s: %s %lld configurations in %.1f s\n",
		        atm_graph_name(g), estimate ? "estimated" : "measured",
		        (long long)r.n_configs_measured, r.seconds);
	return ATM_OK;
}

/* One solver's summary over every plan. */
struct totals {
	int n, met;
	double worst_solve, worst_gap;
};

/* print_row -- one plan of one solver: the model, the times, the gap and the prediction
 * against all fast (fast_s); counted into tot */
static void print_row(const char *model, const char *preset, int64_t batch, bool estimate,
                      const char *ratio, const char *form_name, atm_opt_solver solver,
                      const atm_plan_info *info, const atm_opt_report *rep, double fast_s,
                      struct totals *tot)
{
	double create = 0, solve = 0;
	for (int i = 0; i < rep->n_rounds; i++) {
		create += rep->rounds[i].creation_s;
		solve += rep->rounds[i].solve_s;
	}
	double gap = info->mip_gap, whole = create + solve;
	bool met = whole <= 60 && gap >= 0 && gap <= 0.01 + 1e-9;
	tot->n++;
	tot->met += met;
	if (whole > tot->worst_solve)
		tot->worst_solve = whole;
	if (gap > tot->worst_gap || gap < 0)
		tot->worst_gap = gap < 0 ? 1 : gap;
	printf("| %-12s | %-5s | %5lld | %-4s | %-5s | %-5s | %-6s | %7d | %7d | %7d | %6.2f | %7.2f "
	       "| %6.2f | %2d | %6.2f%% | %-22s | %9.4f | %6.3f |%s\n",
	       model, preset, (long long)batch, estimate ? "est" : "meas", ratio, form_name,
	       atm_opt_solver_name(solver), rep->n_columns, rep->n_rows, rep->n_binaries, create,
	       solve, whole, rep->n_rounds, gap < 0 ? -1.0 : gap * 100, info->solver_status,
	       info->predicted_runtime_s, info->predicted_runtime_s / fast_s, met ? "" : " *");
	fflush(stdout);
}

/* bench_one -- every ratio, formulation and solver of one network and preset; tot has one
 * entry per solver of o */
static atm_status bench_one(const struct opts *o, const char *model, const char *preset,
                            struct totals *tot)
{
	atm_zoo_preset_sizes ps;
	atm_graph *g = NULL;
	atm_prof *pr = NULL;
	atm_profile *prof = NULL;
	atm_plan *fast = NULL;
	atm_opt_check_result fc;
	atm_status rc = atm_zoo_preset(model, preset, &ps);
	if (rc < 0)
		return rc;
	if (!ps.n_batch)
		return ATM_OK; /* the preset does not cover this network */
	atm_zoo_opts zo = {.batch = ps.batch[0], .image = ps.image, .seq = ps.seq};
	bool estimate = strcmp(preset, "small") || listed(o->estimate_small, model);
	if ((rc = atm_zoo_build(&g, model, &zo)) < 0)
		goto done;
	if (o->optimizer) {
		atm_update_kind kind;
		atm_graph *c = NULL;
		if ((rc = atm_update_kind_from_name(o->optimizer, &kind)) < 0)
			goto done;
		atm_update u = atm_update_defaults(kind);
		if ((rc = atm_graph_with_update(g, &u, &c)) < 0)
			goto done;
		atm_graph_destroy(g);
		g = c;
	}
	if ((rc = open_profile(o, g, estimate, &pr, &prof)) < 0 ||
	    (rc = atm_opt_plan(&fast, g, prof, 0, ATM_OPT_ALL_FAST, NULL, NULL)) < 0 ||
	    (rc = atm_opt_check(fast, prof, NULL, &fc)) < 0)
		goto done;
	char rbuf[32], fbuf[32];
	for (const char *rs = o->ratios; bench_split(&rs, rbuf, sizeof rbuf);) {
		double s, f;
		int64_t limit;
		if ((rc = atm_opt_parse_ratio(rbuf, &s, &f)) < 0 ||
		    (rc = atm_opt_limit_from_ratio(g, s, f, &limit)) < 0)
			goto done;
		for (const char *fs = o->forms; bench_split(&fs, fbuf, sizeof fbuf);) {
			atm_opt_formulation form;
			if ((rc = atm_opt_formulation_from_name(fbuf, &form)) < 0)
				goto done;
			/* the same model, solver after solver (and without, then with recomputation):
			 * rows side by side */
			for (int k = 0; k < o->n_solvers * (o->recompute ? 2 : 1); k++) {
				int sv = k % o->n_solvers;
				bool again = k >= o->n_solvers;
				char name[48];
				atm_opt_options oo;
				atm_opt_report rep;
				atm_plan *p = NULL;
				atm_opt_options_default(&oo);
				oo.time_limit_s = o->time_limit;
				oo.mip_gap = o->gap;
				oo.solver = o->solvers[sv];
				oo.recompute = again;
				snprintf(name, sizeof name, "%s%s", form == ATM_OPT_SYNCHRONOUS ? "sync" :
				         form == ATM_OPT_ASYNCHRONOUS ? "async" : fbuf, again ? "+rc" : "");
				rc = atm_opt_plan(&p, g, prof, limit, form, &oo, &rep);
				if (rc < 0) {
					printf("| %-12s | %-5s | %5lld | %-4s | %-5s | %-5s | %-6s | %s |\n", model,
					       preset, (long long)ps.batch[0], estimate ? "est" : "meas", rbuf, name,
					       atm_opt_solver_name(o->solvers[sv]), atm_errmsg());
					fflush(stdout);
					rc = ATM_OK;
					continue;
				}
				print_row(model, preset, ps.batch[0], estimate, rbuf, name, o->solvers[sv],
				          atm_plan_info_get(p), &rep, fc.predicted_s, &tot[k]);
				atm_plan_destroy(p);
			}
		}
	}
done:
	atm_plan_destroy(fast);
	atm_profile_destroy(prof);
	atm_prof_destroy(pr);
	atm_graph_destroy(g);
	return rc;
}

/* check_solvers -- --solver's names into o->solvers, each resolved to the solver this build
 * runs for it and kept once; -1 to go on, else the exit code (with a message): 2 for a name
 * that is no solver, 5 for one this build lacks, as autotm's */
static int check_solvers(const char *prog, struct opts *o)
{
	char buf[64];
	o->n_solvers = 0;
	for (const char *s = o->solver_list; bench_split(&s, buf, sizeof buf);) {
		atm_opt_solver want, got;
		atm_status rc;
		if (atm_opt_solver_from_name(buf, &want) < 0)
			return bench_usage_error(prog, "--solver: %s", atm_errmsg());
		if ((rc = atm_opt_solver_resolve(want, &got)) < 0) {
			fprintf(stderr, "%s: --solver: %s\n", prog, atm_errmsg());
			return atm_exit_code(rc);
		}
		bool seen = false;
		for (int i = 0; i < o->n_solvers; i++)
			seen |= o->solvers[i] == got;
		if (!seen)
			o->solvers[o->n_solvers++] = got;
	}
	if (!o->n_solvers)
		return bench_usage_error(prog, "--solver needs at least one of glpk, cbc, auto");
	return -1;
}

/* check_lists -- every name of the list options is one autotm knows; -1 (with a message)
 * when not */
static int check_lists(const struct opts *o)
{
	const char *prog = "bench_optimizer";
	char buf[64];
	double rs, rf;
	atm_opt_formulation f;
	atm_zoo_preset_sizes ps;
	if (bench_models_known(prog, o->models) >= 0)
		return -1;
	for (const char *s = o->presets; bench_split(&s, buf, sizeof buf);)
		if (atm_zoo_preset("vgg19", buf, &ps) < 0)
			return bench_usage_error(prog, "--presets: %s", atm_errmsg()), -1;
	for (const char *s = o->ratios; bench_split(&s, buf, sizeof buf);)
		if (atm_opt_parse_ratio(buf, &rs, &rf) < 0)
			return bench_usage_error(prog, "--ratios: %s", atm_errmsg()), -1;
	for (const char *s = o->forms; bench_split(&s, buf, sizeof buf);)
		if (atm_opt_formulation_from_name(buf, &f) < 0)
			return bench_usage_error(prog, "--formulations: %s", atm_errmsg()), -1;
	return 0;
}

/* main -- options, then one table over presets and networks */
int main(int argc, char **argv)
{
	atm_openmp_passive(argv); /* idle kernel threads sleep, not spin */
	struct opts o = {
		.models = "vgg19,resnet200,inception_v4,densenet264,gpt2,gpt2-xl",
		.estimate_small = "gpt2-xl",
		.presets = "small,paper",
		.ratios = "8:1,4:1,1:1",
		.forms = "synchronous,asynchronous",
		.solver_list = "auto",
		.cache = "/tmp/autotm-bench-profiles.json",
		.emulate = "optane",
		.time_limit = 60,
		.gap = 0.01,
	};
	static const struct option longopts[] = {
		{"models", required_argument, NULL, 'm'},
		{"presets", required_argument, NULL, 'p'},
		{"ratios", required_argument, NULL, 'r'},
		{"formulations", required_argument, NULL, 'f'},
		{"solver", required_argument, NULL, 'S'},
		{"time-limit", required_argument, NULL, 't'},
		{"mip-gap", required_argument, NULL, 'g'},
		{"cache", required_argument, NULL, 'c'},
		{"emulate", required_argument, NULL, 'e'},
		{"estimate-small", required_argument, NULL, 's'},
		{"recompute", no_argument, NULL, 'R'},
		{"optimizer", required_argument, NULL, 'O'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *prog = "bench_optimizer";
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm': o.models = optarg; break;
		case 'p': o.presets = optarg; break;
		case 'r': o.ratios = optarg; break;
		case 'f': o.forms = optarg; break;
		case 'S': o.solver_list = optarg; break;
		case 'c': o.cache = optarg; break;
		case 'e': o.emulate = strcmp(optarg, "none") ? optarg : NULL; break;
		case 's': o.estimate_small = optarg; break;
		case 'q': o.quiet = true; break;
		case 'R': o.recompute = true; break;
		case 'O': {
			atm_update_kind kind;
			if (atm_update_kind_from_name(optarg, &kind) < 0)
				return bench_usage_error(prog, "--optimizer: %s", atm_errmsg());
			o.optimizer = optarg;
			break;
		}
		case 't':
			if (!bench_real(prog, "time-limit", optarg, 0, true, 1e6, &o.time_limit))
				return 2;
			break;
		case 'g':
			if (!bench_real(prog, "mip-gap", optarg, 0, false, 0.999, &o.gap))
				return 2;
			break;
		default:
			return bench_other_option(prog, opt, optind, argv, usage);
		}
	}
	if (optind < argc)
		return bench_usage_error(prog, "unexpected argument '%s'", argv[optind]);
	if (check_lists(&o) < 0)
		return 2;
	int code = check_solvers(prog, &o);
	if (code >= 0)
		return code;
	char pbuf[32];
	printf("ILP formulations on the zoo with ");
	for (int k = 0; k < o.n_solvers; k++)
		printf("%s%s (%s)", k ? ", " : "", atm_opt_solver_name(o.solvers[k]),
		       atm_opt_solver_version(o.solvers[k]));
	printf(": time limit %.0f s per plan, MIP gap %.2f%%, slow tier emulating %s, steps ending in "
	       "%s; '*' marks a plan over 60 s or above a 1%% gap\n\n", o.time_limit, o.gap * 100,
	       o.emulate ? o.emulate : "nothing", o.optimizer ? o.optimizer : "sgd");
	printf("| network      | preset| batch | prof | ratio | form  | solver | columns |    rows | "
	       "binary  | create |   solve |  total | rd |    gap  | status                 | "
	       "predict s | /fast  |\n");
	printf("|--------------|-------|-------|------|-------|-------|--------|---------|---------|"
	       "---------|--------|---------|--------|----|---------|------------------------|"
	       "----------|--------|\n");
	struct totals tot[2 * ATM_OPT_N_SOLVERS] = {{0}}; /* without, then with recomputation */
	for (const char *ps = o.presets; bench_split(&ps, pbuf, sizeof pbuf);)
		for (int i = 0; i < atm_zoo_n_models(); i++) {
			const char *name = atm_zoo_model_at(i)->name;
			if (!listed(o.models, name))
				continue;
			if (bench_one(&o, name, pbuf, tot) < 0) {
				fprintf(stderr, "bench_optimizer: %s (%s): %s\n", name, pbuf, atm_errmsg());
				return atm_exit_code(-1);
			}
		}
	printf("\n");
	for (int k = 0; k < o.n_solvers * (o.recompute ? 2 : 1); k++)
		printf("%s%s: %d of %d plans within 60 s and a 1%% gap; slowest %.1f s (creation + "
		       "solve, all rounds), largest final gap %.2f%%\n",
		       atm_opt_solver_name(o.solvers[k % o.n_solvers]),
		       k >= o.n_solvers ? " with recomputation" : "", tot[k].met, tot[k].n,
		       tot[k].worst_solve, tot[k].worst_gap * 100);
	return 0;
}
