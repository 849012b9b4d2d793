/* common.c -- option parsing, graph loading and error reporting shared by the subcommands */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_fail(const char *cmd, atm_status rc)
{
	fprintf(stderr, "autotm %s: %s\n", cmd, atm_errmsg());
	return atm_exit_code(rc);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "autotm %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'autotm %s --help'.\n", cmd);
	return atm_exit_code(ATM_E_USAGE);
}

atm_status cli_parse_int(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(arg, &end, 10);
	if (end == arg || *end || errno || v < lo || v > hi)
		return atm_err(ATM_E_USAGE, "--%s '%s' is not valid; expected an integer from %lld to %lld",
		               opt, arg, (long long)lo, (long long)hi);
	*out = v;
	return ATM_OK;
}

int cli_other_option(const char *cmd, int opt, char **argv, void (*help)(void))
{
	switch (opt) {
	case 'h':
		help();
		return 0;
	case ':':
		return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
	default:
		return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
	}
}

atm_status cli_parse_fraction(const char *opt, const char *arg, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(arg, &end);
	if (end != arg && *end == '%' && !end[1]) {
		v /= 100;
		end++;
	}
	if (end == arg || *end || errno || !isfinite(v) || v < 0 || v > 1)
		return atm_err(ATM_E_USAGE, "--%s '%s' is not valid; expected a fraction from 0 to "
		               "1 (0.01) or a percentage (1%%)", opt, arg);
	*out = v;
	return ATM_OK;
}

atm_status cli_parse_seconds(const char *opt, const char *arg, double max, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(arg, &end);
	if (end == arg || *end || errno || !isfinite(v) || v <= 0 || v > max)
		return atm_err(ATM_E_USAGE, "--%s '%s' is not valid; expected seconds above 0 "
		               "(at most %g)", opt, arg, max);
	*out = v;
	return ATM_OK;
}

int cli_graph_option(cli_graph_source *src, int opt, const char *arg)
{
	switch (opt) {
	case CLI_OPT_MODEL:
		src->model = arg;
		return 1;
	case CLI_OPT_GRAPH:
		src->graph_file = arg;
		return 1;
	case CLI_OPT_PRESET:
		src->preset = arg;
		return 1;
	case CLI_OPT_BATCH:
		return cli_parse_int("batch", arg, 1, 1000000, &src->batch) < 0 ? -1 : 1;
	case CLI_OPT_IMAGE:
		return cli_parse_int("image", arg, 1, 65536, &src->image) < 0 ? -1 : 1;
	case CLI_OPT_CLASSES:
		return cli_parse_int("classes", arg, 1, 1000000, &src->classes) < 0 ? -1 : 1;
	case CLI_OPT_SEQ:
		return cli_parse_int("seq", arg, 1, 1000000, &src->seq) < 0 ? -1 : 1;
	case CLI_OPT_OPTIMIZER:
		src->optimizer = arg;
		return 1;
	case CLI_OPT_LR:
		src->lr = arg;
		return 1;
	case CLI_OPT_MOMENTUM:
		src->momentum = arg;
		return 1;
	case CLI_OPT_BETAS:
		src->betas = arg;
		return 1;
	case CLI_OPT_EPS:
		src->eps = arg;
		return 1;
	case CLI_OPT_WEIGHT_DECAY:
		src->weight_decay = arg;
		return 1;
	default:
		return 0;
	}
}

/* zoo_sizes -- batch and image of a zoo model. An explicit --batch means the
 * network at its own input size unless --preset or --image says otherwise;
 * without --batch the preset (small by default) gives both. */
static atm_status zoo_sizes(const cli_graph_source *src, atm_zoo_opts *o)
{
	const atm_zoo_model *m = NULL;
	atm_zoo_preset_sizes ps = {0};
	const char *preset = src->preset ? src->preset : "small";
	atm_status rc = atm_zoo_find(src->model, &m);
	if (rc < 0)
		return rc;
	if (src->preset || !src->batch) {
		rc = atm_zoo_preset(src->model, preset, &ps);
		if (rc < 0)
			return rc;
		if (ps.n_batch == 0 && !src->batch)
			return atm_err(ATM_E_USAGE, "preset '%s' has no size for '%s'; give --batch or "
			               "choose another preset (see 'autotm zoo')", preset, src->model);
	}
	o->batch = src->batch ? src->batch : ps.batch[0];
	o->image = src->image ? src->image : ps.image;
	o->seq = src->seq ? src->seq : ps.seq;
	o->n_classes = src->classes;
	return ATM_OK;
}

