/* fuzz_plan.c -- libFuzzer target: any bytes as a plan file of a fixed graph; what loads keeps the step's rules and dumps, reloads and dumps to the same text */
#include "fuzz_common.h"

/* fuzz_plan_load -- how the corpus replay asks whether an input is a plan of the fuzz graph */
__attribute__((unused)) static atm_status fuzz_plan_load(const char *data, size_t len,
                                                         const char *origin)
{
	atm_plan *p = NULL;
	atm_status rc = atm_plan_load_buffer(&p, fuzz_graph_of_inputs(), data, len, origin);
	atm_plan_destroy(p);
	return rc;
}

/* LLVMFuzzerTestOneInput -- load; a refusal is an input error (or a layout over the plan's
 * own limit) naming the file; a plan that loads lays out a step and survives its JSON */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const atm_graph *g = fuzz_graph_of_inputs();
	atm_plan *p = NULL, *q = NULL;
	atm_schedule *s = NULL;
	char *a = NULL, *b = NULL;
	atm_status rc = atm_plan_load_buffer(&p, g, (const char *)data, size, "fuzz.json");
	if (rc < 0) {
		fuzz_check_refusal("fuzz_plan", rc, p, "fuzz.json", 2, ATM_E_INPUT, ATM_E_INFEASIBLE);
		return 0;
	}
	if ((rc = atm_schedule_new(&s, p)) < 0)
		fuzz_die("fuzz_plan", "a loaded plan does not lay out a step", rc);
	if ((rc = atm_plan_dump(p, &a)) < 0)
		fuzz_die("fuzz_plan", "a loaded plan does not dump", rc);
	if ((rc = atm_plan_load_buffer(&q, g, a, strlen(a), "dump.json")) < 0)
		fuzz_die("fuzz_plan", "the writer's output does not load", rc);
	if ((rc = atm_plan_dump(q, &b)) < 0)
		fuzz_die("fuzz_plan", "a reloaded plan does not dump", rc);
	if (strcmp(a, b) != 0)
		fuzz_die("fuzz_plan", "write -> read -> write is not byte-identical", rc);
	free(b);
	free(a);
	atm_schedule_destroy(s);
	atm_plan_destroy(q);
	atm_plan_destroy(p);
	return 0;
}
