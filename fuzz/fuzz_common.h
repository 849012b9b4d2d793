/* fuzz_common.h -- what the libFuzzer targets share: a broken promise crashes, a refusal is checked alike, the graph plans and results are of
 *
 * Each target (fuzz_graph.c, fuzz_plan.c, fuzz_profile.c, fuzz_tierspec.c, fuzz_results.c)
 * includes this header once; tests/fuzz/test_corpus.c includes every target into one program
 * built by the ordinary compiler, so names here are static and guarded.
 */
#ifndef ATM_FUZZ_COMMON_H
#define ATM_FUZZ_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atm_core.h"
#include "atm_formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_die -- report a broken promise of a loader and crash, so libFuzzer keeps the input */
__attribute__((noreturn, unused)) static void fuzz_die(const char *target, const char *what,
                                                       atm_status rc)
{
	fprintf(stderr, "%s: %s (status %d: %s)\n", target, what, rc, atm_errmsg());
	abort();
}

/* fuzz_check_refusal -- a refused input: its status is one of the n_ok codes that follow,
 * nothing was left behind (left), and the message starts with the origin */
__attribute__((unused)) static void fuzz_check_refusal(const char *target, atm_status rc,
                                                       const void *left, const char *origin,
                                                       int n_ok, ...)
{
	va_list ap;
	bool ok = false;
	va_start(ap, n_ok);
	for (int i = 0; i < n_ok; i++)
		ok = ok || rc == va_arg(ap, atm_status);
	va_end(ap);
	if (left)
		fuzz_die(target, "a refused input left an object behind", rc);
	if (!ok)
		fuzz_die(target, "a refusal with an unexpected status", rc);
	if (strncmp(atm_errmsg(), origin, strlen(origin)) != 0)
		fuzz_die(target, "the message does not start with the input's name", rc);
}

/* The graph plan and results inputs are of: a two-layer perceptron's training step, small
 * enough to fuzz fast, with activations that may move and parameters that are updated. */