/* factor -- the number arg of option opt, or a usage error naming the one valid range: above 0
 * (positive) or from 0, at most 1e6 */
static atm_status factor(const char *opt, const char *arg, bool positive, float *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(arg, &end);
	if (end == arg || *end || errno || !isfinite(v) || v < 0 || (positive && !(v > 0)) ||
	    v > 1e6 || (positive && !((float)v > 0)))
		return atm_err(ATM_E_USAGE, "--%s '%s' is not valid; expected a number %s and at most "
		               "1e6", opt, arg, positive ? "above 0" : "from 0");
	*out = (float)v;
	return ATM_OK;
}

/* update_of -- the optimizer the options give (*given false: none given, the step's own) */
static atm_status update_of(const cli_graph_source *src, atm_update *u, bool *given)
{
	atm_update_kind kind = ATM_UPDATE_SGD;
	atm_status rc = ATM_OK;
	*given = src->optimizer || src->lr || src->momentum || src->betas || src->eps ||
	         src->weight_decay;
	if (!*given)
		return ATM_OK;
	if (src->optimizer && (rc = atm_update_kind_from_name(src->optimizer, &kind)) < 0)
		return atm_err_prefix(rc, "--optimizer: ");
	*u = atm_update_defaults(kind);
	if (src->momentum && kind != ATM_UPDATE_MOMENTUM)
		return atm_err(ATM_E_USAGE, "--momentum is for --optimizer momentum");
	if ((src->betas || src->eps) && kind != ATM_UPDATE_ADAMW)
		return atm_err(ATM_E_USAGE, "--betas and --eps are for --optimizer adamw");
	if (src->lr)
		rc = factor("lr", src->lr, true, &u->lr);
	if (rc == ATM_OK && src->momentum)
		rc = factor("momentum", src->momentum, true, &u->momentum);
	/* accepted, as PyTorch does, but said: the buffer then grows without end */
	if (rc == ATM_OK && src->momentum && u->momentum >= 1)
		fprintf(stderr, "autotm: warning: --momentum %s is 1 or more: the momentum buffer never "
		        "decays and the step diverges (PyTorch takes it too; SGD's usual one is 0.9)\n",
		        src->momentum);
	if (rc == ATM_OK && src->eps)
		rc = factor("eps", src->eps, true, &u->eps);
	if (rc == ATM_OK && src->weight_decay)
		rc = factor("weight-decay", src->weight_decay, false, &u->weight_decay);
	if (rc == ATM_OK && src->betas) {
		char *end = NULL;
		errno = 0;
		double b1 = strtod(src->betas, &end), b2 = -1;
		if (end != src->betas && *end == ',')
			b2 = strtod(end + 1, &end);
		if (*end || errno || !(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
			return atm_err(ATM_E_USAGE, "--betas '%s' is not valid; expected two numbers in "
			               "[0, 1) as B1,B2 (0.9,0.999)", src->betas);
		u->beta1 = (float)b1;
		u->beta2 = (float)b2;
	}
	return rc;
}

/* with_update -- *g rewritten to the optimizer the options give, when they give one */
static atm_status with_update(const cli_graph_source *src, atm_graph **g)
{
	atm_update u;
	bool given = false;
	atm_graph *c = NULL;
	atm_status rc = update_of(src, &u, &given);
	if (rc < 0 || !given)
		return rc;
	if ((rc = atm_graph_with_update(*g, &u, &c)) < 0)
		return rc;
	atm_graph_destroy(*g);
	*g = c;
	return ATM_OK;
}

atm_status cli_load_graph(const cli_graph_source *src, atm_graph **g, atm_results_workload *w)
{
	*g = NULL;
	*w = (atm_results_workload){0};
	if (src->model && src->graph_file)
		return atm_err(ATM_E_USAGE, "give either --model or --graph, not both");
	if (!src->model && !src->graph_file)
		return atm_err(ATM_E_USAGE, "which network? give --model NAME (see 'autotm zoo') or "
		               "--graph FILE");
	if (src->graph_file) {
		if (src->preset || src->image || src->classes || src->seq)
			return atm_err(ATM_E_USAGE, "--preset, --image, --classes and --seq apply to zoo models; "
			               "a --graph file fixes its own sizes (only --batch overrides)");
		atm_graph_load_opts lo = {.batch = src->batch};
		atm_status rc = atm_zoo_load(g, src->graph_file, &lo);
		if (rc == ATM_OK)
			rc = with_update(src, g);
		if (rc < 0)
			return rc;
		w->batch = atm_graph_batch(*g);
		return ATM_OK;
	}
	atm_zoo_opts o = {0};
	atm_status rc = zoo_sizes(src, &o);
	if (rc == ATM_OK)
		rc = atm_zoo_build(g, src->model, &o);
	if (rc == ATM_OK)
		rc = with_update(src, g);
	if (rc < 0)
		return rc;
	/* the graph's own batch (its batched tensors'), as for a graph file */
	w->batch = atm_graph_batch(*g);
	/* the sizes it was built at: the options', else the network's own */
	const atm_zoo_model *m = NULL;
	bool known = atm_zoo_find(src->model, &m) == ATM_OK;
	w->image = o.image ? o.image : known ? m->default_image : 0;
	w->seq = o.seq ? o.seq : known ? m->default_seq : 0;
	/* sizes from a preset (named, or small by default) unless --batch gave them */
	w->preset = src->preset ? src->preset : src->batch ? NULL : "small";
	return ATM_OK;
}

/* gpu_model_beside_gpu -- the refusal of --gpu and --gpu-model together (-1) */
static int gpu_model_beside_gpu(void)
{
	atm_err(ATM_E_USAGE, "--gpu-model NAME plans for a GPU model; leave out --gpu");
	return -1;
}

int cli_memory_option(cli_memory *mem, int opt, const char *arg)
{
	switch (opt) {
	case CLI_OPT_SLOW:
		mem->tiers.slow = arg;
		return 1;
	case CLI_OPT_FAST:
		mem->tiers.fast = arg;
		return 1;
	case CLI_OPT_PMEM_DIR:
		mem->tiers.pmem_dir = arg;
		return 1;
	case CLI_OPT_FSDAX:
		mem->tiers.fsdax_path = arg;
		return 1;
	case CLI_OPT_SLOW_SIZE:
		/* 0: no cap on a pmem-dir tier, the file's own size for fsdax */
		if (!strcmp(arg, "0")) {
			mem->tiers.slow_bytes = 0;
			return 1;
		}
		if (atm_parse_bytes(arg, &mem->tiers.slow_bytes) < 0) {
			atm_err_prefix(ATM_E_USAGE, "--slow-size: ");
			return -1;
		}
		return 1;
	case CLI_OPT_EMULATE:
		/* none: the slow tier as it is (the docs' word for a machine with real slow memory) */
		mem->emulate = strcmp(arg, "none") ? arg : NULL;
		return 1;
	case CLI_OPT_GPU: {
		atm_backend_caps caps;
		if (arg && (atm_backend_caps_get(arg, &caps) < 0 || !caps.device_memory)) {
			atm_err(ATM_E_USAGE, "--gpu=%s is not valid; expected --gpu (a CUDA GPU), --gpu=cuda "
			        "or --gpu=sim (a simulated one)", arg);
			return -1;
		}
		if (mem->gpu.model || (arg && caps.modelled))
			return gpu_model_beside_gpu();
		mem->gpu.mode = arg ? arg : "cuda";
		return 1;
	}
	case CLI_OPT_GPU_MODEL: {
		const atm_gpu_model *m;
		atm_backend_caps given;
		if (atm_backend_caps_get(mem->gpu.mode, &given) == ATM_OK && given.device_memory)
			return gpu_model_beside_gpu();
		if (atm_gpu_model_get(arg, &m) < 0) {
			atm_err_prefix(ATM_E_USAGE, "--gpu-model: ");
			return -1;
		}
		mem->gpu.mode = "model";
		mem->gpu.model = m->name;
		return 1;
	}
	case CLI_OPT_GPU_MEMORY:
		if (atm_parse_bytes(arg, &mem->gpu.memory_bytes) < 0 || mem->gpu.memory_bytes <= 0) {
			atm_err(ATM_E_USAGE, "--gpu-memory '%s' is not valid; expected a size such as 11G "
			        "or 512M", arg);
			return -1;
		}
		return 1;
	case CLI_OPT_GPU_DEVICE: {
		int64_t d = 0;
		if (cli_parse_int("gpu-device", arg, 0, 1023, &d) < 0)
			return -1;
		mem->gpu.device = (int)d;
		return 1;
	}
	case CLI_OPT_GPU_LINK:
		if (strcmp(arg, "pcie4") && strcmp(arg, "pcie5") && strcmp(arg, "nvlink-c2c")) {
			atm_err(ATM_E_USAGE, "--gpu-link '%s' is not valid; expected pcie4, pcie5 or "
			        "nvlink-c2c", arg);
			return -1;
		}
		mem->gpu.link = arg;
		return 1;
	default:
		return 0;
	}
}

/* The --start plan files of this process's command: each option's comma-separated names,
 * copied (the command's options live as long as the process) */
static char start_text[ATM_JOB_MAX_STARTS * 256];
static const char *start_files[ATM_JOB_MAX_STARTS];
static int n_start_files;
static size_t start_used;

/* add_starts -- --start's comma-separated plan files into jo's starts; -1 (ATM_E_USAGE) for an
 * empty name or too many */
static int add_starts(atm_job_opts *jo, const char *arg)
{
	size_t len = strlen(arg);
	if (start_used + len + 1 > sizeof start_text) {
		atm_err(ATM_E_USAGE, "--start: the plan files' names take more than %zu bytes",
		        sizeof start_text);
		return -1;
	}
	char *text = start_text + start_used;
	memcpy(text, arg, len + 1);
	start_used += len + 1;
	for (char *item = text, *next; item; item = next) {
		if ((next = strchr(item, ',')))
			*next++ = 0;
		if (!item[0] || n_start_files == ATM_JOB_MAX_STARTS) {
			if (item[0])
				atm_err(ATM_E_USAGE, "--start: more than %d plan files", ATM_JOB_MAX_STARTS);
			else
				atm_err(ATM_E_USAGE, "--start '%s' has an empty plan file name; expected "
				        "PLAN.json[,PLAN.json...]", arg);
			return -1;
		}
		start_files[n_start_files++] = item;
	}
	jo->starts = start_files;
	jo->n_starts = n_start_files;
	return 1;
}

int cli_plan_option(atm_job_opts *jo, cli_plan_given *given, int opt, const char *arg)
{
	atm_opt_options *o = &jo->opt;
	int64_t v = 0;
	switch (opt) {
	case CLI_OPT_RATIO:
		given->ratio = true;
		given->ratio_list = NULL;
		if (strchr(arg, ',')) {
			/* a sweep: each ratio checked here, planned by the command */
			double s, f;
			char one[64];
			for (const char *p = arg, *end; p; p = end ? end + 1 : NULL) {
				end = strchr(p, ',');
				size_t n = end ? (size_t)(end - p) : strlen(p);
				snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), p);
				if (atm_opt_parse_ratio(one, &s, &f) < 0) {
					atm_err_prefix(ATM_E_USAGE, "--ratio '%s': ", arg);
					return -1;
				}
			}
			given->ratio_list = arg;
			return 1;
		}
		return atm_opt_parse_ratio(arg, &jo->ratio_slow, &jo->ratio_fast) < 0 ? -1 : 1;
	case CLI_OPT_START:
		return add_starts(jo, arg);
	case CLI_OPT_DRAM_LIMIT:
		given->limit = true;
		if (atm_parse_bytes(arg, &jo->limit_bytes) < 0) {
			atm_err_prefix(ATM_E_USAGE, "--dram-limit: ");
			return -1;
		}
		return 1;
	case CLI_OPT_FORMULATION:
		given->formulation = true;
		return atm_opt_formulation_from_name(arg, &jo->formulation) < 0 ? -1 : 1;
	case CLI_OPT_CACHE:
		if (!arg[0]) {
			atm_err(ATM_E_USAGE, "--cache needs a file name");
			return -1;
		}
		jo->cache = arg;
		return 1;
	case CLI_OPT_MIP_GAP:
		return cli_parse_fraction("mip-gap", arg, &o->mip_gap) < 0 ? -1 : 1;
	case CLI_OPT_TIME_LIMIT:
		return cli_parse_seconds("time-limit", arg, 1e6, &o->time_limit_s) < 0 ? -1 : 1;
	case CLI_OPT_ASYNC_WINDOW:
		given->async_window = true;
		if (cli_parse_int("async-window", arg, 1, 64, &v) < 0)
			return -1;
		o->async_window = (int)v;
		return 1;
	case CLI_OPT_ROUNDS:
		if (cli_parse_int("rounds", arg, 1, ATM_PLAN_MAX_ROUNDS, &v) < 0)
			return -1;
		o->max_rounds = (int)v;
		return 1;
	case CLI_OPT_SOLVER:
		/* the name alone here; whether this build has it is the job's first check */
		if (atm_opt_solver_from_name(arg, &o->solver) < 0) {
			atm_err_prefix(ATM_E_USAGE, "--solver: ");
			return -1;
		}
		return 1;
	case CLI_OPT_THREADS:
		if (cli_parse_int("threads", arg, 0, 1024, &v) < 0)
			return -1;
		o->threads = (int)v;
		return 1;
	case CLI_OPT_VERBOSE:
		o->verbosity = 1;
		return 1;
	case CLI_OPT_ISOLATED:
		jo->isolated = true;
		return 1;
	case CLI_OPT_FULL_MODEL:
		o->full_model = true;
		return 1;
	case CLI_OPT_RECOMPUTE:
		o->recompute = true;
		return 1;
	default:
		return 0;
	}
}

