/* cli.h -- shared pieces of the autotm subcommands (private to cli/) */
#ifndef ATM_CLI_H
#define ATM_CLI_H

#include <getopt.h>
#include <stddef.h>

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
	const char *precision; /* --precision: "f32" or "bf16" (NULL: f32) */
	/* the optimizer the step ends in (NULL: not given; checked by cli_load_graph) */
	const char *optimizer, *lr, *momentum, *betas, *eps, *weight_decay;
} cli_graph_source;

/* A command-line option: one row of a command's table. getopt's long options, the parse,
 * --help and the option table of docs/cli.md are made from the rows (options.c). */
typedef struct cli_option cli_option;

/* cli_setter -- read arg (NULL: the option takes none, or its optional one was left out) into
 * the arguments at base, as row o says; ATM_OK, or ATM_E_USAGE with a message naming the option
 * and what is valid: the one convention of every option's reader */
typedef atm_status (*cli_setter)(const cli_option *o, const char *arg, void *base);

struct cli_option {
	const char *name;   /* the long name without "--"; NULL ends a table */
	char key;           /* a short form ('o'), 0 when none */
	const char *value;  /* the argument's name in help ("NAME"); NULL: it takes none */
	bool optional;      /* the argument may be left out (--explain[=N]) */
	const char *help;   /* what it does: one paragraph, wrapped when printed */
	const char *def;    /* its default, printed "(default X)"; NULL: none said */
	const char *(*default_of)(char *buf, size_t len); /* a default the code knows (the optimizer's) */
	cli_setter set;     /* reads the argument; NULL: the option is only noted as given */
	size_t at;          /* where the generic setters store, in the table's arguments */
	int64_t lo, hi;     /* an integer's range; a size's least; seconds' most */
	const char *const *words; /* cli_set_word's valid words, NULL-terminated */
};

/* The generic setters: the value at offset at of the arguments, as a bool (true), a const
 * char * not "" (text), an int or int64_t from lo to hi (int, i64), an int64_t size such as 12G
 * of at least lo (bytes), a double fraction 0.01 or 1% (fraction), double seconds in (0, hi]
 * (seconds), or one of words as a const char * (word). */
atm_status cli_set_true(const cli_option *o, const char *arg, void *base);
atm_status cli_set_text(const cli_option *o, const char *arg, void *base);
atm_status cli_set_int(const cli_option *o, const char *arg, void *base);
atm_status cli_set_i64(const cli_option *o, const char *arg, void *base);
atm_status cli_set_bytes(const cli_option *o, const char *arg, void *base);
atm_status cli_set_fraction(const cli_option *o, const char *arg, void *base);
atm_status cli_set_seconds(const cli_option *o, const char *arg, void *base);
atm_status cli_set_word(const cli_option *o, const char *arg, void *base);

/* Rows several commands have, each into its own arguments: one text, so that docs/cli.md
 * lists each once with the commands that take it. */
#define CLI_JSON_ROW(type, field)                                                            \
	{"json", .help = "print the summary as one JSON object", .set = cli_set_true,             \
	 .at = offsetof(type, field)}
#define CLI_QUIET_ROW(type, field)                                                           \
	{"quiet", .help = "no progress on stderr", .set = cli_set_true, .at = offsetof(type, field)}

/* A command's options: its tables, in the order --help lists them, each writing into the
 * arguments the parse is given for it, and the prose of its --help around them. */
typedef struct {
	const char *cmd;
	const cli_option *const *tables; /* NULL-terminated */
	const char *head;                /* usage and what the command does, up to "options:" */
	const char *tail;                /* after the options; NULL: none */
} cli_command_options;

/* The most options one command takes, its tables together, and one command line gives. */
#define CLI_MAX_OPTIONS 128

/* What a command line gave, in its order. */
typedef struct {
	const char *cmd;
	bool help; /* -h or --help: nothing else was read */
	int n;
	const cli_option *row[CLI_MAX_OPTIONS];
	const char *arg[CLI_MAX_OPTIONS]; /* "" for an option without an argument */
} cli_given;

