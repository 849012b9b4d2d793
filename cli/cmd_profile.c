/* cmd_profile.c -- autotm profile: time every kernel of a network in every IO configuration into the profile cache */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "atm_profiler.h"
#include "cli.h"

static const char profile_help[] =
	"usage: autotm profile --model NAME [--batch B] [--emulate P] [--cache FILE] [--estimate]\n"
	"                      [--isolated]\n"
	"       autotm profile --graph FILE ...\n"
	"\n"
	"Times every kernel of a network's training step in every IO configuration it\n"
	"can have (each input and output in fast or slow memory; fast-only tensors stay\n"
	"fast) with the real runtime: tensors allocated in those tiers, one warm-up run,\n"
	"then --reps timed runs, keeping the fastest, the median and the count. Identical\n"
	"kernels are timed once. The times go to a cache that the planner reads, keyed by\n"
	"kernel, configuration and machine (CPU, threads, tiers, emulation): a second\n"
	"profile of the same network measures nothing, another network only the kernels\n"
	"the cache lacks. The cache is saved in batches and on Ctrl-C, atomically and\n"
	"under a lock, so runs may share it.\n"
	"\n"
	"Then, for the kernels that lack it, it runs six all-fast training steps as a\n"
	"run would and keeps each kernel's fastest time inside them: a kernel in a\n"
	"step finds its operands out of the caches and runs slower than alone, and\n"
	"plans are priced with that difference (docs/profile.md). A step too large for\n"
	"the memory here is skipped, with the reason.\n"
	"\n"
	"options:\n";

/* compare -- the estimated profile p against the measured one of the same
 * machine in the same cache; false when there is none to compare with */
static bool compare(const atm_profile *p, const atm_graph *g, atm_prof_error *err)
{
	atm_profile_machine m = *atm_profile_machine_get(p);
	atm_profile *meas = NULL;
	bool ok = false;
	m.estimated = false;
	if (atm_profile_path(p) && atm_prof_cache_open(&meas, atm_profile_path(p), &m, false) == ATM_OK) {
		atm_profile_use_in_step(meas, false); /* the estimate models kernels alone */
		ok = atm_prof_compare(p, meas, g, err) == ATM_OK;
	}
	atm_profile_destroy(meas);
	atm_err_clear();
	return ok;
}

/* error_json -- the estimate's error as JSON */
static json_t *error_json(const atm_prof_error *e)
{
	json_t *o = json_object();
	json_object_set_new(o, "n_configs", json_integer(e->n_configs));
	json_object_set_new(o, "median_ape_percent", json_real(e->median_ape));
	json_object_set_new(o, "mean_ape_percent", json_real(e->mean_ape));
	json_object_set_new(o, "step_all_fast_estimated_s", json_real(e->step_fast_est_s));
	json_object_set_new(o, "step_all_fast_measured_s", json_real(e->step_fast_meas_s));
	json_object_set_new(o, "step_all_slow_estimated_s", json_real(e->step_slow_est_s));
	json_object_set_new(o, "step_all_slow_measured_s", json_real(e->step_slow_meas_s));
	return o;
}

/* roofline_json -- the model an estimate used, as JSON */
static json_t *roofline_json(const atm_prof_roofline *rf)
{
	json_t *o = json_object(), *ops = json_object();
	json_object_set_new(o, "calibrated", json_boolean(rf->calibrated));
	json_object_set_new(o, "gpu_model", json_boolean(rf->gpu_model));
	json_object_set_new(o, "fast_gbps", json_real(rf->fast_gbps));
	json_object_set_new(o, "cache_bytes", json_integer(rf->cache_bytes));
	json_object_set_new(o, "slow_read_gbps", json_real(rf->slow_read_gbps));
	json_object_set_new(o, "slow_write_gbps", json_real(rf->slow_write_gbps));
	json_object_set_new(o, "ref_fast_gbps", json_real(rf->ref_fast_gbps));
	json_object_set_new(o, "emulated", json_boolean(rf->emulated));
	for (int op = 0; op < ATM_N_OPS; op++) {
		json_t *x = json_object();
		json_object_set_new(x, "gflops", json_real(rf->gflops[op]));
		if (atm_op_describe((atm_op)op)->pointwise_rate)
			json_object_set_new(x, "gflops_1x1", json_real(rf->gflops_1x1[op]));
		json_object_set_new(x, "gbps", json_real(rf->gbps[op]));
		json_object_set_new(x, "overhead_s", json_real(rf->overhead_s[op]));
		json_object_set_new(ops, atm_op_name((atm_op)op), x);
	}
	json_object_set_new(o, "ops", ops);
	return o;
}

