/* compare.c -- several placements of one workload planned first, then trained in turns in one process */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "job_internal.h"

/* One placement of the comparison. */
struct entry {
	atm_job_placement spec;
	char name[256];
	bool all_fast;
	atm_job *j;              /* NULL once left out */
	char why[512];           /* why it was left out */
	double *turn_s, *turn_others;
	int *turn_position, *turn_reruns;
	double others_s, wall_s; /* this turn's counted steps: CPU others took, wall time */
	atm_job_compared out;
	atm_run_comparison cmp;
	const char *starts[ATM_JOB_MAX_STARTS]; /* the --start plans of its formulation */
	int n_starts;
};

struct atm_job_compare {
	const atm_graph *g;
	atm_job_opts o;
	atm_job_compare_opts co;
	const char *who;
	int n;
	struct entry *e;
	int all_fast;            /* the compared all-fast's index; -1: none */
	char id[96];
	const char *interleave;  /* "step" or "turn" once run */
	atm_backend_caps caps;   /* what the chosen backend can do */
	bool ran;
	bool weights_out;        /* o.weights_out written: by the first placement to finish */
	char slow_dir[ATM_TIER_PATH_MAX]; /* the default pmem folder chosen for every executor */
	atm_comm *comm;          /* under mpirun, the ranks (each runs this comparison); NULL alone */
	bool *near;              /* under mpirun, near[r]: rank r is another process on this host */
};

/* ---------------------------------------------------------------- under mpirun */

/* Under mpirun every rank runs the comparison in step: the same placements planned (rank 0
 * plans, atm_job_plan), left out and measured again alike, so that each step's allreduce
 * meets every rank in it. What a rank decides from its own clock or memory is agreed first. */

/* agreed -- under mpirun rc agreed by every rank (the first failure is each one's), alone rc */
static atm_status agreed(const atm_job_compare *c, atm_status rc)
{
	return c->comm ? atm_job_ranks_status(c->comm, rc) : rc;
}

/* per_rank -- *out: calloc'd room for a value of size bytes per rank; its failure every rank's */
static atm_status per_rank(const atm_job_compare *c, size_t size, void **out)
{
	*out = calloc((size_t)atm_comm_size(c->comm), size);
	return agreed(c, *out ? ATM_OK : atm_err(ATM_E_NOMEM, "out of memory comparing placements"));
}

/* any_rank -- *any: mine holds on some rank (under mpirun) or here (alone) */
static atm_status any_rank(const atm_job_compare *c, bool mine, bool *any)
{
	*any = mine;
	if (!c->comm)
		return ATM_OK;
	int n = atm_comm_size(c->comm);
	uint64_t *all = NULL;
	atm_status rc = per_rank(c, sizeof *all, (void **)&all);
	if (rc == ATM_OK)
		rc = atm_comm_allgather_u64(c->comm, mine, all);
	for (int r = 0; rc == ATM_OK && r < n; r++)
		*any = *any || all[r];
	free(all);
	return rc;
}

/* find_near -- which other ranks run on this host: their CPU time is the comparison's own,
 * not other programs' */
static atm_status find_near(atm_job_compare *c)
{
	char host[256] = "";
	int n = atm_comm_size(c->comm), me = atm_comm_rank(c->comm);
	uint64_t *all = calloc((size_t)n, sizeof *all);
	c->near = calloc((size_t)n, sizeof *c->near);
	atm_status rc = ATM_OK;
	if (!all || !c->near)
		rc = atm_err(ATM_E_NOMEM, "out of memory comparing placements");
	if (gethostname(host, sizeof host - 1) != 0)
		host[0] = '\0'; /* unnamed: every such rank is taken as one host's */
	if ((rc = agreed(c, rc)) == ATM_OK)
		rc = atm_comm_allgather_u64(c->comm, atm_fnv1a(ATM_FNV1A_INIT, host, strlen(host)), all);
	for (int r = 0; rc == ATM_OK && r < n; r++)
		c->near[r] = r != me && all[r] == all[me];
	free(all);
	return rc;
}

/* others_beside_ranks -- others[k] (CPU seconds the machine's other processes took during a
 * step, NAN unknown) less what this host's other ranks took in their own step k (own[k] on
 * each): ranks in step overlap their steps, and each rank's work is the comparison's */
static atm_status others_beside_ranks(const atm_job_compare *c, double *others, const double *own,
                                      int n)
{
	if (!c->comm)
		return ATM_OK;
	int ranks = atm_comm_size(c->comm);
	double *all = NULL;
	atm_status rc = per_rank(c, sizeof *all, (void **)&all);
	for (int k = 0; rc == ATM_OK && k < n; k++) {
		if ((rc = atm_comm_allgather_f64(c->comm, own[k], all)) < 0)
			break;
		for (int r = 0; r < ranks; r++)
			others[k] -= c->near[r] ? all[r] : 0;
		others[k] = others[k] < 0 ? 0 : others[k]; /* NAN stays NAN */
	}
	free(all);
	return rc;
}

/* step -- one step of e; a failure under mpirun, which the other ranks meet in their allreduce
 * or never, ends every rank (job_dist_fail_alone) */
static atm_status step(struct entry *e, double *dt)
{
	atm_status rc = atm_exec_step(e->j->exec, dt);
	if (rc < 0 && job_dist(e->j))
		job_dist_fail_alone(e->j, atm_err_prefix(rc, "%s: ", e->name));
	return rc;
}

/* real_device -- the comparison runs on a real device, whose memory cannot hold every
 * placement's executor at once */
static bool real_device(const atm_job_compare *c)
{
	return c->caps.device_memory && !c->caps.simulated;
}

/* is_placement -- spec is the built-in placement name */
static bool is_placement(const atm_job_placement *spec, const char *name)
{
	return !spec->optimize && spec->placement && !strcmp(spec->placement, name);
}

/* needs_gpu, gpu_cannot -- placements of one kind of backend only: managed memory is a GPU's,
 * and a GPU's kernels cannot read slow memory */
