/* cmd_run.c -- autotm run: execute one training step plan for real and write the results JSON */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
	"Given several placements (--formulation A,B,C, or --placement P,Q) it compares\n"
	"them: every one is planned first, then all are trained in turns in this process,\n"
	"the order rotated from turn to turn, and it prints each one's step (the median of\n"
	"its turns) and, with all-fast among them, its per-turn ratio to all-fast beside the\n"
	"predicted one. The results hold one run per placement under one comparison id.\n"
	"\n"
	"options:\n";

static const char run_help_tail[] =
	"\n"
	"Under mpirun (mpirun -np N autotm run ...) each of the N ranks trains its shard of the\n"
	"batch (--batch, or --data's rows: a multiple of N) and the gradients are averaged over\n"
	"the ranks, in buckets, in a fixed order, before the update: every rank trains bitwise\n"
	"the same weights. Rank 0 profiles (the others alongside it), plans, prints and writes\n"
	"the results and --weights-out. A --formulation list (with --turns) compares the\n"
	"placements with every rank in step; docs/many-machines.md.\n";

/* print_emulation -- what an emulated slow tier waited for (with its waits per step, for one
 * run), and where this machine's bandwidth came from */
static void print_emulation(const atm_exec_result *r, bool waits)
{
	char rates[256], note[512];
	if (waits)
		printf("  emulation        %s: %.6f s of waits per step; %s\n", r->emulation,
		       r->emulation_wait_s, cli_emulation_rates(&r->slow_tier, rates, sizeof rates));
	else
		printf("  emulation        %s %s\n", r->emulation,
		       cli_emulation_rates(&r->slow_tier, rates, sizeof rates));
	if (cli_bandwidth_note(note, sizeof note)[0])
		printf("  bandwidth        %s\n", note);
}

static void print_summary(const atm_graph *g, int64_t batch, const atm_plan *p,
                          const atm_exec_result *r, const atm_backend_caps *caps,
                          const atm_run_measured *ranks)
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
		print_emulation(r, true);
	printf("  moves per step   %d (%d asynchronous), %s to fast, %s to slow\n", n_moves,
	       st->n_async_to_fast + st->n_async_to_slow, atm_format_bytes(st->bytes_to_fast, a, sizeof a),
	       atm_format_bytes(st->bytes_to_slow, b, sizeof b));
	if (st->n_async_to_fast + st->n_async_to_slow)
		printf("  waited on moves  %.6f s per step\n", r->move_wait_s);
	int64_t limit = atm_plan_info_get(p)->fast_limit_bytes;
	printf("  fast memory      %s held at most%s (the arena's high-water mark%s%s)\n",
	       atm_format_bytes(r->fast_high_water_bytes, a, sizeof a),
	       !limit ? "" : r->fast_high_water_bytes <= limit ? ", within the limit" : ", OVER the limit",
	       r->fast_high_water_at[0] ? ", first reached by " : "", r->fast_high_water_at);
	printf("                   %s of live copies at their peak; the kernels' scratch, %s, beside "
	       "the arena\n", atm_format_bytes(st->fast_peak_bytes, a, sizeof a),
	       atm_format_bytes(r->scratch_bytes, b, sizeof b));
	printf("  slow memory      %s high-water mark\n",
	       atm_format_bytes(r->slow_high_water_bytes, a, sizeof a));
	if (r->n_bf16_native + r->n_bf16_widened)
		printf("  bf16 nodes       %d on %s's bf16 kernels, %d in f32 on widened copies\n",
		       r->n_bf16_native, r->backend, r->n_bf16_widened);
	if (r->energy_per_step_j >= 0)
		printf("  energy           %.3f J per step (NVML's counter; SM %d MHz, memory %d MHz, "
		       "power limit %.0f W)\n", r->energy_per_step_j, r->gpu_state.sm_mhz,
		       r->gpu_state.mem_mhz, r->gpu_state.power_limit_w);
	atm_update u;
	int64_t state = 0;
	if (atm_graph_update_of(g, &u, &state) && state > 0)
		printf("  optimizer        %s, %s of state\n", atm_update_kind_name(u.kind),
		       atm_format_bytes(state, a, sizeof a));
	if (ranks) {
		printf("  ranks            %d, batch %lld each; fastest steps", ranks->ranks,
		       (long long)ranks->rank_batch);
		for (int i = 0; i < ranks->ranks; i++)
			printf("%s %.6f", i ? "," : "", ranks->rank_step_s[i]);
		printf(" s\n  allreduce        %.6f s a step (%.0f%%)", ranks->allreduce_s,
		       100 * ranks->allreduce_s / r->actual_runtime_s);
		if (ranks->allreduce_pred_s >= 0 && predicted > 0)
			printf(", predicted %.6f s (%.0f%%)", ranks->allreduce_pred_s,
			       100 * ranks->allreduce_pred_s / predicted);
		printf("; waited %.6f s for the other ranks\n", ranks->allreduce_wait_s);
	}
	const float *loss = ranks ? ranks->losses : r->losses;
	printf("  loss             %.6g (first step) -> %.6g (last of %d)%s\n", (double)loss[0],
	       (double)loss[r->n_losses - 1], r->n_losses, ranks ? ", the mean over the ranks" : "");
	printf("  weights checksum %s%s\n", r->weights_checksum,
	       ranks ? ", the same on every rank" : "");
}

