/* fuzz_graph.c -- libFuzzer target: any bytes as a graph file; what loads must dump, reload and dump to the same text */
#include "fuzz_common.h"

/* fuzz_graph_load -- how the corpus replay asks whether an input is a graph file */
__attribute__((unused)) static atm_status fuzz_graph_load(const char *data, size_t len,
                                                          const char *origin)
{
	atm_graph *g = NULL;
	atm_status rc = atm_graph_load_buffer(&g, data, len, origin, NULL);
	atm_graph_destroy(g);
	return rc;
}

/* LLVMFuzzerTestOneInput -- load; on success dump, reload, dump again and compare, then
 * reload at another batch; on failure check the status and the message */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	atm_graph *g = NULL, *g2 = NULL;
	atm_graph_load_opts rebatch = {.batch = 3};
	atm_liveness *lv = NULL;
	atm_graph_stats st;
	char *a = NULL, *b = NULL;

	atm_status rc = atm_graph_load_buffer(&g, (const char *)data, size, "fuzz.json", NULL);
	if (rc < 0) {
		fuzz_check_refusal("fuzz_graph", rc, g, "fuzz.json", 1, ATM_E_INPUT);
		return 0;
	}
	if ((rc = atm_graph_dump(g, &a)) < 0)
		fuzz_die("fuzz_graph", "a loaded graph does not dump", rc);
	if ((rc = atm_graph_load_buffer(&g2, a, strlen(a), "dump.json", NULL)) < 0)
		fuzz_die("fuzz_graph", "the writer's output does not load", rc);
	if ((rc = atm_graph_dump(g2, &b)) < 0)
		fuzz_die("fuzz_graph", "a reloaded graph does not dump", rc);
	if (strcmp(a, b) != 0)
		fuzz_die("fuzz_graph", "write -> read -> write is not byte-identical", rc);
	if ((rc = atm_liveness_new(&lv, g)) < 0 || (rc = atm_graph_stats_compute(g, &st)) < 0)
		fuzz_die("fuzz_graph", "liveness of a valid graph failed", rc);
	atm_liveness_destroy(lv);
	atm_graph_destroy(g2);
	g2 = NULL;

	/* the same file at another batch: loads, or is refused as input or usage (no "batch") */
	rc = atm_graph_load_buffer(&g2, (const char *)data, size, "fuzz.json", &rebatch);
	if (rc < 0 && (g2 || (rc != ATM_E_INPUT && rc != ATM_E_USAGE)))
		fuzz_die("fuzz_graph", "loading at batch 3 failed oddly", rc);

	atm_graph_destroy(g2);
	atm_graph_destroy(g);
	free(b);
	free(a);
	return 0;
}
