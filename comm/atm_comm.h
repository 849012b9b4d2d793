/* atm_comm.h -- data-parallel communication between the ranks of one job over MPI: a deterministic gradient mean, broadcasts, agreement
 *
 * Usage:
 *
 *     atm_comm *c = NULL;
 *     atm_status rc = atm_comm_new(&c, &argc, &argv);  // MPI only when mpirun/srun started us
 *     if (rc < 0) {
 *             fprintf(stderr, "autotm: %s\n", atm_errmsg());
 *             return atm_exit_code(rc);
 *     }
 *     if (atm_comm_agree(c, "graph", digest) < 0) ...;  // every rank fails alike
 *     char *plan = atm_comm_rank(c) == 0 ? text : NULL;
 *     atm_comm_bcast_text(c, &plan, 0);                // now on every rank
 *     float *grads[] = {dw1, db1, dw2};
 *     int64_t n_floats[] = {n_w1, n_b1, n_w2};
 *     if ((rc = atm_comm_allreduce_mean(c, grads, n_floats, 3)) < 0) {
 *             fprintf(stderr, "autotm: %s\n", atm_errmsg());
 *             atm_comm_abort(c, atm_exit_code(rc));    // the others may wait forever
 *     }
 *     atm_comm_destroy(c);                             // MPI_Finalize if atm_comm_new initialised it
 *
 * A communicator is the job's ranks: MPI_COMM_WORLD when mpirun, srun or another launcher
 * started the process, otherwise one rank alone (nothing is initialised, every collective is a
 * no-op that leaves its data as it is). Whether a launcher started it is read from the
 * environment: OMPI_COMM_WORLD_SIZE (Open MPI), PMI_SIZE / PMI_RANK (MPICH, Intel MPI, srun's
 * PMI-2), PMIX_RANK (PMIx), MV2_COMM_WORLD_SIZE (MVAPICH), SLURM_STEP_NUM_TASKS (an srun step;
 * a batch script's own SLURM_NTASKS is not a launch). A build without MPI (comm_none.c) is such
 * a single rank and refuses to run as one of several.
 *
 * Every function is called by the main thread only (MPI_THREAD_FUNNELED). The collectives
 * (allreduce_mean, bcast, bcast_text, the allgathers, agree, barrier, and destroy where it
 * finalises MPI) must be called by every rank in the same order with matching arguments, as
 * MPI's own. A failure returns an atm_status with a
 * message in atm_errmsg(); MPI's errors return too (MPI_ERRORS_RETURN) and are ATM_E_IO
 * ("MPI_Alltoallv failed on rank 1 of 2: ..." with MPI_Error_string's text), or ATM_E_NOMEM
 * for MPI's MPI_ERR_NO_MEM. Failures that this module can see coming (a rank that cannot
 * allocate, a bucket of another size, a digest that differs) are agreed first, so that EVERY
 * rank returns the error and none waits for the others. Where one rank fails alone (its own
 * input, a kernel), it calls atm_comm_abort to end them all.
 *
 * When one rank dies (a signal, exit without atm_comm_destroy), Open MPI's mpirun ends the
 * others within a couple of seconds; it is not an error any call here returns. Ctrl-C reaches
 * mpirun alone (it starts each rank in a process group of its own), and mpirun sends every
 * rank SIGTERM, not SIGINT, a second later, then SIGKILL a second after that (Open MPI 4.1's
 * odls_base_sigkill_timeout): a rank that is to stop cleanly watches SIGTERM too, and has that
 * second.
 */
#ifndef ATM_COMM_H
#define ATM_COMM_H

#include <stdbool.h>
#include <stdint.h>

#include "atm_core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atm_comm atm_comm;

/* atm_comm_new -- the job's communicator. Launched by mpirun/srun (the environment above): MPI
 * initialised with MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED) unless the program did so
 * already (then the program finalises it), and MPI_ERRORS_RETURN set on MPI_COMM_WORLD and on
 * the duplicate of it that every call here uses. Otherwise one rank, MPI untouched. argc and
 * argv may be NULL.
 * Errors: ATM_E_UNSUPPORTED when this build has no MPI and the launcher started more than one
 * rank ("autotm was built without MPI: install libopenmpi-dev and openmpi-bin and rebuild"),
 * or when MPI cannot give MPI_THREAD_FUNNELED; ATM_E_IO when MPI's world is not the size the
 * launcher gave (srun without an MPI plugin makes N jobs of one rank each: srun --mpi=pmix),
 * when MPI was finalised already in this process (MPI initialises once per process), or when
 * an MPI call fails; ATM_E_NOMEM. MPI_Init_thread's own failure is fatal in MPI 3 (Open MPI
 * 4 aborts the process with its own message): there is no handler to return it through. */
atm_status atm_comm_new(atm_comm **out, int *argc, char ***argv);

/* atm_comm_destroy -- free c and, if atm_comm_new initialised MPI, MPI_Finalize (collective:
 * every rank destroys its communicator). NULL does nothing. Under Open MPI's mpirun, a job
 * that Ctrl-C (SIGINT to mpirun) is stopping is killed during MPI_Finalize: write results
 * before destroying. */
void atm_comm_destroy(atm_comm *c);

/* atm_comm_rank -- this process's rank, 0 .. size - 1 (0 alone) */
int atm_comm_rank(const atm_comm *c);

/* atm_comm_size -- how many ranks the job has (1 alone) */
int atm_comm_size(const atm_comm *c);

/* atm_comm_active -- whether there is anyone to talk to: size > 1 */
bool atm_comm_active(const atm_comm *c);

