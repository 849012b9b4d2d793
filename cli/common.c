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
		if (src->preset || src->image || src->classes)
			return atm_err(ATM_E_USAGE, "--preset, --image and --classes apply to zoo models; "
			               "a --graph file fixes its own sizes (only --batch overrides)");
		atm_graph_load_opts lo = {.batch = src->batch};
		atm_status rc = atm_graph_load(g, src->graph_file, &lo);
		if (rc < 0)
			return rc;
		w->batch = atm_graph_batch(*g);
		return ATM_OK;
	}
	atm_zoo_opts o = {0};
	atm_status rc = zoo_sizes(src, &o);
	if (rc == ATM_OK)
		rc = atm_zoo_build(g, src->model, &o);
	if (rc < 0)
		return rc;
	/* the graph's own batch (its batched tensors'), as for a graph file */
	w->batch = atm_graph_batch(*g);
	w->image = o.image;
	/* sizes from a preset (named, or small by default) unless --batch gave them */
	w->preset = src->preset ? src->preset : src->batch ? NULL : "small";
	return ATM_OK;
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

