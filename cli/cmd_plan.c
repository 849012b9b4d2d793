/* cmd_plan.c -- autotm plan: place a network's tensors under a fast-memory limit and write the plan JSON */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "atm_optimizer.h"
#include "atm_profiler.h"
#include "cli.h"

static const char plan_help_head[] =
	"usage: autotm plan --model NAME (--ratio S:F | --dram-limit SIZE) [--formulation F]\n"
	"                   [--solver glpk|cbc] [-o plan.json] [--explain] [--json]\n"
	"                   [--cache FILE] [--estimate] [--write-model FILE.mps|FILE.lp]\n"
	"                   [--timeline FILE.json] [--start PLAN.json]\n"
	"       autotm plan --model NAME --ratio S:F,S:F,... -o FOLDER/ ...\n"
	"       autotm plan --graph FILE ...\n"
	"\n"
	"Decides where every tensor of a network's training step lives, fast or slow\n"
	"memory, and when it moves, so that the step fits a fast-memory limit and runs as\n"
	"fast as the profile predicts it can. The ILP formulations are solved with GLPK\n"
	"or CBC (--solver), seeded with a heuristic plan so that a time-limited solve\n"
	"always returns one; plans that first-fit fragments are solved again with the\n"
	"limit tightened where they overflow. Kernel times come from the profile cache\n"
	"('autotm profile'); what it lacks is profiled first (measured, or with\n"
	"--estimate estimated).\n"
	"\n"
	"Given several ratios (--ratio 59:1,39:1,16:1) it plans a sweep in one process,\n"
	"from the least fast memory up, each plan a start (--start) of the next, so that\n"
	"a larger limit is never predicted slower than a smaller one; each plan goes to\n"
	"FOLDER/FORMULATION-S_F.json (-o FOLDER/, made when missing). A ratio whose limit\n"
	"is infeasible is said and skipped (exit 4 at the end).\n"
	"\n"
	"options:\n";

/* round_json -- one solve of the defragmentation loop */
static json_t *round_json(const atm_opt_round *r)
{
	bool ok = true;
	json_t *x = json_object();
	atm_json_set_new(x, "fast_limit_bytes", json_integer(r->fast_limit_bytes), &ok);
	atm_json_set_new(x, "creation_s", json_real(r->creation_s), &ok);
	atm_json_set_new(x, "solve_s", json_real(r->solve_s), &ok);
	atm_json_set_new(x, "objective_s", json_real(r->objective_s), &ok);
	atm_json_set_new(x, "bound_s", r->bound_s < 0 ? json_null() : json_real(r->bound_s), &ok);
	atm_json_set_new(x, "mip_gap", r->mip_gap < 0 ? json_null() : json_real(r->mip_gap), &ok);
	atm_json_set_new(x, "status", json_string(r->status), &ok);
	atm_json_set_new(x, "fits", json_boolean(r->fits), &ok);
	if (!ok) {
		json_decref(x);
		return NULL;
	}
	return x;
}

/* solver_json -- how the plan was found: the solver and its figures, each round, the model
 * (and the file it was written to) */
static json_t *solver_json(const atm_plan_info *info, const atm_opt_report *rep,
                           const char *model_file)
{
	bool ok = true;
	json_t *solver = json_object(), *rounds = json_array(), *model = json_object();
	const char *version = cli_solver_version(info->solver);
	/* null for a baseline: no solver ran */
	atm_json_set_new(solver, "name", info->solver[0] ? json_string(info->solver) : json_null(), &ok);
	atm_json_set_new(solver, "version", version[0] ? json_string(version) : json_null(), &ok);
	atm_json_set_new(solver, "status", json_string(info->solver_status), &ok);
	atm_json_set_new(solver, "mip_gap", info->mip_gap < 0 ? json_null() : json_real(info->mip_gap), &ok);
	atm_json_set_new(solver, "creation_s", info->creation_s < 0 ? json_null()
	                                                         : json_real(info->creation_s), &ok);
	atm_json_set_new(solver, "solve_s", info->solve_s < 0 ? json_null() : json_real(info->solve_s),
	                 &ok);
	for (int i = 0; i < rep->n_rounds; i++)
		if (!rounds || json_array_append_new(rounds, round_json(&rep->rounds[i])) < 0)
			ok = false;
	atm_json_set_new(solver, "rounds", rounds, &ok);
	atm_json_set_new(model, "columns", json_integer(rep->n_columns), &ok);
	atm_json_set_new(model, "rows", json_integer(rep->n_rows), &ok);
	atm_json_set_new(model, "binaries", json_integer(rep->n_binaries), &ok);
	atm_json_set_new(model, "nonzeros", json_integer(rep->n_nonzeros), &ok);
	atm_json_set_new(model, "movable_tensors", json_integer(rep->n_movable), &ok);
	atm_json_set_new(model, "pinned_bytes", json_integer(rep->pinned_bytes), &ok);
	atm_json_set_new(solver, "model", model, &ok);
	atm_json_set_new(solver, "heuristic_s", rep->heuristic_s < 0 ? json_null()
	                                                           : json_real(rep->heuristic_s), &ok);
	atm_json_set_new(solver, "synchronous_start_s", rep->nested_s < 0 ? json_null()
	                                                                : json_real(rep->nested_s), &ok);
	atm_json_set_new(solver, "model_file", model_file ? json_string(model_file) : json_null(), &ok);
	/* --start: what became of the start plans that fit (null: none given or none fit) */
	atm_json_set_new(solver, "start", rep->n_starts_fit == 0 && !rep->start_note[0] ? json_null()
	                 : json_pack("{s:i, s:b, s:o, s:o, s:s}", "fit", rep->n_starts_fit, "kept",
	                             rep->start_used >= 0,
	                             "start_s", rep->start_s < 0 ? json_null() : json_real(rep->start_s),
	                             "found_s", rep->found_s < 0 ? json_null() : json_real(rep->found_s),
	                             "note", rep->start_note), &ok);
	if (!ok) {
		json_decref(solver);
		return NULL;
	}
	return solver;
}

