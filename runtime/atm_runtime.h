/* atm_runtime.h -- the runtime: executes a plan for real, kernels on oneDNN, tensors in memory tiers.
 *
 * Usage:
 *
 *     atm_plan *plan = NULL;
 *     atm_plan_uniform(&plan, g, ATM_LOC_SLOW);          // or atm_plan_load, atm_plan_random
 *     atm_exec_opts o = {.iters = 5, .emulate = "optane"};
 *     atm_exec *e = NULL;
 *     if (atm_exec_new(&e, plan, &o) < 0 || atm_exec_run(e) < 0)
 *             fprintf(stderr, "%s\n", atm_errmsg());
 *     const atm_exec_result *r = atm_exec_result_get(e);
 *     printf("%.3f s per step, loss %g\n", r->actual_runtime_s, r->losses[r->n_losses - 1]);
 *     atm_exec_destroy(e);
 *
 *     atm_backend_caps caps;                             // what a backend can do, by choice:
 *     atm_gpu_info info;                                 // NULL (the CPU), "cuda", "sim"
 *     atm_backend_caps_get(o.gpu.mode, &caps);
 *     if (caps.device_memory)
 *             atm_gpu_probe(&o.gpu, &info);              // the device's memory
 *
 * Every tensor lives where the plan says: fast copies at the plan's offsets in
 * one fast-memory arena of fixed size, slow copies in the slow tier's heap.
 * Synchronous moves run inline, asynchronous ones on a mover thread that
 * overlaps the kernels. For a fixed seed and thread count the losses and final
 * weights are bitwise the same whatever the plan.
 */
#ifndef ATM_RUNTIME_H
#define ATM_RUNTIME_H

#include <signal.h>

#include "atm_core.h"
#include "atm_formats.h"
#include "atm_twolm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- memory tiers */

/* A tier is a memory with a kind, a capacity and speeds; a run takes a fast one
 * and a slow one (docs/tiers.md has the order in which they are chosen). */
typedef enum {
	ATM_TIER_DRAM = 0,   /* DRAM of the node we run on (or of a node in the same package) */
	ATM_TIER_KMEM_DAX,   /* PMM (or other memory) onlined as a CPU-less node by the kmem DAX driver */
	ATM_TIER_NUMA_FAR,   /* memory of another socket, or a node that hwloc says is slower */
	ATM_TIER_HBM,        /* high-bandwidth memory node: faster, so never chosen as slow */
	ATM_TIER_CXL,        /* CXL Type-3 memory expander node */
	ATM_TIER_PMEM_DIR,   /* memkind PMEM kind: a temporary file in a directory */
	ATM_TIER_FSDAX_FILE, /* a user's file mapped with libpmem2 */
	ATM_TIER_GPU_DEVICE, /* a GPU's own memory (cudaMalloc), or the simulated GPU's arena */
	ATM_TIER_PINNED_HOST, /* page-locked host memory a GPU copies to and from (cudaHostAlloc) */
	ATM_TIER_N_KINDS
} atm_tier_kind;

/* atm_tier_kind_name -- "dram", "kmem-dax", "numa-far", "hbm", "cxl", "pmem-dir", "fsdax-file",
 * "gpu-device", "pinned-host" */
const char *atm_tier_kind_name(atm_tier_kind kind);

#define ATM_TIER_NAME_MAX 160
#define ATM_TIER_PATH_MAX 256

/* Where a file-backed slow tier (a pmem directory, an fsdax file) keeps its file. */
typedef struct {
	char path[ATM_TIER_PATH_MAX]; /* the pmem directory or the fsdax file; "" for memory tiers */
	bool folder;                  /* path is a pmem directory (false: an fsdax file) */
	char fs[16];                  /* its file system: "tmpfs", "ext4", "xfs", "overlay", ... */
	bool writeback;               /* that file system writes dirty pages back to a disk (it is
	                               * neither a tmpfs nor ramfs, and not DAX): the kernel's
	                               * writeback then throttles whoever writes the tier */
	bool given;                   /* the caller named it; false: the default folder */
	char why[128];                /* for a default folder, why that one ("a tmpfs with room
	                               * for 1.2 GiB", "/dev/shm is not a tmpfs", ...) */
} atm_tier_file;

