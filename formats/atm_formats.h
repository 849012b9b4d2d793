/* atm_formats.h -- autotm's files: graph, plan and profile JSON, results, plan timelines,
 * safetensors, the machine file, and the atomic writes, locks and whole-file reads beneath them.
 *
 * Usage:
 *     atm_graph *g = NULL;
 *     atm_plan *p = NULL;
 *     if (atm_graph_load(&g, "mlp.json", NULL) < 0 ||    // the message names the file
 *         atm_plan_load(&p, g, "plan.json") < 0) { ... }  // and the element that is wrong
 *     atm_plan_save(p, "copy.json");                     // temporary file + rename
 *     atm_plan_destroy(p);
 *     atm_graph_destroy(g);
 *
 * Each format is read and written here over what core holds in memory (graphs, plans,
 * schedules); core calls nothing here. A profile in memory and its kernel keys sit beside the
 * profile's file format: the optimizer reads profiles and must not link the runtime the
 * profiler is built on. Errors as core's: an atm_status and atm_errmsg().
 */
#ifndef ATM_FORMATS_H
#define ATM_FORMATS_H

#include "atm_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- JSON */

struct json_t; /* jansson's */
/* atm_json_type_name -- "an object", "an array", "a string", "a number", "a boolean" or "null":
 * what a value is, for "expected X, got Y" messages */
const char *atm_json_type_name(const struct json_t *v);
/* atm_json_unknown_key -- the first key of object o that is not one of keys (NULL-terminated),
 * NULL when every key is known; valid then holds keys, comma separated, for the message.
 * Every reader of a JSON file refuses keys it does not know, so that a misspelt one is named
 * rather than ignored. */
const char *atm_json_unknown_key(const struct json_t *o, const char *const *keys, char *valid,
                                 size_t len);
/* atm_json_text -- v as text (malloc'd; flags as json_dumps's), or ATM_E_NOMEM: the whole text
 * or none, where json_dumps (jansson 2.14) may drop a key when an allocation fails */
atm_status atm_json_text(const struct json_t *v, size_t flags, char **text);
/* atm_json_set_new -- obj[key] = v, stealing v as json_object_set_new does; a failure (obj or
 * v NULL: an allocation that failed; or a failed set) clears *ok, so that a writer checks once
 * at the end and never drops a field unnoticed */
void atm_json_set_new(struct json_t *obj, const char *key, struct json_t *v, bool *ok);

/* ---------------------------------------------------------------- graph JSON */

/* Loading options: values for symbolic dimensions ("batch"), and a forward file's precision. */
typedef struct {
	int64_t batch; /* > 0 overrides the file's "batch" parameter */
	const char *precision; /* a forward file's: "f32", "bf16" (NULL: its own; graphs: f32 only) */
} atm_graph_load_opts;

/* atm_graph_load -- read and validate a graph JSON file (docs/graph-format.md).
 * Errors are ATM_E_INPUT (message names the file and the element) or ATM_E_IO. */
atm_status atm_graph_load(atm_graph **g, const char *path, const atm_graph_load_opts *opts);
/* atm_graph_load_buffer -- the same from memory; origin names it in messages */
atm_status atm_graph_load_buffer(atm_graph **g, const char *data, size_t len, const char *origin,
                                 const atm_graph_load_opts *opts);
/* atm_graph_dump -- the graph as canonical JSON text (malloc'd, caller frees) */
atm_status atm_graph_dump(const atm_graph *g, char **text);
/* atm_graph_save -- write canonical JSON atomically (temporary file + rename) */
atm_status atm_graph_save(const atm_graph *g, const char *path);

/* ---------------------------------------------------------------- plan JSON */

/* Plan JSON (docs/formats.md). Loading checks the plan belongs to g: same
 * graph name and tensor names, and a digest of the graph's structure. */
atm_status atm_plan_load(atm_plan **p, const atm_graph *g, const char *path);
atm_status atm_plan_load_buffer(atm_plan **p, const atm_graph *g, const char *data, size_t len,
                                const char *origin);
atm_status atm_plan_dump(const atm_plan *p, char **text);
atm_status atm_plan_save(const atm_plan *p, const char *path);

/* ---------------------------------------------------------------- kernel keys */

/* Identical kernels (same op, attributes, shapes and dtypes) share a signature, and each
 * kernel has IO configurations: where its operands are. A profile keys kernel times by both.
 *
 * An IO configuration is a mask over a node's operand groups: bit i set means group i is in
 * slow memory. A node has one group per operand (inputs, then outputs) unless it has more than
 * ATM_CONFIG_MAX_OPERANDS (a DenseNet concatenation of 64 inputs would have 2^65
 * configurations); then bit 0 is all its inputs and bit 1 all its outputs. A group holding a
 * fast-only tensor never has its bit set; operands that are one tensor share one location.
 * atm_node_config_loc and atm_node_config_of translate between masks and operands' places. */