/* print_json -- what the plan is and how it was found, as one JSON object */
static atm_status print_json(const atm_graph *g, int64_t batch, const atm_plan *p,
                             const atm_opt_report *rep, const atm_opt_check_result *chk,
                             double ratio_s, double ratio_f, const char *out,
                             const char *model_file)
{
	const atm_plan_info *info = atm_plan_info_get(p);
	bool ok = true;
	json_t *o = json_object(), *moves = json_object();
	atm_json_set_new(o, "graph", json_string(atm_graph_name(g)), &ok);
	atm_json_set_new(o, "batch", json_integer(batch), &ok);
	atm_json_set_new(o, "formulation", json_string(info->formulation), &ok);
	atm_json_set_new(o, "fast_limit_bytes", json_integer(info->fast_limit_bytes), &ok);
	atm_json_set_new(o, "ratio", ratio_s + ratio_f > 0 ? json_pack("[f, f]", ratio_s, ratio_f)
	                                                   : json_null(), &ok);
	atm_json_set_new(o, "predicted_runtime_s", json_real(chk->predicted_s), &ok);
	atm_json_set_new(o, "all_fast_kernel_s", json_real(chk->all_fast_kernel_s), &ok);
	atm_json_set_new(o, "kernel_s", json_real(chk->kernel_s), &ok);
	atm_json_set_new(o, "sync_move_s", json_real(chk->sync_move_s), &ok);
	atm_json_set_new(o, "async_wait_s", json_real(chk->async_wait_s), &ok);
	atm_json_set_new(o, "overlap_loss_s", json_real(chk->overlap_loss_s), &ok);
	atm_json_set_new(o, "fast_peak_bytes", json_integer(chk->fast_peak_bytes), &ok);
	atm_json_set_new(o, "fast_arena_bytes", json_integer(chk->fast_arena_bytes), &ok);
	atm_json_set_new(moves, "n", json_integer(chk->n_moves), &ok);
	atm_json_set_new(moves, "n_async", json_integer(chk->n_async_moves), &ok);
	atm_json_set_new(o, "moves", moves, &ok);
	atm_json_set_new(o, "recomputes", json_pack("{s:i, s:f}", "n", chk->n_recomputes,
	                                            "recompute_s", chk->recompute_s), &ok);
	atm_json_set_new(o, "solver", solver_json(info, rep, model_file), &ok);
	atm_json_set_new(o, "output", out ? json_string(out) : json_null(), &ok);
	if (!ok) {
		json_decref(o);
		return atm_err(ATM_E_NOMEM, "out of memory printing the plan as JSON");
	}
	return cli_print_json_new(o);
}

