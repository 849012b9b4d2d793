/* bench_gpu.c -- Figure 12 as a benchmark: synchronous, asynchronous and vDNN plans against cudaMallocManaged and the oracle on a GPU */
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
	"usage: bench_gpu [--gpu cuda|sim] [--models LIST] [--preset P] [--batch B]\n"
	"                 [--fraction F | --gpu-memory SIZE] [--iters N] [--turns N]\n"
	"                 [--time-limit S] [--cache FILE] [--quiet]\n"
	"\n"
	"For every network: profiles its kernels on the GPU (what the cache lacks), plans\n"
	"the step with the device limited to F of the step's peak footprint (or SIZE),\n"
	"synchronously, asynchronously and as vDNN, and compares each plan with the\n"
	"cudaMallocManaged baseline as 'autotm run --gpu --formulation LIST' does: trained\n"
	"in turns in this process, a fresh executor per plan and turn (managed only where\n"
	"the step fits the free device memory: oversubscribed managed memory can hang a\n"
	"GPU). Prints their step times (the median over --turns of each turn's fastest of\n"
	"N steps), their speedup over managed and the oracle (every kernel at its profiled\n"
	"time, no copies). Target: asynchronous within 10% of the oracle at F = 0.5.\n"
	"Defaults: --gpu cuda; vgg19,resnet200,inception_v4,densenet264; the gpu\n"
	"preset's smallest batch (small on a simulated GPU); F = 0.5; 5 steps; 3 turns;\n"
	"30 s; /tmp/autotm-bench-gpu-profiles.json.\n";

struct opts {
	const char *gpu, *models, *preset, *cache;
	atm_backend_caps caps; /* what the backend gpu chooses can do */
	int64_t batch, memory;
	double fraction, time_limit;
	int iters, turns;
	bool quiet;
};

/* cell -- "0.1234 (1.52x)" or why there is no time */
static void cell(const atm_job_compared *m, double managed)
{
	if (m->left_out)
		printf(" %-18s|", "failed");
	else if (managed > 0)
		printf(" %8.3f (%5.2fx) |", m->median_s * 1e3, managed / m->median_s);
	else
		printf(" %8.3f          |", m->median_s * 1e3);
}

/* compare -- managed and the plans of g under limit compared in turns (c is the caller's) */
static atm_status compare(const struct opts *o, const atm_graph *g, int64_t limit,
                          atm_job_compare **c)
{
	static const atm_job_placement pl[4] = {
		{.placement = "managed"},
		{.optimize = true, .formulation = ATM_OPT_SYNCHRONOUS},
		{.optimize = true, .formulation = ATM_OPT_ASYNCHRONOUS},
		{.optimize = true, .formulation = ATM_OPT_VDNN},
	};
	atm_job_opts jo;
	atm_job_opts_default(&jo);
	jo.who = "bench_gpu";
	jo.mem.gpu.mode = o->gpu;
	jo.limit_bytes = limit;
	jo.cache = o->cache;
	jo.iters = o->iters;
	jo.quiet = o->quiet;
	jo.opt.time_limit_s = o->time_limit;
	atm_job_compare_opts co = {.turns = o->turns};
	atm_status rc = atm_job_compare_new(c, g, &jo, pl, 4, &co);
	if (rc == ATM_OK && (rc = atm_job_compare_plan(*c)) == ATM_OK)
		rc = atm_job_compare_run(*c);
	return rc;
}

