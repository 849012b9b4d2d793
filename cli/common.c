/* common.c -- the options the subcommands share (graph, memory, planning), graph loading, files
 * and signals */
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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_fail(const char *cmd, atm_status rc)
{
	if (rc >= 0)
		return 0;
	fprintf(stderr, "autotm %s: %s\n", cmd, atm_errmsg());
	if (rc == ATM_E_USAGE)
		fprintf(stderr, "Try 'autotm %s --help'.\n", cmd);
	return atm_exit_code(rc);
}

#define GRAPH(field) .at = offsetof(cli_graph_source, field)

static const char *const precisions[] = {"f32", "bf16", NULL};

const cli_option cli_graph_options[] = {
	{"model", .value = "NAME", .help = "a network of the zoo (see 'autotm zoo')",
	 .set = cli_set_text, GRAPH(model)},
	{"graph", .value = "FILE", .help = "a graph JSON file of your own (docs/graph-format.md)",
	 .set = cli_set_text, GRAPH(graph_file)},
	{"batch", .value = "B", .help = "batch size; without --preset a zoo network keeps its own "
	 "input size", .def = "the preset's, or the file's \"batch\"", .set = cli_set_i64,
	 GRAPH(batch), .lo = 1, .hi = 1000000},
	{"preset", .value = "P", .help = "a zoo network's named sizes: small, paper, large, gpu "
	 "(see 'autotm zoo')", .def = "small", .set = cli_set_text, GRAPH(preset)},
	{"image", .value = "N", .help = "input height and width of a zoo network",
	 .def = "the preset's or the network's", .set = cli_set_i64, GRAPH(image), .lo = 1,
	 .hi = 65536},
	{"classes", .value = "N", .help = "output classes, a language model's vocabulary",
	 .def = "the network's", .set = cli_set_i64, GRAPH(classes), .lo = 1, .hi = 1000000},
	{"seq", .value = "T", .help = "sequence length of a language model",
	 .def = "the preset's", .set = cli_set_i64, GRAPH(seq), .lo = 1, .hi = 1000000},
	{"precision", .value = "P", .help = "f32, or bf16: mixed precision as torch.autocast runs "
	 "it (convolutions, linear layers and matrix products on bf16 copies of their inputs and "
	 "weights, softmax, norms and losses in f32, parameters and their updates f32), for a zoo "
	 "network or a forward file (docs/graph-format.md, \"bf16\")",
	 .def = "f32, or a forward file's \"precision\"",
	 .set = cli_set_word, GRAPH(precision), .words = precisions},
	{"optimizer", .value = "O", .help = "the update each step ends in: sgd, momentum, adamw, "
	 "PyTorch's formulas and defaults; its states are tensors the plan places "
	 "(docs/graph-format.md, \"Optimizers\")", .def = "sgd", .set = cli_set_text,
	 GRAPH(optimizer)},
	{"lr", .value = "X", .help = "learning rate", .def = "sgd, momentum 0.01; adamw 0.001",
	 .set = cli_set_text, GRAPH(lr)},
	{"momentum", .value = "X", .help = "momentum's factor (--optimizer momentum)", .def = "0.9",
	 .set = cli_set_text, GRAPH(momentum)},
	{"betas", .value = "B1,B2", .help = "adamw's averages", .def = "0.9,0.999",
	 .set = cli_set_text, GRAPH(betas)},
	{"eps", .value = "X", .help = "adamw's epsilon", .def = "1e-8", .set = cli_set_text,
	 GRAPH(eps)},
	{"weight-decay", .value = "X", .help = "weight decay, adamw's decoupled",
	 .def = "sgd, momentum 0; adamw 0.01", .set = cli_set_text, GRAPH(weight_decay)},
	{NULL},
};

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
	bool bf16 = src->precision && !strcmp(src->precision, "bf16");
	if (src->graph_file) {
		if (src->preset || src->image || src->classes || src->seq)
			return atm_err(ATM_E_USAGE, "--preset, --image, --classes and --seq apply to zoo models; "
			               "a --graph file fixes its own sizes (only --batch overrides)");
		atm_graph_load_opts lo = {.batch = src->batch, .precision = src->precision};
		atm_status rc = atm_zoo_load(g, src->graph_file, &lo);
		if (rc == ATM_OK)
			rc = with_update(src, g);
		if (rc < 0)
			return rc;
		w->batch = atm_graph_batch(*g);
		return ATM_OK;
	}
	atm_zoo_opts o = {.bf16 = bf16};
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