/* print_human -- the plan in a few lines */
static void print_human(const atm_graph *g, int64_t batch, const atm_plan *p,
                        const atm_opt_report *rep, const atm_opt_check_result *chk, const char *out,
                        const char *model_file)
{
	const atm_plan_info *info = atm_plan_info_get(p);
	const char *version = cli_solver_version(info->solver);
	char a[32], b[32], who[64] = "";
	/* "cbc (CBC 2.10.8): " -- which solver ran, when one did */
	if (info->solver[0] && version[0])
		snprintf(who, sizeof who, "%s (%s): ", info->solver, version);
	else if (info->solver[0])
		snprintf(who, sizeof who, "%s: ", info->solver);
	printf("%s, batch %lld: %s plan, fast limit %s\n", atm_graph_name(g), (long long)batch,
	       info->formulation, info->fast_limit_bytes ? atm_format_bytes(info->fast_limit_bytes, a, sizeof a)
	                                                 : "none");
	printf("  predicted step   %.6f s (all fast %.6f s, %.2fx)\n", chk->predicted_s,
	       chk->all_fast_kernel_s, chk->all_fast_kernel_s > 0 ? chk->predicted_s / chk->all_fast_kernel_s : 0);
	printf("  moves            %d (%d overlapped), blocking %.6f s, waits %.6f s, lost beside "
	       "copies %.6f s\n", chk->n_moves, chk->n_async_moves, chk->sync_move_s,
	       chk->async_wait_s, chk->overlap_loss_s);
	if (chk->n_recomputes)
		printf("  recomputed       %d tensor%s, their kernels run again %.6f s\n",
		       chk->n_recomputes, chk->n_recomputes == 1 ? "" : "s", chk->recompute_s);
	printf("  fast memory      peak %s, arena %s\n", atm_format_bytes(chk->fast_peak_bytes, a, sizeof a),
	       atm_format_bytes(chk->fast_arena_bytes, b, sizeof b));
	if (rep->n_rounds) {
		printf("  solver           %s%s, gap %.2f%%, model %.2f s, solve %.2f s, %d round%s\n",
		       who, info->solver_status, info->mip_gap >= 0 ? 100 * info->mip_gap : -1.0, info->creation_s,
		       info->solve_s, rep->n_rounds, rep->n_rounds == 1 ? "" : "s");
		printf("  model            %d columns (%d binary), %d rows, %lld nonzeros; %d tensors "
		       "placed, %s kept fast\n", rep->n_columns, rep->n_binaries, rep->n_rows,
		       (long long)rep->n_nonzeros, rep->n_movable,
		       atm_format_bytes(rep->pinned_bytes, a, sizeof a));
	} else {
		printf("  solver           %s\n", info->solver_status);
	}
	if (rep->start_used >= 0)
		printf("  start            %s\n", rep->start_note);
	if (model_file)
		printf("  model file       %s\n", model_file);
	if (out)
		printf("  plan             %s\n", out);
}

/* What autotm plan was asked to do. */
struct plan_args {
	cli_graph_source src;
	atm_job_opts jo;
	const char *out;
	const char *timeline; /* --timeline FILE */
	bool explain, json;
	const char *ratio_list; /* --ratio S:F,S:F,...: a sweep into the folder out */
};

#define PLAN(field) .at = offsetof(struct plan_args, field)
#define JOB(field) .at = offsetof(struct plan_args, jo.field)

static const cli_option plan_own[] = {
	{"output", 'o', "FILE", .help = "write the plan JSON to FILE (atomically; 'autotm run "
	 "--placement FILE' runs it); with a list of ratios, a folder", .set = cli_set_text,
	 PLAN(out)},
	{"timeline", .value = "FILE", .help = "write what a picture of the plan needs "
	 "(plots/plan.py draws it): fast memory by tensor kind at every kernel, the moves, the "
	 "kernels with slow operands (docs/plan-timeline.md)", .set = cli_set_text, PLAN(timeline)},
	{"write-model", .value = "FILE", .help = "(ILP formulations) write the integer program to "
	 "FILE, free MPS when it ends in .mps, CPLEX LP when in .lp, for any solver to read; with "
	 "several defragmentation rounds the final round's. Written atomically",
	 .set = cli_set_text, JOB(opt.write_model)},
	{"results", .value = "FILE", .help = "also write the plan's prediction as a results run "
	 "whose actual times are null (docs/formats.md): how --estimate plans of networks too large "
	 "to run become predicted points of a figure", .set = cli_set_text, JOB(results_path)},
	{"append", .help = "add that run to FILE's runs (FILE of the same workload)",
	 .set = cli_set_true, JOB(append)},
	{"explain", .help = "print the plan as a timeline: where tensors live, what moves when, "
	 "which kernels slow down and by how much", .set = cli_set_true, PLAN(explain)},
	CLI_JSON_ROW(struct plan_args, json),
	{"estimate", .help = "plan from estimated kernel times (made by the roofline where the cache "
	 "lacks them) instead of measured ones: for networks this machine cannot run",
	 .set = cli_set_true, JOB(estimate)},
	CLI_QUIET_ROW(struct plan_args, jo.quiet),
	{NULL},
};

