/* cmd_run.c -- autotm run: execute one training step plan for real and write the results JSON */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char run_help[] =
	"usage: autotm run --model NAME [--batch B] [--placement P] [--iters N] [-o results.json]\n"
	"       autotm run --graph FILE ...\n"
	"\n"
	"Runs the training step of a network for real: every tensor in the memory the\n"
	"placement gives it, kernels on oneDNN (cuDNN/cuBLAS with --gpu), moves between\n"
	"fast and slow memory, synchronous ones inline and asynchronous ones on a mover\n"
	"thread (copy streams on a GPU). With --gpu the plan's limit defaults to the\n"
	"device memory (--gpu-memory). Prints the step time (the fastest of --iters\n"
	"steps after a warm-up), the losses and a checksum of the trained weights,\n"
	"which do not depend on the placement.\n"
	"\n"
	"options:\n" CLI_GRAPH_HELP
	"  --placement P     all-fast (default), all-slow, random (with --seed), or a plan\n"
	"                    JSON file (the README's plan format); with --gpu also managed:\n"
	"                    every tensor in cudaMallocManaged memory (Figure 12's baseline),\n"
	"                    refused when it exceeds the device's free memory\n"
	"  --allow-oversubscribe  run managed past the free device memory (can hang a GPU)\n"
	"  --ratio S:F       plan for a fast memory of peak footprint * F / (S + F) and run\n"
	"                    the plan: profile what the cache lacks, solve, run (the whole job)\n"
	"  --dram-limit SIZE the same with the fast-memory limit in bytes (K, M, G suffixes)\n"
	"  --formulation F   static, synchronous (default), asynchronous, numa, 2lm, vdnn,\n"
	"                    all-fast, all-slow (with --ratio or --dram-limit)\n"
	"  --cache FILE      the profile cache (default ~/.cache/autotm/profiles.json)\n"
	"  --time-limit S    seconds planning may take, all solver rounds (default 60)\n"
	"  --mip-gap G       relative gap at which the solver stops (default 0.01)\n"
	"  --seed N          seed of the random placement, weights and data (default 1)\n"
	"  --iters N         measured steps (default 5)\n"
	"  --warmup N        steps run first and not measured (default 1)\n"
	CLI_MEMORY_HELP
	"  --2lm SIZE        emulate Memory Mode (2LM): SIZE of fast memory caches the slow\n"
	"                    tier; needs --placement all-slow and --emulate\n"
	"  -o FILE           write the results JSON to FILE (atomically)\n"
	"  --append          add this run to FILE's runs when FILE holds the same workload\n"
	"  --quiet           no progress on stderr\n"
	"  -h, --help        this help\n";

/* make_plan -- the built-in placement named by spec, or a plan file */
static atm_status make_plan(const atm_graph *g, const char *spec, uint64_t seed, atm_plan **p)
{
	if (!strcmp(spec, "all-fast"))
		return atm_plan_uniform(p, g, ATM_LOC_FAST);
	if (!strcmp(spec, "managed")) {
		/* every tensor in one managed arena: the driver decides what is on the device */
		atm_status rc = atm_plan_uniform(p, g, ATM_LOC_FAST);
		if (rc == ATM_OK)
			snprintf(atm_plan_info_of(*p)->formulation, sizeof atm_plan_info_of(*p)->formulation,
			         "managed");
		return rc;
	}
	if (!strcmp(spec, "all-slow"))
		return atm_plan_uniform(p, g, ATM_LOC_SLOW);
	if (!strcmp(spec, "random"))
		return atm_plan_random(p, g, seed);
	if (access(spec, F_OK) != 0)
		return atm_err(ATM_E_USAGE, "--placement '%s' is neither all-fast, all-slow, random, "
		               "managed (with --gpu) nor an existing plan file", spec);
	return atm_plan_load(p, g, spec);
}