/* slow_size -- --slow-size: 0 (no cap on a pmem-dir tier, the fsdax file's own size) or a size */
static atm_status slow_size(const cli_option *o, const char *arg, void *base)
{
	cli_memory *mem = base;
	if (!strcmp(arg, "0")) {
		mem->tiers.slow_bytes = 0;
		return ATM_OK;
	}
	return cli_set_bytes(o, arg, base);
}

/* emulate -- --emulate: none is the slow tier as it is (a machine with real slow memory) */
static atm_status emulate(const cli_option *o, const char *arg, void *base)
{
	(void)o;
	((cli_memory *)base)->emulate = strcmp(arg, "none") ? arg : NULL;
	return ATM_OK;
}

/* gpu_model_beside_gpu -- the refusal of --gpu and --gpu-model together */
static atm_status gpu_model_beside_gpu(void)
{
	return atm_err(ATM_E_USAGE, "--gpu-model NAME plans for a GPU model; leave out --gpu");
}

/* gpu -- --gpu[=cuda|sim]: a backend with device memory */
static atm_status gpu(const cli_option *o, const char *arg, void *base)
{
	cli_memory *mem = base;
	atm_backend_caps caps;
	(void)o;
	if (arg && (atm_backend_caps_get(arg, &caps) < 0 || !caps.device_memory))
		return atm_err(ATM_E_USAGE, "--gpu=%s is not valid; expected --gpu (a CUDA GPU), "
		               "--gpu=cuda or --gpu=sim (a simulated one)", arg);
	if (mem->gpu.model || (arg && caps.modelled))
		return gpu_model_beside_gpu();
	mem->gpu.mode = arg ? arg : "cuda";
	return ATM_OK;
}

/* gpu_model -- --gpu-model NAME: a GPU of the datasheets, planned from estimates */
static atm_status gpu_model(const cli_option *o, const char *arg, void *base)
{
	cli_memory *mem = base;
	const atm_gpu_model *m;
	atm_backend_caps given;
	(void)o;
	if (atm_backend_caps_get(mem->gpu.mode, &given) == ATM_OK && given.device_memory)
		return gpu_model_beside_gpu();
	if (atm_gpu_model_get(arg, &m) < 0)
		return atm_err_prefix(ATM_E_USAGE, "--gpu-model: ");
	mem->gpu.mode = "model";
	mem->gpu.model = m->name;
	return ATM_OK;
}

/* The host links a simulated GPU may have. */
static const char *const links[] = {"pcie4", "pcie5", "nvlink-c2c", NULL};

#define MEM(field) .at = offsetof(cli_memory, field)

const cli_option cli_memory_options[] = {
	{"slow", .value = "TIER", .help = "slow memory: auto, kmem-dax, numa:N, pmem-dir, fsdax",
	 .def = "auto", .set = cli_set_text, MEM(tiers.slow)},
	{"fast", .value = "TIER", .help = "fast memory: auto, memkind, numa:N", .def = "auto",
	 .set = cli_set_text, MEM(tiers.fast)},
	{"pmem-dir", .value = "DIR", .help = "folder of the pmem-dir slow tier's file, used as given "
	 "(made when missing); with --emulate the default is " ATM_TIER_TMPFS_PMEM_DIR "-UID where "
	 "/dev/shm is a tmpfs with room for the run (a disk's writeback would add to the emulated "
	 "cost; a run that falls back says so)", .def = ATM_TIER_DEFAULT_PMEM_DIR "-UID",
	 .set = cli_set_text, MEM(tiers.pmem_dir)},
	{"fsdax", .value = "FILE", .help = "map FILE with libpmem2 as the slow tier (an fsdax "
	 "mount's file)", .set = cli_set_text, MEM(tiers.fsdax_path)},
	{"slow-size", .value = "SIZE", .help = "cap of the pmem-dir tier, or size of the fsdax file "
	 "(8G); 0: no cap, the fsdax file's own size", .def = "0", .set = slow_size,
	 MEM(tiers.slow_bytes)},
	{"emulate", .value = "P", .help = "make the slow tier behave like optane, cxl or numa "
	 "memory, or like a JSON tier spec file (docs/tiers.md), in proportion to this machine's "
	 "bandwidth (P:absolute: the rates as published); a pmem-dir tier's file then goes to a tmpfs "
	 "by default (--pmem-dir); none: the slow tier as it is, for a machine with real slow memory",
	 .def = "none", .set = emulate},
	{"gpu", .value = "cuda|sim", .optional = true, .help = "on a GPU: fast memory is its device "
	 "memory, slow memory pinned host memory, kernels cuDNN/cuBLAS (docs/gpu.md); --gpu=sim "
	 "simulates one on the CPU", .set = gpu},
	{"gpu-memory", .value = "SIZE", .help = "device memory the plan may use",
	 .def = "free memory less 1.5 GiB; simulated: 11 GB less 1.5 GiB, an RTX 2080 Ti's",
	 .set = cli_set_bytes, MEM(gpu.memory_bytes), .lo = 1},
	{"gpu-device", .value = "N", .help = "which GPU", .def = "0", .set = cli_set_int,
	 MEM(gpu.device), .lo = 0, .hi = 1023},
	{"gpu-link", .value = "L", .help = "a simulated GPU's host link: pcie4, pcie5, nvlink-c2c",
	 .def = "pcie4", .set = cli_set_word, MEM(gpu.link), .words = links},
	{"gpu-model", .value = "NAME", .help = "(plan, profile, with --estimate) plan for a GPU this "
	 "machine need not have, from its datasheet: h100, h200, a100, rtx2080ti (docs/gpu.md, "
	 "\"GPU models\")", .set = gpu_model},
	{NULL},
};

