/* bench_exec.c -- executor overhead: the executor's all-fast step against the same oneDNN kernels called back to back */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atm_runtime.h"
#include "atm_zoo.h"
#include "bench_util.h"
#include "kernels.h"

/* Bare kernels: every tensor in its own buffer, no plan, no events, no pools. */
struct bare {
	atm_cpu *cpu;
	atm_kernel **k;
	void **buf;
	void *scratch;
	void **in, **out;
};

static int bare_new(struct bare *b, const atm_graph *g)
{
	int32_t nn = atm_graph_n_nodes(g), nt = atm_graph_n_tensors(g);
	int64_t scratch = 64;
	memset(b, 0, sizeof *b);
	b->k = calloc((size_t)nn, sizeof *b->k);
	b->buf = calloc((size_t)nt, sizeof *b->buf);
	b->in = calloc(4096, sizeof *b->in);
	b->out = calloc(4096, sizeof *b->out);
	if (!b->k || !b->buf || !b->in || !b->out || atm_cpu_new(&b->cpu) < 0)
		return -1;
	for (int32_t k = 0; k < nn; k++) {
		if (atm_kernel_new(&b->k[k], b->cpu, g, k) < 0)
			return -1;
		if (atm_kernel_scratch_bytes(b->k[k]) > scratch)
			scratch = atm_kernel_scratch_bytes(b->k[k]);
	}
	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (posix_memalign(&b->buf[t], 64, (size_t)x->bytes))
			return -1;
		/* small values keep every kernel on its ordinary path */
		float *f = b->buf[t];
		for (int64_t i = 0; i < x->bytes / 4; i++)
			f[i] = x->kind == ATM_KIND_INPUT ? 0.5f : 0.01f;
	}
	return posix_memalign(&b->scratch, 64, (size_t)scratch) ? -1 : 0;
}

static double bare_step(struct bare *b, const atm_graph *g)
{
	double t0 = atm_now_s();
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		for (int i = 0; i < n->n_in; i++)
			b->in[i] = b->buf[n->in[i]];
		for (int i = 0; i < n->n_out; i++)
			b->out[i] = b->buf[n->out[i]];
		if (atm_kernel_run(b->k[k], b->in, b->out, b->scratch) < 0) {
			fprintf(stderr, "bench_exec: %s\n", atm_errmsg());
			exit(1);
		}
	}
	return atm_now_s() - t0;
}

static void bare_free(struct bare *b, const atm_graph *g)
{
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		atm_kernel_destroy(b->k[k]);
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		free(b->buf[t]);
	free(b->k);
	free(b->buf);
	free(b->in);
	free(b->out);
	free(b->scratch);
	atm_cpu_destroy(b->cpu);
}

/* bench -- alternate executor and bare steps; the best of each */
static int bench(const char *model, int rounds)
{
	atm_zoo_preset_sizes ps;
	atm_graph *g = NULL;
	atm_plan *p = NULL;
	atm_exec *e = NULL;
	struct bare b;
	double best_exec = 1e30, best_bare = 1e30;
	if (atm_zoo_preset(model, "small", &ps) < 0)
		return -1;
	atm_zoo_opts zo = {.batch = ps.batch[0], .image = ps.image, .seq = ps.seq};
	atm_exec_opts eo = {.iters = 1, .warmup = -1, .quiet = true};
	if (atm_zoo_build(&g, model, &zo) < 0 || atm_plan_uniform(&p, g, ATM_LOC_FAST) < 0 ||
	    atm_exec_new(&e, p, &eo) < 0 || bare_new(&b, g) < 0) {
		fprintf(stderr, "bench_exec: %s: %s\n", model, atm_errmsg());
		return -1;
	}
	/* one of each first: the kernels' first runs pay for page faults and JIT */
	if (atm_exec_run(e) < 0)
		return -1;
	bare_step(&b, g);
	for (int r = 0; r < rounds; r++) {
		if (atm_exec_run(e) < 0)
			return -1;
		double t = atm_exec_result_get(e)->actual_runtime_s;
		if (t < best_exec)
			best_exec = t;
		t = bare_step(&b, g);
		if (t < best_bare)
			best_bare = t;
	}
	printf("%-12s batch %-3lld %5d kernels   bare %.4f s   executor %.4f s   ratio %.4f   "
	       "overhead %+.2f%%\n",
	       model, (long long)zo.batch, atm_graph_n_nodes(g), best_bare, best_exec,
	       best_exec / best_bare, (best_exec / best_bare - 1) * 100);
	bare_free(&b, g);
	atm_exec_destroy(e);
	atm_plan_destroy(p);
	atm_graph_destroy(g);
	return 0;
}

static const char usage[] =
	"usage: bench_exec [--rounds N] [--models LIST]\n"
	"\n"
	"Executor overhead: for every network (small preset), the executor's all-fast step\n"
	"against the same oneDNN kernels called back to back with no executor, in the same\n"
	"process, alternating the two, and the best of N steps of each.\n"
	"Defaults: 5 rounds; vgg19,resnet50,resnet200 (comma separated; 'autotm zoo' lists\n"
	"the networks).\n";

int main(int argc, char **argv)
{
	atm_openmp_passive(argv); /* idle kernel threads sleep, not spin */
	static const struct option longopts[] = {
		{"rounds", required_argument, NULL, 'r'},
		{"models", required_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *models = "vgg19,resnet50,resnet200";
	long long rounds = 5;
	char name[64];
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'r') {
			if (!bench_int("bench_exec", "rounds", optarg, 1, 1000000, &rounds))
				return 2;
		} else if (opt == 'm') {
			models = optarg;
		} else {
			return bench_other_option("bench_exec", opt, optind, argv, usage);
		}
	}
	if (optind < argc)
		return bench_usage_error("bench_exec", "unexpected argument '%s'", argv[optind]);
	int code = bench_models_known("bench_exec", models);
	if (code >= 0)
		return code;
	printf("executor overhead, all-fast, small presets, best of %lld steps each\n", rounds);
	for (const char *s = models; bench_split(&s, name, sizeof name);)
		if (bench(name, (int)rounds) < 0) {
			fprintf(stderr, "bench_exec: %s\n", atm_errmsg());
			return 1;
		}
	return 0;
}
