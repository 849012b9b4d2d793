/* fuzz_results.c -- libFuzzer target: any bytes as the results file --append reads; a file refused is left as it was, one taken gains exactly one run */
#include <jansson.h>
#include <unistd.h>

#include "fuzz_common.h"

/* The file the target appends to: in memory (/dev/shm) where there is one, removed at exit. */
static char fuzz_results_file[64];

/* fuzz_results_cleanup -- remove the file and its lock */
static void fuzz_results_cleanup(void)
{
	char lock[80];
	snprintf(lock, sizeof lock, "%s.lock", fuzz_results_file);
	unlink(fuzz_results_file);
	unlink(lock);
}

/* fuzz_results_put -- len bytes of data as the file's whole text; its path */
static const char *fuzz_results_put(const char *data, size_t len)
{
	if (!fuzz_results_file[0]) {
		const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(fuzz_results_file, sizeof fuzz_results_file, "%s/atm-fuzz-results-%ld.json",
		         dir, (long)getpid());
		atexit(fuzz_results_cleanup);
	}
	FILE *f = fopen(fuzz_results_file, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
		fuzz_die("fuzz_results", "cannot write the input to a file", ATM_E_IO);
	return fuzz_results_file;
}

/* fuzz_results_load -- how the corpus replay asks whether an input takes an appended run of the
 * fuzz graph */
__attribute__((unused)) static atm_status fuzz_results_load(const char *data, size_t len,
                                                            const char *origin)
{
	(void)origin;
	return atm_results_check(fuzz_results_put(data, len), fuzz_graph_of_inputs(), true);
}

/* fuzz_results_runs -- how many runs path's results hold, -1 when it is no results JSON */
static long fuzz_results_runs(const char *text, size_t len)
{
	json_t *doc = json_loadb(text, len, 0, NULL);
	json_t *runs = json_object_get(doc, "runs");
	long n = json_is_array(runs) ? (long)json_array_size(runs) : -1;
	json_decref(doc);
	return n;
}

/* LLVMFuzzerTestOneInput -- the input as an existing results file, a run of the fuzz graph's
 * all-fast plan appended to it: refused as bad input or another workload with the file named
 * and untouched, or taken, after which it holds one run more and takes the next append too */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const atm_graph *g = fuzz_graph_of_inputs();
	static atm_plan *p;
	static atm_schedule *s;
	char *back = NULL;
	size_t len = 0;
	atm_status rc;
	if (!p && ((rc = atm_plan_uniform(&p, g, ATM_LOC_FAST)) < 0 ||
	           (rc = atm_schedule_new(&s, p)) < 0))
		fuzz_die("fuzz_results", "no plan of the fuzz graph", rc);
	const char *path = fuzz_results_put((const char *)data, size);
	rc = atm_results_check(path, g, true);
	if (rc < 0) {
		fuzz_check_refusal("fuzz_results", rc, NULL, path, 2, ATM_E_INPUT, ATM_E_USAGE);
		atm_status wrc = atm_results_write(path, p, s, NULL, NULL, true);
		if (wrc != rc)
			fuzz_die("fuzz_results", "the append refused otherwise than the check", wrc);
		fuzz_check_refusal("fuzz_results", wrc, NULL, path, 2, ATM_E_INPUT, ATM_E_USAGE);
		if (atm_read_file(path, &back, &len) < 0 || len != size || memcmp(back, data, size))
			fuzz_die("fuzz_results", "a refused file was changed", rc);
		free(back);
		return 0;
	}
	long before = fuzz_results_runs((const char *)data, size);
	if ((rc = atm_results_write(path, p, s, NULL, NULL, true)) < 0)
		fuzz_die("fuzz_results", "a file the check took refused the append", rc);
	if ((rc = atm_read_file(path, &back, &len)) < 0)
		fuzz_die("fuzz_results", "the appended file cannot be read", rc);
	long after = fuzz_results_runs(back, len);
	free(back);
	if (after != (before < 0 ? 1 : before + 1))
		fuzz_die("fuzz_results", "the append did not add exactly one run", ATM_OK);
	if ((rc = atm_results_check(path, g, true)) < 0)
		fuzz_die("fuzz_results", "an appended file refuses the next append", rc);
	return 0;
}
