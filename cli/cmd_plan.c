/* cmd_plan.c -- autotm plan: place a network's tensors under a fast-memory limit and write the plan JSON */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "atm_optimizer.h"
#include "atm_profiler.h"
#include "cli.h"

static const char plan_help[] =
	"usage: autotm plan --model NAME (--ratio S:F | --dram-limit SIZE) [--formulation F]\n"
	"                   [-o plan.json] [--explain] [--json] [--cache FILE] [--estimate]\n"
	"       autotm plan --graph FILE ...\n"
	"\n"
	"Decides where every tensor of a network's training step lives, fast or slow\n"
	"memory, and when it moves, so that the step fits a fast-memory limit and runs as\n"
	"fast as the profile predicts it can. The ILP formulations are solved with GLPK,\n"
	"seeded with a heuristic plan so that a time-limited solve always returns one;\n"
	"plans that first-fit fragments are solved again with the limit tightened where\n"
	"they overflow. Kernel times come from the profile cache ('autotm profile');\n"
	"what it lacks is profiled first (measured, or with --estimate estimated).\n"
	"\n"
	"options:\n" CLI_GRAPH_HELP
	"  --ratio S:F       slow:fast memory; fast = peak footprint * F / (S + F): 4:1 is a\n"
	"                    fifth, 0:1 all fast (no limit), 1:0 the least any plan needs\n"
	"  --dram-limit SIZE the fast-memory limit in bytes (K, M, G suffixes: 12G)\n"
	"  --formulation F   static, synchronous (default), asynchronous: the ILPs; all-fast,\n"
	"                    all-slow, numa (first touch), 2lm (fast memory as a cache of slow\n"
	"                    memory, predicted), vdnn (offload convolution inputs): baselines\n"
	"  --mip-gap G       stop when the plan is within G of the best possible (default\n"
	"                    0.01; '1%' works too; 0 asks for the optimum)\n"
	"  --time-limit S    seconds the whole plan may take, all rounds (default 60); the\n"
	"                    best plan found by then is used\n"
	"  --async-window N  kernels before a use where an overlapped fetch may run (default 2)\n"
	"  --rounds N        solves for fragmentation before giving up (default 8)\n"
	"  -o FILE           write the plan JSON to FILE (atomically; 'autotm run --placement\n"
	"                    FILE' runs it)\n"
	"  --results FILE    also write the plan's prediction as a results record (actual\n"
	"                    times null; the README's results format), e.g. for a network\n"
	"                    planned with --estimate that this machine cannot run\n"
	"  --append          add that record to FILE's runs (FILE of the same workload)\n"
	"  --explain         print the plan as a timeline: where tensors live, what moves when,\n"
	"                    which kernels slow down and by how much\n"
	"  --json            print a summary as one JSON object\n"
	"  --cache FILE      the profile cache (default $XDG_CACHE_HOME/autotm/profiles.json,\n"
	"                    else ~/.cache/autotm/profiles.json)\n"
	"  --estimate        use (and make) estimated kernel times instead of measured ones\n"
	CLI_MEMORY_HELP
	"  --verbose         GLPK's progress on stderr\n"
	"  --quiet           no progress on stderr\n"
	"  -h, --help        this help\n";

/* parse_gap -- "0.01" or "1%" */
static atm_status parse_gap(const char *s, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	if (end != s && *end == '%' && !end[1]) {
		v /= 100;
		end++;
	}
	if (end == s || *end || errno || !isfinite(v) || v < 0 || v >= 1)
		return atm_err(ATM_E_USAGE, "--mip-gap '%s' is not valid; expected a fraction from 0 to "
		               "1 (0.01) or a percentage (1%%)", s);
	*out = v;
	return ATM_OK;
}

/* parse_seconds -- the --time-limit value */
static atm_status parse_seconds(const char *s, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v) || v <= 0 || v > 1e6)
		return atm_err(ATM_E_USAGE, "--time-limit '%s' is not valid; expected seconds above 0 "
		               "(at most 1000000)", s);
	*out = v;
	return ATM_OK;
}

