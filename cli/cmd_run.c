/* cmd_run.c -- autotm run: execute one training step plan for real and write the results JSON */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char run_help_head[] =
	"usage: autotm run --model NAME [--batch B] [--placement P] [--iters N] [-o results.json]\n"
	"       autotm run --model NAME --ratio S:F [--formulation F] ...\n"
	"       autotm run --graph FILE ...\n"
	"\n"
	"Runs the training step of a network for real: every tensor in the memory the\n"
	"placement gives it, kernels on oneDNN (cuDNN/cuBLAS with --gpu), moves between\n"
	"fast and slow memory, synchronous ones inline and asynchronous ones on a mover\n"
	"thread (copy streams on a GPU). With the planning options (--ratio, --dram-limit,\n"
	"--formulation) it does the whole job: profiles what the cache lacks, plans and runs\n"
	"the plan. With --gpu the plan's limit defaults to the device memory (--gpu-memory).\n"
	"Prints the step time (the fastest of --iters steps after a warm-up), the losses and\n"
	"a checksum of the trained weights, which do not depend on the placement.\n"
	"\n"
	"options:\n" CLI_GRAPH_HELP
	"  --placement P     all-fast (default), all-slow, random (with --placement-seed), or a plan\n"
	"                    JSON file (docs/formats.md); with --gpu also managed:\n"
	"                    every tensor in cudaMallocManaged memory (Figure 12's baseline),\n"
	"                    refused when it exceeds the device's free memory\n"
	"  --allow-oversubscribe  run managed past the free device memory (can hang a GPU)\n";

static const char run_help_tail[] =
	"  --seed N          seed of the weights and data (default 1)\n"
	"  --placement-seed N  seed of the random placement (default: --seed)\n"
	"  --iters N         measured steps (default 5)\n"
	"  --warmup N        steps run first and not measured (default 1)\n"
	CLI_MEMORY_HELP
	"  --2lm SIZE        emulate Memory Mode (2LM): SIZE of fast memory caches the slow\n"
	"                    tier; needs --placement all-slow and --emulate\n"
	"  -o FILE           write the results JSON to FILE (atomically)\n"
	"  --append          add this run to FILE's runs when FILE holds the same workload\n"
	"  --explain[=N]     with the planning options: where the step's time went against the\n"
	"                    prediction: kernels and the rest (moves, waits, allocation, faults),\n"
	"                    and the N kernels (default 10) the prediction missed most\n"
	"  --quiet           no progress on stderr\n"
	"  -h, --help        this help\n";

/* print_help -- autotm run --help */
static void print_help(void)
{
	fputs(run_help_head, stdout);
	cli_plan_help(stdout);
	fputs(run_help_tail, stdout);
}

