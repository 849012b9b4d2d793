/* bench_gpu.c -- Figure 12 as a benchmark: synchronous, asynchronous and vDNN plans against cudaMallocManaged and the oracle on a GPU */
#include <getopt.h>
#include <math.h>
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
	"usage: bench_gpu [--gpu cuda|sim] [--models LIST] [--preset P] [--batch B]\n"
	"                 [--fraction F | --gpu-memory SIZE] [--iters N] [--time-limit S]\n"
	"                 [--cache FILE] [--quiet]\n"
	"\n"
	"For every network: profiles its kernels on the GPU (what the cache lacks), plans\n"
	"the step with the device limited to F of the step's peak footprint (or SIZE),\n"
	"synchronously, asynchronously and as vDNN, runs each plan and the\n"
	"cudaMallocManaged baseline (only where the step fits the free device memory:\n"
	"oversubscribed managed memory can hang a GPU), and prints their step times,\n"
	"their speedup over managed and the oracle (every kernel at its profiled time,\n"
	"no copies). Target: asynchronous within 10% of the oracle at F = 0.5.\n"
	"Defaults: --gpu cuda; vgg19,resnet200,inception_v4,densenet264; the gpu\n"
	"preset's smallest batch (small on a simulated GPU); F = 0.5; 5 steps; 30 s;\n"
	"/tmp/autotm-bench-gpu-profiles.json.\n";

struct opts {
	const char *gpu, *models, *preset, *cache;
	atm_backend_caps caps; /* what the backend gpu chooses can do */
	int64_t batch, memory;
	double fraction, time_limit;
	int iters;
	bool quiet;
};

/* run_plan -- the fastest of o->iters steps of p (< 0 when it failed, with the reason) */
static double run_plan(const struct opts *o, const atm_plan *p, bool managed, int64_t memory,
                       char *why, size_t len)
{
	atm_exec *e = NULL;
	atm_exec_opts eo = {.iters = o->iters, .warmup = 1, .seed = 1, .quiet = true,
	                    .gpu = {.mode = o->gpu, .memory_bytes = memory,
	                            .managed = managed && o->caps.managed}};
	double t = -1;
	if (atm_exec_new(&e, p, &eo) < 0 || atm_exec_run(e) < 0)
		snprintf(why, len, "%s", atm_errmsg());
	else
		t = atm_exec_result_get(e)->actual_runtime_s;
	atm_exec_destroy(e);
	return t;
}

/* profile -- the GPU profile of g, what the cache lacks measured now */
static atm_status profile(const struct opts *o, const atm_graph *g, atm_prof **pr, atm_profile **p)
{
	atm_prof_opts po = {.gpu = {.mode = o->gpu}, .seed = 1,
	                    .progress = !o->quiet && isatty(STDERR_FILENO)};
	atm_profile_machine m;
	atm_prof_report r;
	atm_status rc;
	if ((rc = atm_prof_new(pr, g, &po)) < 0)
		return rc;
	atm_prof_get_machine(*pr, &m);
	if ((rc = atm_prof_cache_open(p, o->cache, &m, false)) < 0 || (rc = atm_prof_run(*pr, *p, &r)) < 0)
		return rc;
	if (!o->quiet && r.n_configs_measured)
		fprintf(stderr, "bench_gpu: %s: profiled %lld kernels in %.1f s\n", atm_graph_name(g),
		        (long long)r.n_configs_measured, r.seconds);
	return ATM_OK;
}

/* cell -- "0.1234 (1.52x)" or the reason there is no time */
static void cell(double t, double managed)
{
	if (t < 0)
		printf(" %-18s|", "failed");
	else if (managed > 0)
		printf(" %8.3f (%5.2fx) |", t * 1e3, managed / t);
	else
		printf(" %8.3f          |", t * 1e3);
}