static bool needs_gpu(const atm_job_placement *spec)
{
	return is_placement(spec, "managed");
}

static bool gpu_cannot(const atm_job_placement *spec)
{
	return spec->optimize ? spec->formulation == ATM_OPT_ALL_SLOW || spec->formulation == ATM_OPT_2LM
	                      : is_placement(spec, "all-slow");
}

/* make_id -- the comparison's id: UTC time, process id and 64 random bits */
static void make_id(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	uint64_t r = 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
		static uint64_t count;
		r = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)getpid() ^ ++count * 0x9e3779b97f4a7c15ull;
	}
	snprintf(buf, len, "%04d%02d%02dT%02d%02d%02dZ-%ld-%016llx", tm.tm_year + 1900,
	         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)getpid(),
	         (unsigned long long)r);
}

/* same_plan_file -- a and b are plan files (not built-in placements) that are one file,
 * however spelt: a path, another path to it, a link */
static bool same_plan_file(const struct entry *a, const struct entry *b)
{
	struct stat sa, sb;
	return !a->spec.optimize && !b->spec.optimize && a->spec.placement && b->spec.placement &&
	       stat(a->spec.placement, &sa) == 0 && stat(b->spec.placement, &sb) == 0 &&
	       S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* check_list -- what a list of placements must be before anything is profiled: each listed
 * once (a plan file by the file, not its spelling), all of them for one device */
static atm_status check_list(const atm_job_compare *c)
{
	const char *gpu = NULL, *cpu = NULL;
	for (int i = 0; i < c->n; i++) {
		const struct entry *e = &c->e[i];
		for (int k = 0; k < i; k++)
			if (!strcmp(c->e[k].name, e->name))
				return atm_err(ATM_E_USAGE, "'%s' is listed twice; compare each placement once",
				               e->name);
			else if (same_plan_file(&c->e[k], e))
				return atm_err(ATM_E_USAGE, "'%s' and '%s' are one plan file; compare each "
				               "placement once", c->e[k].spec.placement, e->spec.placement);
		if (needs_gpu(&e->spec))
			gpu = e->name;
		if (gpu_cannot(&e->spec))
			cpu = e->name;
	}
	if (gpu && cpu)
		return atm_err(ATM_E_USAGE, "the list mixes %s, which needs a GPU, with %s, which a GPU "
		               "cannot run: the placements of a comparison run on one device", gpu, cpu);
	if (gpu && !c->caps.device_memory)
		return atm_err(ATM_E_USAGE, "%s is the cudaMallocManaged baseline of a GPU: give --gpu",
		               gpu);
	if (cpu && c->caps.device_only)
		return atm_err(ATM_E_USAGE, "%s leaves kernels' operands in slow memory, and on a GPU "
		               "kernels use device memory only; leave it out with --gpu", cpu);
	if (c->co.interleave == ATM_JOB_INTERLEAVE_STEP && real_device(c))
		return atm_err(ATM_E_USAGE, "step interleaving keeps every placement's executor alive "
		               "at once, and on a GPU each takes the device memory: interleave by turn");
	if (c->o.estimate)
		return atm_err(ATM_E_USAGE, "plans priced by an estimated profile are not run: there is "
		               "nothing to compare");
	if (c->o.twolm_bytes)
		return atm_err(ATM_E_USAGE, "an emulated 2LM cache applies to one all-slow run; in a "
		               "comparison list the 2lm formulation");
	return ATM_OK;
}

/* share_starts -- each --start plan to the placement the optimizer plans in its formulation:
 * ATM_E_INPUT naming the file when no placement is planned in it */
static atm_status share_starts(atm_job_compare *c)
{
	char have[64], names[512];
	atm_status rc;
	if (c->o.n_starts > ATM_JOB_MAX_STARTS || (c->o.n_starts > 0 && !c->o.starts))
		return atm_err(ATM_E_USAGE, "%d --start plans is not valid; expected 1 to %d",
		               c->o.n_starts, ATM_JOB_MAX_STARTS);
	for (int s = 0; s < c->o.n_starts; s++) {
		const char *path = c->o.starts[s];
		int taken = 0;
		if ((rc = atm_job_plan_file_formulation(c->g, path, have, sizeof have)) < 0)
			return rc;
		names[0] = 0;
		for (int i = 0; i < c->n; i++) {
			struct entry *e = &c->e[i];
			if (!e->spec.optimize)
				continue;
			size_t k = strlen(names);
			snprintf(names + k, sizeof names - k, "%s%s", k ? ", " : "", e->name);
			if (strcmp(e->name, have))
				continue;
			e->starts[e->n_starts++] = path;
			taken++;
		}
		if (!taken)
			return atm_err(ATM_E_INPUT, "--start %s is a %s plan, and the comparison plans %s: "
			               "a start must be a plan of a formulation it plans", path, have,
			               names[0] ? names : "none (its placements are given)");
	}
	return ATM_OK;
}

/* entry_new -- placement i's job; a built-in placement or plan file is made (read) now */
static atm_status entry_new(atm_job_compare *c, int i)
{
	struct entry *e = &c->e[i];
	atm_job_opts jo = c->o;
	jo.optimize = e->spec.optimize;
	jo.formulation = e->spec.formulation;
	/* --recompute with a list: each of its ILP formulations recomputes */
	jo.opt.recompute = e->spec.optimize && atm_opt_is_ilp(e->spec.formulation) &&
	                   (e->spec.recompute || c->o.opt.recompute);
	jo.placement = e->spec.optimize ? NULL : e->spec.placement;
	jo.starts = e->starts;
	jo.n_starts = e->n_starts;
	jo.results_path = NULL;
	jo.append = false;
	jo.weights_out = NULL; /* the comparison writes it once (write_weights) */
	jo.quiet = c->o.quiet || i > 0; /* what a GPU probe says is said once */
	atm_status rc = atm_job_new(&e->j, c->g, &jo);
	if (rc < 0)
		return rc;
	e->j->o.quiet = c->o.quiet;
	if (!e->spec.optimize && (rc = atm_job_plan(e->j)) < 0)
		return atm_err_prefix(rc, "%s: ", e->name);
	return ATM_OK;
}

atm_status atm_job_compare_new(atm_job_compare **out, const atm_graph *g, const atm_job_opts *o,
                               const atm_job_placement *pl, int n, const atm_job_compare_opts *co)
{
	atm_job_compare *c = NULL;
	atm_status rc;
	*out = NULL;
	if (n < 1)
		return atm_err(ATM_E_USAGE, "no placement to compare");
	if (co && co->turns < 0)
		return atm_err(ATM_E_USAGE, "%d turns: a comparison takes at least one", co->turns);
	if (o->iters < 1)
		return atm_err(ATM_E_USAGE, "%d steps a turn: a turn counts at least one", o->iters);
	if (!(c = calloc(1, sizeof *c)) || !(c->e = calloc((size_t)n, sizeof *c->e))) {
		free(c);
		return atm_err(ATM_E_NOMEM, "out of memory starting a comparison");
	}
	c->g = g;
	c->o = *o;
	c->comm = o->comm && atm_comm_active(o->comm) ? o->comm : NULL;
	c->who = o->who ? o->who : "run";
	c->n = n;
	c->all_fast = -1;
	if (co)
		c->co = *co;
	if (!c->co.turns)
		c->co.turns = 5;
	if (!c->co.max_reruns)
		c->co.max_reruns = o->iters > 0 ? o->iters : 1;
	if (!(c->co.disturbed_cores > 0))
		c->co.disturbed_cores = ATM_JOB_DISTURBED_CORES;
	make_id(c->id, sizeof c->id);
	if ((rc = atm_backend_caps_get(o->mem.gpu.mode, &c->caps)) < 0) {
		atm_err_prefix(rc, "--gpu: ");
		goto fail;
	}
	for (int i = 0; i < n; i++) {
		struct entry *e = &c->e[i];
		e->spec = pl[i];
		if (pl[i].optimize)
			snprintf(e->name, sizeof e->name, "%s%s", atm_opt_formulation_name(pl[i].formulation),
			         atm_opt_is_ilp(pl[i].formulation) && (pl[i].recompute || o->opt.recompute)
			         ? ATM_OPT_RECOMPUTE_SUFFIX : "");
		else
			snprintf(e->name, sizeof e->name, "%s", pl[i].placement ? pl[i].placement : "all-fast");
		e->spec.placement = pl[i].optimize ? NULL : pl[i].placement ? pl[i].placement : "all-fast";
		e->all_fast = pl[i].optimize ? pl[i].formulation == ATM_OPT_ALL_FAST
		                             : is_placement(&e->spec, "all-fast");
		e->out.name = e->name;
	}
	if ((rc = check_list(c)) == ATM_OK)
		rc = share_starts(c);
	if (rc == ATM_OK && o->results_path) /* rank 0's alone under mpirun */
		rc = atm_results_check(o->results_path, g, o->append);
	if ((rc = agreed(c, rc)) < 0 || (c->comm && (rc = find_near(c)) < 0))
		goto fail;
	for (int i = 0; i < n; i++)
		if ((rc = entry_new(c, i)) < 0)
			goto fail;
	*out = c;
	return ATM_OK;
fail:
	atm_job_compare_destroy(c);
	return rc;
}

void atm_job_compare_destroy(atm_job_compare *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++) {
		struct entry *e = &c->e[i];
		atm_job_destroy(e->j);
		free(e->turn_s);
		free(e->turn_others);
		free(e->turn_position);
		free(e->turn_reruns);
	}
	free(c->e);
	free(c->near);
	free(c);
}

