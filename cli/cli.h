/* cli.h -- shared pieces of the autotm subcommands (private to cli/) */
#ifndef ATM_CLI_H
#define ATM_CLI_H

#include <getopt.h>

#include <jansson.h>

#include "atm_core.h"
#include "atm_job.h"
#include "atm_optimizer.h"
#include "atm_profiler.h"
#include "atm_runtime.h"
#include "atm_zoo.h"

/* A subcommand: run returns a process exit code. */
typedef struct {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
	bool stops; /* it ends on the stop flag (cli_install_interrupt) */
} cli_command;

/* Where a graph comes from: --model NAME (zoo) or --graph FILE. */
typedef struct {
	const char *model;
	const char *graph_file;
	const char *preset; /* --preset, default "small" */
	int64_t batch;      /* 0: from the preset or the file */
	int64_t image;      /* 0: from the preset or the network */
	int64_t classes;    /* 0: the network's default */
	int64_t seq;        /* 0: from the preset or the network (language models) */
	/* the optimizer the step ends in (NULL: not given; checked by cli_load_graph) */
	const char *optimizer, *lr, *momentum, *betas, *eps, *weight_decay;
} cli_graph_source;

/* Long options every graph-taking command accepts; values past 1000 are ours. */
enum { CLI_OPT_MODEL = 1000, CLI_OPT_GRAPH, CLI_OPT_BATCH, CLI_OPT_PRESET, CLI_OPT_IMAGE,
       CLI_OPT_CLASSES, CLI_OPT_SLOW, CLI_OPT_FAST, CLI_OPT_PMEM_DIR, CLI_OPT_FSDAX,
       CLI_OPT_SLOW_SIZE, CLI_OPT_EMULATE, CLI_OPT_GPU, CLI_OPT_GPU_MEMORY, CLI_OPT_GPU_DEVICE,
       CLI_OPT_GPU_LINK, CLI_OPT_RATIO, CLI_OPT_DRAM_LIMIT, CLI_OPT_FORMULATION, CLI_OPT_CACHE,
       CLI_OPT_MIP_GAP, CLI_OPT_TIME_LIMIT, CLI_OPT_ASYNC_WINDOW, CLI_OPT_ROUNDS, CLI_OPT_VERBOSE,
       CLI_OPT_SOLVER, CLI_OPT_THREADS, CLI_OPT_ISOLATED, CLI_OPT_SEQ, CLI_OPT_GPU_MODEL,
       CLI_OPT_FULL_MODEL, CLI_OPT_RECOMPUTE, CLI_OPT_OPTIMIZER, CLI_OPT_LR, CLI_OPT_MOMENTUM,
       CLI_OPT_BETAS, CLI_OPT_EPS, CLI_OPT_WEIGHT_DECAY, CLI_OPT_START, CLI_OPT_FIRST_FREE };

#define CLI_GRAPH_OPTIONS                                          \
	{"model", required_argument, NULL, CLI_OPT_MODEL},             \
	{"graph", required_argument, NULL, CLI_OPT_GRAPH},             \
	{"batch", required_argument, NULL, CLI_OPT_BATCH},             \
	{"preset", required_argument, NULL, CLI_OPT_PRESET},           \
	{"image", required_argument, NULL, CLI_OPT_IMAGE},             \
	{"classes", required_argument, NULL, CLI_OPT_CLASSES},         \
	{"seq", required_argument, NULL, CLI_OPT_SEQ},                 \
	{"optimizer", required_argument, NULL, CLI_OPT_OPTIMIZER},     \
	{"lr", required_argument, NULL, CLI_OPT_LR},                   \
	{"momentum", required_argument, NULL, CLI_OPT_MOMENTUM},       \
	{"betas", required_argument, NULL, CLI_OPT_BETAS},             \
	{"eps", required_argument, NULL, CLI_OPT_EPS},                 \
	{"weight-decay", required_argument, NULL, CLI_OPT_WEIGHT_DECAY}