/* print_calibration -- when the profile's calibration measured all-fast and how fast, and,
 * where all-fast was measured now, how much slower or faster it is */
static void print_calibration(const atm_profile_calibration *cal, double drift)
{
	if (!cal)
		return;
	printf("  calibrated       %s, all-fast step %.6f s then", cal->measured_at, cal->step_s);
	if (drift > 0)
		printf("; %.3fx that now", drift);
	printf("\n");
}

/* The most placements one comparison takes. */
#define MAX_PLACEMENTS 32

/* What autotm run was asked to do. */
struct run_args {
	cli_graph_source src;
	atm_job_opts jo;
	int explain; /* kernels to list with --explain; 0: no explanation */
	/* a comparison: the lists given, their placements (pointing into list, a copy split in
	 * place: argv stays as ps shows it), and how it takes turns */
	const char *form_list, *placement_list;
	char list[4096];
	atm_job_placement pl[MAX_PLACEMENTS];
	int n_pl;
	atm_job_compare_opts co;
	const char *placement;        /* --placement: one, or a list */
	int64_t seed, placement_seed; /* placement_seed < 0: --seed's */
	int64_t bucket_bytes; /* under mpirun: an allreduce's gradients (0: the default) */
	int rank;             /* under mpirun: this process's rank (0 prints) */
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

/* looks_like_file -- a word that names no built-in placement but a plan file: it has a '/' or
 * a '.', or is there (as atm_job's own test: a missing one is then a missing file) */
static bool looks_like_file(const char *w)
{
	return strpbrk(w, "/.") || access(w, F_OK) == 0;
}

/* add_item -- one item of a --formulation (formulations) or --placement list */
static atm_status add_item(struct run_args *a, const char *item, bool formulations)
{
	const char *opt = formulations ? "--formulation" : "--placement";
	atm_job_placement *p = &a->pl[a->n_pl];
	if (!item[0])
		return atm_err(ATM_E_USAGE, "%s: an empty item in the list", opt);
	if (a->n_pl == MAX_PLACEMENTS)
		return atm_err(ATM_E_USAGE, "%s: at most %d placements in one comparison", opt,
		               MAX_PLACEMENTS);
	*p = (atm_job_placement){.placement = item};
	/* "synchronous+recompute": an ILP formulation with recomputation */
	size_t n = strlen(item), ns = strlen(ATM_OPT_RECOMPUTE_SUFFIX);
	char name[64];
	if (formulations && n > ns && n - ns < sizeof name &&
	    !strcmp(item + n - ns, ATM_OPT_RECOMPUTE_SUFFIX)) {
		snprintf(name, sizeof name, "%.*s", (int)(n - ns), item);
		if (atm_opt_formulation_from_name(name, &p->formulation) < 0 ||
		    !atm_opt_is_ilp(p->formulation))
			return atm_err(ATM_E_USAGE, "--formulation: '%s': only the ILP formulations "
			               "(static, synchronous, asynchronous) recompute", item);
		p->optimize = p->recompute = true;
	} else if (formulations && atm_opt_formulation_from_name(item, &p->formulation) == ATM_OK)
		p->optimize = true;
	else if (formulations && strcmp(item, "random") && strcmp(item, "managed") &&
	         !looks_like_file(item))
		return atm_err(ATM_E_USAGE, "--formulation: '%s' is neither a formulation (static, "
		               "synchronous, asynchronous, all-fast, all-slow, numa, 2lm, vdnn), "
		               "random, managed nor a plan file", item);
	atm_err_clear();
	a->n_pl++;
	return ATM_OK;
}

/* split_list -- list's comma-separated items into a's placements */
static atm_status split_list(struct run_args *a, const char *list, bool formulations)
{
	char *item = a->list;
	if (strlen(list) >= sizeof a->list)
		return atm_err(ATM_E_USAGE, "%s: the list is longer than %zu characters",
		               formulations ? "--formulation" : "--placement", sizeof a->list - 1);
	strcpy(a->list, list);
	for (;;) {
		char *comma = strchr(item, ',');
		if (comma)
			*comma = '\0';
		atm_status rc = add_item(a, item, formulations);
		if (rc < 0 || !comma)
			return rc;
		item = comma + 1;
	}
}

/* check_comparison -- the options of a comparison, and that every formulation listed has the
 * limit it needs */
static atm_status check_comparison(struct run_args *a, const cli_given *given)
{
	atm_job_opts *jo = &a->jo;
	if (a->n_pl < 2 && !cli_was_given(given, "turns")) {
		if (cli_was_given(given, "interleave") || cli_was_given(given, "reruns"))
			return atm_err(ATM_E_USAGE, "--interleave and --reruns apply to a comparison: "
			               "list several placements, or give --turns");
		return ATM_OK;
	}
	if (a->explain)
		return atm_err(ATM_E_USAGE, "--explain explains one run; it does not apply to a "
		               "comparison");
	if (jo->twolm_bytes)
		return atm_err(ATM_E_USAGE, "--2lm emulates Memory Mode for one all-slow run; in a "
		               "comparison list the 2lm formulation (with --ratio)");
	bool asynchronous = false, ilp = false;
	for (int i = 0; i < a->n_pl; i++) {
		asynchronous |= a->pl[i].optimize && a->pl[i].formulation == ATM_OPT_ASYNCHRONOUS;
		ilp |= a->pl[i].optimize && atm_opt_is_ilp(a->pl[i].formulation);
	}
	if (cli_was_given(given, "async-window") && !asynchronous)
		return atm_err(ATM_E_USAGE, "--async-window is the asynchronous formulation's, and "
		               "the list has none");
	if (jo->opt.recompute && !ilp)
		return atm_err(ATM_E_USAGE, "--recompute is a choice of the ILP formulations (static, "
		               "synchronous, asynchronous), and the list has none");
	/* a device's memory is the limit when none is given */
	atm_backend_caps caps;
	atm_status rc = atm_backend_caps_get(jo->mem.gpu.mode, &caps);
	bool limit = cli_was_given(given, "ratio") || cli_was_given(given, "dram-limit");
	for (int i = 0; rc == ATM_OK && i < a->n_pl; i++)
		if (a->pl[i].optimize && a->pl[i].formulation != ATM_OPT_ALL_FAST && !limit &&
		    !caps.device_memory)
			return atm_err(ATM_E_USAGE, "%s needs the fast-memory limit: give --ratio S:F or "
			               "--dram-limit SIZE", atm_opt_formulation_name(a->pl[i].formulation));
	return rc;
}

/* check_files -- -o names no file the run reads: the cache, the graph, a plan file (listed
 * too), a tier spec */
static atm_status check_files(const struct run_args *a)
{
	char cache[PATH_MAX];
	cli_file in[6 + MAX_PLACEMENTS], out[] = {{"-o", a->jo.results_path},
	                                          {"--weights-out", a->jo.weights_out}};
	int n_in = cli_job_inputs(&a->src, &a->jo, in, cache, sizeof cache);
	in[n_in++] = (cli_file){"--weights-in", a->jo.weights_in};
	in[n_in++] = (cli_file){"--data", a->jo.data_in};
	for (int i = 0; i < a->n_pl; i++)
		if (!a->pl[i].optimize && a->pl[i].placement)
			in[n_in++] = (cli_file){"--placement", a->pl[i].placement};
	return cli_check_files(out, 2, in, n_in);
}

/* check_args -- the options that only make sense together (list: a comparison's) */
static atm_status check_args(atm_job_opts *jo, const cli_given *given, bool explain, bool list)
{
	atm_status rc;
	if (jo->append && !jo->results_path)
		return atm_err(ATM_E_USAGE, "--append needs -o FILE");
	if (jo->weights_dtype != ATM_ST_F32 && !jo->weights_out)
		return atm_err(ATM_E_USAGE, "--weights-dtype is the dtype of --weights-out FILE, "
		               "which is not given");
	jo->optimize = cli_was_given(given, "ratio") || cli_was_given(given, "dram-limit") ||
	               cli_was_given(given, "formulation");
	if (jo->optimize && jo->placement)
		return atm_err(ATM_E_USAGE, "give either --placement or the optimizer's options "
		               "(--ratio, --dram-limit, --formulation), not both");
	if (jo->optimize && !list && (rc = cli_plan_check(jo, given)) < 0)
		return rc;
	if (cli_ratio_list(given))
		return atm_err(ATM_E_USAGE, "--ratio '%s': a list of ratios is a sweep of 'autotm "
		               "plan' (-o FOLDER/); autotm run takes one ratio", cli_ratio_list(given));
	if (!jo->optimize && (jo->n_starts || jo->plans_out))
		return atm_err(ATM_E_USAGE, "%s is the optimizer's: give the planning options "
		               "(--ratio, --dram-limit, --formulation)",
		               jo->n_starts ? "--start" : "--plans-out");
	/* in a list, the comparison checks the placements for one device */
	bool managed = !list && jo->placement && !strcmp(jo->placement, "managed");
	atm_backend_caps caps;
	if ((rc = atm_backend_caps_get(jo->mem.gpu.mode, &caps)) < 0)
		return rc;
	if (caps.modelled)
		return atm_err(ATM_E_USAGE, "--gpu-model %s describes a GPU for plans (autotm plan "
		               "--gpu-model NAME --estimate): nothing runs on it; run on the GPU "
		               "itself with --gpu", jo->mem.gpu.model);
	if (managed && !caps.device_memory)
		return atm_err(ATM_E_USAGE, "--placement managed is the cudaMallocManaged baseline of "
		               "a GPU: give --gpu");
	if (jo->mem.gpu.allow_oversubscribe && !managed && !list)
		return atm_err(ATM_E_USAGE, "--allow-oversubscribe applies to --placement managed");
	if (explain && !jo->optimize)
		return atm_err(ATM_E_USAGE, "--explain compares the run with the optimizer's "
		               "prediction: give the planning options (--ratio, --dram-limit, "
		               "--formulation)");
	if (!caps.host_tiers && jo->twolm_bytes)
		return atm_err(ATM_E_USAGE, "--2lm emulates a CPU's Memory Mode; it does not apply "
		               "with --gpu");
	return ATM_OK;
}

/* interleave -- --interleave step|turn */
static atm_status interleave(const cli_option *o, const char *arg, void *base)
{
	(void)o;
	if (strcmp(arg, "step") && strcmp(arg, "turn"))
		return atm_err(ATM_E_USAGE, "--interleave '%s' is not valid; expected step or turn", arg);
	((struct run_args *)base)->co.interleave = arg[0] == 's' ? ATM_JOB_INTERLEAVE_STEP
	                                                         : ATM_JOB_INTERLEAVE_TURN;
	return ATM_OK;
}

/* reruns -- --reruns N: 0 is never (the comparison's -1) */
static atm_status reruns(const cli_option *o, const char *arg, void *base)
{
	int *r = &((struct run_args *)base)->co.max_reruns;
	atm_status rc = cli_set_int(o, arg, base);
	if (rc == ATM_OK && *r == 0)
		*r = -1;
	return rc;
}

/* explain -- --explain[=N]: the N kernels missed most (10 when N is left out) */
static atm_status explain(const cli_option *o, const char *arg, void *base)
{
	((struct run_args *)base)->explain = 10;
	return arg ? cli_set_int(o, arg, base) : ATM_OK;
}

/* weights_dtype -- --weights-dtype f32|bf16|f16 */
static atm_status weights_dtype(const cli_option *o, const char *arg, void *base)
{
	static const atm_st_dtype offered[] = {ATM_ST_F32, ATM_ST_BF16, ATM_ST_F16};
	(void)o;
	for (size_t i = 0; i < sizeof offered / sizeof offered[0]; i++)
		if (!strcasecmp(arg, atm_st_dtype_name(offered[i]))) {
			((struct run_args *)base)->jo.weights_dtype = offered[i];
			return ATM_OK;
		}
	return atm_err(ATM_E_USAGE, "--weights-dtype '%s': valid are f32 (the default), bf16 and "
	               "f16", arg);
}

#define RUN(field) .at = offsetof(struct run_args, field)

static const cli_option run_own[] = {
	{"placement", .value = "P", .help = "all-fast, all-slow, random (with --placement-seed), or "
	 "a plan JSON file (docs/formats.md); with --gpu also managed: every tensor in "
	 "cudaMallocManaged memory (Figure 12's baseline), refused when it exceeds the device's free "
	 "memory. P,Q,...: compare these placements (docs/comparisons.md)", .def = "all-fast",
	 .set = cli_set_text, RUN(placement)},
	{"allow-oversubscribe", .help = "run --placement managed past the free device memory (can "
	 "hang a GPU)", .set = cli_set_true, RUN(jo.mem.gpu.allow_oversubscribe)},
	{"turns", .value = "N", .help = "compare in N turns, the order rotated from turn to turn; "
	 "with one placement, its turns", .def = "5", .set = cli_set_int, RUN(co.turns), .lo = 1,
	 .hi = 1000000},
	{"interleave", .value = "step|turn", .help = "how a comparison takes turns: step (the "
	 "default on the CPU and a simulated GPU) keeps every placement's executor alive and runs a "
	 "step of each in turn, --iters rounds a turn; turn (the default on a GPU, or when the "
	 "executors would not fit the memory together) runs a fresh executor per placement and "
	 "turn, --warmup then --iters steps", .set = interleave},
	{"reruns", .value = "N", .help = "a round (a turn, by turn) that other processes disturbed, "
	 "taking more than a tenth of a core, is measured again, at most N times a turn (0: never)",
	 .def = "--iters", .set = reruns, RUN(co.max_reruns), .lo = 0, .hi = 1000000},
	{"seed", .value = "N", .help = "seed of the weights and data", .def = "1",
	 .set = cli_set_i64, RUN(seed), .lo = 0, .hi = INT64_MAX},
	{"weights-in", .value = "FILE", .help = "start from these weights (safetensors, the graph's "
	 "parameter names and shapes; F32, or BF16 and F16 widened exactly; docs/formats.md) "
	 "instead of --seed's", .set = cli_set_text, RUN(jo.weights_in)},
	{"data", .value = "FILE", .help = "the step's inputs and labels (safetensors: the graph's "
	 "input names, or 'input' and 'labels'; labels one-hot rows or integer class indices) "
	 "instead of --seed's; every step trains on this batch", .set = cli_set_text,
	 RUN(jo.data_in)},
	{"weights-out", .value = "FILE", .help = "write the weights and the optimizer's states after "
	 "the last step (safetensors, atomically; in a comparison, the first placement to finish: "
	 "all train alike)", .set = cli_set_text, RUN(jo.weights_out)},
	{"weights-dtype", .value = "T", .help = "the parameters' dtype in --weights-out: f32, bf16 "
	 "or f16, rounded to nearest even as PyTorch's .to() does; the optimizer's states stay f32",
	 .def = "f32", .set = weights_dtype},
	{"placement-seed", .value = "N", .help = "seed of the random placement, so that many random "
	 "placements of one step can be tried; each trains to the same weights", .def = "--seed",
	 .set = cli_set_i64, RUN(placement_seed), .lo = 0, .hi = INT64_MAX},
	{"iters", .value = "N", .help = "measured steps; in a comparison, the steps of each turn (a "
	 "turn's step is their fastest)", .def = "5", .set = cli_set_int, RUN(jo.iters), .lo = 1,
	 .hi = 1000000},
	{"warmup", .value = "N", .help = "steps run first and not measured", .def = "1",
	 .set = cli_set_int, RUN(jo.warmup), .lo = 0, .hi = 1000000},
	{"2lm", .value = "SIZE", .help = "emulate Memory Mode (2LM): SIZE of fast memory caches the "
	 "slow tier; needs --placement all-slow and --emulate", .set = cli_set_bytes,
	 RUN(jo.twolm_bytes)},
	{"output", 'o', "FILE", .help = "write the results JSON to FILE (atomically; nothing when "
	 "the run fails or is interrupted)", .set = cli_set_text, RUN(jo.results_path)},
	{"plans-out", .value = "DIR", .help = "(with the planning options) write each plan the "
	 "optimizer makes to DIR/FORMULATION.json once planned (DIR made when missing), for --start "
	 "at a larger limit", .set = cli_set_text, RUN(jo.plans_out)},
	{"append", .help = "add this run to FILE's runs when FILE holds the same workload (under a "
	 "lock: drivers may append at once)", .set = cli_set_true, RUN(jo.append)},
	{"explain", .value = "N", .optional = true, .help = "with the planning options: where the "
	 "step's time went against the prediction: kernels and the rest (moves, waits, allocation, "
	 "faults), and the N kernels (default 10) the prediction missed most",
	 .set = explain, RUN(explain), .lo = 1, .hi = 1000000},
	CLI_QUIET_ROW(struct run_args, jo.quiet),
	{"bucket-size", .value = "SIZE", .help = "under mpirun: the gradients one allreduce averages "
	 "(docs/many-machines.md)", .def = "25M", .set = cli_set_bytes, RUN(bucket_bytes), .lo = 1},
	{NULL},
};

const cli_command_options cmd_run_options = {
	"run", (const cli_option *const[]){cli_graph_options, cli_plan_options, run_own,
	                                   cli_memory_options, NULL}, run_help_head, run_help_tail};

/* parse_args -- the command line into a, checked */
static atm_status parse_args(int argc, char **argv, struct run_args *a, cli_given *given)
{
	atm_job_opts *jo = &a->jo;
	atm_status rc;

	cli_job_begin(jo, "run");
	a->seed = 1;
	a->placement_seed = -1;
	if ((rc = cli_parse(&cmd_run_options, (void *const[]){&a->src, jo, a, &jo->mem}, argc, argv,
	                    given)) < 0 || given->help)
		return rc;
	jo->seed = (uint64_t)a->seed;
	jo->placement_seed = (uint64_t)(a->placement_seed >= 0 ? a->placement_seed : a->seed);
	/* a list compares its items; one item is read as ever */
	a->form_list = cli_formulation_list(given);
	if (a->placement && strchr(a->placement, ','))
		a->placement_list = a->placement;
	else
		jo->placement = a->placement;
	bool list = a->form_list || a->placement_list;
	if ((a->form_list && jo->placement) ||
	    (a->placement_list && (cli_was_given(given, "ratio") ||
	                           cli_was_given(given, "dram-limit") ||
	                           cli_was_given(given, "formulation"))))
		return atm_err(ATM_E_USAGE, "give either --placement or the optimizer's options "
		               "(--ratio, --dram-limit, --formulation), not both; a --formulation list "
		               "may name random, managed and plan files too");
	if ((rc = check_args(jo, given, a->explain > 0, list)) < 0)
		return rc;
	if (a->form_list)
		rc = split_list(a, a->form_list, true);
	else if (a->placement_list)
		rc = split_list(a, a->placement_list, false);
	else if (cli_was_given(given, "turns"))
		a->pl[a->n_pl++] = jo->optimize ? (atm_job_placement){.optimize = true,
		                                                      .formulation = jo->formulation}
		                                : (atm_job_placement){.placement = jo->placement};
	if (rc < 0 || (rc = check_files(a)) < 0)
		return rc;
	return check_comparison(a, given);
}

/* execute -- run the planned job for real, print what it measured and write the results
 * (arg: the run_args) */
static atm_status execute(atm_job *j, void *arg)
{
	const struct run_args *a = arg;
	atm_backend_caps caps;
	atm_status rc = atm_job_execute(j);
	if (rc < 0 || (rc = atm_backend_caps_get(a->jo.mem.gpu.mode, &caps)) < 0 || a->rank)
		return rc;
	atm_run_measured ranks;
	bool dist = atm_job_ranks_get(j, &ranks);
	print_summary(atm_job_graph(j), a->jo.workload.batch, atm_job_plan_get(j),
	              atm_job_exec_result(j), &caps, dist ? &ranks : NULL);
	print_calibration(atm_job_calibration(j), atm_job_profile_drift(j));
	if (a->explain && (rc = print_explain(j, a->explain)) < 0)
		return rc;
	if (!a->jo.results_path)
		return ATM_OK;
	if ((rc = atm_job_write_results(j)) < 0)
		return rc;
	printf("  results          %s\n", a->jo.results_path);
	return ATM_OK;
}

/* print_disturbance -- what other processes took while the turns ran, and what was measured
 * again for it */
static void print_disturbance(const atm_job_compare *c, bool by_step)
{
	double others = 0;
	int n = 0, reruns = 0;
	for (int i = 0; i < atm_job_compare_n(c); i++) {
		const atm_job_compared *m = atm_job_compare_get(c, i);
		if (m->left_out)
			continue;
		for (int t = 0; t < m->n_turns; t++) {
			if (m->turn_others[t] >= 0)
				others += m->turn_others[t], n++;
			reruns += m->turn_reruns[t];
		}
		if (by_step) /* a round measured again is every placement's */
			break;
	}
	if (n)
		printf("  other processes  took %.2f of a core while the steps ran (mean over turns); "
		       "measured again %d time%s for it\n", others / n, reruns, reruns == 1 ? "" : "s");
}

/* print_weights -- each placement's weights checksum; false when two placements that ran the
 * same kernel algorithms trained to different weights (a bug). Placements of a GPU whose plans
 * chose other cuDNN algorithms for some kernels sum in another order, so their bits may differ:
 * printed by algorithms, not a failure. */
static bool print_weights(const atm_job_compare *c)
{
	int n = atm_job_compare_n(c), group[n], first = -1, n_groups = 0;
	const atm_plan *plan[n];
	const char *sum[n];
	bool same = true, agree = true;
	for (int i = 0; i < n; i++) {
		group[i] = -1;
		if (atm_job_compare_get(c, i)->left_out)
			continue;
		plan[i] = atm_job_plan_get(atm_job_compare_job(c, i));
		sum[i] = atm_job_exec_result(atm_job_compare_job(c, i))->weights_checksum;
		first = first < 0 ? i : first;
		for (int k = 0; k < i && group[i] < 0; k++)
			if (group[k] == k && !atm_plan_algos_differ(plan[i], plan[k]))
				group[i] = k;
		if (group[i] < 0)
			group[i] = i, n_groups++;
		same = same && !strcmp(sum[i], sum[first]);
		agree = agree && !strcmp(sum[i], sum[group[i]]);
	}
	if (same) {
		printf("  weights checksum %s, the same for every placement\n", sum[first]);
		return true;
	}
	for (int i = 0; i < n; i++) {
		if (group[i] < 0)
			continue;
		printf("  weights checksum %s: %s", sum[i], atm_job_compare_get(c, i)->name);
		if (!agree)
			printf(" -- NOT the same for every placement");
		else if (group[i] != group[first])
			printf(" (%d kernels ran other algorithms than %s's)",
			       atm_plan_algos_differ(plan[i], plan[first]), atm_job_compare_get(c, first)->name);
		printf("\n");
	}
	if (agree)
		printf("  %d groups of algorithms: placements that ran the same algorithms trained to the\n"
		       "  same weights; the others sum in another order, so other bits (docs/gpu.md)\n",
		       n_groups);
	return agree;
}

/* print_ranks -- under mpirun: each placement's median step on every rank, and its allreduce's
 * time measured (the fastest step's) and predicted */
static void print_ranks(const atm_job_compare *c)
{
	bool first = true;
	for (int i = 0; i < atm_job_compare_n(c); i++) {
		const atm_job_compared *cm = atm_job_compare_get(c, i);
		atm_run_measured m;
		if (cm->left_out || !atm_job_ranks_get(atm_job_compare_job(c, i), &m))
			continue;
		if (first)
			printf("  ranks            %d, batch %lld each; the turns above are rank 0's, each "
			       "rank's median step:\n", m.ranks, (long long)m.rank_batch);
		first = false;
		printf("    %-14s", cm->name);
		for (int r = 0; r < m.ranks; r++)
			printf("%s %.6f", r ? "," : "", m.rank_step_s[r]);
		printf(" s; allreduce %.6f s", m.allreduce_s);
		if (m.allreduce_pred_s >= 0)
			printf(", predicted %.6f s", m.allreduce_pred_s);
		printf("; waited %.6f s for the other ranks\n", m.allreduce_wait_s);
	}
}

/* held_text -- placement i's fast high-water mark, "-" when unknown */
static const char *held_text(const atm_job_compare *c, int i, char *buf, size_t len)
{
	const atm_exec_result *r = atm_job_exec_result(atm_job_compare_job(c, i));
	if (!r)
		return "-";
	return atm_format_bytes(r->fast_high_water_bytes, buf, len);
}

/* print_held -- the fast limit beside the most any placement held (the table's "fast held":
 * the arena's high-water mark, alignment and gaps included) */
static void print_held(const atm_job_compare *c)
{
	int64_t limit = 0, most = -1;
	const char *who = NULL;
	char a[32], b[32];
	for (int i = 0; i < atm_job_compare_n(c); i++) {
		const atm_job *j = atm_job_compare_job(c, i);
		const atm_exec_result *r = j ? atm_job_exec_result(j) : NULL;
		int64_t l = j ? atm_plan_info_get(atm_job_plan_get(j))->fast_limit_bytes : 0;
		limit = l > limit ? l : limit;
		if (r && l > 0 && r->fast_high_water_bytes > most) {
			most = r->fast_high_water_bytes;
			who = atm_job_compare_get(c, i)->name;
		}
	}
	if (limit <= 0 || !who)
		return;
	printf("  fast held        the arena's high-water mark; the most, %s (%s), is %s the limit "
	       "of %s\n", atm_format_bytes(most, a, sizeof a), who,
	       most <= limit ? "within" : "OVER", atm_format_bytes(limit, b, sizeof b));
}

/* print_comparison -- each placement's step, its turns' range and, with all-fast compared, its
 * per-turn ratio to all-fast beside the predicted one; then whether every placement trained to
 * the same weights (returned) */
static bool print_comparison(const atm_job_compare *c, const atm_graph *g, int64_t batch,
                             int iters)
{
	int n = atm_job_compare_n(c), w = 9, n_in = 0;
	bool fast = atm_job_compare_all_fast(c) >= 0, by_step;
	by_step = !strcmp(atm_job_compare_interleave(c), "step");
	for (int i = 0; i < n; i++) {
		int len = (int)strlen(atm_job_compare_get(c, i)->name);
		w = len > w ? (len < 40 ? len : 40) : w;
		n_in += !atm_job_compare_get(c, i)->left_out;
	}
	const atm_job_compared *m0 = NULL;
	int i0 = 0;
	for (int i = 0; i < n && !m0; i++)
		if (!atm_job_compare_get(c, i)->left_out)
			m0 = atm_job_compare_get(c, i0 = i);
	printf("%s, batch %lld: %d placement%s compared in %d turn%s, %s\n", atm_graph_name(g),
	       (long long)batch, n_in, n_in == 1 ? "" : "s", m0->n_turns, m0->n_turns == 1 ? "" : "s",
	       by_step ? "by step (every executor alive, a step of each in turn)"
	               : "by turn (a fresh executor each)");
	printf("  comparison       %s; a turn's step is the fastest of its %d\n",
	       atm_job_compare_id(c), iters);
	printf("  %-*s %11s %11s %23s %11s", w, "placement", "predicted", "step", "turns' range",
	       "fast held");
	if (fast)
		printf("   %-26s %9s %7s", "/ all-fast: median [range]", "predicted", "error");
	printf("\n");
	for (int i = 0; i < n; i++) {
		const atm_job_compared *m = atm_job_compare_get(c, i);
		if (m->left_out)
			continue;
		double lo = m->turn_s[0], hi = m->turn_s[0];
		for (int t = 1; t < m->n_turns; t++) {
			lo = m->turn_s[t] < lo ? m->turn_s[t] : lo;
			hi = m->turn_s[t] > hi ? m->turn_s[t] : hi;
		}
		char range[64], ratio[64], held[32];
		snprintf(range, sizeof range, "%.6f-%.6f s", lo, hi);
		printf("  %-*.*s ", w, w, m->name);
		if (m->predicted_s > 0)
			printf("%9.6f s", m->predicted_s);
		else
			printf("%11s", "-");
		printf(" %9.6f s %23s %11s", m->median_s, range, held_text(c, i, held, sizeof held));
		if (fast) {
			snprintf(ratio, sizeof ratio, "%.3f [%.3f-%.3f]", m->measured_slowdown,
			         m->slowdown_min, m->slowdown_max);
			printf("   %-26s", ratio);
			if (m->predicted_slowdown > 0)
				printf(" %9.3f %+6.1f%%", m->predicted_slowdown,
				       (m->predicted_slowdown / m->measured_slowdown - 1) * 100);
			else
				printf(" %9s %7s", "-", "-");
		}
		printf("\n");
	}
	for (int i = 0; i < n; i++) {
		const atm_job_compared *m = atm_job_compare_get(c, i);
		if (m->left_out)
			printf("  left out         %s: %s\n", m->name, m->why);
	}
	print_held(c);
	print_ranks(c);
	print_disturbance(c, by_step);
	const atm_exec_result *r = atm_job_exec_result(atm_job_compare_job(c, i0));
	if (r && r->emulated)
		print_emulation(r, false);
	print_calibration(atm_job_calibration(atm_job_compare_job(c, i0)),
	                  m0->profile_drift);
	return print_weights(c);
}

/* compare_graph -- a comparison of g's placements: every placement planned, then trained in
 * turns, printed and written (by rank 0 under mpirun) */
static atm_status compare_graph(struct run_args *a, const atm_graph *g)
{
	atm_job_opts *jo = &a->jo;
	atm_job_compare *c = NULL;
	atm_status rc;
	if ((rc = atm_job_compare_new(&c, g, jo, a->pl, a->n_pl, &a->co)) == ATM_OK &&
	    (rc = atm_job_compare_plan(c)) == ATM_OK && (rc = atm_job_compare_run(c)) == ATM_OK &&
	    a->rank == 0) {
		bool same = print_comparison(c, g, jo->workload.batch, jo->iters);
		if (jo->results_path && (rc = atm_job_compare_write_results(c)) == ATM_OK)
			printf("  results          %s\n", jo->results_path);
		if (rc == ATM_OK && !same)
			rc = atm_err(ATM_E_INTERNAL, "the placements trained to different weights, which "
			             "no placement may change: a bug");
	}
	atm_job_compare_destroy(c);
	return rc;
}

/* compare_main -- a comparison in one process; the exit code */
static int compare_main(struct run_args *a)
{
	atm_graph *g = NULL;
	a->jo.stop = cli_install_interrupt();
	atm_status rc = cli_load_graph(&a->src, &g, &a->jo.workload);
	if (rc == ATM_OK)
		rc = compare_graph(a, g);
	atm_graph_destroy(g);
	return rc < 0 ? cli_fail("run", rc) : 0;
}

/* mean_over_ranks -- the runtime's allreduce: comm's mean in its fixed order */
static atm_status mean_over_ranks(void *comm, float *const *bufs, const int64_t *counts, int n,
                                  double *waited_s)
{
	double w0 = atm_comm_waited_s(comm);
	atm_status rc = atm_comm_allreduce_mean(comm, bufs, counts, n);
	*waited_s = atm_comm_waited_s(comm) - w0;
	return rc;
}

/* rank_graphs -- the graph at the whole batch, and this rank's: its shard of the batch, its
 * gradients averaged over the ranks */
static atm_status rank_graphs(struct run_args *a, int n, atm_graph **whole, atm_graph **g)
{
	atm_graph *part = NULL;
	atm_results_workload w;
	atm_status rc = cli_load_graph(&a->src, whole, &a->jo.workload);
	int64_t batch = a->jo.workload.batch;
	if (rc == ATM_OK && batch % n)
		rc = atm_err(ATM_E_USAGE, "a batch of %lld does not divide among %d ranks; give a "
		             "--batch (or --data rows) that %d divides", (long long)batch, n, n);
	if (rc < 0)
		return rc;
	cli_graph_source src = a->src;
	src.batch = batch / n;
	if (src.model) { /* the sizes the whole batch's graph was built at */
		src.image = src.image ? src.image : a->jo.workload.image;
		src.seq = src.seq ? src.seq : a->jo.workload.seq;
	}
	if ((rc = cli_load_graph(&src, &part, &w)) == ATM_OK)
		rc = atm_graph_with_allreduce(part, n, a->bucket_bytes, g);
	atm_graph_destroy(part);
	return rc;
}

/* ranks_main -- one rank of a data-parallel run under mpirun; the exit code. Every step the
 * ranks take together ends with their statuses agreed, so that a failure on one is every
 * rank's (a rank that fails inside the step ends them all: atm_job_execute). */
static int ranks_main(struct run_args *a, atm_comm *comm)
{
	int n = atm_comm_size(comm);
	atm_job_opts *jo = &a->jo;
	atm_graph *whole = NULL, *g = NULL;
	atm_job *j = NULL;
	atm_status rc = ATM_OK;
	a->rank = atm_comm_rank(comm);
	jo->stop = cli_install_interrupt();
	uint64_t version = atm_fnv1a(ATM_FNV1A_INIT, ATM_VERSION, strlen(ATM_VERSION));
	if ((rc = atm_job_ranks_status(comm, rc)) == ATM_OK &&
	    (rc = atm_job_ranks_agree(comm, "version of autotm", version)) == ATM_OK)
		rc = atm_job_ranks_status(comm, rank_graphs(a, n, &whole, &g));
	if (rc == ATM_OK) {
		atm_runtime_set_allreduce(mean_over_ranks, comm, n);
		jo->comm = comm;
		jo->whole = whole;
		if (a->rank) { /* rank 0 speaks and writes for all */
			jo->results_path = NULL;
			jo->weights_out = NULL;
			jo->quiet = true;
			a->explain = 0;
		}
		if (a->n_pl)
			rc = compare_graph(a, g);
		else if ((rc = atm_job_new(&j, g, jo)) == ATM_OK && (rc = atm_job_plan(j)) == ATM_OK)
			rc = execute(j, a);
	}
	atm_job_destroy(j);
	atm_graph_destroy(g);
	atm_graph_destroy(whole);
	atm_runtime_set_allreduce(NULL, NULL, 1);
	if (rc == ATM_OK)
		return 0;
	/* every failure here the ranks agreed on (one that a rank meets alone inside a step ends
	 * the job there: atm_job_execute): each returns and finalises; rank 0 says why, and
	 * another rank where its reason was its own */
	if (a->rank == 0)
		return cli_fail("run", rc);
	if (!strcmp(atm_errmsg(), ATM_JOB_SAID_BY_RANK0))
		return atm_exit_code(rc);
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", atm_errmsg());
	return cli_fail("run", atm_err(rc, "rank %d of %d: %s", a->rank, n, msg));
}

/* cmd_run -- autotm run */
int cmd_run(int argc, char **argv)
{
	struct run_args a = {0};
	atm_comm *comm = NULL;
	cli_given given;
	atm_status rc = parse_args(argc, argv, &a, &given);
	int code;
	if (rc < 0 || given.help)
		return cli_fail("run", rc);
	rc = atm_comm_new(&comm, NULL, NULL);
	if (rc < 0)
		return cli_fail("run", rc);
	if (atm_comm_active(comm))
		code = ranks_main(&a, comm);
	else
		code = a.n_pl ? compare_main(&a) : cli_job_main("run", &a.src, &a.jo, execute, &a);
	atm_comm_destroy(comm);
	return code;
}
