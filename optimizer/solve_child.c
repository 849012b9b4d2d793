/* solve_child.c -- a solver run in a forked child process, which the stop flag ends at once.
 *
 * Neither solver can be stopped promptly from inside: CBC's C interface has no way to stop a
 * solve, and GLPK calls nothing of ours for tens of seconds at a time on large models (its cut
 * generators, and its feasibility pump, whose simplex it runs with output settings and no time
 * limit of its own choosing). So the solve runs in a child process that writes its answer into
 * shared memory, and the parent, polling every POLL_NS, kills it (SIGKILL) when the stop flag is
 * set, when it overruns the deadline, or when what it has written is enough.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "milp.h"

/* how often the parent looks at the child, the stop flag and the clock: from every
 * POLL_FIRST_NS, doubling, to every POLL_NS (a small model's solve takes a millisecond) */
#define POLL_FIRST_NS 250000L
#define POLL_NS 10000000L

/* become_child -- the child dies with its parent, whatever ends that (SIGKILL too), and takes
 * the default actions of the signals the parent catches or blocks; false when the parent is
 * already gone */
static bool become_child(pid_t parent)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	return prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == parent;
}

/* wait_child -- the child's end: ATM_E_INTERRUPTED (it is killed) when the stop flag is set;
 * killed too when it overruns the deadline or o->enough says so (c->end tells which) */
static atm_status wait_child(pid_t pid, const struct milp_params *par,
                             const struct milp_child_opts *o, void *shared, struct milp_child *c)
{
	struct timespec nap = {0, POLL_FIRST_NS};
	c->end = MILP_CHILD_EXITED;
	for (;;) {
		pid_t r = waitpid(pid, &c->wstatus, WNOHANG);
		if (r == pid)
			return ATM_OK;
		if (r < 0 && errno != EINTR)
			return atm_err(ATM_E_INTERNAL, "waiting for the %s process: %s", o->who,
			               strerror(errno));
		bool stop = par->stop && *par->stop;
		bool enough = !stop && o->enough && o->enough(shared, o->arg);
		bool overran = o->overrun_s >= 0 && atm_now_s() > par->deadline + o->overrun_s;
		if (stop || enough || overran) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &c->wstatus, 0) < 0 && errno == EINTR)
				;
			if (stop)
				return atm_err(ATM_E_INTERRUPTED, "planning interrupted while %s was solving",
				               o->who);
			c->end = enough ? MILP_CHILD_ENOUGH : MILP_CHILD_OVERRAN;
			return ATM_OK;
		}
		nanosleep(&nap, NULL);
		nap.tv_nsec = nap.tv_nsec * 2 < POLL_NS ? nap.tv_nsec * 2 : POLL_NS;
	}
}

atm_status milp_child_run(const struct milp *p, const struct milp_params *par,
                          const struct milp_out *out, const struct milp_child_opts *o,
                          struct milp_child *c)
{
	memset(c, 0, sizeof *c);
	if (par->stop && *par->stop)
		return atm_err(ATM_E_INTERRUPTED, "planning interrupted while %s was solving", o->who);
	void *shared = mmap(NULL, o->shared_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	                    -1, 0);
	if (shared == MAP_FAILED)
		return atm_err(ATM_E_NOMEM, "out of memory for %s's answer (%zu bytes)", o->who,
		               o->shared_bytes);
	fflush(NULL); /* what is buffered is the parent's to write, not the child's too */
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		munmap(shared, o->shared_bytes);
		return atm_err(ATM_E_NOMEM, "cannot start the %s process: %s", o->who, strerror(errno));
	}
	if (pid == 0) {
		if (!become_child(parent))
			_exit(4);
		/* the parent watches the flag; no signal reaches the child's copy of it */
		struct milp_params own = *par;
		own.stop = NULL;
		o->body(p, &own, out, shared);
		fflush(NULL);
		_exit(0);
	}
	atm_status rc = wait_child(pid, par, o, shared, c);
	if (rc < 0) {
		munmap(shared, o->shared_bytes);
		memset(c, 0, sizeof *c);
		return rc;
	}
	c->shared = shared;
	c->shared_bytes = o->shared_bytes;
	return ATM_OK;
}

bool milp_child_exited_ok(const struct milp_child *c)
{
	return c->end == MILP_CHILD_EXITED && WIFEXITED(c->wstatus) && WEXITSTATUS(c->wstatus) == 0;
}

void milp_child_release(struct milp_child *c)
{
	if (c->shared)
		munmap(c->shared, c->shared_bytes);
	memset(c, 0, sizeof *c);
}