static void print_summary(const atm_graph *g, int64_t batch, const atm_plan *p,
                          const atm_exec_result *r)
{
	char a[32], b[32];
	const atm_schedule_stats *st = &r->moves;
	int32_t n_moves = st->n_moves_to_fast + st->n_moves_to_slow;
	printf("%s, batch %lld, placement %s\n", atm_graph_name(g), (long long)batch,
	       atm_plan_info_get(p)->formulation);
	if (strcmp(r->backend, "cpu"))
		printf("  device           %s%s\n", r->device,
		       r->simulated ? " -- SIMULATED: times are not a GPU's" : "");
	printf("  fast tier        %s\n", r->fast_tier.name);
	printf("  slow tier        %s\n", r->slow_tier.name);
	printf("  step time        %.6f s (fastest of %d), mean %.6f s\n", r->actual_runtime_s,
	       r->n_iters, r->mean_runtime_s);
	double predicted = atm_plan_info_get(p)->predicted_runtime_s;
	if (predicted > 0)
		printf("  predicted        %.6f s (%+.1f%% from the fastest step)\n", predicted,
		       (predicted / r->actual_runtime_s - 1) * 100);
	if (atm_plan_info_get(p)->fast_limit_bytes)
		printf("  fast limit       %s\n", atm_format_bytes(atm_plan_info_get(p)->fast_limit_bytes,
		                                                 a, sizeof a));
	if (r->emulated)
		printf("  emulation        %s: %.6f s of waits per step (fast tier taken as %.1f GB/s)\n",
		       r->emulation, r->emulation_wait_s, r->emulation_fast_gbps);
	printf("  moves per step   %d (%d asynchronous), %s to fast, %s to slow\n", n_moves,
	       st->n_async_to_fast + st->n_async_to_slow, atm_format_bytes(st->bytes_to_fast, a, sizeof a),
	       atm_format_bytes(st->bytes_to_slow, b, sizeof b));
	if (st->n_async_to_fast + st->n_async_to_slow)
		printf("  waited on moves  %.6f s per step\n", r->move_wait_s);
	printf("  fast memory      %s used (arena), peak of live copies %s\n",
	       atm_format_bytes(r->fast_high_water_bytes, a, sizeof a),
	       atm_format_bytes(st->fast_peak_bytes, b, sizeof b));
	printf("  slow memory      %s high-water mark\n",
	       atm_format_bytes(r->slow_high_water_bytes, a, sizeof a));
	printf("  loss             %.6g (first step) -> %.6g (last of %d)\n", (double)r->losses[0],
	       (double)r->losses[r->n_losses - 1], r->n_losses);
	printf("  weights checksum %s\n", r->weights_checksum);
}

/* memory_mode_plan -- the 2lm baseline: on a machine in Memory Mode the hardware caches slow
 * memory, so every tensor goes to (cached) main memory and nothing is emulated; elsewhere the
 * executor emulates a cache of the limit's size in front of the slow tier (*twolm) */
static atm_status memory_mode_plan(const atm_graph *g, int64_t limit, bool quiet, atm_plan **p,
                                   int64_t *twolm, const char **mode)
{
	atm_tier_topo *topo = NULL;
	atm_plan *q = NULL;
	atm_status rc = atm_tier_topo_new(&topo);
	if (rc < 0)
		return rc;
	int64_t cache = atm_tier_topo_memory_mode(topo);
	atm_tier_topo_destroy(topo);
	char size[32];
	if (!cache) {
		if (!*twolm)
			*twolm = limit;
		*mode = "emulated";
		if (!quiet)
			fprintf(stderr, "autotm run: 2lm: this machine is not in Memory Mode; a %s cache in "
			        "front of the slow tier is emulated\n",
			        atm_format_bytes(*twolm, size, sizeof size));
		return ATM_OK;
	}
	if ((rc = atm_plan_uniform(&q, g, ATM_LOC_FAST)) < 0)
		return rc;
	atm_plan_info *info = atm_plan_info_of(q);
	*info = *atm_plan_info_get(*p);
	info->fast_limit_bytes = 0; /* main memory, as large as the step needs */
	atm_plan_destroy(*p);
	*p = q;
	*twolm = 0;
	*mode = "hardware";
	if (!quiet)
		fprintf(stderr, "autotm run: 2lm: this machine is in Memory Mode (a %s memory-side "
		        "cache): the hardware caches, nothing is emulated\n",
		        atm_format_bytes(cache, size, sizeof size));
	return ATM_OK;
}