#define ATM_CONFIG_MAX_OPERANDS 8
/* A buffer this long holds the signature of any node of up to about 200 operands. */
#define ATM_SIGNATURE_MAX 8192

/* atm_node_signature -- the kernel signature of node (same for identical
 * kernels), e.g. "conv_fwd/s1,1/p1,1,1,1/f32[8,3,64,64],f32[64,3,3,3]->f32[8,64,64,64]";
 * ATM_E_USAGE when it does not fit in len bytes (ATM_SIGNATURE_MAX is plenty) */
atm_status atm_node_signature(const atm_graph *g, int32_t node, char *buf, size_t len);
/* atm_node_n_configs -- how many IO configurations node has: 2^k, k = its
 * groups that may be slow, counting operands that are one tensor once */
int atm_node_n_configs(const atm_graph *g, int32_t node);
/* atm_node_config_at -- the i-th configuration's mask (i = 0: everything fast) */
uint32_t atm_node_config_at(const atm_graph *g, int32_t node, int i);
/* atm_node_config_loc -- ATM_LOC_FAST or ATM_LOC_SLOW: where operand (inputs
 * then outputs) is in config */
unsigned atm_node_config_loc(const atm_graph *g, int32_t node, uint32_t config, int operand);
/* atm_node_config_of -- the configuration with these per-operand locations
 * (inputs then outputs); ATM_E_NOTFOUND naming the node when the node has none
 * (a fast-only tensor in slow memory, one tensor in two places, the inputs of a
 * grouped node apart) */
atm_status atm_node_config_of(const atm_graph *g, int32_t node, const unsigned *locs,
                              uint32_t *config);
/* atm_node_config_name -- "FS/F": F or S per input, '/', F or S per output; a
 * grouped node's "S+/F+" means all its inputs slow, all its outputs fast */
const char *atm_node_config_name(const atm_graph *g, int32_t node, uint32_t config, char *buf,
                                 size_t len);

/* ---------------------------------------------------------------- profiles */

/* A profile holds measured (or estimated) kernel times, keyed by the kernel's signature and
 * its IO configuration, for one machine: timings from another CPU, thread count, tier pair,
 * emulation or backend are never mixed in. The optimizer reads it; the profiler fills it and
 * keeps it in its on-disk cache (profiler/atm_profiler.h), whose format (docs/profile.md) is
 * read and written here.
 *
 *     atm_profile_machine m = {...};                  // atm_kbench_machine fills it
 *     atm_profile *p = NULL;
 *     atm_profile_new(&p, &m, NULL);                   // in memory; or atm_prof_cache_open
 *     atm_profile_put(p, g, node, 0, &(atm_profile_entry){.min_s = 1e-3, .median_s = 1e-3,
 *                                                         .count = 1});
 *     atm_profile_entry e;                              // a configuration it lacks: an
 *     atm_profile_get(p, g, node, atm_node_config_at(g, node, 1), &e); // error naming the kernel
 *     atm_profile_destroy(p);
 */

/* What makes timings comparable. Two profiles are of the same machine when
 * every field is equal. */
typedef struct {
	char cpu[128];       /* CPU model */
	int n_threads;       /* threads the kernels run on (OpenMP) */
	char backend[48];    /* "cpu-onednn-2.6.3" */
	char fast_tier[48];  /* tier kind and node: "dram:0" */
	char slow_tier[48];  /* "pmem-dir", "kmem-dax:2", ... */
	char emulation[32];  /* preset or spec name; "" when the slow tier is real */
	bool estimated;      /* a roofline estimate, nothing measured */
} atm_profile_machine;

/* What a profile may hold, so that any sum of its times stays finite: a kernel time above a day
 * is no measurement, a move bandwidth below 1 kB/s or above 100 TB/s no memory's. */
#define ATM_PROFILE_MAX_S 86400.0
#define ATM_PROFILE_MIN_GBPS 1e-6
#define ATM_PROFILE_MAX_GBPS 1e5

/* One kernel in one configuration. */
typedef struct {
	double min_s;
	double median_s;
	int32_t count;          /* timed runs (>= 1) */
	int64_t scratch_bytes;  /* scratch the kernel asked for */
	bool estimated;
} atm_profile_entry;

/* Moves between the tiers: bandwidths of synchronous copies (1e9 bytes/s), and what an
 * asynchronous copy costs the kernels it overlaps. */