/* leave_out -- placement e is not compared, for the reason atm_errmsg() gives (rc) */
static void leave_out(atm_job_compare *c, struct entry *e, atm_status rc)
{
	snprintf(e->why, sizeof e->why, "%s", atm_errmsg());
	e->out.left_out = rc;
	e->out.why = e->why;
	atm_job_destroy(e->j);
	e->j = NULL;
	if (!c->o.quiet)
		fprintf(stderr, "autotm %s: %s is left out of the comparison: %s\n", c->who, e->name,
		        e->why);
	else if (c->comm && atm_comm_rank(c->comm) && strcmp(e->why, ATM_JOB_SAID_BY_RANK0) &&
	         !strstr(e->why, "(its message above)")) /* a reason of this rank's own */
		fprintf(stderr, "autotm %s (rank %d of %d): %s is left out of the comparison: %s\n",
		        c->who, atm_comm_rank(c->comm), atm_comm_size(c->comm), e->name, e->why);
	atm_err_clear();
}

/* n_compared -- placements still in the comparison */
static int n_compared(const atm_job_compare *c)
{
	int k = 0;
	for (int i = 0; i < c->n; i++)
		k += c->e[i].j != NULL;
	return k;
}

/* managed_algos -- the managed baseline runs each kernel with the algorithm the profile found
 * fastest, as the compared plans do, when one of them brought a profile */
static atm_status managed_algos(atm_job_compare *c)
{
	const atm_profile *prof = NULL;
	for (int i = 0; i < c->n && !prof; i++)
		prof = c->e[i].j ? atm_job_profile(c->e[i].j) : NULL;
	for (int i = 0; i < c->n && prof; i++) {
		struct entry *e = &c->e[i];
		atm_status rc;
		if (e->j && needs_gpu(&e->spec) && (rc = atm_opt_choose_algos(e->j->plan, prof)) < 0)
			return atm_err_prefix(rc, "%s: ", e->name);
	}
	return ATM_OK;
}