/* What a tier (or a NUMA node) is. Speeds are 1e9 bytes per second and 0 when unknown. */
typedef struct {
	atm_tier_kind kind;
	char name[ATM_TIER_NAME_MAX]; /* "DRAM, NUMA node 0", "pmem dir /tmp/autotm-pmem (page cache)" */
	char subtype[16];             /* hwloc's subtype ("NVM", "HBM", "CXL-DRAM"), "" when none */
	int numa_node;                /* OS index of the node, -1 when the tier is not one node */
	int64_t capacity_bytes;       /* 0 unknown */
	double read_gbps;
	double write_gbps;
	double latency_ns;
	bool local;                   /* the node shares a package with the CPU we run on */
	bool kmem_dax;                /* the node is DAX memory onlined by the kmem driver */
	bool dax;                     /* file tiers: the file system maps PMM directly (DAX) */
	int64_t memside_cache_bytes;  /* a memory-side cache in front of the node (Memory Mode, 2LM:
	                               * DRAM caching PMM), its size; 0 when none */
	bool emulated;                /* speeds come from an emulation spec, not from the hardware */
	char emulation[32];           /* the spec's name when emulated */
	bool emulation_absolute;      /* emulated: the spec's rates as they are (not scaled) */
	double emulation_scale;       /* emulated: the rates over the spec's (1: absolute) */
	double emulation_fast_gbps;   /* emulated: the fast bandwidth its waits count from */
	double emulation_reference_gbps; /* emulated: the spec's own fast bandwidth */
	atm_tier_file file;           /* file tiers: where the file is */
} atm_tier_desc;

/* How to choose tiers. A zeroed struct means: fast and slow "auto", the default
 * pmem directory, no size limit. */
typedef struct {
	/* "auto" (or NULL): memkind's default kind on a one-node machine, bound to
	 * the home node otherwise; "memkind": MEMKIND_DEFAULT; "numa:N": bound to node N */
	const char *fast;
	/* "auto" (or NULL), "kmem-dax", "numa:N", "pmem-dir", "fsdax" */
	const char *slow;
	/* pmem-dir: NULL means the default folder (atm_tier_file_choose), created if missing;
	 * a directory given here must exist and is used as it is */
	const char *pmem_dir;
	/* fsdax: the file to map; "auto" picks fsdax over pmem-dir when it is set */
	const char *fsdax_path;
	/* pmem-dir: the kind's size limit (0: the file system's free space, else at
	 * least 16 MiB, memkind's minimum); fsdax: the file's size when it is
	 * created or shorter (0: use the file as it is) */
	int64_t slow_bytes;
	/* The default pmem folder's choice: the slow tier will be emulated (the CPU backend sets
	 * it from its emulate option), and the most bytes the run will hold in the slow tier and
	 * in fast memory (0: unknown; the executor fills them in from its plan, the kernel timer
	 * from its graph). */
	bool emulated;
	int64_t slow_need_bytes;
	int64_t fast_need_bytes;
} atm_tier_opts;

/* The folder of a pmem-dir slow tier when none is given. An emulated tier's file goes to
 * ATM_TIER_TMPFS_PMEM_DIR when its parent is a tmpfs with room for the run: in a disk's
 * file system the kernel's writeback throttles the writers of the file, and that, not the
 * emulator, would make most of the slow tier's cost (docs/tiers.md). Otherwise, and for a
 * tier that is not emulated, ATM_TIER_DEFAULT_PMEM_DIR. Each is the user's own: the prefix
 * followed by "-" and the user id (atm_tier_default_pmem_dir), made 0700 when missing and
 * refused when another user owns it, so that a second user on the machine never meets the
 * first one's folder. */
#define ATM_TIER_DEFAULT_PMEM_DIR "/tmp/autotm-pmem"
#define ATM_TIER_TMPFS_PMEM_DIR "/dev/shm/autotm-pmem"
/* atm_tier_default_pmem_dir -- this user's default folder: ATM_TIER_TMPFS_PMEM_DIR's (tmpfs)
 * or ATM_TIER_DEFAULT_PMEM_DIR's, "-UID" after it */
void atm_tier_default_pmem_dir(bool tmpfs, char *buf, size_t len);
/* The room rule: the tmpfs is taken when its free space holds the slow tier's need plus a
 * quarter (the allocator's size classes round up by as much, and the slow heap keeps freed
 * blocks) plus ATM_TIER_TMPFS_SLACK_BYTES, and when the memory available holds that and the
 * fast need too (a tmpfs's pages are memory, and its size may be set above what there is).
 * An unknown slow need counts as ATM_TIER_TMPFS_UNKNOWN_BYTES; a --slow-size cap bounds it. */
#define ATM_TIER_TMPFS_SLACK_BYTES ((int64_t)64 << 20)
#define ATM_TIER_TMPFS_UNKNOWN_BYTES ((int64_t)1 << 30)

/* atm_tier_file_choose -- where the slow tier o chooses would keep its file, without opening it:
 * the folder (o->pmem_dir, else the default for o->emulated and o->*_need_bytes) or the fsdax
 * file, its file system and whether it writes back to a disk; f->path "" when that slow tier
 * is memory (a NUMA node), not a file */