#define CLI_GRAPH_HELP                                                                      \
	"  --model NAME      a network of the zoo (see 'autotm zoo')\n"                         \
	"  --graph FILE      a graph JSON file of your own (docs/graph-format.md)\n"            \
	"  --batch B         batch size (default: the preset's, or the file's \"batch\")\n"     \
	"  --preset P        size preset: small (default), paper, large, gpu\n"                 \
	"  --image N         input height and width (default: the preset's or the network's)\n" \
	"  --classes N       output classes, a language model's vocabulary (default: the network's)\n" \
	"  --seq T           sequence length of a language model (default: the preset's)\n"     \
	"  --optimizer O     the step's update: sgd (default), momentum, adamw (PyTorch's)\n"  \
	"  --lr X            learning rate (default: sgd, momentum 0.01; adamw 0.001)\n"        \
	"  --momentum X      momentum's factor (default 0.9)\n"                                \
	"  --betas B1,B2     adamw's averages (default 0.9,0.999)\n"                           \
	"  --eps X           adamw's epsilon (default 1e-8)\n"                                 \
	"  --weight-decay X  (default: sgd, momentum 0; adamw 0.01, decoupled)\n"

/* Memory options of the commands that open tiers, or a GPU. */
typedef atm_job_memory cli_memory;

#define CLI_MEMORY_OPTIONS                                        \
	{"slow", required_argument, NULL, CLI_OPT_SLOW},              \
	{"fast", required_argument, NULL, CLI_OPT_FAST},              \
	{"pmem-dir", required_argument, NULL, CLI_OPT_PMEM_DIR},      \
	{"fsdax", required_argument, NULL, CLI_OPT_FSDAX},            \
	{"slow-size", required_argument, NULL, CLI_OPT_SLOW_SIZE},    \
	{"emulate", required_argument, NULL, CLI_OPT_EMULATE},         \
	{"gpu", optional_argument, NULL, CLI_OPT_GPU},                \
	{"gpu-memory", required_argument, NULL, CLI_OPT_GPU_MEMORY},  \
	{"gpu-device", required_argument, NULL, CLI_OPT_GPU_DEVICE},  \
	{"gpu-link", required_argument, NULL, CLI_OPT_GPU_LINK},      \
	{"gpu-model", required_argument, NULL, CLI_OPT_GPU_MODEL}

#define CLI_MEMORY_HELP                                                                         \
	"  --slow TIER       slow memory: auto (default), kmem-dax, numa:N, pmem-dir, fsdax\n"       \
	"  --fast TIER       fast memory: auto (default), memkind, numa:N\n"                         \
	"  --pmem-dir DIR    folder of the pmem-dir slow tier's file, used as given (it must\n"   \
	"                    exist). Default " ATM_TIER_DEFAULT_PMEM_DIR "-UID; with --emulate,\n" \
	"                    " ATM_TIER_TMPFS_PMEM_DIR "-UID where /dev/shm is a tmpfs with room\n" \
	"                    for the run (a disk's writeback would add to the emulated cost;\n" \
	"                    a run that falls back says so). Made when missing\n"              \
	"  --fsdax FILE      map FILE with libpmem2 as the slow tier (an fsdax mount's file)\n"      \
	"  --slow-size SIZE  cap of the pmem-dir tier, or size of the fsdax file (e.g. 8G; 0,\n"  \
	"                    the default: no cap, the fsdax file's own size)\n"                  \
	"  --emulate P       make the slow tier behave like optane, cxl or numa memory, or like\n"  \
	"                    a JSON tier spec file (docs/tiers.md); a pmem-dir tier's file then\n" \
	"                    goes to a tmpfs by default (--pmem-dir); none (the default): the\n"  \
	"                    slow tier as it is, for a machine with real slow memory\n"          \
	"  --gpu[=cuda|sim]  on a GPU: fast memory is its device memory, slow memory pinned host\n" \
	"                    memory, kernels cuDNN/cuBLAS; --gpu=sim simulates one on the CPU\n"   \
	"  --gpu-memory SIZE device memory the plan may use (default: free memory less 1.5 GiB;\n" \
	"                    simulated: 11 GB less 1.5 GiB, an RTX 2080 Ti's)\n"                   \
	"  --gpu-device N    which GPU (default 0)\n"                                              \
	"  --gpu-link L      simulated GPU's host link: pcie4 (default), pcie5, nvlink-c2c\n"   \
	"  --gpu-model NAME  (plan, profile, with --estimate) a GPU this machine need not have,\n" \
	"                    from its datasheet: h100, h200, a100, rtx2080ti (docs/gpu.md)\n"

