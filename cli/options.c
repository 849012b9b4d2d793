/* options.c -- a command's options as tables: getopt's long options, the parse, --help and the
 * option table of docs/cli.md are all made from the rows */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The widest text a help line takes, and where an option's text starts. */
#define HELP_WIDTH 92
#define HELP_INDENT 20

/* help_row -- -h, --help: every command's, read by the parser itself */
static const cli_option help_row = {.name = "help", .key = 'h', .help = "this help"};

/* field -- where option o's value goes in base */
static void *field(const cli_option *o, void *base)
{
	return (char *)base + o->at;
}

/* has_arg -- getopt's kind of argument for o */
static int has_arg(const cli_option *o)
{
	return !o->value ? no_argument : o->optional ? optional_argument : required_argument;
}

atm_status cli_set_true(const cli_option *o, const char *arg, void *base)
{
	(void)arg;
	*(bool *)field(o, base) = true;
	return ATM_OK;
}

atm_status cli_set_text(const cli_option *o, const char *arg, void *base)
{
	if (!arg[0])
		return atm_err(ATM_E_USAGE, "%s%s needs a %s, not an empty name", o->key ? "-" : "--",
		               o->key ? (char[]){o->key, 0} : o->name, o->value);
	*(const char **)field(o, base) = arg;
	return ATM_OK;
}

atm_status cli_set_i64(const cli_option *o, const char *arg, void *base)
{
	return cli_parse_int(o->name, arg, o->lo, o->hi, field(o, base));
}

atm_status cli_set_int(const cli_option *o, const char *arg, void *base)
{
	int64_t v = 0;
	atm_status rc = cli_parse_int(o->name, arg, o->lo, o->hi, &v);
	if (rc == ATM_OK)
		*(int *)field(o, base) = (int)v;
	return rc;
}

atm_status cli_set_bytes(const cli_option *o, const char *arg, void *base)
{
	int64_t v = 0;
	if (atm_parse_bytes(arg, &v) < 0 || v < o->lo)
		return atm_err(ATM_E_USAGE, "--%s '%s' is not valid; expected a size such as 512M, 12G "
		               "or a number of bytes%s", o->name, arg, o->lo > 0 ? ", above 0" : "");
	*(int64_t *)field(o, base) = v;
	return ATM_OK;
}

atm_status cli_set_fraction(const cli_option *o, const char *arg, void *base)
{
	return cli_parse_fraction(o->name, arg, field(o, base));
}

atm_status cli_set_seconds(const cli_option *o, const char *arg, void *base)
{
	return cli_parse_seconds(o->name, arg, (double)o->hi, field(o, base));
}

atm_status cli_set_word(const cli_option *o, const char *arg, void *base)
{
	for (const char *const *w = o->words; *w; w++)
		if (!strcmp(arg, *w)) {
			*(const char **)field(o, base) = *w;
			return ATM_OK;
		}
	char valid[256] = "";
	size_t n = 0;
	for (const char *const *w = o->words; *w && n < sizeof valid; w++)
		n += (size_t)snprintf(valid + n, sizeof valid - n, "%s%s", n ? ", " : "", *w);
	return atm_err(ATM_E_USAGE, "--%s '%s' is not valid; expected one of %s", o->name, arg, valid);
}

atm_status cli_parse_int(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(arg, &end, 10);
	if (end == arg || *end || errno || v < lo || v > hi)
		return atm_err(ATM_E_USAGE, "--%s '%s' is not valid; expected an integer from %lld to %lld",
		               opt, arg, (long long)lo, (long long)hi);
	*out = v;
	return ATM_OK;
}

atm_status cli_parse_fraction(const char *opt, const char *arg, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(arg, &end);
	if (end != arg && *end == '%' && !end[1]) {
		v /= 100;
		end++;
	}
	if (end == arg || *end || errno || !isfinite(v) || v < 0 || v > 1)
		return atm_err(ATM_E_USAGE, "--%s '%s' is not valid; expected a fraction from 0 to "
		               "1 (0.01) or a percentage (1%%)", opt, arg);
	*out = v;
	return ATM_OK;
}