atm_status atm_tier_file_choose(const atm_tier_opts *o, atm_tier_file *f);
/* atm_tier_file_warning -- when the file f of a slow tier emulating emulation (NULL: not
 * emulated, no warning) sits on a file system that writes back to a disk: true, and one line
 * in buf that names the folder, its file system and why it was taken, says the writeback adds
 * to slow memory's cost, and how to choose another folder */
bool atm_tier_file_warning(const atm_tier_file *f, const char *emulation, char *buf, size_t len);

/* atm_tiers_survey -- what `autotm tiers` shows: this machine's NUMA nodes as hwloc finds
 * them, and the fast and slow tiers a run with o would use, opened to check that they work
 * (a pmem directory must be writable) and closed again; with emulate (NULL: none, else as
 * atm_exec_opts.emulate) the slow tier's description says what it emulates */
typedef struct atm_tiers atm_tiers;
atm_status atm_tiers_survey(atm_tiers **t, const atm_tier_opts *o, const char *emulate);
/* atm_tiers_destroy -- NULL is fine */
void atm_tiers_destroy(atm_tiers *t);
int atm_tiers_n_nodes(const atm_tiers *t);
/* NULL when i is out of range; nodes are in hwloc's logical order */
const atm_tier_desc *atm_tiers_node(const atm_tiers *t, int i);
const atm_tier_desc *atm_tiers_fast(const atm_tiers *t);
const atm_tier_desc *atm_tiers_slow(const atm_tiers *t);
/* atm_tiers_slow_reason -- why that slow tier: "NUMA node 2 is kmem-DAX (NVM)" */
const char *atm_tiers_slow_reason(const atm_tiers *t);
/* atm_tiers_memory_mode -- this machine is in Memory Mode (its home node sits behind a
 * memory-side cache, the hardware's 2LM): the cache's size in *cache_bytes, 0 when not */
atm_status atm_tiers_memory_mode(int64_t *cache_bytes);

/* ---------------------------------------------------------------- tier emulation specs */

/* How an emulated slow tier behaves (--emulate: a preset or a JSON tier spec,
 * docs/tiers.md). Bandwidths are 1e9 bytes per second. */
typedef struct atm_emu_spec {
	char name[32];
	double read_gbps;  /* slow -> fast copies, and kernels reading slow tensors */
	double write_gbps; /* fast -> slow copies, and kernels writing slow tensors */
	double latency_ns; /* idle load latency: reported, not waited (docs/tiers.md says why) */
	double fast_gbps;  /* the fast memory beside which read/write were measured: waits add
	                    * what slow bytes take beyond the same bytes at this speed, so the
	                    * slow tier is as much slower as on that machine, whatever the
	                    * speed of this one (0: ATM_EMU_REFERENCE_FAST_GBPS) */
	char source[200];  /* where the numbers come from */
	/* Proportional emulation (the default; docs/tiers.md): the rates above are the spec's
	 * times scale, and fast_gbps this machine's measured bandwidth, so that the slow tier
	 * costs a kernel here what it cost one on the spec's machine. */
	bool absolute;        /* the spec's rates as they are ("optane:absolute", "rates":
	                       * "absolute"): for a machine whose DRAM is as fast as fast_gbps */
	double scale;         /* this machine's bandwidth / the spec's fast_gbps once scaled; 1
	                       * absolute; 0 not yet scaled (atm_emu_spec_resolve's) */
	double machine_gbps;  /* proportional: this machine's fast-tier bandwidth it was scaled by */
	double reference_gbps; /* the spec's own fast_gbps, before scaling */
} atm_emu_spec;

/* Reasonable bounds for a tier spec: beyond them it is a typo, not a memory. */
#define ATM_EMU_MIN_GBPS 0.001    /* 1 MB/s: slower than that is not memory but storage */
#define ATM_EMU_MAX_GBPS 10000.0  /* 10 TB/s: above any memory made so far */
#define ATM_EMU_MAX_LATENCY_NS 1e6 /* 1 ms: slower than that is storage */
/* The DRAM of a 2-socket Cascade Lake socket (six channels of DDR4-2666/2933):
 * about 100 GB/s in STREAM-like copies, the machine the optane and numa
 * presets describe. */
#define ATM_EMU_REFERENCE_FAST_GBPS 100.0
/* Fast-tier bandwidth when hwloc does not know it and measuring fails: one
 * channel of DDR4-2666 (2666 MT/s x 8 bytes = 21.3 GB/s peak), rounded down. */
#define ATM_EMU_DEFAULT_FAST_GBPS 20.0

/* atm_emu_preset -- "optane", "cxl" or "numa"; ATM_E_USAGE names the valid ones */
atm_status atm_emu_preset(const char *name, atm_emu_spec *out);
/* atm_emu_spec_parse -- {"name", "read_gbps", "write_gbps", "latency_ns"[, "fast_gbps", "source"]};
 * ATM_E_INPUT names origin and the field */