static void print_summary(const atm_graph *g, int64_t batch, const atm_plan *p,
                          const atm_exec_result *r, const atm_backend_caps *caps)
{
	char a[32], b[32];
	const atm_schedule_stats *st = &r->moves;
	int32_t n_moves = st->n_moves_to_fast + st->n_moves_to_slow;
	printf("%s, batch %lld, placement %s\n", atm_graph_name(g), (long long)batch,
	       atm_plan_info_get(p)->formulation);
	if (caps->device_memory)
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

/* What autotm run was asked to do. */
struct run_args {
	cli_graph_source src;
	atm_job_opts jo;
	int explain; /* kernels to list with --explain; 0: no explanation */
};

/* A kernel of the step, for --explain. */
struct miss {
	int32_t node;
	double pred, meas;
	int n_slow, n_ops; /* operands in slow memory, of all */
};

/* cmp_miss -- the largest |measured - predicted| first */
static int cmp_miss(const void *a, const void *b)
{
	const struct miss *x = a, *y = b;
	double dx = fabs(x->meas - x->pred), dy = fabs(y->meas - y->pred);
	return dx < dy ? 1 : dx > dy ? -1 : (x->node > y->node) - (x->node < y->node);
}

/* print_explain -- where the measured step went against the plan's prediction */
static atm_status print_explain(const atm_job *j, int top)
{
	const atm_graph *g = atm_job_graph(j);
	const atm_exec_result *r = atm_job_exec_result(j);
	const double *pred = atm_job_kernel_predictions(j);
	double step = atm_plan_info_get(atm_job_plan_get(j))->predicted_runtime_s;
	int32_t n = atm_graph_n_nodes(g);
	atm_schedule *s = NULL;
	atm_status rc;
	struct miss *ms = calloc((size_t)n + 1, sizeof *ms);
	if (!ms)
		return atm_err(ATM_E_NOMEM, "out of memory explaining the run");
	if ((rc = atm_schedule_new(&s, atm_job_plan_get(j))) < 0) {
		free(ms);
		return rc;
	}
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		const atm_event *ev = atm_schedule_event(s, i);
		if (ev->kind != ATM_EV_KERNEL)
			continue;
		const atm_node *nd = atm_graph_node(g, ev->node);
		struct miss *m = &ms[ev->node];
		m->n_ops = nd->n_in + nd->n_out;
		for (int k = 0; k < m->n_ops; k++)
			m->n_slow += ev->cfg[k] == ATM_LOC_SLOW;
	}
	atm_schedule_destroy(s);
	double kp = 0, km = 0;
	for (int32_t k = 0; k < n; k++) {
		ms[k].node = k;
		ms[k].pred = pred[k];
		ms[k].meas = r->step_kernel_s[k];
		kp += pred[k];
		km += r->step_kernel_s[k];
	}
	double actual = r->actual_runtime_s;
	printf("explain: predicted step %.6f s, measured %.6f s (%+.1f%%)\n", step, actual,
	       (step / actual - 1) * 100);
	printf("  %-16s %12s %12s %12s\n", "", "predicted", "measured", "missed");
	printf("  %-16s %10.6f s %10.6f s %+10.6f s\n", "kernels", kp, km, km - kp);
	printf("  %-16s %10.6f s %10.6f s %+10.6f s  (moves, waits, allocation, faults)\n",
	       "outside kernels", step - kp, actual - km, (actual - km) - (step - kp));
	qsort(ms, (size_t)n, sizeof *ms, cmp_miss);
	if (top > n)
		top = n;
	printf("  the %d kernels missed most (measured: in the fastest step):\n", top);
	printf("    %-32s %-18s %6s %12s %12s %9s\n", "node", "op", "slow", "predicted", "measured",
	       "missed");
	for (int i = 0; i < top; i++) {
		const struct miss *m = &ms[i];
		const atm_node *nd = atm_graph_node(g, m->node);
		char slow[16];
		snprintf(slow, sizeof slow, "%d/%d", m->n_slow, m->n_ops);
		printf("    %-32.32s %-18.18s %6s %10.6f s %10.6f s %+8.1f%%\n", nd->name,
		       atm_op_name(nd->op), slow, m->pred, m->meas,
		       m->pred > 0 ? (m->meas / m->pred - 1) * 100 : 0.0);
	}
	free(ms);
	return ATM_OK;
}

/* check_args -- the options that only make sense together; -1 to go on, else the exit code */
static int check_args(atm_job_opts *jo, const cli_plan_given *given, bool a_explain)
{
	if (jo->append && !jo->results_path)
		return cli_usage_error("run", "--append needs -o FILE");
	jo->optimize = given->ratio || given->limit || given->formulation;
	if (jo->optimize && jo->placement)
		return cli_usage_error("run", "give either --placement or the optimizer's options "
		                       "(--ratio, --dram-limit, --formulation), not both");
	if (jo->optimize && cli_plan_check(jo, given) < 0)
		return cli_usage_error("run", "%s", atm_errmsg());
	bool managed = jo->placement && !strcmp(jo->placement, "managed");
	atm_backend_caps caps;
	if (atm_backend_caps_get(jo->mem.gpu.mode, &caps) < 0)
		return cli_usage_error("run", "%s", atm_errmsg());
	if (managed && !caps.device_memory)
		return cli_usage_error("run", "--placement managed is the cudaMallocManaged baseline of "
		                       "a GPU: give --gpu");
	if (jo->mem.gpu.allow_oversubscribe && !managed)
		return cli_usage_error("run", "--allow-oversubscribe applies to --placement managed");
	if (a_explain && !jo->optimize)
		return cli_usage_error("run", "--explain compares the run with the optimizer's "
		                       "prediction: give the planning options (--ratio, --dram-limit, "
		                       "--formulation)");
	if (!caps.host_tiers && jo->twolm_bytes)
		return cli_usage_error("run", "--2lm emulates a CPU's Memory Mode; it does not apply with "
		                       "--gpu");
	return -1;
}