typedef struct {
	double to_fast_gbps;
	double to_slow_gbps;
	bool estimated;
	/* The fraction of an overlapped copy's time that the kernel running beside it loses
	 * (0 to 1): 0 when the copy takes nothing from the kernel (a GPU's copy engines), near 1
	 * when the copy's thread takes a core the kernel needed, so that overlapping buys nothing.
	 * A kernel of time k beside copies of time c then takes max(k + overlap_loss * c, c). */
	double overlap_loss;
	bool overlap_measured; /* overlap_loss was measured (absent from older caches: 0) */
	/* The same by direction, [0] copies to fast memory (fetches), [1] to slow memory
	 * (evictions), as measured with each direction's copies alone beside a kernel: what the
	 * kernel loses (kernel_loss, a fraction of the copies' time, 0 to 1) and what the copies
	 * lose (copy_stretch, their time beside the kernel over their time alone, 1 to
	 * ATM_PROFILE_MAX_STRETCH). Kernels of time k beside copies c[d] then take
	 * max(k + sum kernel_loss[d] c[d], sum copy_stretch[d] c[d]) (atm_profile_overlap).
	 * Without by_direction (older caches, estimates, a GPU's copy engines) both directions
	 * are overlap_loss and a stretch of 1. */
	double kernel_loss[2], copy_stretch[2];
	bool by_direction;
	int overlap_threads;          /* threads the kernel ran on when measured (0: unknown) */
	char overlap_wait_policy[16]; /* OMP_WAIT_POLICY then ("passive"; "": unset or unknown) */
	/* The slow tier's own rates, what a kernel's slow accesses are charged (an emulated tier's
	 * spec, a real one's as surveyed), and the fast bandwidth the kernels' times were measured
	 * at (an emulation's waits count from it): what a 2LM cache's misses cost
	 * (atm_twolm_wait_s). 0: unknown (older caches; a tier whose speed nobody knows). */
	double slow_read_gbps, slow_write_gbps, fast_gbps;
} atm_profile_moves;

typedef struct atm_profile atm_profile;

/* atm_profile_new -- an empty profile of machine m (ATM_E_USAGE naming a field that is empty
 * or not terminated); path names the cache file it belongs to, in messages and
 * atm_profile_path (NULL: in memory only) */
atm_status atm_profile_new(atm_profile **p, const atm_profile_machine *m, const char *path);
void atm_profile_destroy(atm_profile *p);
/* atm_profile_machine_get -- the machine the profile is of */
const atm_profile_machine *atm_profile_machine_get(const atm_profile *p);
/* atm_profile_path -- the cache file, NULL when in memory only */
const char *atm_profile_path(const atm_profile *p);
/* atm_profile_n_entries -- kernel configurations held for this machine (in-step
 * calibrations are not counted) */
int64_t atm_profile_n_entries(const atm_profile *p);
/* atm_profile_machine_json -- machine m as a profile file writes it: a new reference, NULL
 * when out of memory */
struct json_t *atm_profile_machine_json(const atm_profile_machine *m);

/* atm_profile_get -- node's time in config; ATM_E_NOTFOUND naming the kernel
 * and the configuration when it was never profiled */
atm_status atm_profile_get(const atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                           atm_profile_entry *out);
/* atm_profile_put -- record e (times >= 0, count >= 1) for node in config,
 * replacing what was there; times are kept to 10 significant digits, as saved */
atm_status atm_profile_put(atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                           const atm_profile_entry *e);
/* Kernels with several implementations keep each one's time under its index: 0 is the
 * default one, what atm_profile_get and atm_profile_put mean; its workspace is the entry's
 * scratch_bytes. The most workspace an algorithm of a GPU kernel may take: inside the plan's
 * limit and arena when the plan counts it (atm_plan_set_workspace), else in the device memory
 * kept back from plans (ATM_GPU_RESERVE_BYTES). */
#define ATM_GPU_WORKSPACE_BYTES ((int64_t)256 << 20)
/* atm_profile_get_algo, atm_profile_put_algo -- node in config with algorithm algo
 * (0 to ATM_MAX_ALGOS - 1); ATM_E_NOTFOUND when never profiled */
atm_status atm_profile_get_algo(const atm_profile *p, const atm_graph *g, int32_t node,
                                uint32_t config, int algo, atm_profile_entry *out);
atm_status atm_profile_put_algo(atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                                int algo, const atm_profile_entry *e);
/* atm_profile_has -- is node in config in the profile */
bool atm_profile_has(const atm_profile *p, const atm_graph *g, int32_t node, uint32_t config);

/* A kernel inside a training step runs slower (or faster) than the same kernel timed alone:
 * the step's other kernels have evicted its operands from the caches, and on a GPU the
 * timing events around one kernel cost more than the kernel in a stream of launches. The
 * profiler measures this once per signature in real all-fast steps of the graph, and the
 * profile keeps it beside the kernel's configurations ("in_step", docs/profile.md): step_s
 * is the kernel's time in the fastest of those steps (a mean over its nodes), isolated_s its
 * all-fast time alone when that was measured. While the calibration is in use (the default), every time
 * atm_profile_get and atm_profile_get_algo give for the kernel, in any configuration, is
 * shifted by step_s - isolated_s (never below 0): the part of a time that a slow operand
 * adds is left as measured. It is one machine's, as every entry: a profile of another CPU,
 * thread count, tier pair, emulation or backend holds its own or none. */