/* cli_memory_option -- consume opt if it is a memory option; 1 consumed, 0 not, <0 error */
int cli_memory_option(cli_memory *mem, int opt, const char *arg);

/* Planning options of the commands that run the optimizer (plan, run): the fast-memory
 * limit, the formulation, the solver and its limits, the profile cache. One parser reads them
 * for both, so that an option reads the same in every command. */
#define CLI_PLAN_OPTIONS                                              \
	{"ratio", required_argument, NULL, CLI_OPT_RATIO},                \
	{"dram-limit", required_argument, NULL, CLI_OPT_DRAM_LIMIT},      \
	{"formulation", required_argument, NULL, CLI_OPT_FORMULATION},    \
	{"cache", required_argument, NULL, CLI_OPT_CACHE},                \
	{"mip-gap", required_argument, NULL, CLI_OPT_MIP_GAP},            \
	{"time-limit", required_argument, NULL, CLI_OPT_TIME_LIMIT},      \
	{"async-window", required_argument, NULL, CLI_OPT_ASYNC_WINDOW},  \
	{"rounds", required_argument, NULL, CLI_OPT_ROUNDS},              \
	{"solver", required_argument, NULL, CLI_OPT_SOLVER},              \
	{"threads", required_argument, NULL, CLI_OPT_THREADS},            \
	{"isolated", no_argument, NULL, CLI_OPT_ISOLATED},                \
	{"full-model", no_argument, NULL, CLI_OPT_FULL_MODEL},            \
	{"recompute", no_argument, NULL, CLI_OPT_RECOMPUTE},              \
	{"start", required_argument, NULL, CLI_OPT_START},                \
	{"verbose", no_argument, NULL, CLI_OPT_VERBOSE}

/* Which planning options were given (their values are in the job's options). */
typedef struct {
	bool ratio, limit, formulation, async_window;
	const char *ratio_list; /* --ratio S:F,S:F,...: more than one (a sweep of autotm plan's) */
} cli_plan_given;

/* cli_plan_option -- consume opt if it is a planning option, into jo; 1 consumed, 0 not,
 * <0 error */
int cli_plan_option(atm_job_opts *jo, cli_plan_given *given, int opt, const char *arg);
/* cli_job_begin -- jo at the job's defaults for command who, and getopt at the start */
void cli_job_begin(atm_job_opts *jo, const char *who);
/* cli_job_option -- consume opt if it is a graph, memory or planning option of plan and run;
 * 1 consumed, 0 not, <0 error */
int cli_job_option(cli_graph_source *src, atm_job_opts *jo, cli_plan_given *given, int opt,
                   const char *arg);
/* cli_gpu_model_check -- a GPU model (--gpu-model) is planned and profiled only from estimates:
 * ATM_E_USAGE without estimate; for command who "run" (which never estimates), naming what
 * does work */
atm_status cli_gpu_model_check(const cli_memory *mem, bool estimate, const char *who);
/* cli_plan_check -- after the options: at most one limit, and one unless the formulation or
 * a GPU needs none; ATM_E_USAGE saying which */
atm_status cli_plan_check(const atm_job_opts *jo, const cli_plan_given *given);
/* cli_plan_help -- the planning options' help, with the optimizer's defaults */
void cli_plan_help(FILE *f);
/* cli_solver_version -- the version of the solver named name built in ("CBC 2.10.8"); ""
 * when this build lacks it or knows no such name */
const char *cli_solver_version(const char *name);

/* cli_graph_option -- consume opt if it is a graph option; 1 consumed, 0 not, <0 error */
int cli_graph_option(cli_graph_source *src, int opt, const char *arg);

