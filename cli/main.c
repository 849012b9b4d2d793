/* main.c -- autotm: dispatch to the subcommands */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "atm_comm.h"
#include "cli.h"

static const cli_command commands[] = {
	{"zoo", "list the networks and presets, summarise or export one network", cmd_zoo, false},
	{"profile", "time every kernel in every IO configuration into the profile cache", cmd_profile,
	 true},
	{"plan", "place tensors in fast or slow memory under a limit (ILP or a baseline), write the plan",
	 cmd_plan, true},
	{"run", "run a network's training step for real with a placement, write results", cmd_run,
	 true},
	{"search", "check the ILP's plan against a search of its placements, by the model and "
	 "by measuring", cmd_search, true},
	{"tiers", "show this machine's memories and the fast and slow tiers autotm uses", cmd_tiers,
	 false},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: autotm COMMAND [OPTIONS]\n"
	        "\n"
	        "autotm places the tensors of a training step in fast or slow memory so that\n"
	        "networks larger than fast memory train, and as fast as the limit allows.\n"
	        "\n"
	        "commands:\n");
	for (int i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
	        "\n"
	        "'autotm COMMAND --help' describes a command; 'autotm help --markdown' prints every\n"
	        "command's options as a table (docs/cli.md). Exit codes: 0 ok, 1 internal error,\n"
	        "2 bad usage, 3 bad input file, 4 infeasible, 5 hardware unavailable, 6 file\n"
	        "system error, 7 out of memory, 8 not found, 9 a run held more fast memory than\n"
	        "its limit, 130 interrupted.\n");
}

/* print_version -- autotm's version and the ILP solvers built in, and which one --solver auto
 * picks */
static void print_version(void)
{
	atm_opt_solver best = ATM_OPT_SOLVER_GLPK;
	const char *sep = "";
	printf("autotm %s\nsolvers: ", ATM_VERSION);
	for (int s = ATM_OPT_SOLVER_AUTO + 1; s < ATM_OPT_N_SOLVERS; s++) {
		const char *v = atm_opt_solver_version((atm_opt_solver)s);
		if (v && v[0]) {
			printf("%s%s", sep, v);
			sep = ", ";
		}
	}
	(void)atm_opt_solver_resolve(ATM_OPT_SOLVER_AUTO, &best);
	printf(" (--solver auto: %s)\n", atm_opt_solver_name(best));
	printf("data parallelism: %s\n", atm_comm_has_mpi() ? "MPI (run under mpirun)"
	                                                    : "none (built without MPI)");
}

/* markdown -- autotm help --markdown: the option table of docs/cli.md, made from the commands'
 * tables (the test cli.docs_options checks that the docs hold it); the exit code */
static int markdown(void)
{
	static const cli_command_options *const all[] = {
		&cmd_zoo_options, &cmd_profile_options, &cmd_plan_options, &cmd_run_options,
		&cmd_search_options, &cmd_tiers_options,
	};
	atm_status rc = cli_print_markdown(stdout, all, (int)(sizeof all / sizeof *all));
	return rc < 0 ? cli_fail("help", rc) : 0;
}

/* finish -- the command's exit code, unless what it printed could not all be written (a full
 * disk, a closed pipe): then the code of that failure, after a message */
static int finish(const char *cmd, int code)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return code;
	int e = errno ? errno : EIO;
	fprintf(stderr, "autotm%s%s: cannot write the output: %s\n", cmd ? " " : "", cmd ? cmd : "",
	        strerror(e));
	if (code != 0)
		return code;
	return atm_exit_code(e == ENOSPC ? ATM_E_NOSPACE : ATM_E_IO);
}

/* alone_under_mpirun -- cmd is one process's (only run trains data-parallel), yet mpirun or
 * srun started it as one of several ranks: said on rank 0, true */
static bool alone_under_mpirun(const char *cmd)
{
	atm_comm *c = NULL;
	bool several = atm_comm_new(&c, NULL, NULL) == ATM_OK && atm_comm_active(c);
	atm_err_clear();
	if (several && atm_comm_rank(c) == 0)
		fprintf(stderr, "autotm %s: runs as one process; under mpirun only 'autotm run' trains "
		        "data-parallel (docs/many-machines.md)\n", cmd);
	atm_comm_destroy(c);
	return several;
}

int main(int argc, char **argv)
{
	cli_block_signals(true);
	if (!cli_early_interrupt())
		atm_openmp_passive(argv); /* idle kernel threads sleep, not spin */
	cli_block_signals(false);
	if (cli_early_interrupt()) {
		fprintf(stderr, "autotm: interrupted\n");
		return atm_exit_code(ATM_E_INTERRUPTED);
	}
	if (argc < 2) {
		usage(stderr);
		return atm_exit_code(ATM_E_USAGE);
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "help") && argc == 3 && !strcmp(argv[2], "--markdown"))
		return finish(NULL, markdown());
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		if (argc > 2 && strcmp(cmd, "help") == 0) {
			for (int i = 0; i < N_COMMANDS; i++)
				if (!strcmp(argv[2], commands[i].name)) {
					char *args[] = {argv[2], "--help", NULL};
					return finish(argv[2], commands[i].run(2, args));
				}
		}
		usage(stdout);
		return finish(NULL, 0);
	}
	if (!strcmp(cmd, "--version")) {
		print_version();
		return finish(NULL, 0);
	}
	for (int i = 0; i < N_COMMANDS; i++)
		if (!strcmp(cmd, commands[i].name)) {
			if (!commands[i].stops)
				cli_signals_default();
			if (strcmp(cmd, "run") && alone_under_mpirun(cmd))
				return atm_exit_code(ATM_E_USAGE);
			return finish(cmd, commands[i].run(argc - 1, argv + 1));
		}
	fprintf(stderr, "autotm: unknown command '%s'; valid commands:", cmd);
	for (int i = 0; i < N_COMMANDS; i++)
		fprintf(stderr, " %s", commands[i].name);
	fprintf(stderr, "\nTry 'autotm --help'.\n");
	return atm_exit_code(ATM_E_USAGE);
}