/* print_json -- what the plan is and how it was found, as one JSON object */
static atm_status print_json(const atm_graph *g, int64_t batch, const atm_plan *p,
                             const atm_opt_report *rep, const atm_opt_check_result *chk,
                             double ratio_s, double ratio_f, const char *out)
{
	const atm_plan_info *info = atm_plan_info_get(p);
	json_t *o = json_object(), *solver = json_object(), *rounds = json_array(),
	       *model = json_object(), *moves = json_object();
	json_object_set_new(o, "graph", json_string(atm_graph_name(g)));
	json_object_set_new(o, "batch", json_integer(batch));
	json_object_set_new(o, "formulation", json_string(info->formulation));
	json_object_set_new(o, "fast_limit_bytes", json_integer(info->fast_limit_bytes));
	json_object_set_new(o, "ratio", ratio_s + ratio_f > 0 ? json_pack("[f, f]", ratio_s, ratio_f)
	                                                       : json_null());
	json_object_set_new(o, "predicted_runtime_s", json_real(chk->predicted_s));
	json_object_set_new(o, "all_fast_kernel_s", json_real(chk->all_fast_kernel_s));
	json_object_set_new(o, "kernel_s", json_real(chk->kernel_s));
	json_object_set_new(o, "sync_move_s", json_real(chk->sync_move_s));
	json_object_set_new(o, "async_wait_s", json_real(chk->async_wait_s));
	json_object_set_new(o, "fast_peak_bytes", json_integer(chk->fast_peak_bytes));
	json_object_set_new(o, "fast_arena_bytes", json_integer(chk->fast_arena_bytes));
	json_object_set_new(moves, "n", json_integer(chk->n_moves));
	json_object_set_new(moves, "n_async", json_integer(chk->n_async_moves));
	json_object_set_new(o, "moves", moves);
	json_object_set_new(solver, "status", json_string(info->solver_status));
	json_object_set_new(solver, "mip_gap", info->mip_gap < 0 ? json_null() : json_real(info->mip_gap));
	json_object_set_new(solver, "creation_s", info->creation_s < 0 ? json_null() : json_real(info->creation_s));
	json_object_set_new(solver, "solve_s", info->solve_s < 0 ? json_null() : json_real(info->solve_s));
	for (int i = 0; i < rep->n_rounds; i++) {
		const atm_opt_round *r = &rep->rounds[i];
		json_t *x = json_object();
		json_object_set_new(x, "fast_limit_bytes", json_integer(r->fast_limit_bytes));
		json_object_set_new(x, "creation_s", json_real(r->creation_s));
		json_object_set_new(x, "solve_s", json_real(r->solve_s));
		json_object_set_new(x, "objective_s", json_real(r->objective_s));
		json_object_set_new(x, "bound_s", r->bound_s < 0 ? json_null() : json_real(r->bound_s));
		json_object_set_new(x, "mip_gap", r->mip_gap < 0 ? json_null() : json_real(r->mip_gap));
		json_object_set_new(x, "status", json_string(r->status));
		json_object_set_new(x, "fits", json_boolean(r->fits));
		json_array_append_new(rounds, x);
	}
	json_object_set_new(solver, "rounds", rounds);
	json_object_set_new(model, "columns", json_integer(rep->n_columns));
	json_object_set_new(model, "rows", json_integer(rep->n_rows));
	json_object_set_new(model, "binaries", json_integer(rep->n_binaries));
	json_object_set_new(model, "nonzeros", json_integer(rep->n_nonzeros));
	json_object_set_new(model, "movable_tensors", json_integer(rep->n_movable));
	json_object_set_new(model, "pinned_bytes", json_integer(rep->pinned_bytes));
	json_object_set_new(solver, "model", model);
	json_object_set_new(solver, "heuristic_s", rep->heuristic_s < 0 ? json_null() : json_real(rep->heuristic_s));
	json_object_set_new(o, "solver", solver);
	json_object_set_new(o, "output", out ? json_string(out) : json_null());
	return cli_print_json(o);
}