atm_status atm_job_compare_plan(atm_job_compare *c)
{
	for (int i = 0; i < c->n; i++) {
		struct entry *e = &c->e[i];
		if (!e->j || !e->spec.optimize)
			continue;
		atm_status rc = atm_job_plan(e->j);
		if (rc == ATM_E_INFEASIBLE)
			leave_out(c, e, rc);
		else if (rc < 0)
			return atm_err_prefix(rc, "%s: ", e->name);
	}
	if (!n_compared(c))
		return atm_err(ATM_E_INFEASIBLE, "none of the %d placements could be planned", c->n);
	atm_status rc = agreed(c, managed_algos(c));
	for (int i = 0; i < c->n && rc == ATM_OK && c->comm; i++)
		if (c->e[i].j && needs_gpu(&c->e[i].spec))
			rc = job_dist_agree_plan(c->e[i].j);
	return rc;
}

/* ---------------------------------------------------------------- what else took the cores */

/* A moment of the process and the machine. User time only: the kernel's own threads work for
 * this process too (writing back a file-backed slow tier's dirty pages, say), and counting them
 * would flag the slow placements' every step; what disturbs a measurement here is other
 * programs (a build, a test suite) and a hypervisor giving these CPUs to someone else. */
struct usage {
	double wall_s, own_s; /* the monotonic clock, this process's user CPU time (all threads) */
	double busy_s;        /* every CPU's user time and time stolen by a hypervisor; NAN when
	                       * /proc/stat cannot be read */
};

/* machine_busy_s -- CPU seconds of the whole machine since boot in user programs (user, nice)
 * or given by a hypervisor to someone else (steal), from /proc/stat */
static double machine_busy_s(void)
{
	unsigned long long v[8] = {0};
	long tick = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return NAN;
	int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
	                 &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (got < 4 || tick <= 0)
		return NAN;
	return (double)(v[0] + v[1] + v[7]) / (double)tick;
}

static void usage_now(struct usage *u)
{
	struct rusage ru;
	u->busy_s = machine_busy_s();
	getrusage(RUSAGE_SELF, &ru);
	u->own_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
	u->wall_s = atm_now_s();
}

/* others_s -- CPU seconds other processes took from a to b; NAN when unknown */
static double others_s(const struct usage *a, const struct usage *b)
{
	double o = (b->busy_s - a->busy_s) - (b->own_s - a->own_s);
	return isnan(o) ? NAN : o < 0 ? 0 : o;
}

/* disturbed -- others took more than the limit's share of a core over wall_s, judged only
 * where wall_s is long enough for /proc/stat's ticks */
static bool disturbed(const atm_job_compare *c, double others, double wall_s)
{
	return wall_s >= ATM_JOB_JUDGED_S && !isnan(others) && others > c->co.disturbed_cores * wall_s;
}

/* ---------------------------------------------------------------- turns */

/* order_of -- turn t's order of the compared placements: the listed order rotated by t */
static int order_of(const atm_job_compare *c, int t, int *order)
{
	int n = 0, k = 0;
	for (int i = 0; i < c->n; i++)
		if (c->e[i].j)
			order[n++] = i;
	if (!n)
		return 0;
	int *tmp = order + c->n;
	for (int i = 0; i < n; i++)
		tmp[i] = order[(i + t) % n];
	for (k = 0; k < n; k++)
		order[k] = tmp[k];
	return n;
}

/* say_turn -- turn t's step times in the order they ran, unless quiet */
static void say_turn(const atm_job_compare *c, int t, const int *order, int n)
{
	if (c->o.quiet)
		return;
	fprintf(stderr, "autotm %s: turn %d/%d:", c->who, t + 1, c->co.turns);
	double others = 0, wall = 0;
	int reruns = 0;
	for (int k = 0; k < n; k++) {
		const struct entry *e = &c->e[order[k]];
		fprintf(stderr, "%s %s %.4f s", k ? "," : "", e->name, e->turn_s[t]);
		if (e->turn_others[t] >= 0) {
			others += e->others_s;
			wall += e->wall_s;
		}
		/* by step a round measured again is every placement's */
		reruns = c->interleave[0] == 's' ? e->turn_reruns[t] : reruns + e->turn_reruns[t];
	}
	if (wall > 0)
		fprintf(stderr, "; others took %.2f of a core", others / wall);
	if (reruns)
		fprintf(stderr, "; measured again %d time%s (disturbed)", reruns, reruns == 1 ? "" : "s");
	fprintf(stderr, "\n");
}

/* count_step -- a counted step of e in turn t: the turn keeps its fastest */
static void count_step(struct entry *e, int t, double dt, double others, double wall)
{
	if (e->turn_s[t] < 0 || dt < e->turn_s[t])
		e->turn_s[t] = dt;
	if (isnan(others)) {
		e->turn_others[t] = -1;
		return;
	}
	e->others_s += others;
	e->wall_s += wall;
}

/* end_turn -- e's turn t complete: what others took, as cores over its counted steps; unknown
 * (-1) where those took less than ATM_JOB_JUDGED_S, too short for /proc/stat's ticks */
static void end_turn(struct entry *e, int t)
{
	if (e->turn_others[t] == 0)
		e->turn_others[t] = e->wall_s >= ATM_JOB_JUDGED_S ? e->others_s / e->wall_s : -1;
}

/* open_all -- every compared placement's executor; one that cannot be made here (its plan
 * exceeds the device, managed memory does not fit) is left out */
static atm_status open_all(atm_job_compare *c)
{
	for (int i = 0; i < c->n; i++) {
		struct entry *e = &c->e[i];
		if (!e->j)
			continue;
		atm_status rc = agreed(c, job_exec_open(e->j));
		if (rc == ATM_E_INFEASIBLE || rc == ATM_E_NOSPACE || rc == ATM_E_UNSUPPORTED)
			leave_out(c, e, rc);
		else if (rc < 0)
			return atm_err_prefix(rc, "%s: ", e->name);
	}
	return n_compared(c) ? ATM_OK : atm_err(ATM_E_INFEASIBLE, "no placement could be run");
}