/* The --start plan files of this process's command: each option's comma-separated names,
 * copied (the command's options live as long as the process) */
static char start_text[ATM_JOB_MAX_STARTS * 256];
static const char *start_files[ATM_JOB_MAX_STARTS];
static int n_start_files;
static size_t start_used;

/* starts -- --start's comma-separated plan files into the job's starts; refused for an empty
 * name or too many */
static atm_status starts(const cli_option *o, const char *arg, void *base)
{
	atm_job_opts *jo = base;
	size_t len = strlen(arg);
	(void)o;
	if (start_used + len + 1 > sizeof start_text)
		return atm_err(ATM_E_USAGE, "--start: the plan files' names take more than %zu bytes",
		               sizeof start_text);
	char *text = start_text + start_used;
	memcpy(text, arg, len + 1);
	start_used += len + 1;
	for (char *item = text, *next; item; item = next) {
		if ((next = strchr(item, ',')))
			*next++ = 0;
		if (!item[0])
			return atm_err(ATM_E_USAGE, "--start '%s' has an empty plan file name; expected "
			               "PLAN.json[,PLAN.json...]", arg);
		if (n_start_files == ATM_JOB_MAX_STARTS)
			return atm_err(ATM_E_USAGE, "--start: more than %d plan files", ATM_JOB_MAX_STARTS);
		start_files[n_start_files++] = item;
	}
	jo->starts = start_files;
	jo->n_starts = n_start_files;
	return ATM_OK;
}

/* ratio -- --ratio S:F, or a list of them (each checked; a sweep, the command's to plan) */
static atm_status ratio(const cli_option *o, const char *arg, void *base)
{
	atm_job_opts *jo = base;
	double s, f;
	char one[64];
	(void)o;
	if (!strchr(arg, ','))
		return atm_opt_parse_ratio(arg, &jo->ratio_slow, &jo->ratio_fast);
	for (const char *p = arg, *end; p; p = end ? end + 1 : NULL) {
		end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), p);
		if (atm_opt_parse_ratio(one, &s, &f) < 0)
			return atm_err_prefix(ATM_E_USAGE, "--ratio '%s': ", arg);
	}
	return ATM_OK;
}

/* dram_limit -- --dram-limit SIZE */
static atm_status dram_limit(const cli_option *o, const char *arg, void *base)
{
	(void)o;
	if (atm_parse_bytes(arg, &((atm_job_opts *)base)->limit_bytes) < 0)
		return atm_err_prefix(ATM_E_USAGE, "--dram-limit: ");
	return ATM_OK;
}

/* formulation -- --formulation F; a list is the command's (a comparison of autotm run) */
static atm_status formulation(const cli_option *o, const char *arg, void *base)
{
	(void)o;
	if (strchr(arg, ','))
		return ATM_OK;
	return atm_opt_formulation_from_name(arg, &((atm_job_opts *)base)->formulation);
}

/* solver -- --solver S: the name alone here; whether this build has it is the job's first check */
static atm_status solver(const cli_option *o, const char *arg, void *base)
{
	(void)o;
	if (atm_opt_solver_from_name(arg, &((atm_job_opts *)base)->opt.solver) < 0)
		return atm_err_prefix(ATM_E_USAGE, "--solver: ");
	return ATM_OK;
}