void cli_job_begin(atm_job_opts *jo, const char *who)
{
	atm_job_opts_default(jo);
	jo->who = who;
	n_start_files = 0;
	start_used = 0;
	optind = 1;
	opterr = 0;
}

int cli_job_option(cli_graph_source *src, atm_job_opts *jo, cli_plan_given *given, int opt,
                   const char *arg)
{
	int used = cli_graph_option(src, opt, arg);
	if (!used)
		used = cli_memory_option(&jo->mem, opt, arg);
	if (!used)
		used = cli_plan_option(jo, given, opt, arg);
	return used;
}

atm_status cli_gpu_model_check(const cli_memory *mem, bool estimate, const char *who)
{
	atm_backend_caps caps;
	atm_status rc = atm_backend_caps_get(mem->gpu.mode, &caps);
	if (rc == ATM_OK && caps.modelled && !estimate && (!who || !strcmp(who, "run")))
		rc = atm_err(ATM_E_USAGE, "--gpu-model %s is a GPU this machine need not have: it is "
		             "planned from estimates, never run; use 'autotm plan --gpu-model %s "
		             "--estimate' (or 'autotm profile ... --estimate'), or run on the GPU itself "
		             "with --gpu", mem->gpu.model, mem->gpu.model);
	else if (rc == ATM_OK && caps.modelled && !estimate)
		rc = atm_err(ATM_E_USAGE, "--gpu-model %s is estimated, never measured: give "
		             "--estimate", mem->gpu.model);
	return rc;
}

