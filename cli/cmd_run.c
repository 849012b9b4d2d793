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
	"  --placement P     all-fast (default), all-slow, random (with --placement-seed), or a plan\n"
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
	"  --seed N          seed of the weights and data (default 1)\n"
	"  --placement-seed N  seed of the random placement (default: --seed)\n"
	"  --iters N         measured steps (default 5)\n"
	"  --warmup N        steps run first and not measured (default 1)\n"
	CLI_MEMORY_HELP
	"  --2lm SIZE        emulate Memory Mode (2LM): SIZE of fast memory caches the slow\n"
	"                    tier; needs --placement all-slow and --emulate\n"
	"  -o FILE           write the results JSON to FILE (atomically)\n"
	"  --append          add this run to FILE's runs when FILE holds the same workload\n"
	"  --quiet           no progress on stderr\n"
	"  -h, --help        this help\n";

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

int cmd_run(int argc, char **argv)
{
	enum { OPT_PLACEMENT = CLI_OPT_FIRST_FREE, OPT_SEED, OPT_PLACEMENT_SEED, OPT_ITERS, OPT_WARMUP,
	       OPT_APPEND, OPT_QUIET, OPT_2LM, OPT_RATIO, OPT_DRAM, OPT_FORMULATION, OPT_CACHE,
	       OPT_TIME_LIMIT, OPT_GAP, OPT_OVERSUB };
	static const struct option longopts[] = {
		CLI_GRAPH_OPTIONS,
		CLI_MEMORY_OPTIONS,
		{"placement", required_argument, NULL, OPT_PLACEMENT},
		{"seed", required_argument, NULL, OPT_SEED},
		{"placement-seed", required_argument, NULL, OPT_PLACEMENT_SEED},
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
	atm_job_opts jo;
	const char *ratio = NULL, *formulation = NULL;
	int64_t v, seed = 1, placement_seed = -1;
	atm_graph *g = NULL;
	atm_job *j = NULL;
	atm_status rc;
	int opt;

	atm_job_opts_default(&jo);
	jo.who = "run";
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		int used = cli_graph_option(&src, opt, optarg);
		if (!used)
			used = cli_memory_option(&jo.mem, opt, optarg);
		if (used < 0)
			return cli_fail("run", ATM_E_USAGE);
		if (used)
			continue;
		switch (opt) {
		case OPT_PLACEMENT:
			jo.placement = optarg;
			break;
		case OPT_SEED:
			if (cli_parse_int("seed", optarg, 0, INT64_MAX, &seed) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_PLACEMENT_SEED:
			if (cli_parse_int("placement-seed", optarg, 0, INT64_MAX, &placement_seed) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_ITERS:
			if (cli_parse_int("iters", optarg, 1, 1000000, &v) < 0)
				return cli_fail("run", ATM_E_USAGE);
			jo.iters = (int)v;
			break;
		case OPT_WARMUP:
			if (cli_parse_int("warmup", optarg, 0, 1000000, &v) < 0)
				return cli_fail("run", ATM_E_USAGE);
			jo.warmup = (int)v;
			break;
		case OPT_APPEND:
			jo.append = true;
			break;
		case OPT_2LM:
			if (atm_parse_bytes(optarg, &jo.twolm_bytes) < 0)
				return cli_fail("run", atm_err_prefix(ATM_E_USAGE, "--2lm: "));
			break;
		case OPT_RATIO:
			ratio = optarg;
			if (atm_opt_parse_ratio(ratio, &jo.ratio_slow, &jo.ratio_fast) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_DRAM:
			if (atm_parse_bytes(optarg, &jo.limit_bytes) < 0)
				return cli_fail("run", atm_err_prefix(ATM_E_USAGE, "--dram-limit: "));
			break;
		case OPT_FORMULATION:
			formulation = optarg;
			if (atm_opt_formulation_from_name(optarg, &jo.formulation) < 0)
				return cli_fail("run", ATM_E_USAGE);
			break;
		case OPT_CACHE:
			jo.cache = optarg;
			break;
		case OPT_GAP: {
			char *end = NULL;
			double gap = strtod(optarg, &end);
			if (end == optarg || *end || !(gap >= 0 && gap < 1))
				return cli_usage_error("run", "--mip-gap '%s' is not valid; expected a number "
				                       "from 0 to below 1, e.g. 0.01", optarg);
			jo.opt.mip_gap = gap;
			break;
		}
		case OPT_TIME_LIMIT:
			if (cli_parse_int("time-limit", optarg, 1, 1000000, &v) < 0)
				return cli_fail("run", ATM_E_USAGE);
			jo.opt.time_limit_s = (double)v;
			break;
		case OPT_QUIET:
			jo.quiet = true;
			break;
		case OPT_OVERSUB:
			jo.mem.gpu.allow_oversubscribe = true;
			break;
		case 'o':
			jo.results_path = optarg;
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
	if (jo.append && !jo.results_path)
		return cli_usage_error("run", "--append needs -o FILE");
	jo.optimize = ratio || jo.limit_bytes || formulation;
	if (jo.optimize && jo.placement)
		return cli_usage_error("run", "give either --placement or the optimizer's options "
		                       "(--ratio, --dram-limit, --formulation), not both");
	if (ratio && jo.limit_bytes)
		return cli_usage_error("run", "give only one of --ratio and --dram-limit");
	if (jo.optimize && !ratio && !jo.limit_bytes && jo.formulation != ATM_OPT_ALL_FAST &&
	    !jo.mem.gpu.mode)
		return cli_usage_error("run", "give the fast-memory limit with --ratio S:F or "
		                       "--dram-limit SIZE");
	bool managed = jo.placement && !strcmp(jo.placement, "managed");
	if (managed && !jo.mem.gpu.mode)
		return cli_usage_error("run", "--placement managed is the cudaMallocManaged baseline of "
		                       "a GPU: give --gpu");
	if (jo.mem.gpu.allow_oversubscribe && !managed)
		return cli_usage_error("run", "--allow-oversubscribe applies to --placement managed");
	if (jo.mem.gpu.mode && jo.twolm_bytes)
		return cli_usage_error("run", "--2lm emulates a CPU's Memory Mode; it does not apply with "
		                       "--gpu");
	jo.seed = (uint64_t)seed;
	jo.placement_seed = (uint64_t)(placement_seed >= 0 ? placement_seed : seed);

	/* Ctrl-C from here on ends the run cleanly, also while it is still being set up */
	jo.stop = cli_install_interrupt();
	if ((rc = cli_load_graph(&src, &g, &jo.workload)) < 0 || (rc = atm_job_new(&j, g, &jo)) < 0 ||
	    (rc = atm_job_plan(j)) < 0 || (rc = atm_job_execute(j)) < 0)
		goto fail;
	print_summary(g, jo.workload.batch, atm_job_plan_get(j), atm_job_exec_result(j));
	if (jo.results_path) {
		if ((rc = atm_job_write_results(j)) < 0)
			goto fail;
		printf("  results          %s\n", jo.results_path);
	}
	rc = ATM_OK;
fail:
	atm_job_destroy(j);
	atm_graph_destroy(g);
	return rc < 0 ? cli_fail("run", rc) : 0;
}