/* cli_parse -- argv by c's tables, table t's values into bases[t]; what was given into given.
 * ATM_OK (given->help: -h or --help, the help printed, nothing else read: the command is done),
 * or ATM_E_USAGE naming the option at fault: unknown, a value missing or not valid, an argument
 * that is no option */
atm_status cli_parse(const cli_command_options *c, void *const *bases, int argc, char **argv,
                     cli_given *given);
/* cli_given_arg -- the argument the last --name took ("" for one without), NULL when not given */
const char *cli_given_arg(const cli_given *given, const char *name);
/* cli_was_given -- --name was given */
bool cli_was_given(const cli_given *given, const char *name);
/* cli_print_help -- autotm CMD --help: c's head, its options wrapped with their defaults, its
 * tail */
atm_status cli_print_help(FILE *out, const cli_command_options *c);
/* cli_print_markdown -- the option table of docs/cli.md: a row per option, shared rows once
 * with the commands that take them */
atm_status cli_print_markdown(FILE *out, const cli_command_options *const *cmds, int n);

/* The options every graph-taking command reads into its cli_graph_source. */
extern const cli_option cli_graph_options[];

/* Memory options of the commands that open tiers, or a GPU. */
typedef atm_job_memory cli_memory;

/* The memory options, read into a cli_memory. */
extern const cli_option cli_memory_options[];

/* The planning options of the commands that run the optimizer (plan, run, search), read into
 * their atm_job_opts: the fast-memory limit, the formulation, the solver and its limits, the
 * profile cache. One table, so that an option reads the same in every command. A --ratio or
 * --formulation list is left for the command (cli_ratio_list, cli_formulation_list). */
extern const cli_option cli_plan_options[];

/* cli_ratio_list -- --ratio's argument when it lists several ratios (a sweep), else NULL */
const char *cli_ratio_list(const cli_given *given);
/* cli_formulation_list -- --formulation's argument when it lists several, else NULL */
const char *cli_formulation_list(const cli_given *given);
/* cli_job_begin -- jo at the job's defaults for command who */
void cli_job_begin(atm_job_opts *jo, const char *who);
/* cli_gpu_model_check -- a GPU model (--gpu-model) is planned and profiled only from estimates:
 * ATM_E_USAGE without estimate; for command who "run" (which never estimates), naming what
 * does work */
atm_status cli_gpu_model_check(const cli_memory *mem, bool estimate, const char *who);
/* cli_plan_check -- after the options: at most one limit, and one unless the formulation or
 * a GPU needs none; one formulation; ATM_E_USAGE saying which */
atm_status cli_plan_check(const atm_job_opts *jo, const cli_given *given);
/* cli_solver_version -- the version of the solver named name built in ("CBC 2.10.8"); ""
 * when this build lacks it or knows no such name */
const char *cli_solver_version(const char *name);

/* cli_load_graph -- build or load the graph the options name, and say what sizes it has
 * (batch; a zoo model's preset and image); a message on failure */
atm_status cli_load_graph(const cli_graph_source *src, atm_graph **g, atm_results_workload *w);

/* cli_parse_int -- an integer argument from lo to hi, or ATM_E_USAGE naming the option */
atm_status cli_parse_int(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out);
/* cli_parse_fraction -- "0.01" or "1%": from 0 to 1, or ATM_E_USAGE naming the option */
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

/* cli_fail -- the exit code of rc: for a failure after "autotm CMD: message" on stderr, and for
 * a usage error where to read on; 0 for ATM_OK */
int cli_fail(const char *cmd, atm_status rc);

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
 * same file by any spelling, symbolic or hard link): ATM_E_USAGE naming both */
atm_status cli_check_files(const cli_file *out, int n_out, const cli_file *in, int n_in);

/* Each command's options, for docs/cli.md's table (autotm help --markdown). */
extern const cli_command_options cmd_zoo_options, cmd_profile_options, cmd_plan_options,
	cmd_run_options, cmd_search_options, cmd_tiers_options;

int cmd_zoo(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_tiers(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_search(int argc, char **argv);

#endif /* ATM_CLI_H */