atm_status cli_plan_check(const atm_job_opts *jo, const cli_plan_given *given)
{
	atm_backend_caps caps;
	atm_status rc = atm_backend_caps_get(jo->mem.gpu.mode, &caps);
	if (rc < 0)
		return rc;
	if ((rc = cli_gpu_model_check(&jo->mem, jo->estimate, jo->who)) < 0)
		return rc;
	if (given->ratio && given->limit)
		return atm_err(ATM_E_USAGE, "give only one of --ratio and --dram-limit");
	if (given->ratio_list && jo->who && strcmp(jo->who, "plan"))
		return atm_err(ATM_E_USAGE, "--ratio '%s': a list of ratios is a sweep of 'autotm plan' "
		               "(-o FOLDER/); autotm %s takes one ratio", given->ratio_list, jo->who);
	/* a device's memory is a limit of its own */
	if (!given->ratio && !given->limit && jo->formulation != ATM_OPT_ALL_FAST &&
	    !caps.device_memory)
		return atm_err(ATM_E_USAGE, "give the fast-memory limit with --ratio S:F or "
		               "--dram-limit SIZE");
	if (given->async_window && jo->formulation != ATM_OPT_ASYNCHRONOUS)
		return atm_err(ATM_E_USAGE, "--async-window is the asynchronous formulation's; the %s "
		               "one moves nothing ahead of a use (give --formulation asynchronous)",
		               atm_opt_formulation_name(jo->formulation));
	if (jo->opt.recompute && !atm_opt_is_ilp(jo->formulation))
		return atm_err(ATM_E_USAGE, "--recompute is a choice of the ILP formulations (static, "
		               "synchronous, asynchronous), not of %s",
		               atm_opt_formulation_name(jo->formulation));
	return ATM_OK;
}