atm_status atm_emu_spec_parse(const char *text, size_t len, const char *origin, atm_emu_spec *out);
/* atm_emu_spec_load -- the same from a file (ATM_E_IO when it cannot be read) */
atm_status atm_emu_spec_load(const char *path, atm_emu_spec *out);
/* atm_emu_spec_resolve -- a preset name, or a path to a JSON tier spec (it
 * contains a '/' or ends in ".json"), either followed by ":absolute" or ":proportional"
 * (the default, unless a file says "rates": "absolute"); not yet scaled (scale 0) */
atm_status atm_emu_spec_resolve(const char *tierspec, atm_emu_spec *out);
/* atm_emu_spec_scale -- a proportional spec's rates times machine_gbps / its fast_gbps, and
 * machine_gbps its fast tier's; an absolute one kept (scale 1). ATM_E_USAGE when
 * machine_gbps is not a bandwidth. */
atm_status atm_emu_spec_scale(atm_emu_spec *spec, double machine_gbps);
/* atm_emu_machine_gbps -- this machine's fast-tier bandwidth for proportional emulation: a
 * streaming copy on the threads autotm runs on (bytes read and written per second, the best
 * of a few, operands beyond the caches), measured once per machine and kept in the machine
 * file (machine_file; NULL: atm_machine_file_path's, "": none) under its CPU and thread
 * count. Once known it holds for the process. note (may be NULL) says where it came from;
 * ATM_E_UNSUPPORTED when it cannot be measured, ATM_E_INTERRUPTED when stop is set. */
atm_status atm_emu_machine_gbps(const char *machine_file, volatile sig_atomic_t *stop,
                                double *gbps, char *note, size_t note_len);
/* atm_emu_bandwidth_parse -- the bandwidth kept under key in a machine file's text (named path
 * in messages) into *gbps, and when it was measured into when (may be 0 long): ATM_E_NOTFOUND
 * when there is none, ATM_E_INPUT naming path when the file or the entry is unusable */
atm_status atm_emu_bandwidth_parse(const char *path, const char *text, size_t len,
                                   const char *key, double *gbps, char *when, size_t when_len);
/* atm_emu_machine_known -- this process knows the bandwidth already (*gbps) */
bool atm_emu_machine_known(double *gbps);
/* atm_emu_spec_resolve_scaled -- atm_emu_spec_resolve, then scaled by atm_emu_machine_gbps
 * when proportional; a bandwidth that cannot be measured is an error naming tierspec */
atm_status atm_emu_spec_resolve_scaled(const char *tierspec, const char *machine_file,
                                       volatile sig_atomic_t *stop, atm_emu_spec *out,
                                       char *note, size_t note_len);
/* atm_emu_is_preset -- tierspec names a preset (with or without a ":absolute" or
 * ":proportional" suffix), not a file */
bool atm_emu_is_preset(const char *tierspec);
/* atm_emu_spec_warning -- when spec's slow tier is no slower than its fast one (reads and
 * writes at least fast_gbps), so that emulating it adds no time: true, and why in buf */
bool atm_emu_spec_warning(const atm_emu_spec *spec, char *buf, size_t len);

/* ---------------------------------------------------------------- backends */

/* Which GPU, when the run is on one. A zeroed struct means the CPU. */
typedef struct {
	const char *mode;       /* the backend's choice (atm_backend_caps): NULL or "cpu": the CPU;
	                         * "cuda": a real NVIDIA GPU; "sim": a simulated one; "model": one
	                         * described by its datasheet (model), for plans and estimates */
	const char *model;      /* model: the GPU's name, of atm_gpu_model_nth's ("h100", ...) */
	int device;             /* cuda: device index */
	int64_t memory_bytes;   /* device memory the fast arena may take; 0: the device's free
	                         * memory less ATM_GPU_RESERVE_BYTES (sim: ATM_GPU_SIM_BYTES) */
	const char *link;       /* sim: the host link it stands for, "pcie4" (default), "pcie5",
	                         * "nvlink-c2c" (docs/gpu.md) */
	bool managed;           /* cuda: the fast arena is cudaMallocManaged memory (the baseline
	                         * of Figure 12: the driver pages it on demand) */
	bool allow_oversubscribe; /* managed: allow more managed memory than the device has free,
	                         * which can hang a GPU; never set by tests or experiments */
} atm_gpu_opts;