atm_status cli_parse_seconds(const char *opt, const char *arg, double max, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(arg, &end);
	if (end == arg || *end || errno || !isfinite(v) || v <= 0 || v > max)
		return atm_err(ATM_E_USAGE, "--%s '%s' is not valid; expected seconds above 0 "
		               "(at most %g)", opt, arg, max);
	*out = v;
	return ATM_OK;
}

/* A command's rows, flattened: each with the arguments it writes into. */
struct flat {
	const cli_option *row[CLI_MAX_OPTIONS];
	void *base[CLI_MAX_OPTIONS];
	int n;
};

/* flatten -- the rows of the command's tables, help's last; ATM_E_INTERNAL for a name two rows
 * share (getopt would take the first, leaving the other unreachable) or too many */
static atm_status flatten(const cli_command_options *c, void *const *bases, struct flat *f)
{
	f->n = 0;
	for (int t = 0; c->tables[t]; t++)
		for (const cli_option *o = c->tables[t]; o->name; o++) {
			if (f->n == CLI_MAX_OPTIONS - 1)
				return atm_err(ATM_E_INTERNAL, "autotm %s has more than %d options", c->cmd,
				               CLI_MAX_OPTIONS - 1);
			for (int k = 0; k < f->n; k++)
				if (!strcmp(f->row[k]->name, o->name) || (o->key && f->row[k]->key == o->key))
					return atm_err(ATM_E_INTERNAL, "autotm %s: two options named --%s", c->cmd,
					               o->name);
			f->row[f->n] = o;
			f->base[f->n++] = bases ? bases[t] : NULL;
		}
	f->row[f->n] = &help_row;
	f->base[f->n++] = NULL;
	return ATM_OK;
}

atm_status cli_parse(const cli_command_options *c, void *const *bases, int argc, char **argv,
                     cli_given *given)
{
	static struct option longopts[CLI_MAX_OPTIONS + 1];
	char shortopts[2 * CLI_MAX_OPTIONS + 2] = ":";
	struct flat f;
	size_t ns = 1;
	atm_status rc = flatten(c, bases, &f);
	if (rc < 0)
		return rc;
	for (int i = 0; i < f.n; i++) {
		longopts[i] = (struct option){f.row[i]->name, has_arg(f.row[i]), NULL, 1000 + i};
		if (f.row[i]->key) {
			shortopts[ns++] = f.row[i]->key;
			if (f.row[i]->value)
				shortopts[ns++] = ':';
		}
	}
	longopts[f.n] = (struct option){NULL, 0, NULL, 0};
	shortopts[ns] = '\0';
	*given = (cli_given){.cmd = c->cmd};
	optind = 1;
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int i = opt - 1000;
		if (opt == ':')
			return atm_err(ATM_E_USAGE, "option '%s' needs a value", argv[optind - 1]);
		for (int k = 0; opt < 1000 && k < f.n; k++)
			if (opt != '?' && f.row[k]->key == opt)
				i = k;
		if (i < 0 || i >= f.n)
			return atm_err(ATM_E_USAGE, "unknown option '%s'", argv[optind - 1]);
		const cli_option *o = f.row[i];
		if (o == &help_row) {
			given->help = true;
			return cli_print_help(stdout, c);
		}
		if (given->n == CLI_MAX_OPTIONS)
			return atm_err(ATM_E_USAGE, "more than %d options", CLI_MAX_OPTIONS);
		given->row[given->n] = o;
		given->arg[given->n++] = optarg ? optarg : "";
		if (o->set && (rc = o->set(o, optarg, f.base[i])) < 0)
			return rc;
	}
	if (optind < argc)
		return atm_err(ATM_E_USAGE, "unexpected argument '%s'", argv[optind]);
	return ATM_OK;
}

const char *cli_given_arg(const cli_given *given, const char *name)
{
	for (int i = given->n - 1; i >= 0; i--)
		if (!strcmp(given->row[i]->name, name))
			return given->arg[i];
	return NULL;
}

bool cli_was_given(const cli_given *given, const char *name)
{
	return cli_given_arg(given, name) != NULL;
}

/* spelling -- "-o, --output FILE", "--explain[=N]" */
static void spelling(const cli_option *o, char *buf, size_t len)
{
	int n = 0;
	if (o->key)
		n = snprintf(buf, len, "-%c, ", o->key);
	n += snprintf(buf + n, len - (size_t)n, "--%s", o->name);
	if (o->value)
		snprintf(buf + n, len - (size_t)n, o->optional ? "[=%s]" : " %s", o->value);
}

