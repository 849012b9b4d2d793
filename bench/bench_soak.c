/* bench_soak.c -- placement soak: many random placements (synchronous and asynchronous moves, recomputations) trained against all-fast, for bitwise-identical losses and weights and a fast limit never exceeded */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atm_runtime.h"
#include "atm_zoo.h"
#include "bench_util.h"

static const char usage[] =
	"usage: bench_soak [--placements N] [--models LIST] [--batch B] [--seed S]\n"
	"                  [--first-placement N] [--steps N] [--quiet]\n"
	"\n"
	"For every network: trains --steps steps of the all-fast placement with weights and\n"
	"data of --seed, then the same steps under N random placements, placement seeds\n"
	"--first-placement onwards: the plans 'autotm run --placement random\n"
	"--placement-seed K --seed S' runs, with synchronous and asynchronous moves and\n"
	"recomputations (a tensor dropped after a use and made again before the next, its\n"
	"node's dead inputs made again too by links, nodes with several outputs among them).\n"
	"Each plan's fast limit is the arena its layout needs; the run must stay within it\n"
	"(the fast arena's high-water mark) and end with losses and weights bitwise equal\n"
	"to all-fast's. Prints the counts per network; exit code 1 when any differs.\n"
	"Defaults: 100 placements from 1; tiny_cnn,tiny_mlp,test_vgg; batch 2; seed 1;\n"
	"2 steps (the second trains on weights the first updated where the plan put them).\n";

struct opts {
	const char *models;
	long long placements, first, batch, seed, steps;
	bool quiet;
};

/* What one network's soak found. */
struct tally {
	int n, identical, within, with_async;
	int64_t n_sync, n_async;  /* moves per step, over every placement */
	int64_t n_recomputes;     /* recomputations per step, over every placement */
	int64_t worst_high_water, its_limit;
	double worst_fill;        /* the largest high-water mark / limit */
};

/* train -- the steps of p with o's seed; the result stays with *e (caller destroys) */
static atm_status train(const struct opts *o, const atm_plan *p, atm_exec **e)
{
	atm_exec_opts eo = {.iters = (int)o->steps, .warmup = -1, .seed = (uint64_t)o->seed,
	                    .quiet = true};
	atm_status rc = atm_exec_new(e, p, &eo);
	return rc < 0 ? rc : atm_exec_run(*e);
}

/* same_training -- losses and weights bitwise equal */
static bool same_training(const atm_exec_result *a, const atm_exec_result *b)
{
	return a->n_losses == b->n_losses &&
	       !memcmp(a->losses, b->losses, (size_t)a->n_losses * sizeof *a->losses) &&
	       !strcmp(a->weights_checksum, b->weights_checksum);
}

/* soak_one -- placement k of g, limited to the arena its layout needs, trained and compared
 * with ref */
static atm_status soak_one(const struct opts *o, const atm_graph *g, uint64_t k,
                           const atm_exec_result *ref, struct tally *t)
{
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	atm_exec *e = NULL;
	atm_status rc;
	if ((rc = atm_plan_random(&p, g, k)) < 0 || (rc = atm_schedule_new(&s, p)) < 0)
		goto done;
	const atm_schedule_stats *st = atm_schedule_stats_get(s);
	int64_t limit = st->fast_arena_bytes;
	int64_t n_async = st->n_async_to_fast + st->n_async_to_slow;
	atm_plan_info_of(p)->fast_limit_bytes = limit;
	if ((rc = train(o, p, &e)) < 0)
		goto done;
	const atm_exec_result *r = atm_exec_result_get(e);
	t->n++;
	t->identical += same_training(ref, r);
	t->within += r->fast_high_water_bytes <= limit;
	t->with_async += n_async > 0;
	t->n_async += n_async;
	t->n_sync += st->n_moves_to_fast + st->n_moves_to_slow - n_async;
	t->n_recomputes += r->n_recomputes;
	double fill = limit > 0 ? (double)r->fast_high_water_bytes / (double)limit : 0;
	if (fill >= t->worst_fill) {
		t->worst_fill = fill;
		t->worst_high_water = r->fast_high_water_bytes;
		t->its_limit = limit;
	}
	if (!same_training(ref, r) || r->fast_high_water_bytes > limit)
		fprintf(stderr, "bench_soak: %s, placement %llu: %s%s\n", atm_graph_name(g),
		        (unsigned long long)k, same_training(ref, r) ? "" : "training differs from all-fast; ",
		        r->fast_high_water_bytes > limit ? "fast limit exceeded" : "");
done:
	atm_exec_destroy(e);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
	return rc;
}