static const char fuzz_graph_text[] =
	"{\"format\": \"autotm-graph\", \"version\": 1, \"name\": \"fuzz_mlp\",\n"
	" \"parameters\": {\"batch\": 2},\n"
	" \"tensors\": [\n"
	"  {\"id\": 0, \"name\": \"x\", \"shape\": [\"batch\", 8], \"kind\": \"input\"},\n"
	"  {\"id\": 1, \"name\": \"labels\", \"shape\": [\"batch\", 4], \"kind\": \"input\"},\n"
	"  {\"id\": 2, \"name\": \"fc1.w\", \"shape\": [6, 8], \"kind\": \"param\"},\n"
	"  {\"id\": 3, \"name\": \"fc1.b\", \"shape\": [6], \"kind\": \"param\"},\n"
	"  {\"id\": 4, \"name\": \"fc2.w\", \"shape\": [4, 6], \"kind\": \"param\"},\n"
	"  {\"id\": 5, \"name\": \"fc2.b\", \"shape\": [4], \"kind\": \"param\"},\n"
	"  {\"id\": 6, \"name\": \"fc1.y\", \"shape\": [\"batch\", 6], \"kind\": \"activation\"},\n"
	"  {\"id\": 7, \"name\": \"relu1.y\", \"shape\": [\"batch\", 6], \"kind\": \"activation\"},\n"
	"  {\"id\": 8, \"name\": \"fc2.y\", \"shape\": [\"batch\", 4], \"kind\": \"activation\"},\n"
	"  {\"id\": 9, \"name\": \"probs\", \"shape\": [\"batch\", 4], \"kind\": \"activation\"},\n"
	"  {\"id\": 10, \"name\": \"loss\", \"shape\": [1], \"kind\": \"output\"},\n"
	"  {\"id\": 11, \"name\": \"fc2.dy\", \"shape\": [\"batch\", 4], \"kind\": \"grad\"},\n"
	"  {\"id\": 12, \"name\": \"relu1.dy\", \"shape\": [\"batch\", 6], \"kind\": \"grad\"},\n"
	"  {\"id\": 13, \"name\": \"fc2.dw\", \"shape\": [4, 6], \"kind\": \"grad\"},\n"
	"  {\"id\": 14, \"name\": \"fc2.db\", \"shape\": [4], \"kind\": \"grad\"},\n"
	"  {\"id\": 15, \"name\": \"fc1.dy\", \"shape\": [\"batch\", 6], \"kind\": \"grad\"},\n"
	"  {\"id\": 16, \"name\": \"fc1.dw\", \"shape\": [6, 8], \"kind\": \"grad\"},\n"
	"  {\"id\": 17, \"name\": \"fc1.db\", \"shape\": [6], \"kind\": \"grad\"}\n"
	" ],\n"
	" \"nodes\": [\n"
	"  {\"id\": 0, \"name\": \"fc1\", \"op\": \"ip_fwd\", \"inputs\": [0, 2, 3], \"outputs\": [6]},\n"
	"  {\"id\": 1, \"name\": \"relu1\", \"op\": \"relu_fwd\", \"inputs\": [6], \"outputs\": [7]},\n"
	"  {\"id\": 2, \"name\": \"fc2\", \"op\": \"ip_fwd\", \"inputs\": [7, 4, 5], \"outputs\": [8]},\n"
	"  {\"id\": 3, \"name\": \"loss\", \"op\": \"softmax_xent_fwd\", \"inputs\": [8, 1],"
	" \"outputs\": [9, 10]},\n"
	"  {\"id\": 4, \"name\": \"loss.bwd\", \"op\": \"softmax_xent_bwd\", \"inputs\": [9, 1],"
	" \"outputs\": [11]},\n"
	"  {\"id\": 5, \"name\": \"fc2.bwd_data\", \"op\": \"ip_bwd_data\", \"inputs\": [11, 4],"
	" \"outputs\": [12]},\n"
	"  {\"id\": 6, \"name\": \"fc2.bwd_weights\", \"op\": \"ip_bwd_weights\", \"inputs\": [7, 11],"
	" \"outputs\": [13, 14]},\n"
	"  {\"id\": 7, \"name\": \"fc2.w.sgd\", \"op\": \"sgd\", \"inputs\": [4, 13], \"outputs\": [],"
	" \"attrs\": {\"lr\": 0.01}},\n"
	"  {\"id\": 8, \"name\": \"fc2.b.sgd\", \"op\": \"sgd\", \"inputs\": [5, 14], \"outputs\": [],"
	" \"attrs\": {\"lr\": 0.01}},\n"
	"  {\"id\": 9, \"name\": \"relu1.bwd\", \"op\": \"relu_bwd\", \"inputs\": [7, 12],"
	" \"outputs\": [15]},\n"
	"  {\"id\": 10, \"name\": \"fc1.bwd_weights\", \"op\": \"ip_bwd_weights\", \"inputs\": [0, 15],"
	" \"outputs\": [16, 17]},\n"
	"  {\"id\": 11, \"name\": \"fc1.w.sgd\", \"op\": \"sgd\", \"inputs\": [2, 16], \"outputs\": [],"
	" \"attrs\": {\"lr\": 0.01}},\n"
	"  {\"id\": 12, \"name\": \"fc1.b.sgd\", \"op\": \"sgd\", \"inputs\": [3, 17], \"outputs\": [],"
	" \"attrs\": {\"lr\": 0.01}}\n"
	" ]}\n";

/* fuzz_graph_of_inputs -- that graph, built once and kept for the process */
__attribute__((unused)) static const atm_graph *fuzz_graph_of_inputs(void)
{
	static atm_graph *g;
	if (!g && atm_graph_load_buffer(&g, fuzz_graph_text, strlen(fuzz_graph_text), "fuzz_mlp",
	                                NULL) < 0)
		fuzz_die("fuzz", "the fuzz graph does not load", ATM_E_INTERNAL);
	return g;
}

#endif /* ATM_FUZZ_COMMON_H */
