/* cmd_zoo.c -- autotm zoo: the catalogue of networks and presets, one network's summary or export */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char zoo_help[] =
	"usage: autotm zoo                          list networks and presets\n"
	"       autotm zoo --model NAME [--batch B] [--json] [--export FILE]\n"
	"       autotm zoo --graph FILE [--batch B] [--json] [--export FILE]\n"
	"\n"
	"Without a network, lists every network of the zoo and the batch sizes of each\n"
	"preset. With one, prints a summary of its training step (forward, loss,\n"
	"backward, SGD update): parameters, kernels, tensors, the peak of the memory\n"
	"footprint when every tensor is freed after its last use, and the bytes that\n"
	"live for the whole step.\n"
	"\n"
	"options:\n";

/* What autotm zoo was asked to do beside the network. */
struct zoo_args {
	bool json;
	const char *export_path;
};

static const cli_option zoo_own[] = {
	CLI_JSON_ROW(struct zoo_args, json),
	{"export", .value = "FILE", .help = "write the graph JSON to FILE ('-' for standard output)",
	 .set = cli_set_text, .at = offsetof(struct zoo_args, export_path)},
	{NULL},
};

const cli_command_options cmd_zoo_options = {
	"zoo", (const cli_option *const[]){cli_graph_options, zoo_own, NULL}, zoo_help, NULL};

/* with_commas -- 143667240 -> "143,667,240" */
static const char *with_commas(int64_t v, char *buf, size_t len)
{
	char digits[32];
	int n = snprintf(digits, sizeof digits, "%lld", (long long)v), o = 0;
	for (int i = 0; i < n && (size_t)o + 2 < len; i++) {
		if (i && digits[i] != '-' && (n - i) % 3 == 0 && digits[i - 1] != '-')
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

static void list_catalogue(void)
{
	char pbuf[32];
	printf("networks (a full training step each: forward, cross-entropy, backward, SGD)\n\n");
	printf("  %-14s %-10s %8s %14s  %s\n", "name", "family", "input", "parameters", "description");
	for (int i = 0; i < atm_zoo_n_models(); i++) {
		const atm_zoo_model *m = atm_zoo_model_at(i);
		char in[24];
		if (m->default_seq)
			snprintf(in, sizeof in, "seq %lld", (long long)m->default_seq);
		else
			snprintf(in, sizeof in, "%lld", (long long)m->default_image);
		printf("  %-14s %-10s %8s %14s  %s\n", m->name, m->family, in,
		       with_commas(m->published_params, pbuf, sizeof pbuf), m->description);
	}
	printf("\npresets (batch sizes; an image size in brackets where the preset shrinks it, a "
	       "language model's sequence after 'seq')\n");
	for (int p = 0; p < atm_zoo_n_presets(); p++) {
		const atm_zoo_preset_info *pi = atm_zoo_preset_at(p);
		printf("\n  %s: %s\n", pi->name, pi->description);
		for (int i = 0; i < atm_zoo_n_models(); i++) {
			const atm_zoo_model *m = atm_zoo_model_at(i);
			atm_zoo_preset_sizes s;
			if (atm_zoo_preset(m->name, pi->name, &s) < 0 || s.n_batch == 0)
				continue;
			printf("    %-14s", m->name);
			for (int b = 0; b < s.n_batch; b++)
				printf("%s%lld", b ? "/" : " ", (long long)s.batch[b]);
			if (s.image)
				printf(" [%lldx%lld]", (long long)s.image, (long long)s.image);
			if (s.seq)
				printf(" seq %lld", (long long)s.seq);
			printf("\n");
		}
	}
	printf("\n'autotm zoo --model NAME' summarises one network; --preset picks its sizes.\n");
}

/* count_ops -- kernels of each op in the schedule */
static void count_ops(const atm_graph *g, int32_t counts[ATM_N_OPS])
{
	memset(counts, 0, ATM_N_OPS * sizeof counts[0]);
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++)
		counts[atm_graph_node(g, i)->op]++;
}

/* input_image -- spatial size of the first 4-d input, 0 when there is none */
static int64_t input_image(const atm_graph *g)
{
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (x->kind == ATM_KIND_INPUT && x->ndim == 4)
			return x->dims[2];
	}
	return 0;
}

/* input_seq -- the sequence of a language model: the last dim of the token ids an embedding
 * reads; 0 for none */
static int64_t input_seq(const atm_graph *g)
{
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		if (n->op == ATM_OP_EMBEDDING_FWD && n->n_in == 2) {
			const atm_tensor *ids = atm_graph_tensor(g, n->in[1]);
			return ids->dims[ids->ndim - 1];
		}
	}
	return 0;
}