/* write_weights -- --weights-out from e's finished executor, unless a placement wrote it:
 * every placement trains to the same weights */
static atm_status write_weights(atm_job_compare *c, const struct entry *e)
{
	if (!c->o.weights_out || c->weights_out)
		return ATM_OK;
	c->weights_out = true;
	return job_write_weights(e->j, c->o.weights_out, c->o.weights_dtype);
}

/* by_step -- every executor alive; a turn is iters rounds of one step of each, in the turn's
 * order; a disturbed round is run again (a step more for every placement, so that all train
 * alike), at most max_reruns times a turn; under mpirun a round disturbed on any rank is every
 * rank's to run again */
static atm_status by_step(atm_job_compare *c, int *order)
{
	struct usage a, b;
	double dt = 0;
	atm_status rc = open_all(c);
	if (rc < 0)
		return rc;
	int n = order_of(c, 0, order);
	for (int w = 0; w < c->o.warmup; w++)
		for (int k = 0; k < n; k++)
			if ((rc = step(&c->e[order[k]], &dt)) < 0)
				return atm_err_prefix(rc, "%s: ", c->e[order[k]].name);
	/* by position in the round: each step's time, others' CPU, wall time, own CPU */
	double *step_s = calloc((size_t)c->n * 4 + 1, sizeof *step_s);
	if (!step_s)
		return atm_err(ATM_E_NOMEM, "out of memory comparing placements");
	double *others = step_s + c->n, *wall = others + c->n, *own = wall + c->n;
	for (int t = 0; t < c->co.turns && rc == ATM_OK; t++) {
		n = order_of(c, t, order);
		int counted = 0, reruns = 0;
		while (counted < c->o.iters && rc == ATM_OK) {
			bool bad = false;
			double round_others = 0, round_wall = 0;
			for (int k = 0; k < n && rc == ATM_OK; k++) {
				usage_now(&a);
				if ((rc = step(&c->e[order[k]], &step_s[k])) < 0)
					rc = atm_err_prefix(rc, "%s: ", c->e[order[k]].name);
				usage_now(&b);
				others[k] = others_s(&a, &b);
				wall[k] = b.wall_s - a.wall_s;
				own[k] = b.own_s - a.own_s;
			}
			if (rc < 0 || (rc = others_beside_ranks(c, others, own, n)) < 0)
				break;
			for (int k = 0; k < n; k++) {
				bad = bad || disturbed(c, others[k], wall[k]);
				round_others += others[k];
				round_wall += wall[k];
			}
			if ((rc = any_rank(c, bad || disturbed(c, round_others, round_wall), &bad)) < 0)
				break;
			if (bad && reruns < c->co.max_reruns) {
				reruns++;
				continue;
			}
			for (int k = 0; k < n; k++)
				count_step(&c->e[order[k]], t, step_s[k], others[k], wall[k]);
			counted++;
		}
		if (rc < 0)
			break;
		for (int k = 0; k < n; k++) {
			c->e[order[k]].turn_reruns[t] = reruns;
			c->e[order[k]].turn_position[t] = k;
			end_turn(&c->e[order[k]], t);
		}
		say_turn(c, t, order, n);
		for (int k = 0; k < n; k++)
			c->e[order[k]].others_s = c->e[order[k]].wall_s = 0;
		if (c->co.on_turn)
			c->co.on_turn(c->co.arg, t);
	}
	free(step_s);
	for (int i = 0; i < c->n && rc == ATM_OK; i++) {
		if (!c->e[i].j)
			continue;
		if ((rc = atm_exec_finish(c->e[i].j->exec)) == ATM_OK)
			rc = write_weights(c, &c->e[i]);
		if ((rc = agreed(c, rc)) < 0)
			rc = atm_err_prefix(rc, "%s: ", c->e[i].name);
	}
	return rc;
}

/* one_turn -- placement e's turn t in a fresh executor: the warm-up, then iters steps; a
 * disturbed turn (on any rank, under mpirun) is run again in another fresh one, at most
 * max_reruns times */
static atm_status one_turn(atm_job_compare *c, struct entry *e, int t)
{
	struct usage a, b;
	atm_status rc = ATM_OK;
	for (int attempt = 0;; attempt++) {
		double others = 0, wall = 0, own = 0, dt;
		bool bad = false;
		if ((rc = agreed(c, job_exec_open(e->j))) < 0)
			return rc;
		for (int s = 0; s < c->o.warmup + c->o.iters && rc == ATM_OK; s++) {
			usage_now(&a);
			rc = step(e, &dt);
			usage_now(&b);
			if (s >= c->o.warmup) {
				others += others_s(&a, &b);
				wall += b.wall_s - a.wall_s;
				own += b.own_s - a.own_s;
			}
		}
		if (rc == ATM_OK && (rc = others_beside_ranks(c, &others, &own, 1)) == ATM_OK)
			rc = any_rank(c, disturbed(c, others, wall), &bad);
		if (rc == ATM_OK && bad && attempt < c->co.max_reruns) {
			atm_exec_destroy(e->j->exec);
			e->j->exec = NULL;
			continue;
		}
		if (rc == ATM_OK)
			rc = atm_exec_finish(e->j->exec);
		if (rc == ATM_OK)
			rc = write_weights(c, e);
		if ((rc = agreed(c, rc)) < 0)
			return rc;
		e->turn_reruns[t] = attempt;
		count_step(e, t, atm_exec_result_get(e->j->exec)->actual_runtime_s, others, wall);
		end_turn(e, t);
		return agreed(c, job_keep_turn(e->j));
	}
}