const cli_command_options cmd_plan_options = {
	"plan", (const cli_option *const[]){cli_graph_options, cli_plan_options, plan_own,
	                                    cli_memory_options, NULL}, plan_help_head, NULL};

/* model_file_ok -- --write-model FILE: a suffix that names the format, an ILP to write and a
 * folder that takes the file */
static atm_status model_file_ok(const char *path, const atm_job_opts *jo)
{
	size_t n = strlen(path);
	bool mps = n > 4 && !strcmp(path + n - 4, ".mps"), lp = n > 3 && !strcmp(path + n - 3, ".lp");
	if (!mps && !lp)
		return atm_err(ATM_E_USAGE, "--write-model '%s' names no model format; give a file "
		               "ending in .mps (MPS) or .lp (CPLEX LP)", path);
	if (!atm_opt_is_ilp(jo->formulation))
		return atm_err(ATM_E_USAGE, "--write-model writes an integer program; the %s "
		               "formulation has none (give static, synchronous or asynchronous)",
		               atm_opt_formulation_name(jo->formulation));
	/* like -o: a model built after minutes must have somewhere to go */
	return atm_check_writable(path);
}

/* sweep_args_ok -- a sweep (--ratio with a list) writes its plans into the folder -o names
 * (made now) and prints each; what writes one file per plan is refused */
static atm_status sweep_args_ok(const struct plan_args *a)
{
	char probe[PATH_MAX];
	atm_status rc;
	if (!a->out)
		return atm_err(ATM_E_USAGE, "--ratio '%s' plans a sweep, a plan per ratio: give -o "
		               "FOLDER/ for them", a->ratio_list);
	if (a->json || a->timeline || a->jo.opt.write_model)
		return atm_err(ATM_E_USAGE, "--ratio '%s' plans a sweep: %s is for one plan (give "
		               "one ratio)", a->ratio_list, a->json ? "--json" : a->timeline
		               ? "--timeline" : "--write-model");
	if ((rc = atm_make_dirs(a->out, 0777)) < 0)
		return atm_err_prefix(rc, "-o: ");
	/* plans found after minutes must have somewhere to go */
	if (snprintf(probe, sizeof probe, "%s/plan.json", a->out) >= (int)sizeof probe)
		return atm_err(ATM_E_USAGE, "-o %s: the folder's name is too long", a->out);
	return atm_check_writable(probe);
}

/* parse_args -- the command line into a, checked */
static atm_status parse_args(int argc, char **argv, struct plan_args *a, cli_given *given)
{
	atm_job_opts *jo = &a->jo;
	atm_status rc;

	cli_job_begin(jo, "plan");
	jo->optimize = true;
	if ((rc = cli_parse(&cmd_plan_options, (void *const[]){&a->src, jo, a, &jo->mem}, argc,
	                    argv, given)) < 0 || given->help)
		return rc;
	if ((rc = cli_plan_check(jo, given)) < 0)
		return rc;
	if (jo->append && !jo->results_path)
		return atm_err(ATM_E_USAGE, "--append needs --results FILE");
	if ((a->ratio_list = cli_ratio_list(given)))
		return sweep_args_ok(a);
	char cache[PATH_MAX];
	cli_file in[4], out[] = {{"-o", a->out}, {"--results", jo->results_path},
	                         {"--timeline", a->timeline}, {"--write-model", jo->opt.write_model}};
	int n_in = cli_job_inputs(&a->src, jo, in, cache, sizeof cache);
	if ((rc = cli_check_files(out, sizeof out / sizeof *out, in, n_in)) < 0)
		return rc;
	/* a plan found after minutes must have somewhere to go */
	if ((a->out && (rc = atm_check_writable(a->out)) < 0) ||
	    (a->timeline && (rc = atm_check_writable(a->timeline)) < 0))
		return rc;
	if (jo->opt.write_model)
		return model_file_ok(jo->opt.write_model, jo);
	return ATM_OK;
}