/* bench_one -- one network: its row of the table; *met says whether async is within 10% */
static int bench_one(const struct opts *o, const char *model, const atm_gpu_info *gi, int *met,
                     int *judged)
{
	static const atm_opt_formulation forms[3] = {ATM_OPT_SYNCHRONOUS, ATM_OPT_ASYNCHRONOUS,
	                                             ATM_OPT_VDNN};
	atm_zoo_preset_sizes ps = {0};
	atm_zoo_opts zo = {0};
	atm_graph *g = NULL;
	atm_prof *pr = NULL;
	atm_profile *prof = NULL;
	atm_plan *fast = NULL;
	atm_graph_stats gs;
	double t[3] = {-1, -1, -1}, pred[3] = {-1, -1, -1}, managed = -1, oracle = -1;
	char why[3][256] = {"", "", ""}, mwhy[256] = "", a[32], b[32];
	int rc = 1;
	if (atm_zoo_preset(model, o->preset, &ps) < 0) {
		fprintf(stderr, "bench_gpu: %s\n", atm_errmsg());
		return 1;
	}
	zo.batch = o->batch ? o->batch : ps.batch[0];
	zo.image = ps.image;
	if (atm_zoo_build(&g, model, &zo) < 0 || atm_graph_stats_compute(g, &gs) < 0 ||
	    profile(o, g, &pr, &prof) < 0 || atm_plan_uniform(&fast, g, ATM_LOC_FAST) < 0 ||
	    atm_opt_choose_algos(fast, prof) < 0) {
		fprintf(stderr, "bench_gpu: %s: %s\n", model, atm_errmsg());
		goto done;
	}
	int64_t limit = o->memory ? o->memory : (int64_t)((double)gs.peak_bytes * o->fraction);
	if (limit > gi->memory_bytes)
		limit = gi->memory_bytes;
	atm_opt_options oo;
	atm_opt_options_default(&oo);
	oo.device_only = o->caps.device_only;
	oo.time_limit_s = o->time_limit;
	atm_opt_check_result chk;
	if (atm_opt_check(fast, prof, &oo, &chk) == ATM_OK)
		oracle = chk.all_fast_kernel_s;
	/* the plans choose algorithms against the limit as autotm run --gpu does (the oracle's
	 * all-fast plan above keeps its workspace outside the arena) */
	oo.workspace_in_limit = o->caps.workspace_in_limit;
	/* managed: every tensor in managed memory, only where it fits what the device has free */
	managed = run_plan(o, fast, true, 0, mwhy, sizeof mwhy);
	for (int i = 0; i < 3; i++) {
		atm_plan *p = NULL;
		if (atm_opt_plan(&p, g, prof, limit, forms[i], &oo, NULL) < 0) {
			snprintf(why[i], sizeof why[i], "%s", atm_errmsg());
		} else {
			pred[i] = atm_plan_info_get(p)->predicted_runtime_s;
			t[i] = run_plan(o, p, false, limit, why[i], sizeof why[i]);
		}
		atm_plan_destroy(p);
	}
	printf("| %-12s | %5lld | %9s | %9s |", model, (long long)zo.batch,
	       atm_format_bytes(gs.peak_bytes, a, sizeof a), atm_format_bytes(limit, b, sizeof b));
	if (managed > 0)
		printf(" %8.3f |", managed * 1e3);
	else
		printf(" %-8s |", "no fit");
	for (int i = 0; i < 3; i++)
		cell(t[i], managed);
	printf(" %8.3f |", oracle * 1e3);
	if (t[1] > 0 && oracle > 0) {
		double r = t[1] / oracle;
		printf(" %5.2f %-3s |\n", r, r <= 1.10 ? "met" : "not");
		*met += r <= 1.10;
		(*judged)++;
	} else {
		printf(" %9s |\n", "-");
	}
	for (int i = 0; i < 3; i++)
		if (why[i][0])
			printf("    %s: %s\n", atm_opt_formulation_name(forms[i]), why[i]);
		else if (pred[i] > 0)
			printf("    %s: predicted %.3f ms, measured %.3f ms (%+.1f%%)\n",
			       atm_opt_formulation_name(forms[i]), pred[i] * 1e3, t[i] * 1e3,
			       (pred[i] / t[i] - 1) * 100);
	if (managed < 0)
		printf("    managed: %s\n", mwhy);
	else
		printf("    managed: the whole step fits the free device memory, so managed memory "
		       "ends up on the device (no limit applies to it)\n");
	rc = 0;
done:
	atm_plan_destroy(fast);
	atm_profile_destroy(prof);
	atm_prof_destroy(pr);
	atm_graph_destroy(g);
	return rc;
}