/* by_turn -- a fresh executor per placement and turn, released before the next one starts */
static atm_status by_turn(atm_job_compare *c, int *order)
{
	for (int t = 0; t < c->co.turns; t++) {
		int n = order_of(c, t, order);
		for (int k = 0; k < n; k++) {
			struct entry *e = &c->e[order[k]];
			atm_status rc = one_turn(c, e, t);
			if (t == 0 && (rc == ATM_E_INFEASIBLE || rc == ATM_E_NOSPACE ||
			               rc == ATM_E_UNSUPPORTED)) {
				leave_out(c, e, rc);
				continue;
			}
			if (rc < 0)
				return atm_err_prefix(rc, "%s: ", e->name);
			e->turn_position[t] = k;
		}
		n = order_of(c, t, order);
		if (!n)
			return atm_err(ATM_E_INFEASIBLE, "no placement could be run");
		say_turn(c, t, order, n);
		for (int k = 0; k < n; k++)
			c->e[order[k]].others_s = c->e[order[k]].wall_s = 0;
		if (c->co.on_turn)
			c->co.on_turn(c->co.arg, t);
	}
	return ATM_OK;
}

/* memories -- the fast arenas and slow peaks of the compared placements' executors: summed
 * (all alive at once) or the largest of each (one at a time) */
static atm_status memories(const atm_job_compare *c, bool sum, int64_t *fast_bytes,
                           int64_t *slow_bytes)
{
	*fast_bytes = *slow_bytes = 0;
	for (int i = 0; i < c->n; i++) {
		const atm_job *j = c->e[i].j;
		atm_schedule *s = NULL;
		if (!j)
			continue;
		atm_status rc = atm_schedule_new(&s, j->plan);
		if (rc < 0)
			return rc;
		const atm_schedule_stats *st = atm_schedule_stats_get(s);
		int64_t limit = atm_plan_info_get(j->plan)->fast_limit_bytes;
		int64_t fast = limit && !c->caps.device_memory ? limit : st->fast_arena_bytes;
		*fast_bytes = sum ? *fast_bytes + fast : fast > *fast_bytes ? fast : *fast_bytes;
		*slow_bytes = sum ? *slow_bytes + st->slow_peak_bytes
		                  : st->slow_peak_bytes > *slow_bytes ? st->slow_peak_bytes : *slow_bytes;
		atm_schedule_destroy(s);
	}
	return ATM_OK;
}

/* fits_together -- the compared placements' memories (fast arenas, slow peaks) all at once
 * within three quarters of what the machine has available (true when unknown); *need_bytes */
static atm_status fits_together(const atm_job_compare *c, bool *fits, int64_t *need_bytes,
                                int64_t *avail_bytes)
{
	int64_t fast = 0, slow = 0;
	atm_status rc = memories(c, true, &fast, &slow);
	if (rc < 0)
		return rc;
	int64_t need = fast + slow;
	*need_bytes = need;
	*avail_bytes = atm_mem_available_bytes();
	*fits = *avail_bytes < 0 || need <= *avail_bytes / 4 * 3;
	return ATM_OK;
}

/* choose_interleave -- by step unless asked otherwise, on a real GPU, or where the executors
 * would not fit the memory together */
static atm_status choose_interleave(atm_job_compare *c, bool *by_steps)
{
	char a[32], b[32];
	bool fits = true;
	int64_t need = 0, avail = 0;
	*by_steps = c->co.interleave == ATM_JOB_INTERLEAVE_STEP;
	if (c->co.interleave != ATM_JOB_INTERLEAVE_AUTO)
		return ATM_OK;
	if (real_device(c))
		return ATM_OK;
	bool short_here, short_somewhere;
	atm_status rc = agreed(c, fits_together(c, &fits, &need, &avail));
	short_here = !fits;
	if (rc < 0 || (rc = any_rank(c, short_here, &short_somewhere)) < 0)
		return rc;
	*by_steps = !short_somewhere; /* every rank interleaves alike */
	if (short_somewhere && !short_here && !c->o.quiet)
		fprintf(stderr, "autotm %s: the %d placements' memories do not fit together on another "
		        "rank's host: a fresh executor per placement and turn (--interleave turn)\n",
		        c->who, n_compared(c));
	if (short_here && !c->o.quiet)
		fprintf(stderr, "autotm %s: the %d placements' memories take %s together and %s is "
		        "available: a fresh executor per placement and turn (--interleave turn)\n",
		        c->who, n_compared(c), atm_format_bytes(need, a, sizeof a),
		        atm_format_bytes(avail, b, sizeof b));
	return ATM_OK;
}

/* median_of -- the median of n values (copied, not reordered) */
static double median_of(const double *v, int n, double *scratch)
{
	memcpy(scratch, v, (size_t)n * sizeof *v);
	return atm_sort_median(scratch, n);
}

/* turn_ratio -- the median of a's step over b's, turn by turn (T turns), and their range;
 * scratch holds 2 T */
static void turn_ratio(const double *a, const double *b, int T, double *scratch, double *median,
                       double *lo, double *hi)
{
	for (int t = 0; t < T; t++)
		scratch[T + t] = a[t] / b[t];
	*median = median_of(scratch + T, T, scratch);
	*lo = scratch[0];
	*hi = scratch[T - 1];
}

/* emulated_wait_s -- of entry e's predicted step, the seconds its emulated slow tier waits
 * in the step's own line (atm_schedule_emulated_wait_s at the rates its run waited for): 0
 * without emulation; for 2lm what the cache's misses wait (atm_twolm_wait_s, at the profile's
 * rates, which are the emulation's) */
static double emulated_wait_s(const struct entry *e)
{
	const atm_exec_result *r = atm_job_exec_result(e->j);
	atm_schedule *s = NULL;
	atm_opt_check_result chk;
	if (r && r->emulated && !strcmp(atm_plan_info_get(e->j->plan)->formulation, "2lm")) {
		if (!e->j->prof || atm_opt_check(e->j->plan, e->j->prof, NULL, &chk) < 0) {
			atm_err_clear();
			return 0;
		}
		return chk.cache_miss_s;
	}
	if (!r || !r->emulated || atm_schedule_new(&s, e->j->plan) < 0) {
		atm_err_clear();
		return 0;
	}
	double w = atm_schedule_emulated_wait_s(s, r->slow_tier.read_gbps, r->slow_tier.write_gbps,
	                                        r->slow_tier.emulation_fast_gbps);
	atm_schedule_destroy(s);
	return w;
}

