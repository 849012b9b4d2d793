/* fuzz_graph.c -- libFuzzer target: any bytes as a graph file; what loads must dump, reload and dump to the same text */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atm_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_die -- report a broken promise of the loader and crash, so libFuzzer keeps the input */
static void fuzz_die(const char *what, atm_status rc)
{
	fprintf(stderr, "fuzz_graph: %s (status %d: %s)\n", what, rc, atm_errmsg());
	abort();
}

/* fuzz_check_failure -- a refused file is ATM_E_INPUT, leaves no graph, and its message names it */
static void fuzz_check_failure(atm_status rc, const atm_graph *g, const char *origin)
{
	if (g)
		fuzz_die("a failed load left a graph behind", rc);
	if (rc != ATM_E_INPUT)
		fuzz_die("bad input gave a status other than ATM_E_INPUT", rc);
	if (strncmp(atm_errmsg(), origin, strlen(origin)) != 0 || !strstr(atm_errmsg(), ": "))
		fuzz_die("the message does not start with the file name", rc);
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
		fuzz_check_failure(rc, g, "fuzz.json");
		return 0;
	}
	if ((rc = atm_graph_dump(g, &a)) < 0)
		fuzz_die("a loaded graph does not dump", rc);
	if ((rc = atm_graph_load_buffer(&g2, a, strlen(a), "dump.json", NULL)) < 0)
		fuzz_die("the writer's output does not load", rc);
	if ((rc = atm_graph_dump(g2, &b)) < 0)
		fuzz_die("a reloaded graph does not dump", rc);
	if (strcmp(a, b) != 0)
		fuzz_die("write -> read -> write is not byte-identical", rc);
	if ((rc = atm_liveness_new(&lv, g)) < 0 || (rc = atm_graph_stats_compute(g, &st)) < 0)
		fuzz_die("liveness of a valid graph failed", rc);
	atm_liveness_destroy(lv);
	atm_graph_destroy(g2);
	g2 = NULL;

	/* the same file at another batch: loads, or is refused as input or usage (no "batch") */
	rc = atm_graph_load_buffer(&g2, (const char *)data, size, "fuzz.json", &rebatch);
	if (rc < 0 && (g2 || (rc != ATM_E_INPUT && rc != ATM_E_USAGE)))
		fuzz_die("loading at batch 3 failed oddly", rc);

	atm_graph_destroy(g2);
	atm_graph_destroy(g);
	free(b);
	free(a);
	return 0;
}