/* cli_load_graph -- build or load the graph the options name, and say what sizes it has
 * (batch; a zoo model's preset and image); a message on failure */
atm_status cli_load_graph(const cli_graph_source *src, atm_graph **g, atm_results_workload *w);

/* cli_parse_int -- an integer argument from lo to hi, or ATM_E_USAGE naming the option */
atm_status cli_parse_int(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out);
/* cli_parse_fraction -- "0.01" or "1%": from 0 to below 1, or ATM_E_USAGE naming the option */
atm_status cli_parse_fraction(const char *opt, const char *arg, double *out);
/* cli_parse_seconds -- seconds above 0 (fractions too) up to max, or ATM_E_USAGE naming the
 * option */
atm_status cli_parse_seconds(const char *opt, const char *arg, double max, double *out);

/* cli_emulation_rates -- what an emulated slow tier waits for, into buf: "x0.545 (this
 * machine's 54.5 GB/s over the spec's 100 GB/s): read 15.8, write 6.5 GB/s", or "absolute:
 * ..." */
const char *cli_emulation_rates(const atm_tier_desc *slow, char *buf, size_t len);
/* cli_bandwidth_note -- where proportional emulation's bandwidth came from (measured now,
 * kept in the machine file since when), "" when this process has not needed it */
const char *cli_bandwidth_note(char *buf, size_t len);

/* cli_fail -- print "autotm CMD: message" to stderr and return the exit code of rc */
int cli_fail(const char *cmd, atm_status rc);

/* cli_usage_error -- print a usage message and a pointer to --help; exit code 2 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cli_other_option -- what every command's option loop ends with: -h prints help and exits
 * 0, a missing value or an unknown option is a usage error (2); the exit code */
int cli_other_option(const char *cmd, int opt, char **argv, void (*help)(void));

/* cli_print_json_new -- o on standard output, indented; steals o (released, NULL too: the
 * ATM_E_NOMEM of an allocation that failed while it was built) */
atm_status cli_print_json_new(json_t *o);

/* cli_early_interrupt -- a signal came before main could act on it (the handler is installed
 * before the shared libraries load) */
bool cli_early_interrupt(void);
/* cli_block_signals -- hold Ctrl-C, SIGTERM and SIGHUP pending (block) or let them in: around
 * the re-exec of atm_openmp_passive, which would lose the flag a signal had set */
void cli_block_signals(bool block);
/* cli_signals_default -- Ctrl-C, SIGTERM and SIGHUP kill the process again: for the commands
 * that never look at the stop flag */
void cli_signals_default(void);
/* cli_install_interrupt -- Ctrl-C sets the returned flag instead of killing the process */
volatile sig_atomic_t *cli_install_interrupt(void);

/* cli_job_main -- plan and run after their options: Ctrl-C ends the job cleanly from here on
 * (jo->stop), the graph src names is loaded (jo->workload says its sizes), a job of it made
 * and planned, then handed to then with arg; the exit code */
int cli_job_main(const char *cmd, const cli_graph_source *src, atm_job_opts *jo,
                 atm_status (*then)(atm_job *j, void *arg), void *arg);

/* A file a command reads or writes, named by the option that gives it ("--cache"). */
typedef struct {
	const char *opt;
	const char *path; /* NULL: not given */
} cli_file;

/* cli_job_inputs -- the files a plan or run reads: the profile cache (the default one when
 * none is given), the --graph file, a --placement plan file and a tier spec file; how many
 * (at most 4) were put in in */
int cli_job_inputs(const cli_graph_source *src, const atm_job_opts *jo, cli_file in[4],
                   char *cache_buf, size_t cache_len);

/* cli_check_files -- refuse, before any work, outputs that name an input or each other (the
 * same file by any spelling, symbolic or hard link): the exit code 2 after a message naming
 * both; -1 to go on */
int cli_check_files(const char *cmd, const cli_file *out, int n_out, const cli_file *in, int n_in);

int cmd_zoo(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_tiers(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_search(int argc, char **argv);

#endif /* ATM_CLI_H */