/* report -- write and print what the job planned (arg: the plan_args) */
static atm_status report(atm_job *j, void *arg)
{
	const struct plan_args *a = arg;
	const atm_job_opts *jo = &a->jo;
	const atm_graph *g = atm_job_graph(j);
	const atm_plan *p = atm_job_plan_get(j);
	const atm_opt_report *rep = atm_job_report(j);
	const atm_opt_check_result *chk = atm_job_check(j);
	atm_status rc;
	if (a->out && (rc = atm_plan_save(p, a->out)) < 0)
		return rc;
	if (jo->results_path && (rc = atm_job_write_results(j)) < 0)
		return rc;
	if (a->timeline &&
	    (rc = atm_timeline_write(a->timeline, p, NULL, &(atm_timeline_opts){
	             .workload = &jo->workload, .profile = atm_job_profile(j),
	             .kernel_pred_s = atm_job_kernel_predictions(j)})) < 0)
		return rc;
	if (a->explain && (rc = atm_opt_explain(p, atm_job_profile(j), &jo->opt, stdout)) < 0)
		return rc;
	if (a->json)
		return print_json(g, jo->workload.batch, p, rep, chk, jo->ratio_slow, jo->ratio_fast,
		                  a->out, jo->opt.write_model);
	if (!a->explain) {
		print_human(g, jo->workload.batch, p, rep, chk, a->out, jo->opt.write_model);
		if (jo->results_path)
			printf("  results          %s (the plan's prediction; nothing ran)\n",
			       jo->results_path);
		if (a->timeline)
			printf("  timeline         %s\n", a->timeline);
	}
	return ATM_OK;
}

/* The most ratios one sweep plans. */
#define MAX_SWEEP 64

/* A ratio of a sweep and its plan file. */
struct sweep_item {
	double slow, fast;
	char path[PATH_MAX];
};

/* fraction -- the share of the peak a ratio gives fast memory (0:1, no limit, the most) */
static double fraction(const struct sweep_item *r)
{
	return r->fast / (r->slow + r->fast);
}

/* sweep_items -- the ratios of list, least fast memory first, each with its plan file in folder;
 * how many (-1: too many, said) */
static int sweep_items(const char *list, const char *folder, const atm_job_opts *jo,
                       struct sweep_item *it)
{
	char one[64];
	int n = 0;
	for (const char *p = list, *end; p; p = end ? end + 1 : NULL) {
		end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (n == MAX_SWEEP) {
			atm_err(ATM_E_USAGE, "--ratio: at most %d ratios in a sweep", MAX_SWEEP);
			return -1;
		}
		snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), p);
		struct sweep_item r = {0};
		(void)atm_opt_parse_ratio(one, &r.slow, &r.fast); /* checked with the options */
		size_t fl = strlen(folder);
		while (fl > 1 && folder[fl - 1] == '/') /* "DIR/" names DIR */
			fl--;
		snprintf(r.path, sizeof r.path, "%.*s/%s%s-%g_%g.json", (int)fl, folder,
		         atm_opt_formulation_name(jo->formulation),
		         jo->opt.recompute ? ATM_OPT_RECOMPUTE_SUFFIX : "", r.slow, r.fast);
		int k = n++;
		for (; k > 0 && fraction(&it[k - 1]) > fraction(&r); k--)
			it[k] = it[k - 1];
		it[k] = r;
	}
	return n;
}

/* sweep -- a plan per ratio of a->ratio_list, least fast memory first, --start's plans and the
 * last plan made the starts of the next (that plan is no slower than any before it, and fits
 * every larger limit); the exit code: 0, 4 when some ratio had no plan, or the first other
 * failure's, which ends the sweep */
static int sweep(struct plan_args *a)
{
	static struct sweep_item it[MAX_SWEEP];
	const char *starts[ATM_JOB_MAX_STARTS + 1];
	const atm_job_opts base = a->jo;
	int n = sweep_items(a->ratio_list, a->out, &base, it), worst = 0, last = -1;
	if (n < 0)
		return cli_fail("plan", ATM_E_USAGE);
	for (int i = 0; i < base.n_starts; i++)
		starts[i] = base.starts[i];
	for (int i = 0; i < n; i++) {
		a->jo = base;
		a->jo.ratio_slow = it[i].slow;
		a->jo.ratio_fast = it[i].fast;
		a->jo.starts = starts;
		a->jo.n_starts = base.n_starts;
		if (last >= 0)
			starts[a->jo.n_starts++] = it[last].path;
		/* the first results as asked, the rest after it */
		a->jo.append = base.results_path && (base.append || i > 0);
		a->out = it[i].path;
		int code = cli_job_main("plan", &a->src, &a->jo, report, a);
		if (code == atm_exit_code(ATM_E_INFEASIBLE)) {
			worst = code; /* said; the larger limits may have plans */
			continue;
		}
		if (code)
			return code;
		last = i;
	}
	return worst;
}

/* cmd_plan -- autotm plan */
int cmd_plan(int argc, char **argv)
{
	struct plan_args a = {0};
	cli_given given;
	atm_status rc = parse_args(argc, argv, &a, &given);
	if (rc < 0 || given.help)
		return cli_fail("plan", rc);
	if (a.ratio_list)
		return sweep(&a);
	return cli_job_main("plan", &a.src, &a.jo, report, &a);
}