/* predict -- entry e's predicted step as planned (o->predicted_raw_s) and with the machine's
 * drift since it was profiled (o->predicted_s): the kernels' and copies' own time scaled by
 * drift, the emulated waits (o->predicted_wait_s), which do not drift, as they are; the raw
 * one where the drift is unknown */
static void predict(struct entry *e, double drift)
{
	atm_job_compared *o = &e->out;
	double pred = atm_plan_info_get(e->j->plan)->predicted_runtime_s;
	o->predicted_raw_s = o->predicted_s = pred > 0 ? pred : -1;
	o->predicted_wait_s = pred > 0 ? emulated_wait_s(e) : 0;
	if (pred > 0 && drift > 0) {
		double w = o->predicted_wait_s < pred ? o->predicted_wait_s : pred;
		o->predicted_s = (pred - w) * drift + w;
	}
}

/* summarize -- each compared placement's median step and, with all-fast compared too, its
 * slowdown against it predicted and measured turn by turn */
static void summarize(atm_job_compare *c, double *scratch)
{
	int T = c->co.turns, n = n_compared(c);
	const struct entry *fast = NULL;
	c->all_fast = -1;
	for (int i = 0; i < c->n && !fast; i++)
		if (c->e[i].j && c->e[i].all_fast) {
			fast = &c->e[i];
			c->all_fast = i;
		}
	/* the profile's calibration, from whichever placement brought a profile, is every
	 * placement's: they ran on one machine at one time */
	const atm_job *cal = NULL;
	for (int i = 0; i < c->n && !cal; i++)
		cal = c->e[i].j && c->e[i].j->has_cal ? c->e[i].j : NULL;
	double drift = -1;
	if (cal && fast)
		drift = median_of(fast->turn_s, T, scratch) / cal->cal.step_s;
	for (int i = 0; i < c->n; i++)
		if (c->e[i].j)
			predict(&c->e[i], drift);
	for (int i = 0; i < c->n; i++) {
		struct entry *e = &c->e[i];
		atm_job_compared *o = &e->out;
		o->profile_drift = drift;
		if (e->j && cal) {
			e->j->cal = cal->cal;
			e->j->has_cal = true;
			e->j->drift = drift;
		}
		o->predicted_slowdown = o->measured_slowdown = o->slowdown_min = o->slowdown_max = -1;
		o->predicted_slowdown_raw = o->median_s = -1;
		if (!e->j) {
			o->predicted_s = o->predicted_raw_s = -1;
			continue;
		}
		o->n_turns = T;
		o->turn_s = e->turn_s;
		o->turn_position = e->turn_position;
		o->turn_others = e->turn_others;
		o->turn_reruns = e->turn_reruns;
		o->median_s = median_of(e->turn_s, T, scratch);
		if (fast) {
			const atm_job_compared *f = &fast->out;
			if (o->predicted_s > 0 && f->predicted_s > 0) {
				o->predicted_slowdown = o->predicted_s / f->predicted_s;
				o->predicted_slowdown_raw = o->predicted_raw_s / f->predicted_raw_s;
			}
			turn_ratio(e->turn_s, fast->turn_s, T, scratch, &o->measured_slowdown,
			           &o->slowdown_min, &o->slowdown_max);
		}
		e->cmp = (atm_run_comparison){
			.id = c->id,
			.interleave = c->interleave,
			.index = i,
			.n_placements = n,
			.n_turns = T,
			.steps_per_turn = c->o.iters,
			.turn_s = e->turn_s,
			.turn_position = e->turn_position,
			.turn_others = e->turn_others,
			.turn_reruns = e->turn_reruns,
			.with_all_fast = fast != NULL,
			.predicted_slowdown = o->predicted_slowdown,
			.predicted_slowdown_raw = o->predicted_slowdown_raw,
			.predicted_drift_s = drift > 0 ? o->predicted_s : -1,
			.predicted_wait_s = o->predicted_raw_s > 0 ? o->predicted_wait_s : -1,
			.measured_slowdown = o->measured_slowdown,
			.measured_slowdown_min = o->slowdown_min,
			.measured_slowdown_max = o->slowdown_max,
		};
	}
}

/* alloc_turns -- every placement's per-turn records, times unmeasured (-1) */
static atm_status alloc_turns(atm_job_compare *c)
{
	size_t T = (size_t)c->co.turns;
	for (int i = 0; i < c->n; i++) {
		struct entry *e = &c->e[i];
		e->turn_s = malloc(T * sizeof *e->turn_s);
		e->turn_others = calloc(T, sizeof *e->turn_others);
		e->turn_position = calloc(T, sizeof *e->turn_position);
		e->turn_reruns = calloc(T, sizeof *e->turn_reruns);
		if (!e->turn_s || !e->turn_others || !e->turn_position || !e->turn_reruns)
			return atm_err(ATM_E_NOMEM, "out of memory comparing placements");
		for (size_t t = 0; t < T; t++)
			e->turn_s[t] = -1;
	}
	return ATM_OK;
}

/* choose_slow_file -- with an emulated slow tier in a pmem dir of the default, one folder for
 * every executor, chosen for their slow memory together (by step: every peak at once; by turn:
 * the largest), so that the placements are measured on one file system and none finds the
 * tmpfs full midway; and the writeback warning, once for the comparison */