/* text_of -- o's help with its default, into buf */
static const char *text_of(const cli_option *o, char *buf, size_t len)
{
	char def[128];
	const char *d = o->default_of ? o->default_of(def, sizeof def) : o->def;
	if (d)
		snprintf(buf, len, "%s (default: %s)", o->help, d);
	else
		snprintf(buf, len, "%s", o->help);
	return buf;
}

/* print_wrapped -- text in lines of at most HELP_WIDTH, the first after col characters already
 * printed, the rest indented to HELP_INDENT */
static void print_wrapped(FILE *f, const char *text, int col)
{
	const char *p = text;
	while (*p) {
		int room = HELP_WIDTH - col, n = 0, cut = -1;
		while (p[n] && n <= room) {
			if (p[n] == ' ')
				cut = n;
			n++;
		}
		if (!p[n] || cut < 0)
			cut = n;
		fprintf(f, "%.*s\n", cut, p);
		p += cut;
		while (*p == ' ')
			p++;
		if (*p)
			fprintf(f, "%*s", HELP_INDENT, "");
		col = HELP_INDENT;
	}
}

atm_status cli_print_help(FILE *out, const cli_command_options *c)
{
	struct flat f;
	char name[96], text[2048];
	atm_status rc = flatten(c, NULL, &f);
	if (rc < 0)
		return rc;
	fputs(c->head, out);
	for (int i = 0; i < f.n; i++) {
		spelling(f.row[i], name, sizeof name);
		int col = fprintf(out, "  %s", name);
		/* a name too long for its column keeps two spaces before its text */
		col += fprintf(out, "%*s", col + 2 <= HELP_INDENT ? HELP_INDENT - col : 2, "");
		print_wrapped(out, text_of(f.row[i], text, sizeof text), col);
	}
	if (c->tail)
		fputs(c->tail, out);
	return ATM_OK;
}

/* markdown_text -- text with '|' escaped for a table cell */
static void markdown_text(FILE *out, const char *text)
{
	for (const char *p = text; *p; p++) {
		if (*p == '|')
			fputc('\\', out);
		fputc(*p, out);
	}
}

/* same_row -- a and b read alike in docs (the graph-taking commands share rows) */
static bool same_row(const cli_option *a, const cli_option *b)
{
	char ta[2048], tb[2048];
	return !strcmp(a->name, b->name) && !strcmp(text_of(a, ta, sizeof ta), text_of(b, tb, sizeof tb));
}

atm_status cli_print_markdown(FILE *out, const cli_command_options *const *cmds, int n)
{
	static struct flat f[16];
	char name[96], text[2048];
	atm_status rc;
	if (n > 16)
		return atm_err(ATM_E_INTERNAL, "more than 16 commands");
	for (int c = 0; c < n; c++)
		if ((rc = flatten(cmds[c], NULL, &f[c])) < 0)
			return rc;
	fprintf(out, "| option | commands | meaning |\n| --- | --- | --- |\n");
	for (int c = 0; c < n; c++)
		for (int i = 0; i < f[c].n - 1; i++) { /* -h, --help: every command's, said above */
			const cli_option *o = f[c].row[i];
			bool before = false;
			for (int pc = 0; pc <= c && !before; pc++)
				for (int k = 0; k < (pc < c ? f[pc].n : i) && !before; k++)
					before = same_row(f[pc].row[k], o);
			if (before)
				continue;
			spelling(o, name, sizeof name);
			fprintf(out, "| `");
			markdown_text(out, name);
			fprintf(out, "` | ");
			for (int oc = 0, first = 1; oc < n; oc++)
				for (int k = 0; k < f[oc].n; k++)
					if (same_row(f[oc].row[k], o)) {
						fprintf(out, "%s%s", first ? "" : ", ", cmds[oc]->cmd);
						first = 0;
						break;
					}
			fprintf(out, " | ");
			markdown_text(out, text_of(o, text, sizeof text));
			fprintf(out, " |\n");
		}
	return ATM_OK;
}