/* print_json -- the report as one JSON object */
static atm_status print_json(const atm_graph *g, int64_t batch, int reps, const atm_prof *pr,
                             const atm_profile *p, const atm_prof_report *r,
                             const atm_prof_error *err)
{
	atm_prof_roofline rf;
	json_t *o = json_object();
	atm_profile_moves mv;
	json_object_set_new(o, "graph", json_string(atm_graph_name(g)));
	json_object_set_new(o, "batch", json_integer(batch));
	json_object_set_new(o, "n_kernels", json_integer(r->n_kernels));
	json_object_set_new(o, "n_unique_kernels", json_integer(r->n_unique_kernels));
	json_object_set_new(o, "n_configs", json_integer(r->n_configs));
	json_object_set_new(o, "n_configs_measured", json_integer(r->n_configs_measured));
	json_object_set_new(o, "n_configs_cached", json_integer(r->n_configs_cached));
	json_object_set_new(o, "seconds", json_real(r->seconds));
	json_object_set_new(o, "estimated", json_boolean(r->estimated));
	json_object_set_new(o, "reps", r->estimated ? json_null() : json_integer(reps));
	json_object_set_new(o, "cache", json_string(atm_profile_path(p)));
	json_object_set_new(o, "n_cache_entries", json_integer(atm_profile_n_entries(p)));
	json_object_set_new(o, "machine", atm_profile_machine_json(atm_profile_machine_get(p)));
	if (atm_profile_get_moves(p, &mv) == ATM_OK) {
		json_t *m = json_object();
		json_object_set_new(m, "to_fast_gbps", json_real(mv.to_fast_gbps));
		json_object_set_new(m, "to_slow_gbps", json_real(mv.to_slow_gbps));
		json_object_set_new(m, "measured_now", json_boolean(r->moves_measured));
		json_object_set_new(m, "overlap_loss", mv.overlap_measured ? json_real(mv.overlap_loss)
		                                                           : json_null());
		if (mv.by_direction)
			json_object_set_new(m, "overlap", json_pack(
			        "{s:f, s:f, s:f, s:f, s:i, s:s}", "kernel_loss_to_fast", mv.kernel_loss[0],
			        "kernel_loss_to_slow", mv.kernel_loss[1], "copy_stretch_to_fast",
			        mv.copy_stretch[0], "copy_stretch_to_slow", mv.copy_stretch[1], "threads",
			        mv.overlap_threads, "wait_policy", mv.overlap_wait_policy));
		json_object_set_new(o, "moves", m);
	}
	json_object_set_new(o, "n_in_step_measured", json_integer(r->n_in_step_measured));
	json_object_set_new(o, "in_step_skipped", r->in_step_note[0] ? json_string(r->in_step_note)
	                                                            : json_null());
	if (atm_prof_get_roofline(pr, &rf) == ATM_OK)
		json_object_set_new(o, "roofline", roofline_json(&rf));
	atm_err_clear();
	if (err)
		json_object_set_new(o, "estimate_error", error_json(err));
	return cli_print_json_new(o);
}