typedef struct {
	double step_s;       /* time in the fastest all-fast step, mean over n_nodes nodes */
	double isolated_s;   /* the all-fast time alone, as the profile held it then */
	int32_t n_nodes;     /* nodes of the signature the mean is over (>= 1) */
} atm_profile_in_step;

/* atm_profile_put_in_step -- record node's signature's in-step time (times >= 0 and at most
 * ATM_PROFILE_MAX_S, n_nodes >= 1), replacing what was there */
atm_status atm_profile_put_in_step(atm_profile *p, const atm_graph *g, int32_t node,
                                   const atm_profile_in_step *s);
/* atm_profile_get_in_step -- node's signature's in-step time; ATM_E_NOTFOUND when never
 * measured */
atm_status atm_profile_get_in_step(const atm_profile *p, const atm_graph *g, int32_t node,
                                   atm_profile_in_step *out);
/* The all-fast step of one graph as its in-step calibration measured it: when, and the
 * fastest of the calibration's steps (what a run reports as its step). A run that measures
 * all-fast later compares its step with this one to tell how much faster or slower the
 * machine is now than when it was profiled ("all_fast_steps", docs/profile.md). Kept per
 * graph (its digest): the in-step times are per kernel signature, shared by graphs. */
/* a UTC time as text, "2025-01-31T12:00:00Z", with its NUL (atm_utc_now) */
#define ATM_UTC_TEXT_MAX 21
typedef struct {
	double step_s;                        /* > 0 and at most ATM_PROFILE_MAX_S */
	char measured_at[ATM_UTC_TEXT_MAX];   /* UTC, as atm_utc_now writes it */
} atm_profile_calibration;

/* atm_profile_put_calibration -- record g's calibration step (ATM_E_USAGE when the time is out
 * of range, the date is not one, or the profile is estimated), replacing what was there */
atm_status atm_profile_put_calibration(atm_profile *p, const atm_graph *g,
                                       const atm_profile_calibration *c);
/* atm_profile_get_calibration -- g's calibration step; ATM_E_NOTFOUND when the profile holds
 * none for g (its kernels were calibrated in another graph's steps, or before autotm kept
 * the step, or never) */
atm_status atm_profile_get_calibration(const atm_profile *p, const atm_graph *g,
                                       atm_profile_calibration *out);
/* atm_profile_use_in_step -- price kernels with the in-step calibration (on by default) or
 * with their isolated times alone */
void atm_profile_use_in_step(atm_profile *p, bool on);
/* atm_profile_uses_in_step -- the calibration is in use */
bool atm_profile_uses_in_step(const atm_profile *p);
/* Move bandwidths; ATM_E_NOTFOUND when never measured. */
atm_status atm_profile_get_moves(const atm_profile *p, atm_profile_moves *out);
atm_status atm_profile_set_moves(atm_profile *p, const atm_profile_moves *m);
/* Most a copy beside a kernel may take over its time alone in a profile. */
#define ATM_PROFILE_MAX_STRETCH 100.0
/* atm_profile_overlap -- what copies to loc (ATM_LOC_FAST or ATM_LOC_SLOW) beside a kernel cost
 * it (*kernel_loss, a fraction of their time) and themselves (*copy_stretch, a factor), by
 * direction where m has them, else overlap_loss and 1 */
void atm_profile_overlap(const atm_profile_moves *m, unsigned loc, double *kernel_loss,
                         double *copy_stretch);

/* The cache file: one JSON document holding a section per machine. Reading and merging work
 * on its text; the profiler's cache does the file's I/O, its lock and its atomic writes. */

/* atm_profile_read_cache -- take in the section of p's machine from a cache file's text (NULL:
 * no file yet), checked whole first: a broken one is ATM_E_INPUT naming p's path and where it
 * broke, and nothing is taken. With rebuild nothing is taken either, a broken text is no
 * error, and the next merge drops the section (the whole text when it is broken). */
atm_status atm_profile_read_cache(atm_profile *p, const char *text, size_t len, bool rebuild);
/* atm_profile_merge_cache -- *out (malloc'd, *out_len bytes): the cache file's text (NULL: no
 * file yet) with everything p holds unsaved merged into its machine's section, every other
 * section kept; p takes in what the text had of its machine. ATM_E_INPUT when the text is
 * broken (unless a rebuild is pending). p stays unsaved until atm_profile_saved. */
atm_status atm_profile_merge_cache(atm_profile *p, const char *text, size_t len, char **out,
                                   size_t *out_len);