const char *cli_solver_version(const char *name)
{
	/* by name, not atm_opt_solver_from_name: a plan from another build may name a solver this
	 * one lacks, and that is no error to record */
	for (int s = ATM_OPT_SOLVER_AUTO + 1; s < ATM_OPT_N_SOLVERS; s++)
		if (!strcmp(name, atm_opt_solver_name((atm_opt_solver)s))) {
			const char *v = atm_opt_solver_version((atm_opt_solver)s);
			return v ? v : "";
		}
	return "";
}

void cli_plan_help(FILE *f)
{
	atm_opt_options d;
	atm_opt_solver best = ATM_OPT_SOLVER_GLPK;
	atm_opt_options_default(&d);
	/* what auto stands for in this build; a failure leaves GLPK, which is always built */
	(void)atm_opt_solver_resolve(ATM_OPT_SOLVER_AUTO, &best);
	fprintf(f,
	        "  --ratio S:F       slow:fast memory; fast = peak footprint * F / (S + F): 4:1 is a\n"
	        "                    fifth, 0:1 all fast (no limit), 1:0 the least any plan needs\n"
	        "  --dram-limit SIZE the fast-memory limit in bytes (K, M, G suffixes: 12G)\n"
	        "  --formulation F   static, synchronous (default), asynchronous: the ILPs; all-fast,\n"
	        "                    all-slow, numa (first touch), 2lm (fast memory as a cache of slow\n"
	        "                    memory), vdnn (offload convolution inputs): baselines\n"
	        "  --mip-gap G       stop when the plan is within G of the best possible (default\n"
	        "                    %g; '%g%%' works too; 0 asks for the optimum, 1 takes the\n"
	        "                    first plan found)\n"
	        "  --time-limit S    seconds the whole plan may take, all rounds (default %g); the\n"
	        "                    best plan found by then is used (a limit that ends before\n"
	        "                    the heuristic's first plan is refused, exit 2)\n"
	        "  --async-window N  kernels before a use where an overlapped fetch may run (default %d)\n"
	        "  --rounds N        solves for fragmentation before giving up (default %d, at most %d)\n"
	        "  --solver S        the ILP solver: glpk, cbc (COIN-OR CBC, when built with it) or\n"
	        "                    auto (default: the best this build has, here %s)\n"
	        "  --threads N       solver threads (CBC's; GLPK uses one); 0, the default, is one\n"
	        "                    per core autotm may run on\n"
	        "  --cache FILE      the profile cache (default $XDG_CACHE_HOME/autotm/profiles.json,\n"
	        "                    else ~/.cache/autotm/profiles.json)\n"
	        "  --isolated        price each kernel by its time alone, not by its time inside\n"
	        "                    a step as the profile calibrates it (docs/profile.md)\n"
	        "  --recompute       the ILPs may also drop a tensor after a use and compute it\n"
	        "                    again before a later one (docs/optimizer.md)\n"
	        "  --full-model      solve the full program (every tensor's states at every\n"
	        "                    point of its life), not the reduced one: the same optimum,\n"
	        "                    a larger model (docs/optimizer.md)\n"
	        "  --start PLAN[,PLAN...]  plan files of the same graph and formulation (autotm plan\n"
	        "                    -o, run --plans-out), typically planned for less fast memory:\n"
	        "                    the plan made is never predicted slower than one that fits\n"
	        "                    this limit (that one is kept, re-labelled with this limit).\n"
	        "                    Repeatable. A file of another graph or formulation is refused\n"
	        "                    (exit 3); one that does not fit is passed over, said on stderr\n"
	        "  --verbose         the solver's progress on stderr\n",
	        d.mip_gap, 100 * d.mip_gap, d.time_limit_s, d.async_window, d.max_rounds,
	        ATM_PLAN_MAX_ROUNDS, atm_opt_solver_name(best));
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* take_signals -- the one thread that receives Ctrl-C and SIGTERM (arg: the set) */
static void *take_signals(void *arg)
{
	const sigset_t *set = arg;
	for (;;) {
		int sig = 0;
		if (sigwait(set, &sig) == 0)
			interrupted = 1;
	}
	return NULL;
}

/* set_signals -- Ctrl-C, SIGTERM and SIGHUP handled by h (on_interrupt or SIG_DFL); a SIGHUP
 * that nohup ignores stays ignored */
static void set_signals(void (*h)(int))
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* a closed terminal ends a run as Ctrl-C does */
	if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
}