/* Device memory left to the CUDA context, cuDNN and cuBLAS (their handles,
 * kernels' modules, the convolution workspace of the default algorithms) when
 * --gpu-memory is not given: AutoTM's GPU_MEMORY_OVERHEAD, 1 GB on an RTX
 * 2080 Ti with nGraph; 1.5 GiB here, measured on an H100 with CUDA 13 and
 * cuDNN 9 (docs/gpu.md). */
#define ATM_GPU_RESERVE_BYTES ((int64_t)3 << 29)
/* The simulated GPU's memory when none is given: an RTX 2080 Ti's 11 GB less
 * the reserve, as the paper's Figure 12 ran. */
#define ATM_GPU_SIM_BYTES ((int64_t)11000000000 - ATM_GPU_RESERVE_BYTES)

/* A GPU as a run would find it. */
typedef struct {
	char name[128];         /* "NVIDIA H100 80GB HBM3", "simulated GPU" */
	int64_t free_bytes;     /* device memory free now */
	int64_t total_bytes;
	int64_t memory_bytes;   /* what the fast arena may take: o->memory_bytes when given,
	                         * else free_bytes less ATM_GPU_RESERVE_BYTES */
	bool simulated;
	bool modelled;          /* described by a GPU model: nothing runs, times are estimated */
} atm_gpu_info;

/* A GPU described by its datasheet, for plans and estimates made without it
 * (autotm plan --gpu-model NAME --estimate): the profiler's roofline prices its kernels from
 * these rates (docs/gpu.md, "GPU models"). */
typedef struct {
	const char *name;       /* how --gpu-model names it: "h100" */
	const char *title;      /* "NVIDIA H100 SXM5 80GB" */
	int64_t memory_bytes;   /* device memory */
	int64_t l2_bytes;       /* its last-level cache */
	double fp32_tflops;     /* float32 peak without tensor cores (autotm runs TF32 off) */
	double bf16_tflops;     /* bf16 dense tensor-core peak (f32 accumulation); 0: no bf16 units */
	double memory_gbps;     /* device memory bandwidth */
	double h2d_gbps;        /* pinned copies to the device over its host link */
	double d2h_gbps;        /* and back */
	const char *source;     /* where the figures come from */
} atm_gpu_model;

/* atm_gpu_model_get -- the model named name; ATM_E_USAGE naming the valid ones */
atm_status atm_gpu_model_get(const char *name, const atm_gpu_model **m);
/* atm_gpu_model_nth -- the i-th model, from 0; NULL past the last */
const atm_gpu_model *atm_gpu_model_nth(int i);

/* atm_gpu_probe -- the GPU o names, before anything is planned: ATM_E_UNSUPPORTED with the
 * reason when this build has no CUDA, there is no such device or no driver, o->memory_bytes
 * exceeds what is free, or nothing is left after the reserve */
atm_status atm_gpu_probe(const atm_gpu_opts *o, atm_gpu_info *info);

/* A GPU's energy counter and clocks, as NVML reads them. */
typedef struct {
	double joules;          /* energy since the driver loaded */
	int sm_mhz, mem_mhz;    /* clocks now (0: unknown) */
	double power_limit_w;   /* the power limit in force (0: unknown) */
} atm_gpu_energy;

/* atm_nvml_read -- the GPU at pci_bus_id (NULL: of NVML's index)'s counter, and with clocks its
 * clocks and power limit (else 0), from the NVML library lib (NULL: the driver's
 * libnvidia-ml.so.1), opened and the GPU looked up at the first call; ATM_E_UNSUPPORTED saying
 * why where NVML, the GPU or its counter is absent */
atm_status atm_nvml_read(const char *lib, const char *pci_bus_id, int index, bool clocks,
                         atm_gpu_energy *out);

/* What a backend can do, known without opening one: callers ask this rather than compare
 * backend names. */
typedef struct {
	const char *choice;      /* how a run asks for it: atm_gpu_opts.mode ("cuda", "sim"; "cpu"
	                          * or NULL for the CPU) */
	const char *name;        /* how results and messages name it: "cpu", "cuda", "gpu-sim" */
	bool built;              /* this build has it (cuda: made with the CUDA toolkit and cuDNN) */
	bool simulated;          /* a stand-in for hardware this machine lacks: its times are not
	                          * that hardware's */
	bool host_tiers;         /* fast and slow memory are this machine's tiers: --slow, --emulate,
	                          * --2lm and the roofline estimate describe them */
	bool device_memory;      /* fast memory is a device's, of the size atm_gpu_probe finds
	                          * (--gpu-memory, --gpu-device): a fast limit is at most that, and
	                          * the executor refuses a step that does not fit it */
	bool device_only;        /* kernels take every operand in fast memory: one configuration
	                          * per kernel, tensors in slow memory are fetched before a use */
	bool kernel_algos;       /* kernels offer several algorithms (a convolution's in cuDNN),
	                          * each profiled with its workspace */
	bool workspace_in_limit; /* a plan counts each kernel's workspace in the fast limit and the
	                          * executor reserves it in the arena (elsewhere kernels' scratch
	                          * lies outside it) */
	bool copy_engine;        /* asynchronous copies run beside the kernels at no cost to them
	                          * (the overlap loss is 0, not measured) */
	bool managed;            /* its fast arena can be managed memory (atm_gpu_opts.managed, the
	                          * cudaMallocManaged baseline) */
	bool link_presets;       /* the host link it simulates is chosen by name (atm_gpu_opts.link) */
	bool modelled;           /* a described device (atm_gpu_opts.model): nothing runs on it, its
	                          * kernels and copies are estimated, never measured */
	bool shared_kernels;     /* a kernel binds its operands at each run and keeps nothing of a
	                          * node between runs: nodes of one signature share one kernel */
} atm_backend_caps;