/* atm_profile_unsaved -- entries or moves put since the last save, or a rebuild pending */
bool atm_profile_unsaved(const atm_profile *p);
/* atm_profile_saved -- the merged text is in the file: nothing is unsaved any more */
void atm_profile_saved(atm_profile *p);

/* ---------------------------------------------------------------- results */

/* Version of the results format written and appended to (docs/formats.md, "Results JSON"). */
#define ATM_RESULTS_VERSION 2

/* What the workload is beyond its graph: the sizes it was built with. */
typedef struct {
	const char *preset; /* the zoo preset the sizes came from; NULL: a graph file or given sizes */
	int64_t batch;      /* 0: atm_graph_batch */
	int64_t image;      /* input height and width; 0: not an image network or unknown */
	int64_t seq;        /* a language model's sequence; 0: none or unknown (not written) */
	const char *gpu_model; /* a plan for a GPU model (--gpu-model): its name, written in each
	                        * record that nothing ran ("backend": "gpu-model", "device"); NULL:
	                        * none */
} atm_results_workload;

/* A run's part in a comparison: placements of one workload trained in turns in one process,
 * so that a reader pairs turn t of one with turn t of another (README "Results JSON"). */
typedef struct {
	const char *id;            /* shared by the comparison's runs, unique per process */
	const char *interleave;    /* "step" (executors alive together, a step each in turn) or
	                            * "turn" (a fresh executor per placement and turn) */
	int index;                 /* this placement's place in the order listed, 0 first */
	int n_placements;          /* placements trained in the comparison */
	int n_turns;
	int steps_per_turn;        /* steps a turn counts (the fastest is the turn's time) */
	const double *turn_s;      /* per turn: the step time */
	const int *turn_position;  /* per turn: where it ran in the turn's order, 0 first */
	const double *turn_others; /* per turn: CPU time other processes took while its counted
	                            * steps ran, in cores (0.5: half a core the whole time) */
	const int *turn_reruns;    /* per turn: disturbed rounds (or turns) measured again */
	bool with_all_fast;        /* all-fast was compared too: the slowdowns hold */
	double predicted_slowdown; /* its predicted step / all-fast's, both with the machine's drift
	                            * on all but the emulated waits; < 0: unknown */
	double predicted_slowdown_raw; /* the same as planned, without the drift; < 0: unknown */
	double predicted_drift_s;  /* its predicted step with the drift; < 0: drift unknown */
	double predicted_wait_s;   /* of its predicted step, the emulated waits; < 0: unknown */
	double measured_slowdown;  /* median over turns of its step / all-fast's in the same turn */
	double measured_slowdown_min, measured_slowdown_max;
} atm_run_comparison;

/* What a run measured; the plan and its schedule give the rest of a results record.
 * Negative times and NULL pointers are written as null (not measured). */