/* bench_one -- one network: its row of the table; *met says whether async is within 10% */
static int bench_one(const struct opts *o, const char *model, const atm_gpu_info *gi, int *met,
                     int *judged)
{
	atm_zoo_preset_sizes ps = {0};
	atm_zoo_opts zo = {0};
	atm_graph *g = NULL;
	atm_job_compare *c = NULL;
	atm_graph_stats gs;
	char a[32], b[32];
	int rc = 1;
	if (atm_zoo_preset(model, o->preset, &ps) < 0) {
		fprintf(stderr, "bench_gpu: %s\n", atm_errmsg());
		return 1;
	}
	zo.batch = o->batch ? o->batch : ps.batch[0];
	zo.image = ps.image;
	zo.seq = ps.seq;
	if (atm_zoo_build(&g, model, &zo) < 0 || atm_graph_stats_compute(g, &gs) < 0) {
		fprintf(stderr, "bench_gpu: %s: %s\n", model, atm_errmsg());
		goto done;
	}
	int64_t limit = o->memory ? o->memory : (int64_t)((double)gs.peak_bytes * o->fraction);
	if (limit > gi->memory_bytes)
		limit = gi->memory_bytes;
	if (compare(o, g, limit, &c) < 0) {
		fprintf(stderr, "bench_gpu: %s: %s\n", model, atm_errmsg());
		goto done;
	}
	const atm_job_compared *managed = atm_job_compare_get(c, 0);
	double oracle = -1, m_s = managed->left_out ? -1 : managed->median_s;
	for (int i = 1; i < 4 && oracle < 0; i++)
		if (atm_job_compare_job(c, i))
			oracle = atm_job_check(atm_job_compare_job(c, i))->all_fast_kernel_s;
	printf("| %-12s | %5lld | %9s | %9s |", model, (long long)zo.batch,
	       atm_format_bytes(gs.peak_bytes, a, sizeof a), atm_format_bytes(limit, b, sizeof b));
	if (m_s > 0)
		printf(" %8.3f |", m_s * 1e3);
	else
		printf(" %-8s |", "no fit");
	for (int i = 1; i < 4; i++)
		cell(atm_job_compare_get(c, i), m_s);
	if (oracle > 0)
		printf(" %8.3f |", oracle * 1e3);
	else
		printf(" %8s |", "-");
	const atm_job_compared *async = atm_job_compare_get(c, 2);
	if (!async->left_out && oracle > 0) {
		double r = async->median_s / oracle;
		printf(" %5.2f %-3s |\n", r, r <= 1.10 ? "met" : "not");
		*met += r <= 1.10;
		(*judged)++;
	} else {
		printf(" %9s |\n", "-");
	}
	for (int i = 1; i < 4; i++) {
		const atm_job_compared *m = atm_job_compare_get(c, i);
		if (m->left_out)
			printf("    %s: %s\n", m->name, m->why);
		else if (m->predicted_s > 0) {
			double lo = m->turn_s[0], hi = m->turn_s[0];
			for (int t = 1; t < m->n_turns; t++) {
				lo = m->turn_s[t] < lo ? m->turn_s[t] : lo;
				hi = m->turn_s[t] > hi ? m->turn_s[t] : hi;
			}
			printf("    %s: predicted %.3f ms, measured %.3f ms (%+.1f%%), turns %.3f-%.3f ms\n",
			       m->name, m->predicted_s * 1e3, m->median_s * 1e3,
			       (m->predicted_s / m->median_s - 1) * 100, lo * 1e3, hi * 1e3);
		}
	}
	if (managed->left_out)
		printf("    managed: %s\n", managed->why);
	else
		printf("    managed: the whole step fits the free device memory, so managed memory "
		       "ends up on the device (no limit applies to it)\n");
	rc = 0;
done:
	atm_job_compare_destroy(c);
	atm_graph_destroy(g);
	return rc;
}

int main(int argc, char **argv)
{
	atm_openmp_passive(argv); /* idle kernel threads sleep, not spin */
	struct opts o = {.gpu = "cuda", .models = "vgg19,resnet200,inception_v4,densenet264",
	                 .preset = NULL, .cache = "/tmp/autotm-bench-gpu-profiles.json",
	                 .fraction = 0.5, .time_limit = 30, .iters = 5, .turns = 3};
	static const struct option longopts[] = {
		{"gpu", required_argument, NULL, 'G'},
		{"models", required_argument, NULL, 'm'},
		{"preset", required_argument, NULL, 'p'},
		{"batch", required_argument, NULL, 'b'},
		{"fraction", required_argument, NULL, 'f'},
		{"gpu-memory", required_argument, NULL, 'M'},
		{"iters", required_argument, NULL, 'i'},
		{"turns", required_argument, NULL, 'T'},
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
		case 'T':
			if (!bench_int(prog, "turns", optarg, 1, 1000, &n))
				return 2;
			o.turns = (int)n;
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
	printf("\nstep times in ms (the median of %d turns, each the fastest of %d steps, all "
	       "of a network trained in turns in one process), speedup over managed in brackets; "
	       "oracle: the profile's kernel times, no copies\n", o.turns, o.iters);
	printf("asynchronous within 10%% of the oracle: %d of %d networks%s\n", met, judged,
	       met == judged ? "" : " (target not met for the others)");
	return failed ? 1 : 0;
}
