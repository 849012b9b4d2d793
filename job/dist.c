/* dist.c -- a job's ranks under mpirun: the same job checked alike on each, profiled in step,
 * planned once by rank 0, its shards of the batch trained, what they measured gathered */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_internal.h"

bool job_dist(const atm_job *j)
{
	return j->o.comm && atm_comm_active(j->o.comm);
}

int job_rank(const atm_job *j)
{
	return j->o.comm ? atm_comm_rank(j->o.comm) : 0;
}

atm_status atm_job_ranks_status(atm_comm *c, atm_status rc)
{
	int n = c ? atm_comm_size(c) : 1;
	if (n < 2)
		return rc;
	uint64_t *all = calloc((size_t)n, sizeof *all);
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", rc < 0 ? atm_errmsg() : "");
	if (!all)
		atm_comm_abort(c, atm_exit_code(ATM_E_NOMEM)); /* the others would wait for this rank */
	atm_status got = atm_comm_allgather_u64(c, (uint64_t)(int64_t)rc, all);
	int first = -1;
	for (int r = 0; got == ATM_OK && r < n && first < 0; r++)
		if ((int64_t)all[r] < 0)
			first = r;
	atm_status theirs = first >= 0 ? (atm_status)(int64_t)all[first] : ATM_OK;
	free(all);
	if (got < 0 && rc < 0) { /* this rank's own failure first: the collective's is its echo */
		char then[512];
		snprintf(then, sizeof then, "%s", atm_errmsg());
		return atm_err(rc, "%s (and then: %s)", msg, then);
	}
	if (got < 0)
		return got;
	/* a failure rank 0 had too is said by rank 0 alone */
	if (rc < 0 && first == 0 && atm_comm_rank(c) != 0)
		return atm_err(rc, "%s", ATM_JOB_SAID_BY_RANK0);
	if (rc < 0)
		return atm_err(rc, "%s", msg); /* this rank's own failure, its message as it was */
	if (first >= 0)
		return atm_err(theirs, first == 0 && atm_comm_rank(c) != 0 ? ATM_JOB_SAID_BY_RANK0
		               : "rank %d of %d failed (its message above)", first, n);
	return ATM_OK;
}

/* options_text -- what every rank must run alike beyond the graph, one option a line as the
 * command line names it: the placement and the planning options, the steps and the seed, the
 * memories and the backend; not paths that may differ by host */
static void options_text(const atm_job_opts *o, char *text, size_t len)
{
	atm_backend_caps caps = {0};
	if (atm_backend_caps_get(o->mem.gpu.mode, &caps) < 0)
		atm_err_clear();
	snprintf(text, len,
	         "--formulation %s\n--ratio %.17g:%.17g\n--dram-limit %lld\n--placement %s\n"
	         "--seed %llu\n--placement-seed %llu\n--iters %d\n--warmup %d\n--emulate %s\n"
	         "--gpu %s\n--2lm %lld\n--estimate %s\n--isolated %s\n--weights-in %s\n"
	         "--data %s\n--solver %s\n",
	         o->optimize ? atm_opt_formulation_name(o->formulation) : "(none)", o->ratio_slow,
	         o->ratio_fast, (long long)o->limit_bytes, o->placement ? o->placement : "(none)",
	         (unsigned long long)o->seed, (unsigned long long)o->placement_seed, o->iters,
	         o->warmup, o->mem.emulate ? o->mem.emulate : "none", caps.name ? caps.name : "cpu",
	         (long long)o->twolm_bytes, o->estimate ? "yes" : "no", o->isolated ? "yes" : "no",
	         o->weights_in ? "given" : "none", o->data_in ? "given" : "none",
	         atm_opt_solver_name(o->opt.solver));
}

/* first_line_apart -- the first line of a that b has otherwise, into line (its start up to
 * the first space: the option; then a's value and b's) */
static bool first_line_apart(const char *a, const char *b, char *opt, char *va, char *vb,
                             size_t len)
{
	while (*a && *b) {
		size_t na = strcspn(a, "\n"), nb = strcspn(b, "\n");
		if (na != nb || strncmp(a, b, na)) {
			size_t k = strcspn(a, " ");
			snprintf(opt, len, "%.*s", (int)(k < na ? k : na), a);
			snprintf(va, len, "%.*s", (int)(k < na ? na - k - 1 : 0), a + (k < na ? k + 1 : na));
			k = strcspn(b, " ");
			snprintf(vb, len, "%.*s", (int)(k < nb ? nb - k - 1 : 0), b + (k < nb ? k + 1 : nb));
			return true;
		}
		a += na + (a[na] == '\n');
		b += nb + (b[nb] == '\n');
	}
	return false;
}

/* options_apart -- the ranks' options differ (their digests did): every rank's text reaches
 * every rank, and the message names the first option a rank has otherwise than rank 0 and
 * both values ("rank 1 has --ratio 8:1, rank 0 has --ratio 4:1") */