/* atm_backend_caps_get -- what the backend choice names can do (NULL: the CPU); ATM_E_USAGE,
 * naming the valid choices, for a name no backend has. A backend this build lacks answers
 * too, with built false. */
atm_status atm_backend_caps_get(const char *choice, atm_backend_caps *caps);
/* atm_backend_caps_nth -- the registry's i-th backend, from 0; ATM_E_NOTFOUND past the last */
atm_status atm_backend_caps_nth(int i, atm_backend_caps *caps);
/* atm_backend_supports_op -- the backend choice names has a kernel for op (false for an
 * unknown name, and for a backend this build lacks) */
bool atm_backend_supports_op(const char *choice, atm_op op);

typedef struct {
	int iters;              /* measured steps after the warm-up; 0: 5 */
	int warmup;             /* steps run first and not timed; < 0: none, 0: 1 */
	uint64_t seed;          /* initial weights, inputs and labels */
	atm_tier_opts tiers;    /* which memories are fast and slow */
	const char *emulate;    /* NULL, a preset ("optane", "cxl", "numa") or a tier spec file */
	atm_gpu_opts gpu;       /* run on a GPU (real or simulated) rather than the CPU */
	volatile sig_atomic_t *stop; /* set (by a signal handler) to end the run early */
	int64_t twolm_bytes;    /* > 0: emulate 2LM, fast memory of this size caching the slow
	                         * tier (the plan must be all-slow; needs emulate) */
	bool quiet;             /* no progress on stderr */
	const atm_st_file *weights; /* parameters' starting values instead of seed's (checked by
	                             * atm_st_check for ATM_KIND_PARAM); NULL: seed's */
	const atm_st_file *data;    /* inputs and labels (atm_st_check, ATM_KIND_INPUT); NULL: seed's */
	/* data parallelism: this rank's shard of the whole batch. whole is the graph at the whole
	 * batch (n_shards times this graph's, the same tensors by name); each batched input is made
	 * for it (from the seed, or data, which whole's shapes check) and rows [shard * B,
	 * (shard + 1) * B) taken, so that the ranks together train on what one process would.
	 * whole NULL: the graph's own inputs. */
	const atm_graph *whole;
	int shard, n_shards;
} atm_exec_opts;

