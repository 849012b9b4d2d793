/* common.c -- option parsing, graph loading and error reporting shared by the subcommands */
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
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
	o->n_classes = src->classes;
	return ATM_OK;
}

atm_status cli_load_graph(const cli_graph_source *src, atm_graph **g, int64_t *batch)
{
	*g = NULL;
	if (src->model && src->graph_file)
		return atm_err(ATM_E_USAGE, "give either --model or --graph, not both");
	if (!src->model && !src->graph_file)
		return atm_err(ATM_E_USAGE, "which network? give --model NAME (see 'autotm zoo') or "
		               "--graph FILE");
	if (src->graph_file) {
		if (src->preset || src->image || src->classes)
			return atm_err(ATM_E_USAGE, "--preset, --image and --classes apply to zoo models; "
			               "a --graph file fixes its own sizes (only --batch overrides)");
		atm_graph_load_opts lo = {.batch = src->batch};
		atm_status rc = atm_graph_load(g, src->graph_file, &lo);
		if (rc < 0)
			return rc;
		/* the batch of a file graph is the leading dimension of its first input */
		*batch = 0;
		for (int32_t t = 0; t < atm_graph_n_tensors(*g); t++) {
			const atm_tensor *x = atm_graph_tensor(*g, t);
			if (x->kind == ATM_KIND_INPUT) {
				*batch = x->dims[0];
				break;
			}
		}
		return ATM_OK;
	}
	atm_zoo_opts o = {0};
	atm_status rc = zoo_sizes(src, &o);
	if (rc < 0)
		return rc;
	*batch = o.batch;
	return atm_zoo_build(g, src->model, &o);
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
		if (atm_parse_bytes(arg, &mem->tiers.slow_bytes) < 0) {
			atm_err_prefix(ATM_E_USAGE, "--slow-size: ");
			return -1;
		}
		return 1;
	case CLI_OPT_EMULATE:
		mem->emulate = arg;
		return 1;
	case CLI_OPT_GPU:
		if (arg && strcmp(arg, "cuda") && strcmp(arg, "sim")) {
			atm_err(ATM_E_USAGE, "--gpu=%s is not valid; expected --gpu (a CUDA GPU), --gpu=cuda "
			        "or --gpu=sim (a simulated one)", arg);
			return -1;
		}
		mem->gpu.mode = arg ? arg : "cuda";
		return 1;
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

int64_t cli_fast_limit(const cli_memory *mem, int64_t limit)
{
	if (mem->gpu.mode && (!limit || limit > mem->gpu.memory_bytes))
		return mem->gpu.memory_bytes;
	return limit;
}

atm_status cli_gpu_resolve(const char *cmd, cli_memory *mem, bool quiet)
{
	atm_gpu_info info;
	char a[32], f[32];
	if (!mem->gpu.mode) {
		if (mem->gpu.memory_bytes || mem->gpu.link || mem->gpu.device)
			return atm_err(ATM_E_USAGE, "--gpu-memory, --gpu-device and --gpu-link need --gpu");
		return ATM_OK;
	}
	if (mem->gpu.link && strcmp(mem->gpu.mode, "sim"))
		return atm_err(ATM_E_USAGE, "--gpu-link describes a simulated GPU; give --gpu=sim");
	if (mem->emulate)
		return atm_err(ATM_E_USAGE, "--emulate makes a CPU's slow tier slow and does not apply "
		               "with --gpu (the slow tier is host memory behind the GPU's link)");
	atm_status rc = atm_gpu_probe(&mem->gpu, &info);
	if (rc < 0)
		return atm_err_prefix(rc, "--gpu: ");
	mem->gpu.memory_bytes = info.memory_bytes;
	if (!quiet)
		fprintf(stderr, "autotm %s: %s%s, %s of device memory for the plan (%s free)\n", cmd,
		        info.name, info.simulated ? " (SIMULATED: CPU kernels, emulated link)" : "",
		        atm_format_bytes(info.memory_bytes, a, sizeof a),
		        atm_format_bytes(info.free_bytes, f, sizeof f));
	return ATM_OK;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

volatile sig_atomic_t *cli_install_interrupt(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return &interrupted;
}

atm_status cli_print_json(json_t *o)
{
	char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (!text)
		return atm_err(ATM_E_NOMEM, "out of memory printing JSON");
	printf("%s\n", text);
	free(text);
	return ATM_OK;
}

atm_status cli_default_cache(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char dir[4096];
	if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof dir, "%s", xdg);
	else if (home && home[0])
		snprintf(dir, sizeof dir, "%s/.cache", home);
	else
		return atm_err(ATM_E_USAGE, "no cache folder: neither XDG_CACHE_HOME nor HOME is set; "
		               "give --cache FILE");
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/autotm");
		if (mkdir(dir, 0777) < 0 && errno != EEXIST)
			return atm_err(ATM_E_IO, "cannot make the cache folder %s: %s", dir, strerror(errno));
	}
	if ((size_t)snprintf(buf, len, "%s/profiles.json", dir) >= len)
		return atm_err(ATM_E_USAGE, "the cache path under %s is too long; give --cache FILE", dir);
	return ATM_OK;
}

atm_status cli_profile(const char *cmd, const atm_graph *g, const cli_memory *mem,
                       const char *cache, bool estimate, bool quiet, atm_prof **pr,
                       atm_profile **prof)
{
	char cache_buf[4096];
	atm_prof_machine m;
	atm_prof_report rep;
	atm_status rc;
	if (!cache) {
		if ((rc = cli_default_cache(cache_buf, sizeof cache_buf)) < 0)
			return rc;
		cache = cache_buf;
	}
	atm_prof_opts po = {
		.tiers = mem->tiers,
		.emulate = mem->emulate,
		.gpu = mem->gpu,
		.seed = 1,
		.estimate = estimate,
		.stop = cli_install_interrupt(),
		.progress = !quiet && isatty(STDERR_FILENO),
	};
	if ((rc = atm_prof_new(pr, g, &po)) < 0)
		return rc;
	atm_prof_get_machine(*pr, &m);
	if ((rc = atm_profile_open(prof, cache, &m, false)) < 0 || (rc = atm_prof_run(*pr, *prof, &rep)) < 0)
		return rc;
	if (!quiet && rep.n_configs_measured)
		fprintf(stderr, "autotm %s: %s %lld kernel configurations the cache lacked (%.1f s)\n", cmd,
		        estimate ? "estimated" : "profiled", (long long)rep.n_configs_measured, rep.seconds);
	return ATM_OK;
}