static atm_status choose_slow_file(atm_job_compare *c, bool by_steps)
{
	atm_tier_opts to = c->o.mem.tiers;
	atm_emu_spec spec;
	atm_tier_file f;
	char said[ATM_TIER_PATH_MAX] = "";
	atm_status rc;
	if (!c->o.mem.emulate || !c->caps.host_tiers)
		return ATM_OK;
	to.emulated = true;
	if (!to.pmem_dir) {
		if ((rc = memories(c, by_steps, &to.fast_need_bytes, &to.slow_need_bytes)) < 0)
			return rc;
		if (!to.slow_need_bytes)
			to.slow_need_bytes = 1; /* nothing slow: a byte, not the unknown need's allowance */
	}
	if ((rc = atm_tier_file_choose(&to, &f)) < 0 ||
	    (rc = atm_emu_spec_resolve(c->o.mem.emulate, &spec)) < 0)
		return rc;
	if (!f.path[0])
		return ATM_OK;
	if (!to.pmem_dir && f.folder)
		snprintf(c->slow_dir, sizeof c->slow_dir, "%s", f.path);
	/* said while profiling, the folder is not named again */
	for (int i = 0; i < c->n; i++)
		if (c->e[i].j && !strcmp(c->e[i].j->said_file, f.path))
			snprintf(said, sizeof said, "%s", f.path);
	job_say_file(c->who, c->o.quiet, &f, spec.name, said);
	for (int i = 0; i < c->n; i++) {
		atm_job *j = c->e[i].j;
		if (!j)
			continue;
		if (c->slow_dir[0])
			j->o.mem.tiers.pmem_dir = c->slow_dir;
		snprintf(j->said_file, sizeof j->said_file, "%s", said);
	}
	return ATM_OK;
}

atm_status atm_job_compare_run(atm_job_compare *c)
{
	bool by_steps = false;
	atm_status rc;
	if (c->ran || c->interleave)
		return atm_err(ATM_E_USAGE, "the comparison ran already");
	if ((rc = choose_interleave(c, &by_steps)) < 0 ||
	    (rc = agreed(c, choose_slow_file(c, by_steps))) < 0 || (rc = agreed(c, alloc_turns(c))) < 0)
		return rc;
	c->interleave = by_steps ? "step" : "turn";
	/* the order, and room to rotate it; the medians' scratch */
	int *order = calloc((size_t)c->n * 2, sizeof *order);
	double *scratch = calloc((size_t)c->co.turns * 2, sizeof *scratch);
	if (!order || !scratch)
		rc = atm_err(ATM_E_NOMEM, "out of memory comparing placements");
	else
		rc = by_steps ? by_step(c, order) : by_turn(c, order);
	if (rc == ATM_OK) {
		summarize(c, scratch);
		/* under mpirun: every rank's median step, the losses' means, the weights alike */
		for (int i = 0; i < c->n && rc == ATM_OK && c->comm; i++)
			if (c->e[i].j && (rc = job_dist_gather(c->e[i].j, atm_job_exec_result(c->e[i].j),
			                                       c->e[i].out.median_s)) < 0)
				rc = atm_err_prefix(rc, "%s: ", c->e[i].name);
	}
	if (rc == ATM_OK) {
		c->ran = true;
		for (int i = 0; i < c->n; i++)
			if (c->e[i].j) {
				job_say_drift(c->who, c->o.quiet, c->e[i].out.profile_drift, &c->e[i].j->cal);
				break;
			}
	}
	free(order);
	free(scratch);
	return rc;
}

atm_status atm_job_compare_write_results(atm_job_compare *c)
{
	int n = n_compared(c), k = 0;
	atm_status rc = ATM_OK;
	if (!c->ran)
		return atm_err(ATM_E_USAGE, "run the comparison first");
	if (!c->o.results_path)
		return atm_err(ATM_E_USAGE, "the comparison has no results path");
	const atm_plan **p = calloc((size_t)n, sizeof *p);
	atm_schedule **s = calloc((size_t)n, sizeof *s);
	atm_run_measured *m = calloc((size_t)n, sizeof *m);
	if (!p || !s || !m)
		rc = atm_err(ATM_E_NOMEM, "out of memory writing the comparison's results");
	for (int i = 0; i < c->n && rc == ATM_OK; i++) {
		const struct entry *e = &c->e[i];
		if (!e->j)
			continue;
		p[k] = e->j->plan;
		m[k] = job_measured(e->j, atm_job_exec_result(e->j));
		job_dist_measured(e->j, atm_job_exec_result(e->j), &m[k]);
		m[k].actual_runtime_s = e->out.median_s;
		m[k].comparison = &e->cmp;
		rc = atm_schedule_new(&s[k], p[k]);
		k++;
	}
	if (rc == ATM_OK)
		rc = atm_results_write_runs(c->o.results_path, n, p, (const atm_schedule *const *)s,
		                            &c->o.workload, m, c->o.append);
	for (int i = 0; s && i < n; i++)
		atm_schedule_destroy(s[i]);
	free(p);
	free(s);
	free(m);
	return rc;
}

int atm_job_compare_n(const atm_job_compare *c)
{
	return c->n;
}

const atm_job_compared *atm_job_compare_get(const atm_job_compare *c, int i)
{
	return &c->e[i].out;
}

const atm_job *atm_job_compare_job(const atm_job_compare *c, int i)
{
	return c->e[i].j;
}

const char *atm_job_compare_id(const atm_job_compare *c)
{
	return c->id;
}

const char *atm_job_compare_interleave(const atm_job_compare *c)
{
	return c->interleave;
}

int atm_job_compare_all_fast(const atm_job_compare *c)
{
	return c->all_fast;
}

bool atm_job_compare_ratio(const atm_job_compare *c, int i, int ref, double *median, double *lo,
                           double *hi)
{
	if (i < 0 || ref < 0 || i >= c->n || ref >= c->n || !c->e[i].j || !c->e[ref].j ||
	    c->e[i].out.n_turns < 1 || c->e[ref].out.n_turns != c->e[i].out.n_turns)
		return false;
	int T = c->e[i].out.n_turns;
	double *scratch = malloc(2 * (size_t)T * sizeof *scratch);
	if (!scratch)
		return false;
	turn_ratio(c->e[i].out.turn_s, c->e[ref].out.turn_s, T, scratch, median, lo, hi);
	free(scratch);
	return true;
}
