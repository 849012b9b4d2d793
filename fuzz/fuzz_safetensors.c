/* fuzz_safetensors.c -- libFuzzer target: any bytes as a safetensors file (--weights-in, --data); what parses has every tensor inside the file, is checked against the fuzz graph without a crash, and dumps and parses back to the same tensors */
#include "fuzz_common.h"

/* fuzz_graph_adamw -- the fuzz graph with AdamW's update: its weights come with states (a
 * resumed run's --weights-in), built once */
static const atm_graph *fuzz_graph_adamw(void)
{
	static atm_graph *g;
	atm_update u = atm_update_defaults(ATM_UPDATE_ADAMW);
	if (!g && atm_graph_with_update(fuzz_graph_of_inputs(), &u, &g) < 0)
		fuzz_die("fuzz", "the fuzz graph takes no AdamW", ATM_E_INTERNAL);
	return g;
}

/* fuzz_safetensors_load -- how the corpus replay asks whether an input is the weights or the
 * data of the fuzz graph, or the weights and states of its AdamW step */
__attribute__((unused)) static atm_status fuzz_safetensors_load(const char *data, size_t len,
                                                                const char *origin)
{
	atm_st_file *f = NULL;
	atm_status rc = atm_st_parse(&f, data, len, origin);
	if (rc == ATM_OK && atm_st_check(f, fuzz_graph_of_inputs(), ATM_KIND_PARAM) < 0 &&
	    atm_st_check(f, fuzz_graph_adamw(), ATM_KIND_PARAM) < 0)
		rc = atm_st_check(f, fuzz_graph_of_inputs(), ATM_KIND_INPUT);
	atm_st_destroy(f);
	return rc;
}

/* fuzz_safetensors_same -- a and b hold the same tensors in the same order */
static bool fuzz_safetensors_same(const atm_st_file *a, const atm_st_file *b)
{
	if (atm_st_count(a) != atm_st_count(b))
		return false;
	for (int64_t i = 0; i < atm_st_count(a); i++) {
		const atm_st_tensor *x = atm_st_at(a, i), *y = atm_st_at(b, i);
		if (strcmp(x->name, y->name) || x->dtype != y->dtype || x->ndim != y->ndim ||
		    x->bytes != y->bytes || memcmp(x->dims, y->dims, (size_t)x->ndim * sizeof *x->dims) ||
		    (x->bytes && memcmp(x->data, y->data, (size_t)x->bytes)))
			return false;
	}
	return true;
}

/* fuzz_safetensors_fill -- every tensor of kind the file gives, filled as a run would */
static void fuzz_safetensors_fill(const atm_st_file *f, const atm_graph *g, atm_tensor_kind kind)
{
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (x->kind != kind)
			continue;
		float *buf = malloc((size_t)x->bytes);
		if (!buf)
			fuzz_die("fuzz_safetensors", "out of memory", ATM_E_NOMEM);
		if (!atm_st_fill(f, g, t, buf))
			fuzz_die("fuzz_safetensors", "a checked file does not fill a tensor it holds",
			         ATM_E_INTERNAL);
		free(buf);
	}
}

/* LLVMFuzzerTestOneInput -- parse; a refusal is an input error naming the file; a file that
 * parses has its tensors within its bytes, is checked against the fuzz graph (a refusal names
 * the file), fills what it holds, and dumps and parses back to the same tensors */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const atm_graph *g = fuzz_graph_of_inputs();
	atm_st_file *f = NULL, *h = NULL;
	char *text = NULL;
	size_t len = 0;
	atm_status rc = atm_st_parse(&f, data, size, "fuzz.safetensors");
	if (rc < 0) {
		fuzz_check_refusal("fuzz_safetensors", rc, f, "fuzz.safetensors", 1, ATM_E_INPUT);
		return 0;
	}
	int64_t total = 0;
	for (int64_t i = 0; i < atm_st_count(f); i++) {
		const atm_st_tensor *t = atm_st_at(f, i);
		if (!t || t->bytes != t->n_elems * atm_st_dtype_size(t->dtype) || t->bytes < 0 ||
		    atm_st_find(f, t->name) != t)
			fuzz_die("fuzz_safetensors", "a tensor's size or name does not hold", rc);
		total += t->bytes;
	}
	if (total > (int64_t)size)
		fuzz_die("fuzz_safetensors", "the tensors hold more bytes than the file", rc);
	for (int k = 0; k < 3; k++) {
		atm_tensor_kind kind = k == 1 ? ATM_KIND_INPUT : ATM_KIND_PARAM;
		const atm_graph *gk = k == 2 ? fuzz_graph_adamw() : g;
		rc = atm_st_check(f, gk, kind);
		if (rc < 0)
			fuzz_check_refusal("fuzz_safetensors", rc, NULL, "fuzz.safetensors", 1, ATM_E_INPUT);
		else
			fuzz_safetensors_fill(f, gk, kind);
	}
	atm_st_tensor *ts = calloc((size_t)atm_st_count(f) + 1, sizeof *ts);
	if (!ts)
		fuzz_die("fuzz_safetensors", "out of memory", ATM_E_NOMEM);
	for (int64_t i = 0; i < atm_st_count(f); i++)
		ts[i] = *atm_st_at(f, i);
	if ((rc = atm_st_dump(ts, atm_st_count(f), NULL, &text, &len)) < 0)
		fuzz_die("fuzz_safetensors", "a parsed file does not dump", rc);
	if ((rc = atm_st_parse(&h, text, len, "dumped")) < 0)
		fuzz_die("fuzz_safetensors", "a dumped file does not parse", rc);
	if (!fuzz_safetensors_same(f, h))
		fuzz_die("fuzz_safetensors", "a dumped file parses to other tensors", rc);
	free(ts);
	free(text);
	atm_st_destroy(h);
	atm_st_destroy(f);
	return 0;
}