/* print_human -- the report for a person */
static void print_human(const atm_graph *g, int64_t batch, int reps, const atm_prof *pr,
                        const atm_profile *p, const atm_prof_report *r, const atm_prof_error *err)
{
	const atm_profile_machine *m = atm_profile_machine_get(p);
	atm_prof_roofline rf;
	atm_profile_moves mv;
	printf("%s, batch %lld: %s profile\n", atm_graph_name(g), (long long)batch,
	       r->estimated ? "estimated" : "measured");
	printf("  kernels          %d (%d unique)\n", r->n_kernels, r->n_unique_kernels);
	printf("  configurations   %lld: %lld %s now, %lld from the cache", (long long)r->n_configs,
	       (long long)r->n_configs_measured, r->estimated ? "estimated" : "measured",
	       (long long)r->n_configs_cached);
	if (!r->estimated && r->n_configs_measured)
		printf(" (%d timed run%s each after a warm-up)", reps, reps == 1 ? "" : "s");
	printf("\n  time             %.1f s\n", r->seconds);
	printf("  machine          %s, %d thread%s, %s; fast %s, slow %s%s%s\n", m->cpu, m->n_threads,
	       m->n_threads == 1 ? "" : "s", m->backend, m->fast_tier, m->slow_tier,
	       m->emulation[0] ? " emulating " : "", m->emulation);
	if (atm_profile_get_moves(p, &mv) == ATM_OK) {
		printf("  moves            %.2f GB/s to fast, %.2f GB/s to slow%s\n", mv.to_fast_gbps,
		       mv.to_slow_gbps, mv.estimated ? " (estimated)" : "");
		if (mv.by_direction)
			printf("  overlap          a kernel loses %.0f%% of the time of a fetch beside it and "
			       "%.0f%% of an eviction's; beside it they take %.2fx and %.2fx their time "
			       "alone (%d thread%s, OMP_WAIT_POLICY %s)\n", 100 * mv.kernel_loss[0],
			       100 * mv.kernel_loss[1], mv.copy_stretch[0], mv.copy_stretch[1],
			       mv.overlap_threads, mv.overlap_threads == 1 ? "" : "s",
			       mv.overlap_wait_policy[0] ? mv.overlap_wait_policy : "unset");
		else if (mv.overlap_measured)
			printf("  overlap          a kernel loses %.0f%% of the time of a copy beside it\n",
			       100 * mv.overlap_loss);
	}
	printf("  cache            %s (%lld entries of this machine)\n", atm_profile_path(p),
	       (long long)atm_profile_n_entries(p));
	if (r->n_in_step_measured)
		printf("  in a step        %d kernels timed inside %d all-fast steps\n",
		       r->n_in_step_measured, ATM_PROF_IN_STEP_ITERS);
	else if (r->in_step_note[0])
		printf("  in a step        not measured: %s\n", r->in_step_note);
	if (atm_prof_get_roofline(pr, &rf) == ATM_OK)
		printf("  roofline         %s: convolution %.1f GFLOPS (1x1 %.1f), inner product "
		       "%.1f GFLOPS,\n                   memory %.1f GB/s, a call %.1f us\n",
		       rf.gpu_model ? "GPU model" : rf.calibrated ? "calibrated here" : "given",
		       rf.gflops[ATM_OP_CONV_FWD],
		       rf.gflops_1x1[ATM_OP_CONV_FWD], rf.gflops[ATM_OP_IP_FWD], rf.fast_gbps,
		       rf.overhead_s[ATM_OP_CONV_FWD] * 1e6);
	atm_err_clear();
	if (err)
		printf("  estimate error   median %.1f%%, mean %.1f%% over %lld configurations against "
		       "measured times;\n                   step all fast %.4f s estimated, %.4f s "
		       "measured; all slow %.4f s, %.4f s\n",
		       err->median_ape, err->mean_ape, (long long)err->n_configs, err->step_fast_est_s,
		       err->step_fast_meas_s, err->step_slow_est_s, err->step_slow_meas_s);
}

/* What autotm profile was asked to do. */
struct profile_args {
	cli_graph_source src;
	cli_memory mem;
	const char *cache;
	int64_t reps;
	bool estimate, isolated, rebuild, json, quiet;
};

#define PROFILE(field) .at = offsetof(struct profile_args, field)