/* soak -- one network: the all-fast reference, then every placement; its tally printed */
static atm_status soak(const struct opts *o, const char *model, struct tally *t)
{
	atm_zoo_preset_sizes ps;
	atm_graph *g = NULL;
	atm_plan *fast = NULL;
	atm_exec *ref = NULL;
	char a[32], b[32];
	atm_status rc;
	memset(t, 0, sizeof *t);
	if ((rc = atm_zoo_preset(model, "small", &ps)) < 0)
		return rc;
	atm_zoo_opts zo = {.batch = o->batch, .image = ps.image, .seq = ps.seq};
	if ((rc = atm_zoo_build(&g, model, &zo)) < 0 ||
	    (rc = atm_plan_uniform(&fast, g, ATM_LOC_FAST)) < 0 || (rc = train(o, fast, &ref)) < 0)
		goto done;
	for (long long i = 0; i < o->placements; i++) {
		if (!o->quiet && isatty(STDERR_FILENO))
			fprintf(stderr, "\r  %s: placement %lld of %lld   ", model, i + 1, o->placements);
		if ((rc = soak_one(o, g, (uint64_t)(o->first + i), atm_exec_result_get(ref), t)) < 0)
			goto done;
	}
	if (!o->quiet && isatty(STDERR_FILENO))
		fprintf(stderr, "\r%60s\r", "");
	char same[32], kept[32];
	snprintf(same, sizeof same, "%d/%d", t->identical, t->n);
	snprintf(kept, sizeof kept, "%d/%d", t->within, t->n);
	printf("| %-9s | %5lld | %7d | %9s | %8s | %7lld | %8lld | %10d | %10lld | %s of %s |\n",
	       model, o->batch, atm_graph_n_nodes(g), same, kept, (long long)t->n_sync,
	       (long long)t->n_async, t->with_async, (long long)t->n_recomputes,
	       atm_format_bytes(t->worst_high_water, a, sizeof a),
	       atm_format_bytes(t->its_limit, b, sizeof b));
	fflush(stdout);
done:
	atm_exec_destroy(ref);
	atm_plan_destroy(fast);
	atm_graph_destroy(g);
	return rc;
}

/* parse -- the command line into o; -1 to go on, else the exit code */
static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"placements", required_argument, NULL, 'n'},
		{"first-placement", required_argument, NULL, 'f'},
		{"models", required_argument, NULL, 'm'},
		{"batch", required_argument, NULL, 'b'},
		{"seed", required_argument, NULL, 's'},
		{"steps", required_argument, NULL, 'k'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *prog = "bench_soak";
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		bool ok = true;
		switch (opt) {
		case 'n': ok = bench_int(prog, "placements", optarg, 1, 1000000, &o->placements); break;
		case 'f': ok = bench_int(prog, "first-placement", optarg, 0, INT64_MAX / 2, &o->first); break;
		case 'b': ok = bench_int(prog, "batch", optarg, 1, 1000000, &o->batch); break;
		case 's': ok = bench_int(prog, "seed", optarg, 0, INT64_MAX, &o->seed); break;
		case 'k': ok = bench_int(prog, "steps", optarg, 1, 1000, &o->steps); break;
		case 'm': o->models = optarg; break;
		case 'q': o->quiet = true; break;
		default: return bench_other_option(prog, opt, optind, argv, usage);
		}
		if (!ok)
			return 2;
	}
	if (optind < argc)
		return bench_usage_error(prog, "unexpected argument '%s'", argv[optind]);
	return bench_models_known(prog, o->models);
}

int main(int argc, char **argv)
{
	atm_openmp_passive(argv); /* idle kernel threads sleep, not spin */
	struct opts o = {.models = "tiny_cnn,tiny_mlp,test_vgg", .placements = 100, .first = 1,
	                 .batch = 2, .seed = 1, .steps = 2};
	int code = parse(argc, argv, &o);
	if (code >= 0)
		return code;
	printf("placement soak: %lld random placements per network (placement seeds %lld to %lld), "
	       "%lld steps each, weights and data of seed %lld, against all-fast\n\n", o.placements,
	       o.first, o.first + o.placements - 1, o.steps, o.seed);
	printf("| network   | batch | kernels | identical | in limit | sync mv | async mv | "
	       "with async | recomputed | highest fast high-water mark |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|\n");
	bool all = true;
	char name[64];
	for (const char *s = o.models; bench_split(&s, name, sizeof name);) {
		struct tally t;
		if (soak(&o, name, &t) < 0) {
			fprintf(stderr, "bench_soak: %s: %s\n", name, atm_errmsg());
			return atm_exit_code(-1);
		}
		all = all && t.identical == t.n && t.within == t.n;
	}
	printf("\nmoves and recomputations are per step, summed over the placements; the limit of each "
	       "placement is the arena its layout needs\n");
	return all ? 0 : 1;
}