static atm_status print_json(const atm_graph *g, int64_t batch, const atm_graph_stats *s,
                             const atm_liveness *lv)
{
	int32_t counts[ATM_N_OPS];
	json_t *ops = json_object(), *o = json_object();
	int32_t peak = atm_liveness_peak_node(lv);
	count_ops(g, counts);
	for (int op = 0; op < ATM_N_OPS; op++)
		if (counts[op])
			json_object_set_new(ops, atm_op_name((atm_op)op), json_integer(counts[op]));
	json_object_set_new(o, "name", json_string(atm_graph_name(g)));
	json_object_set_new(o, "batch", json_integer(batch));
	json_object_set_new(o, "image", json_integer(input_image(g)));
	json_object_set_new(o, "seq", json_integer(input_seq(g)));
	json_object_set_new(o, "n_params", json_integer(s->n_params));
	json_object_set_new(o, "n_kernels", json_integer(s->n_kernels));
	json_object_set_new(o, "n_tensors", json_integer(s->n_tensors));
	json_object_set_new(o, "peak_bytes", json_integer(s->peak_bytes));
	json_object_set_new(o, "peak_node", peak >= 0 ? json_string(atm_graph_node(g, peak)->name)
	                                                : json_null());
	json_object_set_new(o, "io_bytes", json_integer(s->io_bytes));
	json_object_set_new(o, "param_bytes", json_integer(s->param_bytes));
	json_object_set_new(o, "total_bytes", json_integer(s->total_bytes));
	json_object_set_new(o, "ops", ops);
	return cli_print_json_new(o);
}

static void print_text(const atm_graph *g, int64_t batch, const atm_graph_stats *s,
                       const atm_liveness *lv)
{
	char a[32], b[32];
	int32_t counts[ATM_N_OPS];
	int32_t peak = atm_liveness_peak_node(lv);
	int64_t image = input_image(g);
	printf("%s: batch %lld", atm_graph_name(g), (long long)batch);
	if (image)
		printf(", %lldx%lld input", (long long)image, (long long)image);
	if (input_seq(g))
		printf(", sequence %lld", (long long)input_seq(g));
	printf("\n");
	printf("  parameters       %s (%s)\n", with_commas(s->n_params, a, sizeof a),
	       atm_format_bytes(s->param_bytes, b, sizeof b));
	printf("  kernels          %d\n", s->n_kernels);
	printf("  tensors          %d\n", s->n_tensors);
	printf("  peak footprint   %s", atm_format_bytes(s->peak_bytes, a, sizeof a));
	if (peak >= 0)
		printf(" at kernel %d (%s)", peak, atm_graph_node(g, peak)->name);
	printf("\n  live all step    %s (inputs, parameters, outputs)\n",
	       atm_format_bytes(s->io_bytes, a, sizeof a));
	printf("  all tensors      %s (with no memory reuse)\n",
	       atm_format_bytes(s->total_bytes, a, sizeof a));
	count_ops(g, counts);
	printf("  ops             ");
	for (int op = 0, col = 0; op < ATM_N_OPS; op++) {
		if (!counts[op])
			continue;
		if (col && col % 4 == 0)
			printf("\n                  ");
		printf(" %s %d", atm_op_name((atm_op)op), counts[op]);
		col++;
	}
	printf("\n");
}

static atm_status export_graph(const atm_graph *g, const char *path)
{
	if (strcmp(path, "-") == 0) {
		char *text = NULL;
		atm_status rc = atm_graph_dump(g, &text);
		if (rc < 0)
			return rc;
		fputs(text, stdout);
		free(text);
		return ATM_OK;
	}
	return atm_graph_save(g, path);
}

int cmd_zoo(int argc, char **argv)
{
	cli_graph_source src = {0};
	struct zoo_args a = {0};
	cli_given given;
	atm_graph *g = NULL;
	atm_liveness *lv = NULL;
	atm_graph_stats stats;
	int64_t batch = 0;
	atm_results_workload w;
	atm_status rc = cli_parse(&cmd_zoo_options, (void *const[]){&src, &a}, argc, argv, &given);
	bool json = a.json;
	const char *export_path = a.export_path;

	if (rc < 0 || given.help)
		return cli_fail("zoo", rc);
	if (!src.model && !src.graph_file) {
		if (json || export_path || src.batch || src.preset || src.image || src.classes)
			return cli_fail("zoo", atm_err(ATM_E_USAGE, "--json, --export and the size options "
			                               "need --model NAME or --graph FILE"));
		list_catalogue();
		return 0;
	}
	if (json && export_path && strcmp(export_path, "-") == 0)
		return cli_fail("zoo", atm_err(ATM_E_USAGE, "--json and --export - both write to "
		                               "standard output; export to a file instead"));
	rc = cli_load_graph(&src, &g, &w);
	batch = w.batch;
	if (rc < 0)
		goto fail;
	rc = atm_liveness_new(&lv, g);
	if (rc < 0)
		goto fail;
	rc = atm_graph_stats_compute(g, &stats);
	if (rc < 0)
		goto fail;
	if (export_path) {
		rc = export_graph(g, export_path);
		if (rc < 0)
			goto fail;
	}
	if (json)
		rc = print_json(g, batch, &stats, lv);
	else if (!export_path || strcmp(export_path, "-") != 0)
		print_text(g, batch, &stats, lv);
	if (rc < 0)
		goto fail;
	atm_liveness_destroy(lv);
	atm_graph_destroy(g);
	return 0;
fail:
	atm_liveness_destroy(lv);
	atm_graph_destroy(g);
	return cli_fail("zoo", rc);
}
