/* cmd_tiers.c -- autotm tiers: the memories of this machine and the fast and slow tiers autotm would use */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char tiers_help[] =
	"usage: autotm tiers [--slow TIER] [--pmem-dir DIR] [--fsdax FILE] [--emulate P] [--json]\n"
	"\n"
	"Lists the NUMA nodes hwloc finds (kind, capacity, bandwidth and latency where the\n"
	"platform reports them) and the fast and slow tiers a run would use with these\n"
	"options. Opening the slow tier checks that it works (a pmem directory must be\n"
	"writable); nothing is left allocated. A slow tier in a file says where the file\n"
	"is and on what file system: with --emulate and no --pmem-dir, a run's default\n"
	"folder is " ATM_TIER_TMPFS_PMEM_DIR "-UID (yours alone) where /dev/shm is a tmpfs\n"
	"with room, else " ATM_TIER_DEFAULT_PMEM_DIR "-UID\n"
	"(a run checks for the room it needs; this survey for 1 GiB).\n"
	"\n"
	"options:\n";

/* What autotm tiers was asked to do beside the memories. */
struct tiers_args {
	bool json;
};

static const cli_option tiers_own[] = {
	CLI_JSON_ROW(struct tiers_args, json),
	{NULL},
};

const cli_command_options cmd_tiers_options = {
	"tiers", (const cli_option *const[]){cli_memory_options, tiers_own, NULL}, tiers_help, NULL};

static json_t *desc_json(const atm_tier_desc *d)
{
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(atm_tier_kind_name(d->kind)));
	json_object_set_new(o, "name", json_string(d->name));
	json_object_set_new(o, "subtype", json_string(d->subtype));
	json_object_set_new(o, "numa_node", json_integer(d->numa_node));
	json_object_set_new(o, "capacity_bytes", json_integer(d->capacity_bytes));
	json_object_set_new(o, "read_gbps", json_real(d->read_gbps));
	json_object_set_new(o, "write_gbps", json_real(d->write_gbps));
	json_object_set_new(o, "latency_ns", json_real(d->latency_ns));
	json_object_set_new(o, "emulated", json_boolean(d->emulated));
	if (d->emulated) {
		char note[512];
		json_object_set_new(o, "emulation", json_string(d->emulation));
		json_object_set_new(o, "emulation_rates",
		                    json_pack("{s:s, s:f, s:f, s:f, s:s}", "form",
		                              d->emulation_absolute ? "absolute" : "proportional", "scale",
		                              d->emulation_scale, "fast_gbps", d->emulation_fast_gbps,
		                              "reference_fast_gbps", d->emulation_reference_gbps,
		                              "bandwidth", cli_bandwidth_note(note, sizeof note)));
	}
	if (d->file.path[0])
		json_object_set_new(o, "file", json_pack("{s:s, s:s, s:b, s:b, s:s}", "path",
		                                         d->file.path, "fs", d->file.fs, "writeback",
		                                         d->file.writeback, "given", d->file.given,
		                                         "why", d->file.given ? "given" : d->file.why));
	return o;
}

static void print_desc(const char *role, const atm_tier_desc *d)
{
	char cap[32];
	printf("  %-6s %-10s %s", role, atm_tier_kind_name(d->kind), d->name);
	if (d->capacity_bytes)
		printf(", %s", atm_format_bytes(d->capacity_bytes, cap, sizeof cap));
	if (d->read_gbps > 0 || d->write_gbps > 0)
		printf(", read %.1f / write %.1f GB/s", d->read_gbps, d->write_gbps);
	if (d->latency_ns > 0)
		printf(", %.0f ns", d->latency_ns);
	printf("\n");
}

int cmd_tiers(int argc, char **argv)
{
	cli_memory mem = {0};
	struct tiers_args a = {0};
	atm_tiers *t = NULL;
	cli_given given;
	atm_status rc = cli_parse(&cmd_tiers_options, (void *const[]){&mem, &a}, argc, argv, &given);
	bool json = a.json;

	if (rc < 0 || given.help)
		return cli_fail("tiers", rc);
	if ((rc = atm_tiers_survey(&t, &mem.tiers, mem.emulate)) < 0)
		goto fail;
	if (json) {
		json_t *o = json_object(), *nodes = json_array();
		for (int i = 0; i < atm_tiers_n_nodes(t); i++)
			json_array_append_new(nodes, desc_json(atm_tiers_node(t, i)));
		json_object_set_new(o, "nodes", nodes);
		json_object_set_new(o, "fast", desc_json(atm_tiers_fast(t)));
		json_object_set_new(o, "slow", desc_json(atm_tiers_slow(t)));
		json_object_set_new(o, "slow_reason", json_string(atm_tiers_slow_reason(t)));
		if ((rc = cli_print_json_new(o)) < 0)
			goto fail;
	} else {
		printf("NUMA nodes (hwloc)\n");
		for (int i = 0; i < atm_tiers_n_nodes(t); i++) {
			char role[16];
			snprintf(role, sizeof role, "#%d", i);
			print_desc(role, atm_tiers_node(t, i));
		}
		printf("\ntiers autotm uses\n");
		print_desc("fast", atm_tiers_fast(t));
		print_desc("slow", atm_tiers_slow(t));
		printf("  (slow: %s)\n", atm_tiers_slow_reason(t));
		if (atm_tiers_slow(t)->emulated) {
			char rates[256], note[512];
			printf("  (emulated rates: %s)\n",
			       cli_emulation_rates(atm_tiers_slow(t), rates, sizeof rates));
			if (cli_bandwidth_note(note, sizeof note)[0])
				printf("  (this machine's bandwidth: %s)\n", note);
		}
		const atm_tier_file *f = &atm_tiers_slow(t)->file;
		char warning[512];
		if (f->path[0])
			printf("  (%s %s on %s: %s)\n", f->folder ? "folder" : "file", f->path, f->fs,
			       f->given ? "given" : f->why);
		if (atm_tier_file_warning(f, atm_tiers_slow(t)->emulated ? atm_tiers_slow(t)->emulation
		                                                         : NULL, warning, sizeof warning))
			printf("\nwarning: %s\n", warning);
		if (!atm_tiers_slow(t)->emulated && atm_tiers_slow(t)->kind == ATM_TIER_PMEM_DIR)
			printf("\nThe slow tier is a file in a directory: as fast as DRAM here. Add --emulate\n"
			       "optane (or cxl, numa) so that placement matters and can be measured.\n");
	}
	atm_tiers_destroy(t);
	return 0;
fail:
	atm_tiers_destroy(t);
	return cli_fail("tiers", rc);
}