/* print_human -- the plan in a few lines */
static void print_human(const atm_graph *g, int64_t batch, const atm_plan *p,
                        const atm_opt_report *rep, const atm_opt_check_result *chk, const char *out)
{
	const atm_plan_info *info = atm_plan_info_get(p);
	char a[32], b[32];
	printf("%s, batch %lld: %s plan, fast limit %s\n", atm_graph_name(g), (long long)batch,
	       info->formulation, info->fast_limit_bytes ? atm_format_bytes(info->fast_limit_bytes, a, sizeof a)
	                                                 : "none");
	printf("  predicted step   %.6f s (all fast %.6f s, %.2fx)\n", chk->predicted_s,
	       chk->all_fast_kernel_s, chk->all_fast_kernel_s > 0 ? chk->predicted_s / chk->all_fast_kernel_s : 0);
	printf("  moves            %d (%d overlapped), blocking %.6f s, waits %.6f s\n", chk->n_moves,
	       chk->n_async_moves, chk->sync_move_s, chk->async_wait_s);
	printf("  fast memory      peak %s, arena %s\n", atm_format_bytes(chk->fast_peak_bytes, a, sizeof a),
	       atm_format_bytes(chk->fast_arena_bytes, b, sizeof b));
	if (rep->n_rounds) {
		printf("  solver           %s, gap %.2f%%, model %.2f s, solve %.2f s, %d round%s\n",
		       info->solver_status, info->mip_gap >= 0 ? 100 * info->mip_gap : -1.0, info->creation_s,
		       info->solve_s, rep->n_rounds, rep->n_rounds == 1 ? "" : "s");
		printf("  model            %d columns (%d binary), %d rows, %lld nonzeros; %d tensors "
		       "placed, %s kept fast\n", rep->n_columns, rep->n_binaries, rep->n_rows,
		       (long long)rep->n_nonzeros, rep->n_movable,
		       atm_format_bytes(rep->pinned_bytes, a, sizeof a));
	} else {
		printf("  solver           %s\n", info->solver_status);
	}
	if (out)
		printf("  plan             %s\n", out);
}

