/* fuzz_forward.c -- libFuzzer target: any bytes as a forward graph (format autotm-forward, what the PyTorch importer writes); what builds is a valid training step that survives its own JSON */
#include "atm_zoo.h"
#include "fuzz_common.h"

/* fuzz_forward_load -- how the corpus replay asks whether an input is a forward graph */
__attribute__((unused)) static atm_status fuzz_forward_load(const char *data, size_t len,
                                                            const char *origin)
{
	atm_graph *g = NULL;
	atm_status rc = atm_zoo_forward_load_buffer(&g, data, len, origin, 0);
	atm_graph_destroy(g);
	return rc;
}

/* LLVMFuzzerTestOneInput -- build; a refusal is an input error naming the file and leaves no
 * graph; a graph that builds dumps, loads as an autotm-graph and dumps to the same text */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	atm_graph *g = NULL, *h = NULL;
	char *a = NULL, *b = NULL;
	atm_status rc = atm_zoo_forward_load_buffer(&g, (const char *)data, size, "fuzz.json", 0);
	if (rc < 0) {
		fuzz_check_refusal("fuzz_forward", rc, g, "fuzz.json", 1, ATM_E_INPUT);
		return 0;
	}
	if ((rc = atm_graph_dump(g, &a)) < 0)
		fuzz_die("fuzz_forward", "a built graph does not dump", rc);
	if ((rc = atm_graph_load_buffer(&h, a, strlen(a), "dumped", NULL)) < 0)
		fuzz_die("fuzz_forward", "a built graph's JSON does not load", rc);
	if ((rc = atm_graph_dump(h, &b)) < 0 || strcmp(a, b))
		fuzz_die("fuzz_forward", "a built graph's JSON loads to another graph", rc);
	free(a);
	free(b);
	atm_graph_destroy(h);
	atm_graph_destroy(g);
	return 0;
}