static atm_status options_apart(atm_comm *c, const char *mine)
{
	int n = atm_comm_size(c), apart = -1;
	char *zero = NULL, opt[128], va[256], vb[256];
	atm_status rc = ATM_OK;
	/* every rank takes part in every broadcast; the first rank apart from rank 0 is named */
	for (int r = 0; r < n && rc == ATM_OK; r++) {
		char *text = atm_comm_rank(c) == r ? strdup(mine) : NULL;
		rc = atm_comm_bcast_text(c, &text, r);
		if (rc == ATM_OK && r == 0) {
			zero = text;
			continue;
		}
		if (rc == ATM_OK && apart < 0 && zero && text &&
		    first_line_apart(text, zero, opt, va, vb, sizeof opt))
			apart = r;
		free(text);
	}
	free(zero);
	if (rc < 0)
		return rc;
	if (apart < 0)
		return atm_err(ATM_E_INPUT, "ranks disagree on the options (their digests differ, "
		               "their texts do not: a bug)");
	return atm_err(ATM_E_INPUT, "ranks disagree on the options: rank %d has %s %s, rank 0 has "
	               "%s %s", apart, opt, va, opt, vb);
}

atm_status atm_job_ranks_agree(atm_comm *c, const char *what, uint64_t digest)
{
	atm_status rc = atm_comm_agree(c, what, digest);
	/* every rank has the same message: rank 0 says it */
	if (rc < 0 && rc != ATM_E_IO && atm_comm_rank(c) != 0)
		return atm_err(rc, "%s", ATM_JOB_SAID_BY_RANK0);
	return rc;
}

/* text_digest -- a digest of a JSON text (a graph's, a plan's) */
static uint64_t text_digest(const char *text)
{
	return atm_fnv1a(ATM_FNV1A_INIT, text, strlen(text));
}

atm_status job_dist_start(atm_job *j)
{
	atm_comm *c = j->o.comm;
	int n = atm_comm_size(c);
	atm_status rc = ATM_OK;
	if (atm_graph_ranks(j->g) != n)
		rc = atm_err(ATM_E_USAGE, "graph '%s' averages its gradients over %d rank%s, but the "
		             "job has %d", atm_graph_name(j->g), atm_graph_ranks(j->g),
		             atm_graph_ranks(j->g) == 1 ? "" : "s", n);
	else if (!j->o.whole)
		rc = atm_err(ATM_E_USAGE, "a job of %d ranks needs the graph at the whole batch", n);
	else if (j->o.estimate)
		rc = atm_err(ATM_E_USAGE, "under mpirun every rank runs: an estimated profile prices a "
		             "plan that nothing runs (plan it in one process)");
	if ((rc = atm_job_ranks_status(c, rc)) < 0)
		return rc;
	char *text = NULL;
	if ((rc = atm_graph_dump(j->g, &text)) < 0)
		atm_comm_abort(c, atm_exit_code(rc));
	uint64_t graph = text_digest(text);
	free(text);
	if ((rc = atm_job_ranks_agree(c, "graph", graph)) < 0)
		return job_rank(j) ? rc : atm_err_prefix(rc, "mpirun's ranks must train one network "
		                                         "with one batch: ");
	char opts[2048];
	options_text(&j->o, opts, sizeof opts);
	if ((rc = atm_comm_agree(c, "options", text_digest(opts))) < 0 && rc != ATM_E_IO)
		rc = options_apart(c, opts);
	if (rc < 0 && rc != ATM_E_IO && job_rank(j) != 0)
		return atm_err(rc, "%s", ATM_JOB_SAID_BY_RANK0); /* every rank has the message */
	if (rc < 0)
		return job_rank(j) ? rc : atm_err_prefix(rc, "mpirun's ranks must be given the same "
		                                         "options: ");
	return ATM_OK;
}