void cli_block_signals(bool block)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* early_signals -- run before the shared libraries' initialisers: a build with the CUDA
 * backend spends a second or more relocating cuBLAS before main, and a Ctrl-C then would
 * otherwise kill the process instead of ending it with 130 at its first stop check. main
 * blocks the signals across its re-exec (atm_openmp_passive), so that one sent then waits for
 * this handler instead of being lost with the first image's flag. */
static void early_signals(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)argv;
	(void)envp;
	set_signals(on_interrupt);
	cli_block_signals(false);
}
__attribute__((section(".preinit_array"), used)) static void (*const early_signals_entry)(
	int, char **, char **) = early_signals;

bool cli_early_interrupt(void)
{
	return interrupted != 0;
}

void cli_signals_default(void)
{
	set_signals(SIG_DFL);
}

volatile sig_atomic_t *cli_install_interrupt(void)
{
	static sigset_t set;
	static bool taken;
	set_signals(on_interrupt);
	/* A handler runs on whatever thread the signal finds, kernel workers included: with it
	 * alone, Ctrl-C on an asynchronous plan's run aborted in glibc ("corrupted size vs.
	 * prev_size", inside a oneDNN kernel) in 1 of 6 tries here, and in 3 of 6 comparisons;
	 * with the signals blocked in this thread and every thread it starts later (kernels'
	 * workers, the movers) and taken by one thread of their own, none in 16. The handler
	 * stays for threads started before. */
	if (!taken) {
		pthread_t t;
		sigemptyset(&set);
		sigaddset(&set, SIGINT);
		sigaddset(&set, SIGTERM);
		struct sigaction hup;
		if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN)
			sigaddset(&set, SIGHUP); /* blocked, an ignored one would reach sigwait */
		if (pthread_sigmask(SIG_BLOCK, &set, NULL) == 0) {
			if (pthread_create(&t, NULL, take_signals, &set) == 0) {
				pthread_detach(t);
				taken = true;
			} else {
				pthread_sigmask(SIG_UNBLOCK, &set, NULL);
			}
		}
	}
	atm_stop_flag_set(&interrupted);
	return &interrupted;
}