/* parse_args -- the command line into a; -1 to go on, else the exit code */
static int parse_args(int argc, char **argv, struct run_args *a)
{
	enum { OPT_PLACEMENT = CLI_OPT_FIRST_FREE, OPT_SEED, OPT_PLACEMENT_SEED, OPT_ITERS, OPT_WARMUP,
	       OPT_APPEND, OPT_QUIET, OPT_2LM, OPT_OVERSUB, OPT_EXPLAIN };
	static const struct option longopts[] = {
		CLI_GRAPH_OPTIONS,
		CLI_MEMORY_OPTIONS,
		CLI_PLAN_OPTIONS,
		{"placement", required_argument, NULL, OPT_PLACEMENT},
		{"seed", required_argument, NULL, OPT_SEED},
		{"placement-seed", required_argument, NULL, OPT_PLACEMENT_SEED},
		{"iters", required_argument, NULL, OPT_ITERS},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{"append", no_argument, NULL, OPT_APPEND},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"2lm", required_argument, NULL, OPT_2LM},
		{"allow-oversubscribe", no_argument, NULL, OPT_OVERSUB},
		{"explain", optional_argument, NULL, OPT_EXPLAIN},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	atm_job_opts *jo = &a->jo;
	cli_plan_given given = {0};
	int64_t v, seed = 1, placement_seed = -1;
	int opt;

	cli_job_begin(jo, "run");
	while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		int used = cli_job_option(&a->src, jo, &given, opt, optarg);
		if (used < 0)
			return cli_fail("run", ATM_E_USAGE);
		if (used)
			continue;
		switch (opt) {
		case OPT_PLACEMENT:
			jo->placement = optarg;
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
			jo->iters = (int)v;
			break;
		case OPT_WARMUP:
			if (cli_parse_int("warmup", optarg, 0, 1000000, &v) < 0)
				return cli_fail("run", ATM_E_USAGE);
			jo->warmup = (int)v;
			break;
		case OPT_APPEND:
			jo->append = true;
			break;
		case OPT_2LM:
			if (atm_parse_bytes(optarg, &jo->twolm_bytes) < 0)
				return cli_fail("run", atm_err_prefix(ATM_E_USAGE, "--2lm: "));
			break;
		case OPT_QUIET:
			jo->quiet = true;
			break;
		case OPT_OVERSUB:
			jo->mem.gpu.allow_oversubscribe = true;
			break;
		case OPT_EXPLAIN:
			v = 10;
			if (optarg && cli_parse_int("explain", optarg, 1, 1000000, &v) < 0)
				return cli_fail("run", ATM_E_USAGE);
			a->explain = (int)v;
			break;
		case 'o':
			jo->results_path = optarg;
			break;
		default:
			return cli_other_option("run", opt, argv, print_help);
		}
	}
	if (optind < argc)
		return cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
	jo->seed = (uint64_t)seed;
	jo->placement_seed = (uint64_t)(placement_seed >= 0 ? placement_seed : seed);
	return check_args(jo, &given, a->explain > 0);
}

/* execute -- run the planned job for real, print what it measured and write the results
 * (arg: the run_args) */
static atm_status execute(atm_job *j, void *arg)
{
	const struct run_args *a = arg;
	atm_backend_caps caps;
	atm_status rc = atm_job_execute(j);
	if (rc < 0 || (rc = atm_backend_caps_get(a->jo.mem.gpu.mode, &caps)) < 0)
		return rc;
	print_summary(atm_job_graph(j), a->jo.workload.batch, atm_job_plan_get(j),
	              atm_job_exec_result(j), &caps);
	if (a->explain && (rc = print_explain(j, a->explain)) < 0)
		return rc;
	if (!a->jo.results_path)
		return ATM_OK;
	if ((rc = atm_job_write_results(j)) < 0)
		return rc;
	printf("  results          %s\n", a->jo.results_path);
	return ATM_OK;
}

/* cmd_run -- autotm run */
int cmd_run(int argc, char **argv)
{
	struct run_args a = {0};
	int code = parse_args(argc, argv, &a);
	return code >= 0 ? code : cli_job_main("run", &a.src, &a.jo, execute, &a);
}