/* verbose -- --verbose: the solver's progress */
static atm_status verbose(const cli_option *o, const char *arg, void *base)
{
	(void)o;
	(void)arg;
	((atm_job_opts *)base)->opt.verbosity = 1;
	return ATM_OK;
}

/* The optimizer's defaults, said in the help as the optimizer has them. */
static atm_opt_options opt_defaults(void)
{
	atm_opt_options d;
	atm_opt_options_default(&d);
	return d;
}

static const char *default_gap(char *buf, size_t len)
{
	snprintf(buf, len, "%g; '%g%%' works too", opt_defaults().mip_gap, 100 * opt_defaults().mip_gap);
	return buf;
}

static const char *default_time(char *buf, size_t len)
{
	snprintf(buf, len, "%g", opt_defaults().time_limit_s);
	return buf;
}

static const char *default_window(char *buf, size_t len)
{
	snprintf(buf, len, "%d", opt_defaults().async_window);
	return buf;
}

static const char *default_rounds(char *buf, size_t len)
{
	snprintf(buf, len, "%d, at most %d", opt_defaults().max_rounds, ATM_PLAN_MAX_ROUNDS);
	return buf;
}

#define JOB(field) .at = offsetof(atm_job_opts, field)

const cli_option cli_plan_options[] = {
	{"ratio", .value = "S:F", .help = "slow:fast memory; fast = peak footprint * F / (S + F): "
	 "4:1 is a fifth, 16:1 a seventeenth, 0:1 all fast (no limit), 1:0 the least any plan needs "
	 "(the tensors that may only be fast). Plans keep the pair; results write it as AutoTM's "
	 "ratio (S/F, null at 1:0) and exactly as ratio_slow, ratio_fast and fast_fraction. "
	 "(plan) S:F,S:F,... with -o FOLDER/: a sweep in one process, a plan per ratio into "
	 "FOLDER/FORMULATION-S_F.json, from the least fast memory up, each plan a start of the next, "
	 "so that the predicted step never rises with the limit", .set = ratio},
	{"dram-limit", .value = "SIZE", .help = "the fast-memory limit in bytes (K, M, G suffixes: "
	 "12G)", .set = dram_limit},
	{"formulation", .value = "F", .help = "static, synchronous, asynchronous: the ILPs, on the "
	 "--solver; all-fast, all-slow, numa (first touch), 2lm (fast memory as a cache of slow "
	 "memory), vdnn (offload convolution inputs): baselines. (run) F,G,...: compare these "
	 "(docs/comparisons.md); random, managed and plan files may be listed beside them, and an "
	 "ILP with '+recompute' (synchronous+recompute) recomputes",
	 .def = "synchronous; search: asynchronous",
	 .set = formulation},
	{"mip-gap", .value = "G", .help = "stop when the plan is within G of the best possible, a "
	 "fraction or a percentage; 0 asks for the optimum, 1 takes the first plan found",
	 .default_of = default_gap, .set = cli_set_fraction, JOB(opt.mip_gap)},
	{"time-limit", .value = "S", .help = "seconds the whole plan may take, every "
	 "defragmentation round included (fractions too: 2.5); the best plan found by then is used. "
	 "A limit that runs out before the first round's heuristic has a plan is refused (exit 2), "
	 "naming the limit to give", .default_of = default_time, .set = cli_set_seconds,
	 JOB(opt.time_limit_s), .hi = 1000000},
	{"async-window", .value = "N", .help = "(asynchronous) kernels before a use where an "
	 "overlapped fetch may run", .default_of = default_window, .set = cli_set_int,
	 JOB(opt.async_window), .lo = 1, .hi = 64},
	{"rounds", .value = "N", .help = "solves with the limit tightened where first fit overflows "
	 "(fragmentation) before giving up", .default_of = default_rounds, .set = cli_set_int,
	 JOB(opt.max_rounds), .lo = 1, .hi = ATM_PLAN_MAX_ROUNDS},
	{"solver", .value = "S", .help = "the ILP solver: glpk, cbc (COIN-OR CBC, in builds made "
	 "with coinor-libcbc-dev) or auto: CBC when the build has it, else GLPK ('autotm "
	 "--version' names it). cbc in a build without it is refused before any work (exit 5). "
	 "Plans and results record the solver that ran", .def = "auto", .set = solver},
	{"threads", .value = "N", .help = "solver threads: CBC's branch and cut runs on N; GLPK has "
	 "one. 0: one per core autotm may run on", .def = "0", .set = cli_set_int, JOB(opt.threads),
	 .lo = 0, .hi = 1024},
	{"cache", .value = "FILE", .help = "the profile cache",
	 .def = "$XDG_CACHE_HOME/autotm/profiles.json, else ~/.cache/autotm/profiles.json",
	 .set = cli_set_text, JOB(cache)},
	{"isolated", .help = "price each kernel by its time alone, not by its time inside a step as "
	 "the profile calibrates it (docs/profile.md)", .set = cli_set_true, JOB(isolated)},
	{"recompute", .help = "(ILPs) a forward activation may also be dropped after a use and "
	 "computed again before a later one, chosen in the same program as the placement "
	 "(docs/optimizer.md)", .set = cli_set_true, JOB(opt.recompute)},
	{"full-model", .help = "solve the full program (every tensor's states at every point of its "
	 "life), not the reduced one: the same optimum, a larger model (docs/optimizer.md)",
	 .set = cli_set_true, JOB(opt.full_model)},
	{"start", .value = "PLAN[,PLAN...]", .help = "plan files of the same graph and formulation "
	 "(autotm plan -o, run --plans-out), typically planned for less fast memory: each is checked "
	 "under this limit, and the plan made is never predicted slower than one that fits (that one "
	 "is kept, re-labelled with this limit). Repeatable. A file of another graph or formulation "
	 "is refused (exit 3); one that does not fit is passed over, said on stderr (docs/optimizer.md, "
	 "\"Monotone in the budget\")", .set = starts},
	{"verbose", .help = "the solver's progress on stderr", .set = verbose},
	{NULL},
};