typedef struct {
	double actual_runtime_s; /* fastest measured step */
	double mean_runtime_s;
	int n_iters;
	const double *kernel_s;  /* per node */
	const double *step_kernel_s; /* per node: its time in the fastest step (NULL: unknown) */
	const double *kernel_pred_s; /* per node: the plan's predicted kernel time (NULL: unknown) */
	int32_t n_in_step_nodes; /* of those, priced with the profile's in-step time */
	double overlap_loss;     /* the profile's overlap loss the prediction used */
	int n_losses;
	const float *losses;     /* per step, warm-up first */
	const char *weights_checksum;
	int64_t dram_alloc_bytes; /* fast memory the run used (arena extent): its high-water mark */
	const char *dram_high_water_at; /* what first held that mark (NULL: unknown) */
	int64_t scratch_bytes;    /* kernels' scratch in fast memory outside the arena */
	int64_t pmem_alloc_bytes; /* slow memory high-water mark */
	double emulation_wait_s;  /* per step */
	double move_wait_s;       /* per step */
	double recompute_s;       /* per step: kernels run again for recomputation (fastest step) */
	bool emulated;
	const char *emulation;    /* preset or spec name */
	bool emulation_absolute;  /* emulated: the spec's rates as they are, not scaled */
	double emulation_scale;   /* emulated: its rates over the spec's (1: absolute, <= 0: unknown) */
	double emulation_fast_gbps; /* emulated: the fast bandwidth its waits count from */
	double emulation_reference_gbps; /* emulated: the spec's own fast bandwidth */
	const char *memory_mode;  /* 2LM runs: "hardware" (Memory Mode) or "emulated"; else NULL */
	const char *fast_tier, *slow_tier; /* descriptions */
	const char *slow_path, *slow_fs; /* a file slow tier's path and file system, else NULL */
	double slow_read_gbps, slow_write_gbps; /* for move_time; 0 unknown */
	uint64_t seed;
	int n_threads;
	const char *backend;      /* "cpu", "cuda", "gpu-sim"; NULL: "cpu" */
	const char *device;       /* the GPU's name (or the simulated one's description) */
	const char *versions;     /* the kernel libraries' versions */
	bool simulated;           /* a simulated GPU: no GPU figure */
	int64_t gpu_memory_bytes; /* GPU: device memory the plan could use; 0 on the CPU */
	bool managed;             /* the cudaMallocManaged baseline: its step time becomes the
	                           * results' gpu_managed_runtime */
	double oracle_s;          /* GPU: every kernel at its fastest, no moves (< 0 or 0: unknown) */
	bool has_oracle;          /* the backend has one (a GPU's): oracle_time written, or null */
	bool has_energy;          /* a GPU's energy was measured (NVML): else null, never 0 */
	double energy_per_step_j; /* its energy per measured step, and its clocks and power limit */
	int sm_mhz, mem_mhz;
	double power_limit_w;
	const atm_run_comparison *comparison; /* NULL: a run alone; else actual_runtime_s is the
	                           * median of its turns */
	/* the machine now against when its profile was calibrated (atm_profile_calibration) */
	const char *profile_calibrated_at; /* NULL: the profile holds no calibration step of the
	                           * graph, or no profile priced the run */
	double profile_step_s;    /* the calibration's all-fast step */
	double profile_drift;     /* all-fast's step measured by this run (or its comparison) /
	                           * profile_step_s; <= 0: unknown (no all-fast step measured) */
	/* data parallelism (mpirun): losses, times and checksum above are rank 0's, the losses the
	 * mean over the ranks (each loss a mean over its shard, the shards of one size) */
	int ranks;                /* 0 or 1: one process, nothing of the following written */
	int64_t rank_batch;       /* each rank's part of the batch */
	const double *rank_step_s; /* per rank: its fastest measured step */
	double allreduce_s;       /* rank 0's allreduce kernels in its fastest step, less their wait */
	double allreduce_wait_s;  /* of those kernels' time, rank 0's wait for the other ranks to
	                           * arrive (the ranks' skew, not the mean's own cost) */
	double allreduce_pred_s;  /* the plan's prediction of them; < 0: unknown */
} atm_run_measured;

/* atm_results_write -- a results file (AutoTM's fields, docs/formats.md "Results JSON") with one
 * run: the plan (its ratio and solver figures in its info), its schedule's figures and what
 * m measured (NULL: a plan that did not run: actual times are null). w may be NULL. With
 * append, the run is added to path's runs when path holds results of the same workload
 * (graph name and digest), and refused (ATM_E_USAGE) when it holds another's, or results of
 * another version (ATM_E_INPUT); without append the file is replaced. The whole
 * read-change-write holds path's lock (atm_file_lock), so concurrent appends lose nothing;
 * written atomically. */
atm_status atm_results_write(const char *path, const atm_plan *p, const atm_schedule *s,
                             const atm_results_workload *w, const atm_run_measured *m,
                             bool append);
/* atm_results_write_runs -- atm_results_write of n runs at once (one read-change-write under
 * the lock: all of them or none): p[i], s[i] and m[i] (m NULL: none measured) are one run's;
 * every plan is of one graph */
atm_status atm_results_write_runs(const char *path, int n, const atm_plan *const *p,
                                  const atm_schedule *const *s, const atm_results_workload *w,
                                  const atm_run_measured *m, bool append);
/* atm_results_check -- before long work: can a run of g be written to path (its folder takes
 * a new file, path is not a folder), and with append, is an existing path a results file of
 * this version and of g's workload? Nothing is written. */
atm_status atm_results_check(const char *path, const atm_graph *g, bool append);

/* ---------------------------------------------------------------- timeline */

/* A plan's step as a picture of it needs it (docs/plan-timeline.md, plots/plan.py): at every
 * kernel the bytes fast memory holds by tensor kind and the plan's workspace, the arena's
 * extent, the slow operands; every move with where it starts and where it is waited for. It
 * is read off the step's schedule (atm_schedule_new), the layout the runtime allocates by.
 * What the plan does not know is optional (NULL: written as null). */
typedef struct {
	const atm_results_workload *workload; /* the preset, batch and image the graph was built with */
	const atm_profile *profile;           /* the profile the plan was priced with: its machine */
	const double *kernel_pred_s;          /* per node, its predicted kernel time */
} atm_timeline_opts;

/* atm_timeline_dump -- the timeline of plan p as JSON text (malloc'd, caller frees); s is p's
 * schedule (NULL: laid out here, with its errors: ATM_E_INPUT, ATM_E_INFEASIBLE); o may be
 * NULL */
atm_status atm_timeline_dump(const atm_plan *p, const atm_schedule *s, const atm_timeline_opts *o,
                             char **text);
