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
} cli_command;

/* Where a graph comes from: --model NAME (zoo) or --graph FILE. */
typedef struct {
	const char *model;
	const char *graph_file;
	const char *preset; /* --preset, default "small" */
	int64_t batch;      /* 0: from the preset or the file */
	int64_t image;      /* 0: from the preset or the network */
	int64_t classes;    /* 0: the network's default */
} cli_graph_source;

/* Long options every graph-taking command accepts; values past 1000 are ours. */
enum { CLI_OPT_MODEL = 1000, CLI_OPT_GRAPH, CLI_OPT_BATCH, CLI_OPT_PRESET, CLI_OPT_IMAGE,
       CLI_OPT_CLASSES, CLI_OPT_SLOW, CLI_OPT_FAST, CLI_OPT_PMEM_DIR, CLI_OPT_FSDAX,
       CLI_OPT_SLOW_SIZE, CLI_OPT_EMULATE, CLI_OPT_GPU, CLI_OPT_GPU_MEMORY, CLI_OPT_GPU_DEVICE,
       CLI_OPT_GPU_LINK, CLI_OPT_FIRST_FREE };

#define CLI_GRAPH_OPTIONS                                          \
	{"model", required_argument, NULL, CLI_OPT_MODEL},             \
	{"graph", required_argument, NULL, CLI_OPT_GRAPH},             \
	{"batch", required_argument, NULL, CLI_OPT_BATCH},             \
	{"preset", required_argument, NULL, CLI_OPT_PRESET},           \
	{"image", required_argument, NULL, CLI_OPT_IMAGE},             \
	{"classes", required_argument, NULL, CLI_OPT_CLASSES}

#define CLI_GRAPH_HELP                                                                      \
	"  --model NAME      a network of the zoo (see 'autotm zoo')\n"                         \
	"  --graph FILE      a graph JSON file of your own (format in the README)\n"            \
	"  --batch B         batch size (default: the preset's, or the file's \"batch\")\n"     \
	"  --preset P        size preset: small (default), paper, large, gpu\n"                 \
	"  --image N         input height and width (default: the preset's or the network's)\n" \
	"  --classes N       output classes (default: the network's)\n"

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
	{"gpu-link", required_argument, NULL, CLI_OPT_GPU_LINK}

#define CLI_MEMORY_HELP                                                                         \
	"  --slow TIER       slow memory: auto (default), kmem-dax, numa:N, pmem-dir, fsdax\n"       \
	"  --fast TIER       fast memory: auto (default), memkind, numa:N\n"                         \
	"  --pmem-dir DIR    directory of the pmem-dir slow tier (default " ATM_TIER_DEFAULT_PMEM_DIR ")\n" \
	"  --fsdax FILE      map FILE with libpmem2 as the slow tier (an fsdax mount's file)\n"      \
	"  --slow-size SIZE  cap of the pmem-dir tier, or size of the fsdax file (e.g. 8G)\n"       \
	"  --emulate P       make the slow tier behave like optane, cxl or numa memory, or like\n"  \
	"                    a JSON tier spec file (see the README)\n"                              \
	"  --gpu[=cuda|sim]  on a GPU: fast memory is its device memory, slow memory pinned host\n" \
	"                    memory, kernels cuDNN/cuBLAS; --gpu=sim simulates one on the CPU\n"   \
	"  --gpu-memory SIZE device memory the plan may use (default: free memory less 1.5 GiB;\n" \
	"                    simulated: 11 GB less 1.5 GiB, an RTX 2080 Ti's)\n"                   \
	"  --gpu-device N    which GPU (default 0)\n"                                              \
	"  --gpu-link L      simulated GPU's host link: pcie4 (default), pcie5, nvlink-c2c\n"

/* cli_memory_option -- consume opt if it is a memory option; 1 consumed, 0 not, <0 error */
int cli_memory_option(cli_memory *mem, int opt, const char *arg);

/* cli_graph_option -- consume opt if it is a graph option; 1 consumed, 0 not, <0 error */
int cli_graph_option(cli_graph_source *src, int opt, const char *arg);

/* cli_load_graph -- build or load the graph the options name, and say what sizes it has
 * (batch; a zoo model's preset and image); a message on failure */
atm_status cli_load_graph(const cli_graph_source *src, atm_graph **g, atm_results_workload *w);

/* cli_parse_int -- a positive integer argument, or ATM_E_USAGE naming the option */
atm_status cli_parse_int(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out);

/* cli_fail -- print "autotm CMD: message" to stderr and return the exit code of rc */
int cli_fail(const char *cmd, atm_status rc);

/* cli_usage_error -- print a usage message and a pointer to --help; exit code 2 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cli_print_json -- o on standard output, indented, then released */
atm_status cli_print_json(json_t *o);

/* cli_install_interrupt -- Ctrl-C sets the returned flag instead of killing the process */
volatile sig_atomic_t *cli_install_interrupt(void);

int cmd_zoo(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_tiers(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_plan(int argc, char **argv);

#endif /* ATM_CLI_H */