int main(int argc, char **argv)
{
	atm_openmp_passive(argv); /* idle kernel threads sleep, not spin */
	struct opts o = {.gpu = "cuda", .models = "vgg19,resnet200,inception_v4,densenet264",
	                 .preset = NULL, .cache = "/tmp/autotm-bench-gpu-profiles.json",
	                 .fraction = 0.5, .time_limit = 30, .iters = 5};
	static const struct option longopts[] = {
		{"gpu", required_argument, NULL, 'G'},
		{"models", required_argument, NULL, 'm'},
		{"preset", required_argument, NULL, 'p'},
		{"batch", required_argument, NULL, 'b'},
		{"fraction", required_argument, NULL, 'f'},
		{"gpu-memory", required_argument, NULL, 'M'},
		{"iters", required_argument, NULL, 'i'},
		{"time-limit", required_argument, NULL, 't'},
		{"cache", required_argument, NULL, 'c'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *prog = "bench_gpu";
	long long n = 0;
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'G':
			if (atm_backend_caps_get(optarg, &o.caps) < 0 || !o.caps.device_memory)
				return bench_usage_error(prog, "--gpu '%s' is not valid; expected cuda or sim",
				                         optarg);
			o.gpu = optarg;
			break;
		case 'm': o.models = optarg; break;
		case 'p': o.preset = optarg; break;
		case 'c': o.cache = optarg; break;
		case 'q': o.quiet = true; break;
		case 'b':
			if (!bench_int(prog, "batch", optarg, 1, 1000000, &n))
				return 2;
			o.batch = n;
			break;
		case 'i':
			if (!bench_int(prog, "iters", optarg, 1, 1000000, &n))
				return 2;
			o.iters = (int)n;
			break;
		case 'f':
			if (!bench_real(prog, "fraction", optarg, 0, true, 1, &o.fraction))
				return 2;
			break;
		case 't':
			if (!bench_real(prog, "time-limit", optarg, 0, true, 1e6, &o.time_limit))
				return 2;
			break;
		case 'M':
			if (atm_parse_bytes(optarg, &o.memory) < 0)
				return bench_usage_error(prog, "--gpu-memory: %s", atm_errmsg());
			break;
		default:
			return bench_other_option(prog, opt, optind, argv, usage);
		}
	}
	if (optind < argc)
		return bench_usage_error(prog, "unexpected argument '%s'", argv[optind]);
	int code = bench_models_known(prog, o.models);
	if (code >= 0)
		return code;
	if (atm_backend_caps_get(o.gpu, &o.caps) < 0)
		return bench_usage_error(prog, "%s", atm_errmsg());
	if (!o.preset)
		o.preset = o.caps.simulated ? "small" : "gpu";
	atm_gpu_info gi;
	atm_gpu_opts go = {.mode = o.gpu};
	if (atm_gpu_probe(&go, &gi) < 0) {
		fprintf(stderr, "bench_gpu: %s\n", atm_errmsg());
		return 5;
	}
	printf("GPU: %s%s; %lld MiB free; preset %s; device limit %s\n\n", gi.name,
	       gi.simulated ? " (SIMULATED: CPU kernels, emulated link; no GPU figure)" : "",
	       (long long)(gi.free_bytes >> 20), o.preset,
	       o.memory ? "--gpu-memory" : "a fraction of each step's peak");
	printf("| network      | batch | peak      | limit     | managed  | synchronous        |"
	       " asynchronous       | vdnn               | oracle   | async/oracle |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|\n");
	int failed = 0, met = 0, judged = 0;
	char name[64];
	for (const char *s = o.models; bench_split(&s, name, sizeof name);)
		failed += bench_one(&o, name, &gi, &met, &judged);
	/* what the CUDA context, cuDNN and cuBLAS keep once everything above is released */
	atm_gpu_info after;
	if (!gi.simulated && atm_gpu_probe(&go, &after) == ATM_OK)
		printf("\ndevice memory in use with nothing allocated: %lld MiB before the first kernel, "
		       "%lld MiB after the runs (context, cuDNN and cuBLAS; the reserve is %lld MiB)\n",
		       (long long)((gi.total_bytes - gi.free_bytes) >> 20),
		       (long long)((after.total_bytes - after.free_bytes) >> 20),
		       (long long)(ATM_GPU_RESERVE_BYTES >> 20));
	printf("\nstep times in ms (fastest of %d), speedup over managed in brackets; oracle: "
	       "the profile's kernel times, no copies\n", o.iters);
	printf("asynchronous within 10%% of the oracle: %d of %d networks%s\n", met, judged,
	       met == judged ? "" : " (target not met for the others)");
	return failed ? 1 : 0;
}