/* What a run measured. Times are seconds; per-step figures are of one step. */
typedef struct {
	double actual_runtime_s;   /* fastest measured step */
	double mean_runtime_s;
	int n_iters;               /* measured steps */
	int n_losses;
	const float *losses;       /* every step's loss, the warm-up first */
	char weights_checksum[17]; /* FNV-1a of every parameter's bytes after the last step */
	const double *kernel_s;    /* per node: fastest measured time, emulation waits included; an
	                            * allreduce's less what it waited for the other ranks (below) */
	const double *step_kernel_s; /* per node: its time in the fastest measured step (the same) */
	atm_schedule_stats moves;  /* moves and bytes of one step, persistent bytes, arena size */
	int64_t fast_high_water_bytes; /* arena extent actually used: the highest end of any block
	                                * held (tensors, workspaces), alignment and gaps included */
	char fast_high_water_at[256];  /* what held the highest end first ("tensor 'x' after node
	                                * 'n'"); "" when nothing was fast */
	int64_t slow_high_water_bytes;
	double emulation_wait_s;   /* per step: waited to make the slow tier slow (kernels and moves) */
	double move_wait_s;        /* per step: the schedule waited on asynchronous moves */
	atm_tier_desc fast_tier, slow_tier;
	bool emulated;
	char emulation[48];         /* the preset, "+2lm" when 2LM is emulated too (its rates:
	                             * slow_tier's) */
	int64_t twolm_bytes;        /* emulated 2LM cache size, 0 when not */
	atm_twolm_traffic twolm_step; /* the last measured step's 2LM lines filled from and written
	                               * back to slow memory (zero when 2LM is not emulated) */
	int64_t scratch_bytes;      /* kernels' scratch, in fast memory outside the arena */
	int32_t n_bf16_native;      /* nodes with bf16 operands (casts aside) on the backend's bf16 */
	int32_t n_bf16_widened;     /* kernels, and those run in f32 on widened copies of them */
	char backend[16];           /* "cpu", "cuda", "gpu-sim" */
	char device[128];           /* the CPU model or the GPU's name */
	char versions[128];         /* the kernel libraries' versions */
	int n_threads;              /* threads the kernels ran on: the count a profile's machine
	                             * key has, so that a run and its profile agree */
	bool simulated;             /* the GPU was simulated: no GPU figure */
	int64_t arena_bytes;        /* the fast arena's size (on a GPU: device memory taken) */
	int32_t n_recomputes;       /* per step: the plan's recomputations run (each a kernel run
	                             * again; moves.n_recomputes is what the schedule laid out) */
	double recompute_s;         /* their kernels' time in the fastest measured step, emulation
	                             * waits included; not in kernel_s or step_kernel_s */
	double energy_per_step_j;   /* a GPU's energy over the measured steps (NVML's counter around
	                             * each), per step; < 0: not measured (no NVML, a simulated GPU,
	                             * the CPU) */
	atm_gpu_energy gpu_state;   /* its clocks and power limit at the last measured step */
	double allreduce_wait_s;    /* under mpirun, in the fastest measured step: the time the
	                             * allreduce kernels waited for the other ranks to arrive
	                             * (atm_allreduce_fn's waited_s), which their kernel_s and
	                             * step_kernel_s leave out: the ranks' skew; 0 alone */
} atm_exec_result;

typedef struct atm_exec atm_exec;

/* The data-parallel ranks' mean of a bucket of float buffers, in place and in a fixed order
 * (comm/'s atm_comm_allreduce_mean): what the allreduce kernels call. *waited_s: the seconds
 * of it this rank spent waiting for the others to arrive (atm_comm_waited_s), which the
 * results keep apart from the mean's own time. A process that runs under mpirun sets it once,
 * before any kernel is built, with the number of ranks; without it an allreduce over one rank
 * copies its gradients, over more is ATM_E_UNSUPPORTED. */
typedef atm_status (*atm_allreduce_fn)(void *ctx, float *const *bufs, const int64_t *counts,
                                       int n, double *waited_s);
void atm_runtime_set_allreduce(atm_allreduce_fn fn, void *ctx, int ranks);

/* atm_openmp_passive -- call first in main(argv): unless the environment chose an
 * OMP_WAIT_POLICY, the program runs again (execv of /proc/self/exe) with passive waiting.
 * libgomp, oneDNN's threading, reads the policy when it loads, and its default spins idle
 * workers: they then take the cores from the mover thread (an asynchronous move waited a
 * whole scheduler slice behind them) and from everything else on a busy machine. Returns
 * when the policy was chosen already, or when the exec failed (the program goes on). */
void atm_openmp_passive(char **argv);

/* atm_exec_new -- open the tiers, lay out the plan's step, build every kernel and
 * allocate the persistent tensors. p (and its graph) must outlive e. Errors:
 * a plan that contradicts its graph (ATM_E_INPUT), a fast limit it exceeds
 * (ATM_E_INFEASIBLE), tiers that cannot be opened (ATM_E_IO, ATM_E_UNSUPPORTED),
 * a full tier (ATM_E_NOSPACE). */
atm_status atm_exec_new(atm_exec **e, const atm_plan *p, const atm_exec_opts *o);
/* atm_exec_run -- warm-up and measured steps, then atm_exec_finish; ATM_E_INTERRUPTED when
 * o->stop was set; ATM_E_OVER_LIMIT (naming the tensor or workspace and the node) when a
 * block of the fast arena would end past the plan's limit, before it is used */
atm_status atm_exec_run(atm_exec *e);
/* atm_exec_step -- one more step, its wall time in *step_s (-1 on failure): the first
 * o->warmup steps of a new executor are warm-up, every later one is measured as atm_exec_run
 * measures (the fastest step, kernel times, mean, losses), so that several executors can take
 * their steps in turns. The weights checksum and memory figures wait for atm_exec_finish.
 * ATM_E_INTERRUPTED when o->stop was set */
atm_status atm_exec_step(atm_exec *e, double *step_s);
/* atm_exec_finish -- the result completed after atm_exec_step: the weights checksum, moves,
 * memory high-water marks and where it ran */
atm_status atm_exec_finish(atm_exec *e);
const atm_exec_result *atm_exec_result_get(const atm_exec *e);
/* atm_exec_slow_tier -- the slow tier e opened, as atm_exec_new left it (the result's slow_tier
 * is filled in by atm_exec_finish) */