int cli_job_main(const char *cmd, const cli_graph_source *src, atm_job_opts *jo,
                 atm_status (*then)(atm_job *j, void *arg), void *arg)
{
	atm_graph *g = NULL;
	atm_job *j = NULL;
	atm_status rc;
	jo->stop = cli_install_interrupt();
	if ((rc = cli_load_graph(src, &g, &jo->workload)) == ATM_OK &&
	    (rc = atm_job_new(&j, g, jo)) == ATM_OK && (rc = atm_job_plan(j)) == ATM_OK)
		rc = then(j, arg);
	atm_job_destroy(j);
	atm_graph_destroy(g);
	return rc < 0 ? cli_fail(cmd, rc) : 0;
}

atm_status cli_print_json_new(json_t *o)
{
	char *text = NULL;
	atm_status rc = o ? atm_json_text(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER, &text) : ATM_E_NOMEM;
	json_decref(o);
	if (rc < 0)
		return atm_err(ATM_E_NOMEM, "out of memory printing JSON");
	printf("%s\n", text);
	free(text);
	return ATM_OK;
}


int cli_job_inputs(const cli_graph_source *src, const atm_job_opts *jo, cli_file in[4],
                   char *cache_buf, size_t cache_len)
{
	static const char *const builtin[] = {"all-fast", "all-slow", "random", "managed"};
	int n = 0;
	const char *cache = jo->cache;
	if (!cache && atm_job_default_cache(cache_buf, cache_len) == ATM_OK)
		cache = cache_buf;
	atm_err_clear();
	in[n++] = (cli_file){"--cache", cache};
	in[n++] = (cli_file){"--graph", src->graph_file};
	const char *pl = jo->placement;
	for (size_t i = 0; pl && i < sizeof builtin / sizeof *builtin; i++)
		if (!strcmp(pl, builtin[i]))
			pl = NULL;
	in[n++] = (cli_file){"--placement", pl};
	const char *emulate = jo->mem.emulate;
	if (emulate && atm_emu_is_preset(emulate))
		emulate = NULL;
	in[n++] = (cli_file){"--emulate", emulate};
	return n;
}