static const cli_option profile_own[] = {
	{"cache", .value = "FILE", .help = "the profile cache",
	 .def = "$XDG_CACHE_HOME/autotm/profiles.json, else ~/.cache/autotm/profiles.json",
	 .set = cli_set_text, PROFILE(cache)},
	{"estimate", .help = "estimate kernel times from each kernel's FLOPs and bytes (a roofline "
	 "calibrated on this machine) instead of measuring them: for networks too large to run here. "
	 "Kept apart from measured times", .set = cli_set_true, PROFILE(estimate)},
	{"isolated", .help = "time kernels alone only; run no all-fast steps", .set = cli_set_true,
	 PROFILE(isolated)},
	{"rebuild", .help = "drop this machine's entries of the cache (or a corrupt cache) and start "
	 "over", .set = cli_set_true, PROFILE(rebuild)},
	{"reps", .value = "N", .help = "timed runs per configuration after one warm-up", .def = "5",
	 .set = cli_set_i64, PROFILE(reps), .lo = 1, .hi = 1000},
	CLI_JSON_ROW(struct profile_args, json),
	CLI_QUIET_ROW(struct profile_args, quiet),
	{NULL},
};

const cli_command_options cmd_profile_options = {
	"profile", (const cli_option *const[]){cli_graph_options, cli_memory_options, profile_own,
	                                       NULL}, profile_help, NULL};

/* parse_args -- the command line into a, checked */
static atm_status parse_args(int argc, char **argv, struct profile_args *a, cli_given *given)
{
	atm_status rc;
	a->reps = 5;
	if ((rc = cli_parse(&cmd_profile_options, (void *const[]){&a->src, &a->mem, a}, argc, argv,
	                    given)) < 0 || given->help)
		return rc;
	atm_backend_caps caps;
	if ((rc = atm_backend_caps_get(a->mem.gpu.mode, &caps)) < 0 ||
	    (rc = cli_gpu_model_check(&a->mem, a->estimate, "profile")) < 0)
		return rc;
	if (a->estimate && !caps.host_tiers && !caps.modelled)
		return atm_err(ATM_E_USAGE, "--estimate models a CPU (a roofline of its cores and "
		               "memories); with --gpu, profile on the GPU itself");
	return ATM_OK;
}

/* open_cache -- the cache opened before anything is measured; a corrupt one says how to start
 * over */
static atm_status open_cache(const struct profile_args *a, const atm_prof *pr, atm_profile **p)
{
	atm_status rc = atm_job_open_cache(pr, a->cache, a->rebuild, p);
	/* starting over helps a file of bad contents, not a device or a folder, nor a second time */
	struct stat st;
	bool file = !a->cache || (stat(a->cache, &st) == 0 && S_ISREG(st.st_mode));
	if (rc == ATM_E_INPUT && file && !a->rebuild) {
		char msg[2048];
		snprintf(msg, sizeof msg, "%s", atm_errmsg());
		atm_err(rc, "%s\n(--rebuild starts the cache over)", msg);
	}
	return rc;
}

/* cmd_profile -- autotm profile: parse, open the cache before any work, profile, report */
int cmd_profile(int argc, char **argv)
{
	struct profile_args a = {0};
	atm_results_workload w;
	atm_graph *g = NULL;
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_prof_report r;
	atm_prof_error err;
	cli_given given;
	atm_status rc = parse_args(argc, argv, &a, &given);
	if (rc < 0 || given.help)
		return cli_fail("profile", rc);
	if ((rc = atm_job_memory_resolve("profile", &a.mem, a.quiet)) < 0 ||
	    (rc = cli_load_graph(&a.src, &g, &w)) < 0)
		goto fail;
	atm_prof_opts o = {
		.tiers = a.mem.tiers,
		.emulate = a.mem.emulate,
		.gpu = a.mem.gpu,
		.reps = (int)a.reps,
		.seed = 1,
		.estimate = a.estimate,
		.isolated = a.isolated,
		.stop = cli_install_interrupt(),
		.progress = !a.quiet && isatty(STDERR_FILENO),
	};
	if ((rc = atm_prof_new(&pr, g, &o)) < 0 || (rc = open_cache(&a, pr, &p)) < 0 ||
	    (rc = atm_prof_run(pr, p, &r)) < 0)
		goto fail;
	bool have_err = a.estimate && compare(p, g, &err);
	if (a.json)
		rc = print_json(g, w.batch, (int)a.reps, pr, p, &r, have_err ? &err : NULL);
	else
		print_human(g, w.batch, (int)a.reps, pr, p, &r, have_err ? &err : NULL);
fail:
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	atm_graph_destroy(g);
	return rc < 0 ? cli_fail("profile", rc) : 0;
}