const atm_tier_desc *atm_exec_slow_tier(const atm_exec *e);
/* atm_exec_read_tensor -- the bytes persistent tensor t holds now (a parameter after the steps
 * run so far), x->bytes of them into out; ATM_E_USAGE for a tensor that is not persistent */
atm_status atm_exec_read_tensor(const atm_exec *e, int32_t t, void *out);
void atm_exec_destroy(atm_exec *e);

/* ---------------------------------------------------------------- kernel timing */

/* Times single kernels with their tensors in chosen tiers: what the profiler
 * measures. Tensors are allocated in the real tiers (and the slow tier is
 * emulated when asked), like a run would place them, and each timed run
 * includes the emulation wait the executor adds after that kernel, so a
 * profile predicts a run. Inputs hold fixed positive values below 1 (never
 * NaN); a max-pooling argmax input is made by its forward kernel. */
typedef struct {
	atm_tier_opts tiers;
	const char *emulate;  /* as atm_exec_opts.emulate */
	atm_gpu_opts gpu;     /* as atm_exec_opts.gpu */
	int reps;             /* timed runs after one warm-up; 0: 5 */
	uint64_t seed;
	volatile sig_atomic_t *stop; /* set (by a signal handler): emulation waits end early */
} atm_kbench_opts;

typedef struct atm_kbench atm_kbench;

/* atm_kbench_new -- open the tiers for timing kernels of g (validated here; g
 * outlives kb). Nothing of g is allocated or built yet. */
atm_status atm_kbench_new(atm_kbench **kb, const atm_graph *g, const atm_kbench_opts *o);
void atm_kbench_destroy(atm_kbench *kb);
/* atm_kbench_time -- node with its operands in slow memory where config says
 * (atm_node_config_loc; ATM_E_USAGE when config is not one of node's); fills
 * e (min, median, count, scratch). The node's kernel is kept for the next
 * call, so time all configurations of a node one after another. */
atm_status atm_kbench_time(atm_kbench *kb, int32_t node, uint32_t config, atm_profile_entry *e);
/* atm_kbench_algos -- how many implementations node has here (a GPU's convolution
 * algorithms, deterministic ones only; 1 elsewhere) */
atm_status atm_kbench_algos(atm_kbench *kb, int32_t node, int *n);
/* atm_kbench_algo_workspace -- the workspace algorithm algo of node takes, nothing run */
atm_status atm_kbench_algo_workspace(atm_kbench *kb, int32_t node, int algo, int64_t *bytes);
/* atm_kbench_time_algo -- atm_kbench_time with implementation algo; e->scratch_bytes is its
 * workspace */
atm_status atm_kbench_time_algo(atm_kbench *kb, int32_t node, uint32_t config, int algo,
                                atm_profile_entry *e);
/* atm_kbench_moves -- bandwidth of synchronous copies each way, emulation included, with
 * atm_kbench_tier_rates */
atm_status atm_kbench_moves(atm_kbench *kb, atm_profile_moves *m);
/* atm_kbench_tier_rates -- m's slow tier rates and fast bandwidth (atm_profile_moves) from the
 * tiers in use: an emulated tier's spec and the bandwidth its waits count from, a real one's
 * surveyed speeds; 0 where unknown */
void atm_kbench_tier_rates(const atm_kbench *kb, atm_profile_moves *m);
/* atm_kbench_overlap -- what asynchronous copies and node's all-fast kernel beside them cost
 * each other, fetches and evictions apart: m's kernel_loss (the fraction of the copies' time
 * the kernel loses: 0, the copy is free; 1, the kernel waits as long as the copy takes),
 * copy_stretch (the copies' time beside the kernel over alone), overlap_loss (the two
 * directions' mean), by_direction, and the threads and OMP_WAIT_POLICY they were measured
 * with; each the median of 2 * reps + 1 turns timing the copies alone, the kernel alone and
 * both together, on this backend's mover, as a plan's asynchronous moves run. m's
 * bandwidths are left as they were. */
atm_status atm_kbench_overlap(atm_kbench *kb, int32_t node, atm_profile_moves *m);
/* atm_kbench_machine -- what the timings are comparable with: CPU model,
 * OpenMP threads, oneDNN version, tier kinds and nodes, emulation name */
void atm_kbench_machine(const atm_kbench *kb, atm_profile_machine *m);
/* atm_kbench_tiers -- the fast and slow tiers it opened (the slow one says
 * what it emulates) */
void atm_kbench_tiers(const atm_kbench *kb, atm_tier_desc *fast, atm_tier_desc *slow);

#ifdef __cplusplus
}
#endif

#endif /* ATM_RUNTIME_H */