const char *cli_ratio_list(const cli_given *given)
{
	const char *r = cli_given_arg(given, "ratio");
	return r && strchr(r, ',') ? r : NULL;
}

const char *cli_formulation_list(const cli_given *given)
{
	const char *f = cli_given_arg(given, "formulation");
	return f && strchr(f, ',') ? f : NULL;
}

void cli_job_begin(atm_job_opts *jo, const char *who)
{
	atm_job_opts_default(jo);
	jo->who = who;
	n_start_files = 0;
	start_used = 0;
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

atm_status cli_plan_check(const atm_job_opts *jo, const cli_given *given)
{
	atm_backend_caps caps;
	bool ratio = cli_was_given(given, "ratio"), limit = cli_was_given(given, "dram-limit");
	atm_status rc = atm_backend_caps_get(jo->mem.gpu.mode, &caps);
	if (rc < 0)
		return rc;
	if ((rc = cli_gpu_model_check(&jo->mem, jo->estimate, jo->who)) < 0)
		return rc;
	if (ratio && limit)
		return atm_err(ATM_E_USAGE, "give only one of --ratio and --dram-limit");
	if (cli_ratio_list(given) && jo->who && strcmp(jo->who, "plan"))
		return atm_err(ATM_E_USAGE, "--ratio '%s': a list of ratios is a sweep of 'autotm plan' "
		               "(-o FOLDER/); autotm %s takes one ratio", cli_ratio_list(given), jo->who);
	if (cli_formulation_list(given))
		return atm_err(ATM_E_USAGE, "--formulation '%s': a list of formulations is a "
		               "comparison of 'autotm run'; autotm %s takes one formulation",
		               cli_formulation_list(given), jo->who ? jo->who : "plan");
	/* a device's memory is a limit of its own */
	if (!ratio && !limit && jo->formulation != ATM_OPT_ALL_FAST && !caps.device_memory)
		return atm_err(ATM_E_USAGE, "give the fast-memory limit with --ratio S:F or "
		               "--dram-limit SIZE");
	if (cli_was_given(given, "async-window") && jo->formulation != ATM_OPT_ASYNCHRONOUS)
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

atm_status cli_check_files(const cli_file *out, int n_out, const cli_file *in, int n_in)
{
	for (int i = 0; i < n_out; i++) {
		if (!out[i].path)
			continue;
		for (int k = 0; k < n_in; k++)
			if (in[k].path && same_file(out[i].path, in[k].path))
				return atm_err(ATM_E_USAGE, "%s %s is the file %s %s reads: writing it would "
				               "replace the input; write the output elsewhere", out[i].opt,
				               out[i].path, in[k].opt, in[k].path);
		for (int k = 0; k < i; k++)
			if (out[k].path && same_file(out[i].path, out[k].path))
				return atm_err(ATM_E_USAGE, "%s %s and %s %s are the same file: give each "
				               "output its own", out[k].opt, out[k].path, out[i].opt,
				               out[i].path);
	}
	return ATM_OK;
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