/* atm_timeline_write -- the same written to path atomically (temporary file + rename) */
atm_status atm_timeline_write(const char *path, const atm_plan *p, const atm_schedule *s,
                              const atm_timeline_opts *o);

/* ---------------------------------------------------------------- safetensors */

/* Tensors by name in the safetensors layout PyTorch's tools write (docs/formats.md): an 8-byte
 * little-endian header length, a JSON header {"NAME": {"dtype", "shape", "data_offsets":
 * [BEGIN, END]}, "__metadata__": {...}}, then the tensors' bytes, which the offsets (counted
 * from the end of the header) cover whole, without a gap or an overlap. autotm reads weights
 * (--weights-in) and a step's inputs and labels (--data) from such files and writes weights
 * (--weights-out). */
typedef enum {
	ATM_ST_F32 = 0, ATM_ST_F64, ATM_ST_F16, ATM_ST_BF16, ATM_ST_I64, ATM_ST_I32, ATM_ST_I16,
	ATM_ST_I8, ATM_ST_U8, ATM_ST_U16, ATM_ST_U32, ATM_ST_U64, ATM_ST_BOOL, ATM_ST_N_DTYPES
} atm_st_dtype;

typedef struct {
	const char *name;
	atm_st_dtype dtype;
	int ndim;                   /* 0 (a scalar) to ATM_MAX_DIMS */
	int64_t dims[ATM_MAX_DIMS];
	int64_t n_elems;
	const void *data;           /* little-endian, not aligned */
	int64_t bytes;
} atm_st_tensor;

typedef struct atm_st_file atm_st_file;

/* atm_st_read -- a safetensors file (a regular file, mapped), every field checked: ATM_E_INPUT
 * naming the file and what is wrong (a short file, a header length past its end, a JSON error,
 * an unknown dtype, offsets outside the data, not matching the shape, overlapping or leaving a
 * gap), ATM_E_NOTFOUND, ATM_E_IO */
atm_status atm_st_read(atm_st_file **f, const char *path);
/* atm_st_parse -- the same from len bytes in memory (copied); path names them in messages */
atm_status atm_st_parse(atm_st_file **f, const void *buf, size_t len, const char *path);
void atm_st_destroy(atm_st_file *f);
const char *atm_st_path(const atm_st_file *f);
int64_t atm_st_count(const atm_st_file *f);
/* atm_st_at -- the i-th tensor in the order of their bytes; NULL out of range */
const atm_st_tensor *atm_st_at(const atm_st_file *f, int64_t i);
const atm_st_tensor *atm_st_find(const atm_st_file *f, const char *name);
const char *atm_st_dtype_name(atm_st_dtype d);
int atm_st_dtype_size(atm_st_dtype d);
/* atm_st_dump -- n tensors as a file's bytes (malloc'd), in the order given, the header padded
 * so that the tensors start 8-byte aligned, {"format": format} as metadata (NULL: "pt") */
atm_status atm_st_dump(const atm_st_tensor *t, int64_t n, const char *format, char **out,
                       size_t *len);
/* atm_st_narrow -- n floats as BF16 or F16 (to; F32 copies), each rounded to the nearest
 * value of the format, ties to even, as PyTorch's .to(torch.bfloat16) and .half() do: F16
 * overflows to an infinity and keeps subnormals; NaNs stay NaNs. dst holds n values of to and
 * does not overlap src. */
void atm_st_narrow(const float *src, int64_t n, atm_st_dtype to, void *dst);
/* atm_st_write -- the same written to path atomically (temporary file + rename) */
atm_status atm_st_write(const char *path, const atm_st_tensor *t, int64_t n, const char *format);
/* atm_st_check -- f holds g's tensors of kind (ATM_KIND_PARAM: weights; ATM_KIND_INPUT: a
 * step's data) and nothing else: each by its graph name, F32 of the graph's shape (or BF16 or
 * F16, which float32 holds exactly: widened on filling; F64 is refused). An input
 * may also go by "input" (the graph's one data input) or "labels" (its one labels input), and
 * labels may be integer class indices, one per row (the labels' elements over their last
 * dimension), each within the classes. With the weights, the optimizer's states (kind
 * optimizer_state, "W.exp_avg", ...): all of them or none; a step may be a scalar. ATM_E_INPUT
 * naming the tensor and what was expected. */
atm_status atm_st_check(const atm_st_file *f, const atm_graph *g, atm_tensor_kind kind);
/* atm_st_fill -- g's tensor t's starting values from f (checked by atm_st_check), class
 * indices as one-hot rows; false (data untouched) when f (or NULL) does not hold it */
bool atm_st_fill(const atm_st_file *f, const atm_graph *g, int32_t t, float *data);

/* ---------------------------------------------------------------- files */

/* atm_write_file_atomic -- write len bytes to path via a temporary file in the
 * same folder, fsync, rename; an interrupted write leaves the old file intact */