/* cmd_plan -- autotm plan */
int cmd_plan(int argc, char **argv)
{
	enum { OPT_RATIO = CLI_OPT_FIRST_FREE, OPT_DRAM, OPT_FORM, OPT_GAP, OPT_TIME, OPT_WINDOW,
	       OPT_ROUNDS, OPT_EXPLAIN, OPT_JSON, OPT_CACHE, OPT_ESTIMATE, OPT_VERBOSE, OPT_QUIET,
	       OPT_RESULTS, OPT_APPEND };
	static const struct option longopts[] = {
		CLI_GRAPH_OPTIONS,
		CLI_MEMORY_OPTIONS,
		{"ratio", required_argument, NULL, OPT_RATIO},
		{"dram-limit", required_argument, NULL, OPT_DRAM},
		{"formulation", required_argument, NULL, OPT_FORM},
		{"mip-gap", required_argument, NULL, OPT_GAP},
		{"time-limit", required_argument, NULL, OPT_TIME},
		{"async-window", required_argument, NULL, OPT_WINDOW},
		{"rounds", required_argument, NULL, OPT_ROUNDS},
		{"explain", no_argument, NULL, OPT_EXPLAIN},
		{"json", no_argument, NULL, OPT_JSON},
		{"cache", required_argument, NULL, OPT_CACHE},
		{"estimate", no_argument, NULL, OPT_ESTIMATE},
		{"verbose", no_argument, NULL, OPT_VERBOSE},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"results", required_argument, NULL, OPT_RESULTS},
		{"append", no_argument, NULL, OPT_APPEND},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cli_graph_source src = {0};
	atm_job_opts jo;
	const char *ratio = NULL, *dram = NULL, *out = NULL;
	atm_opt_options *o = &jo.opt;
	bool explain = false, json = false;
	int64_t v;
	atm_graph *g = NULL;
	atm_job *j = NULL;
	atm_status rc;
	int opt;

	atm_job_opts_default(&jo);
	jo.who = "plan";
	jo.optimize = true;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		int used = cli_graph_option(&src, opt, optarg);
		if (!used)
			used = cli_memory_option(&jo.mem, opt, optarg);
		if (used < 0)
			return cli_fail("plan", ATM_E_USAGE);
		if (used)
			continue;
		switch (opt) {
		case OPT_RATIO:
			ratio = optarg;
			break;
		case OPT_DRAM:
			dram = optarg;
			break;
		case OPT_FORM:
			if (atm_opt_formulation_from_name(optarg, &jo.formulation) < 0)
				return cli_fail("plan", ATM_E_USAGE);
			break;
		case OPT_GAP:
			if (parse_gap(optarg, &o->mip_gap) < 0)
				return cli_fail("plan", ATM_E_USAGE);
			break;
		case OPT_TIME:
			if (parse_seconds(optarg, &o->time_limit_s) < 0)
				return cli_fail("plan", ATM_E_USAGE);
			break;
		case OPT_WINDOW:
			if (cli_parse_int("async-window", optarg, 1, 64, &v) < 0)
				return cli_fail("plan", ATM_E_USAGE);
			o->async_window = (int)v;
			break;
		case OPT_ROUNDS:
			if (cli_parse_int("rounds", optarg, 1, ATM_PLAN_MAX_ROUNDS, &v) < 0)
				return cli_fail("plan", ATM_E_USAGE);
			o->max_rounds = (int)v;
			break;
		case OPT_EXPLAIN:
			explain = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_CACHE:
			jo.cache = optarg;
			break;
		case OPT_ESTIMATE:
			jo.estimate = true;
			break;
		case OPT_VERBOSE:
			o->verbosity = 1;
			break;
		case OPT_QUIET:
			jo.quiet = true;
			break;
		case OPT_RESULTS:
			jo.results_path = optarg;
			break;
		case OPT_APPEND:
			jo.append = true;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(plan_help, stdout);
			return 0;
		case ':':
			return cli_usage_error("plan", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_usage_error("plan", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("plan", "unexpected argument '%s'", argv[optind]);
	if (ratio && dram)
		return cli_usage_error("plan", "give only one of --ratio and --dram-limit");
	if (!ratio && !dram && jo.formulation != ATM_OPT_ALL_FAST && !jo.mem.gpu.mode)
		return cli_usage_error("plan", "give the fast-memory limit with one of --ratio S:F or "
		                       "--dram-limit SIZE");
	if (ratio && atm_opt_parse_ratio(ratio, &jo.ratio_slow, &jo.ratio_fast) < 0)
		return cli_fail("plan", ATM_E_USAGE);
	if (dram && atm_parse_bytes(dram, &jo.limit_bytes) < 0)
		return cli_fail("plan", atm_err_prefix(ATM_E_USAGE, "--dram-limit: "));
	if (jo.cache && !jo.cache[0])
		return cli_usage_error("plan", "--cache needs a file name");
	if (jo.append && !jo.results_path)
		return cli_usage_error("plan", "--append needs --results FILE");
	/* a plan found after minutes must have somewhere to go */
	if (out && (rc = atm_check_writable(out)) < 0)
		return cli_fail("plan", rc);

	jo.stop = cli_install_interrupt();
	if ((rc = cli_load_graph(&src, &g, &jo.workload)) < 0 || (rc = atm_job_new(&j, g, &jo)) < 0 ||
	    (rc = atm_job_plan(j)) < 0)
		goto fail;
	const atm_plan *p = atm_job_plan_get(j);
	const atm_profile *prof = atm_job_profile(j);
	const atm_opt_report *rep = atm_job_report(j);
	const atm_opt_check_result *chk = atm_job_check(j);
	if (out && (rc = atm_plan_save(p, out)) < 0)
		goto fail;
	if (jo.results_path && (rc = atm_job_write_results(j)) < 0)
		goto fail;
	if (explain && (rc = atm_opt_explain(p, prof, o, stdout)) < 0)
		goto fail;
	if (json) {
		if ((rc = print_json(g, jo.workload.batch, p, rep, chk, jo.ratio_slow, jo.ratio_fast,
		                     out)) < 0)
			goto fail;
	} else if (!explain) {
		print_human(g, jo.workload.batch, p, rep, chk, out);
		if (jo.results_path)
			printf("  results          %s (the plan's prediction; nothing ran)\n", jo.results_path);
	}
	atm_job_destroy(j);
	atm_graph_destroy(g);
	return 0;
fail:
	atm_job_destroy(j);
	atm_graph_destroy(g);
	return cli_fail("plan", rc);
}