/* file_id -- what names one file however it is spelt: the resolved path, or for a file that
 * does not exist yet (a dangling link's target too) its resolved folder and its name; false
 * when neither resolves */
static bool file_id(const char *path, char *id, size_t len, struct stat *st, bool *exists)
{
	char p[PATH_MAX], link[PATH_MAX], buf[PATH_MAX], dir[PATH_MAX], base[PATH_MAX];
	struct stat lst;
	*exists = stat(path, st) == 0;
	if (realpath(path, buf))
		return snprintf(id, len, "%s", buf) < (int)len;
	snprintf(p, sizeof p, "%s", path);
	/* a link to a file not made yet: where writing it would land */
	for (int depth = 0; depth < 40 && lstat(p, &lst) == 0 && S_ISLNK(lst.st_mode); depth++) {
		ssize_t n = readlink(p, link, sizeof link - 1);
		if (n < 0)
			break;
		link[n] = '\0';
		snprintf(dir, sizeof dir, "%s", p);
		if (link[0] == '/' || snprintf(buf, sizeof buf, "%s/%s", dirname(dir), link) >= (int)sizeof buf)
			snprintf(p, sizeof p, "%s", link);
		else
			snprintf(p, sizeof p, "%s", buf);
	}
	snprintf(dir, sizeof dir, "%s", p);
	snprintf(base, sizeof base, "%s", p);
	if (!realpath(dirname(dir), buf))
		return false;
	return snprintf(id, len, "%s/%s", buf, basename(base)) < (int)len;
}

/* same_file -- a and b name one file */
static bool same_file(const char *a, const char *b)
{
	char ia[PATH_MAX + 256], ib[PATH_MAX + 256];
	struct stat sa, sb;
	bool ea, eb;
	if (!file_id(a, ia, sizeof ia, &sa, &ea) || !file_id(b, ib, sizeof ib, &sb, &eb))
		return !strcmp(a, b);
	if (ea && eb && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino)
		return true;
	return !strcmp(ia, ib);
}

int cli_check_files(const char *cmd, const cli_file *out, int n_out, const cli_file *in, int n_in)
{
	for (int i = 0; i < n_out; i++) {
		if (!out[i].path)
			continue;
		for (int k = 0; k < n_in; k++)
			if (in[k].path && same_file(out[i].path, in[k].path))
				return cli_usage_error(cmd, "%s %s is the file %s %s reads: writing it would "
				                       "replace the input; write the output elsewhere",
				                       out[i].opt, out[i].path, in[k].opt, in[k].path);
		for (int k = 0; k < i; k++)
			if (out[k].path && same_file(out[i].path, out[k].path))
				return cli_usage_error(cmd, "%s %s and %s %s are the same file: give each "
				                       "output its own", out[k].opt, out[k].path, out[i].opt,
				                       out[i].path);
	}
	return -1;
}

const char *cli_emulation_rates(const atm_tier_desc *slow, char *buf, size_t len)
{
	if (slow->emulation_absolute)
		snprintf(buf, len, "absolute: read %.3g, write %.3g GB/s beside a %.3g GB/s fast tier",
		         slow->read_gbps, slow->write_gbps, slow->emulation_fast_gbps);
	else
		snprintf(buf, len, "x%.3g (this machine's %.1f GB/s over the spec's %.3g GB/s): read "
		         "%.3g, write %.3g GB/s", slow->emulation_scale, slow->emulation_fast_gbps,
		         slow->emulation_reference_gbps, slow->read_gbps, slow->write_gbps);
	return buf;
}

const char *cli_bandwidth_note(char *buf, size_t len)
{
	double gbps;
	buf[0] = '\0';
	/* known for the process once a proportional tier was made: nothing is measured here */
	if (atm_emu_machine_known(&gbps) && atm_emu_machine_gbps(NULL, NULL, &gbps, buf, len) < 0)
		atm_err_clear();
	return buf;
}