/* atm_comm_has_mpi -- whether this build has MPI (comm_mpi.c) or is single-rank (comm_none.c) */
bool atm_comm_has_mpi(void);

/* atm_comm_allreduce_mean -- in place, the element-wise mean over the ranks of a bucket of n
 * float buffers: bufs[i] holds counts[i] floats (a buffer of 0 floats may be NULL); every rank
 * passes the same counts. Deterministic, whatever MPI's own algorithms: each element is summed
 * in float in rank order, ((x0 + x1) + x2) + ... + x[N-1], and the sum DIVIDED by N in float
 * (not multiplied by 1/N: for N not a power of two that rounds differently); one rank sums each
 * element and sends its bits to the others, so every rank ends with bitwise the same values,
 * and a run repeated gives bitwise the same values, however the bucket is cut into buffers or
 * rounds. How: the bucket is packed into a scratch the communicator keeps (grown as needed, up
 * to about 2 x the round's floats), cut into N nearly equal chunks (the first total % N one
 * float longer), MPI_Alltoallv brings every rank's chunk j to rank j, rank j sums them, and
 * MPI_Allgatherv hands the sums back: each rank sends and receives 2 (N - 1) / N of the
 * bucket, as a ring all-reduce. A bucket larger than the round (atm_comm_set_round) goes in
 * several rounds. With one rank nothing moves and the values are unchanged (the mean of one).
 * Before anything moves, the ranks compare their totals and whether their scratch could
 * grow, so that these errors are every rank's: ATM_E_USAGE for n < 0, a negative count, a
 * NULL buffer of a positive count, or totals (or rounds) that differ between the ranks (the
 * message names the ranks and their floats); ATM_E_NOMEM naming the rank that could not
 * allocate; ATM_E_IO from MPI. On failure the buffers hold their own values or the mean. */
atm_status atm_comm_allreduce_mean(atm_comm *c, float *const *bufs, const int64_t *counts, int n);

/* atm_comm_waited_s -- seconds this rank's atm_comm_allreduce_mean calls have spent in their
 * first collective, the ranks' check of the bucket, summed since atm_comm_new: there each rank
 * waits until the last one arrives, so it is the ranks' skew (plus one small message's
 * latency), not the time the mean itself takes. 0 alone; c NULL: 0. Not collective. */
double atm_comm_waited_s(const atm_comm *c);

/* atm_comm_set_round -- the most floats one round of atm_comm_allreduce_mean moves (and the
 * scratch it needs, about twice that): a larger bucket takes several rounds, with bitwise the
 * same result. 1 .. 1 << 30 (MPI counts and offsets are ints); the default 1 << 24 (64 MiB) keeps
 * the scratch small and the rounds long. Must be the same on every rank (allreduce_mean checks
 * it). Not collective. ATM_E_USAGE outside the range. */
atm_status atm_comm_set_round(atm_comm *c, int64_t n_floats);

/* atm_comm_bcast -- root's bytes into every rank's buf (all pass the same bytes; MPI_Bcast in
 * rounds of 1 GiB, so bytes may pass INT_MAX). ATM_E_USAGE for bytes < 0, a NULL buf with
 * bytes > 0, or a root that is no rank (every rank checks the same arguments); ATM_E_IO. */
atm_status atm_comm_bcast(atm_comm *c, void *buf, int64_t bytes, int root);

/* atm_comm_bcast_text -- root's malloc'd string *text reaches every other rank as a malloc'd
 * copy in *text (the caller frees it; what *text held there before is ignored, not freed);
 * root's own *text stays as it was. Root's NULL reaches every rank as NULL, with ATM_OK: a
 * root that failed tells the others so instead of leaving them waiting. Errors, every rank's:
 * ATM_E_USAGE for a root that is no rank; ATM_E_NOMEM naming the rank that could not allocate
 * the copy; ATM_E_IO. On failure the other ranks' *text is NULL. */
atm_status atm_comm_bcast_text(atm_comm *c, char **text, int root);

/* atm_comm_allgather_f64 -- every rank's v, in rank order, into all[0 .. size - 1] on every rank */
atm_status atm_comm_allgather_f64(atm_comm *c, double v, double *all);

/* atm_comm_allgather_u64 -- the same for a uint64_t */
atm_status atm_comm_allgather_u64(atm_comm *c, uint64_t v, uint64_t *all);

/* atm_comm_agree -- every rank gives the digest of its copy of what ("graph", "plan",
 * "options", "version"); if any differs from rank 0's, EVERY rank returns ATM_E_INPUT with the
 * same message naming what and the ranks that differ: "ranks disagree on the graph: rank 1 has
 * 9f3a..., rank 0 has 12bc..." (the digests in 16 hex digits; after 8 ranks, "and K more").
 * what NULL: "job". ATM_E_IO from MPI. */
atm_status atm_comm_agree(atm_comm *c, const char *what, uint64_t digest);

/* atm_comm_barrier -- returns once every rank has called it. ATM_E_IO from MPI. */
atm_status atm_comm_barrier(atm_comm *c);

/* atm_comm_abort -- end every rank of the job with exit_code, now: MPI_Abort on MPI_COMM_WORLD
 * (mpirun prints that rank R called it and exits with exit_code), or exit(exit_code) when MPI
 * is not initialised (one rank) or c is NULL. For the rank that fails alone while the others
 * would wait for it in a collective; print the reason first. Never returns. */
_Noreturn void atm_comm_abort(atm_comm *c, int exit_code);

#ifdef __cplusplus
}
#endif

#endif /* ATM_COMM_H */