atm_status job_dist_private_cache(atm_job *j, const char *cache, char *path, size_t len)
{
	atm_status rc = ATM_OK;
	path[0] = '\0';
	/* rank 0 keeps the cache; the others profile alongside it into a copy of what it held
	 * when the ranks started, so that all of them lack the same kernels and time them in
	 * the same order (an allreduce is timed by every rank at once). Rank 0 writes nothing
	 * before the statuses below are agreed, which is after every copy was made. */
	if (job_rank(j) != 0) {
		char *text = NULL;
		size_t n = 0;
		snprintf(path, len, "%s/autotm-rank%d-%ld.json",
		         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", job_rank(j), (long)getpid());
		if (access(cache, F_OK) == 0 && (rc = atm_read_file_max(cache, ATM_PROFILE_FILE_MAX_BYTES, "profile cache",
		                                                     &text, &n)) == ATM_OK) {
			FILE *f = fopen(path, "w");
			bool ok = f && fwrite(text, 1, n, f) == n;
			if ((f && fclose(f) != 0) || !ok)
				rc = atm_err(ATM_E_IO, "cannot write a copy of the profile cache at %s: %s",
				             path, strerror(errno ? errno : EIO));
			free(text);
		}
	}
	return atm_job_ranks_status(j->o.comm, rc);
}

atm_status job_dist_plan(atm_job *j, atm_status rc)
{
	atm_comm *c = j->o.comm;
	char *text = NULL;
	char msg[1024] = "";
	if (job_rank(j) == 0) {
		if (rc == ATM_OK && (rc = atm_plan_dump(j->plan, &text)) < 0)
			text = NULL;
		if (rc < 0)
			snprintf(msg, sizeof msg, "%s", atm_errmsg());
	}
	atm_status got = atm_comm_bcast_text(c, &text, 0);
	if (got < 0) {
		free(text);
		return got;
	}
	atm_status mine = rc;
	if (job_rank(j) == 0) {
		if (rc < 0)
			atm_err(rc, "%s", msg);
	} else if (!text) { /* rank 0's NULL: it could not plan, and says why */
		mine = atm_err(ATM_E_INFEASIBLE, "rank 0 could not plan");
	} else {
		atm_plan_destroy(j->plan);
		j->plan = NULL;
		mine = atm_plan_load_buffer(&j->plan, j->g, text, strlen(text), "rank 0's plan");
	}
	free(text);
	return atm_job_ranks_status(c, mine);
}

atm_status job_dist_agree_plan(atm_job *j)
{
	char *text = NULL;
	atm_status rc = atm_plan_dump(j->plan, &text);
	uint64_t d = rc == ATM_OK ? text_digest(text) : 0;
	free(text);
	if ((rc = atm_job_ranks_status(j->o.comm, rc)) < 0)
		return rc;
	return atm_job_ranks_agree(j->o.comm, "plan", d);
}

void job_dist_drop_private_cache(const char *path)
{
	char lock[4300];
	unlink(path);
	/* the lock beside it (atm_file_lock's PATH.lock) is this rank's alone too */
	if ((size_t)snprintf(lock, sizeof lock, "%s.lock", path) < sizeof lock)
		unlink(lock);
}

void job_dist_fail_alone(const atm_job *j, atm_status rc)
{
	if (rc >= 0 || !job_dist(j))
		return;
	fprintf(stderr, "autotm %s (rank %d of %d): %s\n", j->who, job_rank(j),
	        atm_comm_size(j->o.comm), atm_errmsg());
	atm_comm_abort(j->o.comm, atm_exit_code(rc));
}

atm_status job_dist_gather(atm_job *j, const atm_exec_result *r, double step_s)
{
	atm_comm *c = j->o.comm;
	int n = atm_comm_size(c);
	atm_status rc = ATM_OK;
	free(j->rank_step_s);
	free(j->mean_losses);
	j->rank_step_s = calloc((size_t)n, sizeof *j->rank_step_s);
	j->mean_losses = calloc((size_t)(r->n_losses ? r->n_losses : 1), sizeof *j->mean_losses);
	double *all = calloc((size_t)n, sizeof *all);
	if (!j->rank_step_s || !j->mean_losses || !all)
		rc = atm_err(ATM_E_NOMEM, "out of memory gathering the ranks' results");
	if ((rc = atm_job_ranks_status(c, rc)) < 0) {
		free(all);
		return rc;
	}
	rc = atm_comm_allgather_f64(c, step_s, j->rank_step_s);
	for (int i = 0; rc == ATM_OK && i < r->n_losses; i++) {
		double sum = 0;
		if ((rc = atm_comm_allgather_f64(c, r->losses[i], all)) < 0)
			break;
		for (int k = 0; k < n; k++)
			sum += all[k];
		j->mean_losses[i] = (float)(sum / n);
	}
	free(all);
	if (rc < 0)
		return rc;
	/* every rank trained the same weights from the same mean gradients: bits that differ are a
	 * bug, or ranks that were not the same job */
	uint64_t sum = atm_fnv1a(ATM_FNV1A_INIT, r->weights_checksum, strlen(r->weights_checksum));
	return atm_job_ranks_agree(c, "weights after the run (a bug: the ranks averaged the same "
	                           "gradients)", sum);
}

void job_dist_measured(const atm_job *j, const atm_exec_result *r, atm_run_measured *m)
{
	if (!job_dist(j))
		return;
	m->ranks = atm_comm_size(j->o.comm);
	m->rank_batch = atm_graph_batch(j->g);
	m->rank_step_s = j->rank_step_s;
	if (j->mean_losses)
		m->losses = j->mean_losses;
	double s = 0, p = 0;
	const double *pred = j->planned ? j->kernel_pred_s : NULL;
	for (int32_t k = 0; k < atm_graph_n_nodes(j->g); k++) {
		if (atm_graph_node(j->g, k)->op != ATM_OP_ALLREDUCE)
			continue;
		s += r->step_kernel_s ? r->step_kernel_s[k] : 0;
		p += pred ? pred[k] : 0;
	}
	/* the mean's own time (step_kernel_s leaves the ranks' skew out), and the skew apart */
	m->allreduce_wait_s = r->allreduce_wait_s;
	m->allreduce_s = r->step_kernel_s ? s : -1;
	m->allreduce_pred_s = pred ? p : -1;
}