int cmd_run(int argc, char **argv)
{
	enum { OPT_PLACEMENT = CLI_OPT_FIRST_FREE, OPT_SEED, OPT_ITERS, OPT_WARMUP, OPT_APPEND,
	       OPT_QUIET, OPT_2LM, OPT_RATIO, OPT_DRAM, OPT_FORMULATION, OPT_CACHE, OPT_TIME_LIMIT, OPT_GAP,
	       OPT_OVERSUB };
	static const struct option longopts[] = {
		CLI_GRAPH_OPTIONS,
		CLI_MEMORY_OPTIONS,
		{"placement", required_argument, NULL, OPT_PLACEMENT},
		{"seed", required_argument, NULL, OPT_SEED},
		{"iters", required_argument, NULL, OPT_ITERS},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{"append", no_argument, NULL, OPT_APPEND},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"2lm", required_argument, NULL, OPT_2LM},
		{"ratio", required_argument, NULL, OPT_RATIO},
		{"dram-limit", required_argument, NULL, OPT_DRAM},
		{"formulation", required_argument, NULL, OPT_FORMULATION},
		{"cache", required_argument, NULL, OPT_CACHE},
		{"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
		{"mip-gap", required_argument, NULL, OPT_GAP},
		{"allow-oversubscribe", no_argument, NULL, OPT_OVERSUB},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cli_graph_source src = {0};
	cli_memory mem = {0};
	const char *placement = NULL, *out_path = NULL, *ratio = NULL, *formulation = NULL;
	const char *cache = NULL;
	int64_t limit = 0, time_limit = 60;
	double rs = 0, rf = 0, gap = 0.01;
	atm_opt_formulation f = ATM_OPT_SYNCHRONOUS;
	atm_prof *pr = NULL;
	atm_profile *prof = NULL;
	int64_t seed = 1, iters = 5, warmup = 1, batch = 0, twolm = 0;
	const char *mm = NULL; /* 2LM: "hardware" or "emulated" */
	double oracle_s = -1;  /* GPU: every kernel at its fastest, no moves */
	bool append = false, quiet = false;
	atm_graph *g = NULL;
	atm_plan *p = NULL;
	atm_exec *e = NULL;
	atm_schedule *sched = NULL;
	atm_status rc;
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		int used = cli_graph_option(&src, opt, optarg);
		if (!used)
			used = cli_memory_option(&mem, opt, optarg);
		if (used < 0)
			return cli_fail("run", ATM_E_USAGE);
		if (used)
			continue;
		switch (opt) {
		case OPT_PLACEMENT:
			placement = optarg;
			break;
		case OPT_SEED:
			if (cli_parse_int("seed", optarg, 0, INT64_MAX, &seed) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_ITERS:
			if (cli_parse_int("iters", optarg, 1, 1000000, &iters) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_WARMUP:
			if (cli_parse_int("warmup", optarg, 0, 1000000, &warmup) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_APPEND:
			append = true;
			break;
		case OPT_2LM:
			if (atm_parse_bytes(optarg, &twolm) < 0)
				return cli_fail("run", atm_err_prefix(ATM_E_USAGE, "--2lm: "));
			break;
		case OPT_RATIO:
			ratio = optarg;
			if (atm_opt_parse_ratio(ratio, &rs, &rf) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_DRAM:
			if (atm_parse_bytes(optarg, &limit) < 0)
				return cli_fail("run", atm_err_prefix(ATM_E_USAGE, "--dram-limit: "));
			break;
		case OPT_FORMULATION:
			formulation = optarg;
			if (atm_opt_formulation_from_name(optarg, &f) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_CACHE:
			cache = optarg;
			break;
		case OPT_GAP: {
			char *end = NULL;
			gap = strtod(optarg, &end);
			if (end == optarg || *end || !(gap >= 0 && gap < 1))
				return cli_usage_error("run", "--mip-gap '%s' is not valid; expected a number "
				                       "from 0 to below 1, e.g. 0.01", optarg);
			break;
		}
		case OPT_TIME_LIMIT:
			if (cli_parse_int("time-limit", optarg, 1, 1000000, &time_limit) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_QUIET:
			quiet = true;
			break;
		case OPT_OVERSUB:
			mem.gpu.allow_oversubscribe = true;
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'h':
			fputs(run_help, stdout);
			return 0;
		case ':':
			return cli_usage_error("run", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_usage_error("run", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
	if (append && !out_path)
		return cli_usage_error("run", "--append needs -o FILE");
	bool optimize = ratio || limit || formulation;
	if (optimize && placement)
		return cli_usage_error("run", "give either --placement or the optimizer's options "
		                       "(--ratio, --dram-limit, --formulation), not both");
	if (ratio && limit)
		return cli_usage_error("run", "give only one of --ratio and --dram-limit");
	if (optimize && !ratio && !limit && f != ATM_OPT_ALL_FAST && !mem.gpu.mode)
		return cli_usage_error("run", "give the fast-memory limit with --ratio S:F or "
		                       "--dram-limit SIZE");

	/* Ctrl-C from here on ends the run cleanly, also while it is still being set up */
	volatile sig_atomic_t *stop = cli_install_interrupt();
	bool managed = placement && !strcmp(placement, "managed");
	if (managed && !mem.gpu.mode)
		return cli_usage_error("run", "--placement managed is the cudaMallocManaged baseline of "
		                       "a GPU: give --gpu");
	if (mem.gpu.allow_oversubscribe && !managed)
		return cli_usage_error("run", "--allow-oversubscribe applies to --placement managed");
	mem.gpu.managed = managed && !strcmp(mem.gpu.mode, "cuda");
	if (mem.gpu.mode && twolm)
		return cli_usage_error("run", "--2lm emulates a CPU's Memory Mode; it does not apply with "
		                       "--gpu");
	if ((rc = cli_gpu_resolve("run", &mem, quiet)) < 0 || (rc = cli_load_graph(&src, &g, &batch)) < 0)
		goto fail;
	if (optimize) {
		atm_opt_options oo;
		atm_opt_options_default(&oo);
		oo.time_limit_s = (double)time_limit;
		oo.mip_gap = gap;
		oo.device_only = mem.gpu.mode != NULL;
		if (ratio && (rc = atm_opt_limit_from_ratio(g, rs, rf, &limit)) < 0)
			goto fail;
		limit = cli_fast_limit(&mem, limit);
		if ((rc = cli_profile("run", g, &mem, cache, false, quiet, &pr, &prof)) < 0 ||
		    (rc = atm_opt_plan(&p, g, prof, limit, f, &oo, NULL)) < 0)
			goto fail;
		atm_opt_check_result chk;
		if (mem.gpu.mode && atm_opt_check(p, prof, &oo, &chk) == ATM_OK)
			oracle_s = chk.all_fast_kernel_s;
		if (f == ATM_OPT_2LM && (rc = memory_mode_plan(g, limit, quiet, &p, &twolm, &mm)) < 0)
			goto fail;
	} else if ((rc = make_plan(g, placement ? placement : "all-fast", (uint64_t)seed, &p)) < 0) {
		goto fail;
	}
	/* refuse an unwritable results path before the run, not after it */
	if (out_path && (rc = atm_check_writable(out_path)) < 0)
		goto fail;
	atm_exec_opts o = {
		.iters = (int)iters,
		.warmup = warmup ? (int)warmup : -1,
		.seed = (uint64_t)seed,
		.tiers = mem.tiers,
		.emulate = mem.emulate,
		.gpu = mem.gpu,
		.stop = stop,
		.twolm_bytes = twolm,
		.quiet = quiet || !isatty(STDERR_FILENO),
	};
	if ((rc = atm_exec_new(&e, p, &o)) < 0 || (rc = atm_exec_run(e)) < 0)
		goto fail;
	const atm_exec_result *r = atm_exec_result_get(e);
	print_summary(g, batch, p, r);
	if (out_path) {
		atm_run_measured m = {
			.actual_runtime_s = r->actual_runtime_s,
			.mean_runtime_s = r->mean_runtime_s,
			.n_iters = r->n_iters,
			.kernel_s = r->kernel_s,
			.n_losses = r->n_losses,
			.losses = r->losses,
			.weights_checksum = r->weights_checksum,
			.dram_alloc_bytes = r->fast_high_water_bytes,
			.pmem_alloc_bytes = r->slow_high_water_bytes,
			.emulation_wait_s = r->emulation_wait_s,
			.move_wait_s = r->move_wait_s,
			.emulated = r->emulated,
			.emulation = r->emulated ? r->emulation : NULL,
			.memory_mode = mm ? mm : twolm ? "emulated" : NULL,
			.fast_tier = r->fast_tier.name,
			.slow_tier = r->slow_tier.name,
			.slow_read_gbps = r->slow_tier.read_gbps,
			.slow_write_gbps = r->slow_tier.write_gbps,
			.seed = (uint64_t)seed,
			.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN),
			.ratio_slow = rs,
			.ratio_fast = rf,
			.backend = r->backend,
			.device = r->device,
			.versions = r->versions,
			.simulated = r->simulated,
			.gpu_memory_bytes = mem.gpu.mode ? mem.gpu.memory_bytes : 0,
			.managed = managed,
			.oracle_s = oracle_s,
		};
		if ((rc = atm_schedule_new(&sched, p)) < 0 ||
		    (rc = atm_results_write(out_path, p, sched, &m, append)) < 0)
			goto fail;
		printf("  results          %s\n", out_path);
	}
	rc = ATM_OK;
fail:
	atm_schedule_destroy(sched);
	atm_exec_destroy(e);
	atm_plan_destroy(p);
	atm_profile_destroy(prof);
	atm_prof_destroy(pr);
	atm_graph_destroy(g);
	return rc < 0 ? cli_fail("run", rc) : 0;
}