atm_status atm_write_file_atomic(const char *path, const char *data, size_t len);
/* atm_make_dirs -- dir and every folder above it that is missing (mkdir -p; the folders made
 * get mode, less the umask); ATM_E_IO naming dir and the folder where it stopped */
atm_status atm_make_dirs(const char *dir, unsigned mode);
/* atm_check_writable -- can path be written atomically (its folder takes a new file)? Checked
 * before long work, so that its results are not lost at the end; path is left as it is */
atm_status atm_check_writable(const char *path);
/* atm_file_lock -- an exclusive lock for path's read-change-write (a flock on "path.lock",
 * waited for); *fd is -1 on failure. atm_file_unlock(fd) releases it (-1: nothing). */
atm_status atm_file_lock(const char *path, int *fd);
void atm_file_unlock(int fd);
/* atm_mem_available_bytes -- what the kernel says can be allocated now without swapping
 * (/proc/meminfo's MemAvailable); -1 unknown */
int64_t atm_mem_available_bytes(void);
/* atm_read_file -- whole file into a NUL-terminated malloc'd buffer; a pipe is read to its end
 * (one with no writer reads as empty at once; waiting for a writer's data ends with
 * ATM_E_INTERRUPTED once the stop flag is set), a device or folder is refused */
atm_status atm_read_file(const char *path, char **data, size_t *len);
/* atm_read_file_max -- atm_read_file of a file that is a what ("graph file"), refused with
 * ATM_E_INPUT naming both sizes when it holds more than max_bytes (a regular file's size is
 * checked before anything is read). The caps of the formats (docs/formats.md): */
atm_status atm_read_file_max(const char *path, size_t max_bytes, const char *what, char **data,
                             size_t *len);
#define ATM_MACHINE_FILE_MAX_BYTES ((size_t)16 << 20)
#define ATM_TIERSPEC_MAX_BYTES ((size_t)1 << 20)
#define ATM_GRAPH_FILE_MAX_BYTES ((size_t)256 << 20)
#define ATM_PLAN_FILE_MAX_BYTES ((size_t)256 << 20)
#define ATM_RESULTS_FILE_MAX_BYTES ((size_t)1 << 30)
#define ATM_PROFILE_FILE_MAX_BYTES ((size_t)1 << 30)

/* The machine file keeps what autotm measures once per machine (docs/profile.md, "The
 * machine file"), by machine key in named sections: {"format": "autotm-machine", "version": 1,
 * SECTION: {KEY: entry, ...}, ...}. */
/* atm_machine_file_path -- $AUTOTM_MACHINE_FILE ("none": nowhere), else
 * $XDG_CACHE_HOME/autotm/machine.json, else ~/.cache/autotm/machine.json; "" when there is
 * nowhere to keep it; ATM_E_INPUT (path "") when what is there is no regular file */
atm_status atm_machine_file_path(char *path, size_t len);
/* atm_machine_file_check -- path is a regular file or nothing yet (ATM_E_INPUT naming what it
 * is otherwise: a pipe would be written through and wait for a reader, a device never keep) */
atm_status atm_machine_file_check(const char *path);
/* atm_machine_file_section -- the object SECTION of a machine file's text, checked: ATM_E_INPUT
 * naming path when the file is not one (or of another version), ATM_E_NOTFOUND when it has no
 * such section. *sec is borrowed from *root, which the caller releases (even on failure). */
atm_status atm_machine_file_section(const char *path, const char *text, size_t len,
                                    const char *section, struct json_t **root,
                                    struct json_t **sec);
/* atm_machine_file_put -- SECTION[key] = entry (its reference is taken, also on failure) in the
 * file at path: folders made, the other entries kept, an unusable file replaced, written
 * atomically under the file's lock. With had, an entry already there (another process's, kept
 * since this one looked) stays: nothing is written and *had is a new reference to it (else
 * NULL), so that every process of a machine uses the first measurement kept */
atm_status atm_machine_file_put(const char *path, const char *section, const char *key,
                                struct json_t *entry, struct json_t **had);

/* ---------------------------------------------------------------- dates and the machine */
/* atm_utc_now -- the wall clock in UTC as "2025-01-31T12:00:00Z" (ATM_UTC_TEXT_MAX bytes with
 * its NUL), as results and profiles date what they hold */
void atm_utc_now(char out[ATM_UTC_TEXT_MAX]);
/* atm_utc_valid -- text is such a time ("YYYY-MM-DDTHH:MM:SSZ", every field in its range) */
bool atm_utc_valid(const char *text);

/* atm_cpu_model -- the CPU's model from /proc/cpuinfo ("model name", or "Model" / "cpu model"
 * on other architectures), "unknown" when there is none */
void atm_cpu_model(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ATM_FORMATS_H */
