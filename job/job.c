/* job.c -- the whole job: profile what is missing, plan, train, write the results */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_internal.h"


void atm_job_opts_default(atm_job_opts *o)
{
	memset(o, 0, sizeof *o);
	o->formulation = ATM_OPT_SYNCHRONOUS;
	atm_opt_options_default(&o->opt);
	o->iters = 5;
	o->warmup = 1;
	o->seed = 1;
	o->placement_seed = 1;
}

atm_status atm_job_default_cache(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char dir[4096];
	if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof dir, "%s", xdg);
	else if (home && home[0])
		snprintf(dir, sizeof dir, "%s/.cache", home);
	else
		return atm_err(ATM_E_USAGE, "no cache folder: neither XDG_CACHE_HOME nor HOME is set; "
		               "give --cache FILE");
	snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/autotm");
	atm_status rc = atm_make_dirs(dir, 0777);
	if (rc < 0)
		return atm_err_prefix(rc, "the profile cache's folder: ");
	if ((size_t)snprintf(buf, len, "%s/profiles.json", dir) >= len)
		return atm_err(ATM_E_USAGE, "the cache path under %s is too long; give --cache FILE", dir);
	return ATM_OK;
}

/* check_emulation -- mem's tier spec read and checked; a warning when it emulates nothing */
static atm_status check_emulation(const char *who, const atm_job_memory *mem, bool quiet)
{
	atm_emu_spec spec;
	char why[256];
	atm_status rc = atm_emu_spec_resolve(mem->emulate, &spec);
	if (rc < 0)
		return atm_err_prefix(rc, "--emulate: ");
	/* a proportional spec is no slower than its fast tier whatever the scale */
	if (!quiet && atm_emu_spec_warning(&spec, why, sizeof why))
		fprintf(stderr, "autotm %s: warning: %s\n", who, why);
	return ATM_OK;
}

/* backend_caps -- what the backend mem chooses can do (an unknown choice fails in
 * atm_job_memory_resolve, first) */
static atm_backend_caps backend_caps(const atm_job_memory *mem)
{
	atm_backend_caps caps;
	if (atm_backend_caps_get(mem->gpu.mode, &caps) < 0)
		atm_err_clear();
	return caps;
}

atm_status atm_job_memory_resolve(const char *who, atm_job_memory *mem, bool quiet)
{
	atm_backend_caps caps;
	atm_gpu_info info;
	char a[32], f[32];
	atm_status rc = atm_backend_caps_get(mem->gpu.mode, &caps);
	if (rc < 0)
		return atm_err_prefix(rc, "--gpu: ");
	if (mem->emulate && caps.host_tiers && (rc = check_emulation(who, mem, quiet)) < 0)
		return rc;
	if (!caps.device_memory) {
		if (mem->gpu.memory_bytes || mem->gpu.link || mem->gpu.device)
			return atm_err(ATM_E_USAGE, "--gpu-memory, --gpu-device and --gpu-link need --gpu");
		return ATM_OK;
	}
	if (mem->gpu.link && !caps.link_presets)
		return atm_err(ATM_E_USAGE, "--gpu-link describes a simulated GPU; give --gpu=sim");
	if (mem->emulate)
		return atm_err(ATM_E_USAGE, "--emulate makes a CPU's slow tier slow and does not apply "
		               "with --gpu (the slow tier is host memory behind the GPU's link)");
	rc = atm_gpu_probe(&mem->gpu, &info);
	if (rc < 0)
		return atm_err_prefix(rc, "--gpu: ");
	mem->gpu.memory_bytes = info.memory_bytes;
	if (!quiet)
		fprintf(stderr, "autotm %s: %s%s, %s of device memory for the plan (%s free)\n", who,
		        info.name, info.simulated  ? " (SIMULATED: CPU kernels, emulated link)"
		                   : info.modelled ? " (GPU MODEL: estimated from its datasheet, nothing runs)"
		                                   : "",
		        atm_format_bytes(info.memory_bytes, a, sizeof a),
		        atm_format_bytes(info.free_bytes, f, sizeof f));
	return ATM_OK;
}

int64_t atm_job_fast_limit(const atm_job_memory *mem, int64_t limit)
{
	if (backend_caps(mem).device_memory && (!limit || limit > mem->gpu.memory_bytes))
		return mem->gpu.memory_bytes;
	return limit;
}

atm_status atm_job_open_cache(const atm_prof *pr, const char *cache, bool rebuild,
                              atm_profile **prof)
{
	char buf[4096];
	atm_profile_machine m;
	atm_status rc;
	*prof = NULL;
	if (!cache) {
		if ((rc = atm_job_default_cache(buf, sizeof buf)) < 0)
			return rc;
		cache = buf;
	}
	atm_prof_get_machine(pr, &m);
	return atm_prof_cache_open(prof, cache, &m, rebuild);
}

void job_say_file(const char *who, bool quiet, const atm_tier_file *f, const char *emulation,
                  char *said)
{
	char warning[512];
	if (quiet || !atm_tier_file_warning(f, emulation, warning, sizeof warning) ||
	    !strcmp(said, f->path))
		return;
	fprintf(stderr, "autotm %s: warning: %s\n", who, warning);
	snprintf(said, ATM_TIER_PATH_MAX, "%s", f->path);
}

atm_status atm_job_profile_graph(const char *who, const atm_graph *g, const atm_job_memory *mem,
                                 const char *cache, bool estimate, bool isolated, bool quiet,
                                 volatile sig_atomic_t *stop, atm_prof **pr, atm_profile **prof)
{
	char said[ATM_TIER_PATH_MAX] = "";
	return job_profile_graph(who, g, mem, cache, estimate, isolated, quiet, stop, pr, prof, said);
}

atm_status job_profile_graph(const char *who, const atm_graph *g, const atm_job_memory *mem,
                             const char *cache, bool estimate, bool isolated, bool quiet,
                             volatile sig_atomic_t *stop, atm_prof **pr, atm_profile **prof,
                             char *said)
{
	atm_prof_report rep;
	atm_status rc;
	atm_prof_opts po = {
		.tiers = mem->tiers,
		.emulate = mem->emulate,
		.gpu = mem->gpu,
		.seed = 1,
		.estimate = estimate,
		.isolated = isolated,
		.stop = stop,
		.progress = !quiet && isatty(STDERR_FILENO),
	};
	if ((rc = atm_prof_new(pr, g, &po)) < 0 ||
	    (rc = atm_job_open_cache(*pr, cache, false, prof)) < 0 ||
	    (rc = atm_prof_run(*pr, *prof, &rep)) < 0)
		return rc;
	atm_profile_use_in_step(*prof, !isolated);
	if (!quiet && rep.calibration_note[0])
		fprintf(stderr, "autotm %s: %s\n", who, rep.calibration_note);
	if (!quiet && rep.n_configs_measured)
		fprintf(stderr, "autotm %s: %s %lld kernel configurations the cache lacked (%.1f s)\n", who,
		        estimate ? "estimated" : "profiled", (long long)rep.n_configs_measured, rep.seconds);
	if (!quiet && rep.n_in_step_measured)
		fprintf(stderr, "autotm %s: timed %d kernels inside all-fast steps\n", who,
		        rep.n_in_step_measured);
	if (!quiet && rep.in_step_note[0])
		fprintf(stderr, "autotm %s: kernels are priced by their isolated times: no all-fast step "
		        "was run (%s)\n", who, rep.in_step_note);
	/* kernels timed with their slow operands on a disk's file carry its writeback */
	const atm_tier_desc *slow = atm_prof_slow_tier(*pr);
	if (slow && !estimate && (rep.n_configs_measured || rep.moves_measured))
		job_say_file(who, quiet, &slow->file, slow->emulated ? slow->emulation : NULL, said);
	return ATM_OK;
}

/* check_solver -- the solver a plan asks for is built in, before anything is profiled: a
 * build without CBC refuses --solver cbc now (ATM_E_UNSUPPORTED naming the package), not
 * after minutes of profiling */
static atm_status check_solver(const atm_job_opts *o)
{
	atm_opt_solver s;
	if (!o->optimize)
		return ATM_OK;
	return atm_opt_solver_resolve(o->opt.solver, &s);
}

/* open_tensors -- the weights and data files, read and checked against the graph; the
 * weights' destination checked writable */
static atm_status open_tensors(atm_job *j)
{
	const atm_job_opts *o = &j->o;
	atm_status rc = ATM_OK;
	if (o->estimate && (o->weights_in || o->data_in || o->weights_out))
		return atm_err(ATM_E_USAGE, "--weights-in, --data and --weights-out are for a run: "
		               "with an estimated profile nothing runs");
	if (o->weights_in && ((rc = atm_st_read(&j->weights, o->weights_in)) < 0 ||
	                      (rc = atm_st_check(j->weights, j->g, ATM_KIND_PARAM)) < 0))
		return atm_err_prefix(rc, "--weights-in: ");
	atm_update u;
	int64_t state = 0;
	if (o->weights_in && !o->quiet && atm_graph_update_of(j->g, &u, &state) && state > 0) {
		/* atm_st_check took all the states or none: one tells which */
		bool any = false;
		for (int32_t t = 0; t < atm_graph_n_tensors(j->g) && !any; t++)
			any = atm_graph_tensor(j->g, t)->kind == ATM_KIND_OPTIMIZER_STATE &&
			      atm_st_find(j->weights, atm_graph_tensor(j->g, t)->name);
		fprintf(stderr, "autotm %s: %s: %s\n", j->who, o->weights_in,
		        any ? "the weights and the optimizer's states: the run resumes"
		            : "weights without optimizer states: the optimizer starts afresh");
	}
	/* under mpirun the file holds the whole batch, of which each rank trains its shard */
	if (o->data_in && ((rc = atm_st_read(&j->data, o->data_in)) < 0 ||
	                   (rc = atm_st_check(j->data, o->whole && o->comm ? o->whole : j->g,
	                                      ATM_KIND_INPUT)) < 0))
		return atm_err_prefix(rc, "--data: ");
	if (o->weights_out && (rc = atm_check_writable(o->weights_out)) < 0)
		return atm_err_prefix(rc, "--weights-out: ");
	if (o->weights_dtype != ATM_ST_F32 && o->weights_dtype != ATM_ST_BF16 &&
	    o->weights_dtype != ATM_ST_F16)
		return atm_err(ATM_E_USAGE, "--weights-dtype %s: valid are F32, BF16 and F16",
		               atm_st_dtype_name(o->weights_dtype));
	return ATM_OK;
}

atm_status job_write_weights(const atm_job *j, const char *path, atm_st_dtype dtype)
{
	int32_t nt = atm_graph_n_tensors(j->g), n = 0;
	int64_t bytes = 0;
	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(j->g, t);
		if (x->kind == ATM_KIND_PARAM || x->kind == ATM_KIND_OPTIMIZER_STATE) {
			n++;
			bytes += x->bytes;
		}
	}
	atm_st_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
	char *buf = malloc((size_t)bytes + 1);
	atm_status rc = ATM_OK;
	if (!ts || !buf) {
		rc = atm_err(ATM_E_NOMEM, "out of memory gathering the weights for %s", path);
		goto out;
	}
	int64_t off = 0;
	n = 0;
	for (int32_t t = 0; t < nt && rc == ATM_OK; t++) {
		const atm_tensor *x = atm_graph_tensor(j->g, t);
		if (x->kind != ATM_KIND_PARAM && x->kind != ATM_KIND_OPTIMIZER_STATE)
			continue;
		atm_st_tensor *s = &ts[n++];
		s->name = x->name;
		s->dtype = ATM_ST_F32;
		s->ndim = x->ndim;
		memcpy(s->dims, x->dims, sizeof s->dims);
		s->n_elems = x->n_elems;
		s->bytes = x->bytes;
		s->data = buf + off;
		rc = atm_exec_read_tensor(j->exec, t, buf + off);
		if (rc == ATM_OK && dtype != ATM_ST_F32 && x->kind == ATM_KIND_PARAM) {
			uint16_t *half = malloc((size_t)x->n_elems * sizeof *half + 1);
			if (!half) {
				rc = atm_err(ATM_E_NOMEM, "out of memory narrowing '%s' for %s", x->name, path);
				break;
			}
			atm_st_narrow((const float *)(buf + off), x->n_elems, dtype, half);
			memcpy(buf + off, half, (size_t)x->n_elems * sizeof *half);
			free(half);
			s->dtype = dtype;
			s->bytes = x->n_elems * (int64_t)sizeof *half;
		}
		off += x->bytes;
	}
	if (rc == ATM_OK)
		rc = atm_st_write(path, ts, n, NULL);
	if (rc < 0)
		atm_err_prefix(rc, "--weights-out: ");
out:
	free(ts);
	free(buf);
	return rc;
}

atm_status atm_job_new(atm_job **out, const atm_graph *g, const atm_job_opts *o)
{
	atm_job *j = calloc(1, sizeof *j);
	atm_status rc;
	*out = NULL;
	if (!j)
		return atm_err(ATM_E_NOMEM, "out of memory starting a job");
	j->o = *o;
	j->g = g;
	j->who = o->who ? o->who : "run";
	j->oracle_s = -1;
	j->twolm_bytes = o->twolm_bytes;
	bool ratio = o->ratio_slow + o->ratio_fast > 0;
	if (ratio && o->limit_bytes)
		rc = atm_err(ATM_E_USAGE, "give only one of a ratio and a fast-memory limit in bytes");
	else if (o->optimize && o->placement)
		rc = atm_err(ATM_E_USAGE, "give either a placement or the optimizer's options, not both");
	else if (o->estimate && !o->optimize)
		rc = atm_err(ATM_E_USAGE, "an estimated profile prices a plan: it needs the optimizer "
		             "(--ratio or --dram-limit, --formulation)");
	else if (atm_graph_ranks(g) > 1 && !o->estimate && !(o->comm && atm_comm_active(o->comm)))
		/* its allreduce kernels wait for the other ranks: said before anything is profiled */
		rc = atm_err(ATM_E_UNSUPPORTED, "graph '%s' averages its gradients over %d ranks: its "
		             "allreduce kernels run (and are profiled) only under mpirun -np %d "
		             "('mpirun -np %d autotm run ...'); in one process an estimated profile "
		             "plans it (--estimate)", atm_graph_name(g), atm_graph_ranks(g),
		             atm_graph_ranks(g), atm_graph_ranks(g));
	else
		rc = check_solver(o);
	if (rc == ATM_OK)
		rc = atm_job_memory_resolve(j->who, &j->o.mem, o->quiet);
	if (rc == ATM_OK && o->results_path)
		rc = atm_results_check(o->results_path, g, o->append);
	if (rc == ATM_OK)
		rc = open_tensors(j);
	if (rc == ATM_OK)
		rc = job_starts_load(j);
	if (o->comm && atm_comm_active(o->comm) &&
	    (rc = atm_job_ranks_status(o->comm, rc)) == ATM_OK)
		rc = job_dist_start(j);
	if (rc < 0) {
		atm_job_destroy(j);
		return rc;
	}
	*out = j;
	return ATM_OK;
}

void atm_job_destroy(atm_job *j)
{
	if (!j)
		return;
	atm_exec_destroy(j->exec);
	atm_st_destroy(j->weights);
	atm_st_destroy(j->data);
	atm_plan_destroy(j->plan);
	atm_opt_search_destroy(j->search);
	atm_profile_destroy(j->prof);
	free(j->kernel_pred_s);
	free(j->kept_kernel_s);
	free(j->kept_step_kernel_s);
	free(j->kept_losses);
	free(j->rank_step_s);
	free(j->mean_losses);
	job_starts_free(j);
	free(j);
}

/* builtin_plan -- the built-in placement named by spec, or a plan file */
static atm_status builtin_plan(const atm_graph *g, const char *spec, uint64_t seed, atm_plan **p)
{
	if (!strcmp(spec, "all-fast"))
		return atm_plan_uniform(p, g, ATM_LOC_FAST);
	if (!strcmp(spec, "managed")) {
		/* every tensor in one managed arena: the driver decides what is on the device */
		atm_status rc = atm_plan_uniform(p, g, ATM_LOC_FAST);
		if (rc == ATM_OK)
			snprintf(atm_plan_info_of(*p)->formulation, sizeof atm_plan_info_of(*p)->formulation,
			         "managed");
		return rc;
	}
	if (!strcmp(spec, "all-slow"))
		return atm_plan_uniform(p, g, ATM_LOC_SLOW);
	if (!strcmp(spec, "random"))
		return atm_plan_random(p, g, seed);
	/* a word that names no placement is a usage error; a path (it has a '/' or a '.') is a
	 * plan file, missing or not: exit 6 when it is not there, as for --graph */
	if (access(spec, F_OK) != 0 && !strpbrk(spec, "/."))
		return atm_err(ATM_E_USAGE, "--placement '%s' is neither all-fast, all-slow, random, "
		               "managed (with --gpu) nor an existing plan file", spec);
	return atm_plan_load(p, g, spec);
}

/* memory_mode_plan -- the 2lm baseline: on a machine in Memory Mode the hardware caches slow
 * memory, so every tensor goes to (cached) main memory and nothing is emulated; elsewhere the
 * executor emulates a cache of the limit's size in front of the slow tier */
static atm_status memory_mode_plan(atm_job *j)
{
	atm_plan *q = NULL;
	char size[32];
	int64_t cache;
	atm_status rc = atm_tiers_memory_mode(&cache);
	if (rc < 0)
		return rc;
	if (!cache) {
		if (!j->twolm_bytes)
			j->twolm_bytes = j->limit;
		j->memory_mode = "emulated";
		if (!j->o.quiet)
			fprintf(stderr, "autotm %s: 2lm: this machine is not in Memory Mode; a %s cache in "
			        "front of the slow tier is emulated\n", j->who,
			        atm_format_bytes(j->twolm_bytes, size, sizeof size));
		return ATM_OK;
	}
	if ((rc = atm_plan_uniform(&q, j->g, ATM_LOC_FAST)) < 0)
		return rc;
	atm_plan_info *info = atm_plan_info_of(q);
	*info = *atm_plan_info_get(j->plan);
	info->fast_limit_bytes = 0; /* main memory, as large as the step needs */
	atm_plan_destroy(j->plan);
	j->plan = q;
	j->twolm_bytes = 0;
	j->memory_mode = "hardware";
	if (!j->o.quiet)
		fprintf(stderr, "autotm %s: 2lm: this machine is in Memory Mode (a %s memory-side "
		        "cache): the hardware caches, nothing is emulated\n", j->who,
		        atm_format_bytes(cache, size, sizeof size));
	return ATM_OK;
}

static atm_status solve(atm_job *j, atm_opt_options *opts, bool least, int64_t limit);

/* optimize -- profile what is missing, then solve */
static atm_status optimize(atm_job *j)
{
	const atm_job_opts *o = &j->o;
	const atm_backend_caps caps = backend_caps(&o->mem);
	atm_opt_options oo = o->opt;
	atm_status rc = ATM_OK;
	int64_t limit = o->limit_bytes;
	oo.device_only = caps.device_only; /* a GPU's kernels read device memory only */
	/* on a real GPU each kernel's algorithm is chosen with its workspace counted in the limit,
	 * and the plan reserves it in the device arena; the simulated GPU's CPU kernels have no
	 * algorithms and keep their scratch outside the arena, as on the CPU */
	if (caps.workspace_in_limit)
		oo.workspace_in_limit = true;
	oo.stop = o->stop;
	/* 1:0 is the least any plan needs: on a GPU every kernel's operands (and its least
	 * workspace) in device memory, which only the options and the profile tell */
	bool least = o->ratio_slow > 0 && o->ratio_fast == 0;
	if (o->ratio_slow + o->ratio_fast > 0 && !least &&
	    (rc = atm_opt_limit_from_ratio(j->g, o->ratio_slow, o->ratio_fast, &limit)) < 0)
		return rc;
	/* the profiler's backend (its tiers, fast arena, scratch and kernels) is closed before
	 * anything else: none of its memory stays while the step runs, and two backends with
	 * live memkind kinds in one process have crashed memkind's allocator under load */
	atm_prof *pr = NULL;
	char copy[4200] = "", buf[4096];
	const char *cache = o->cache;
	if (job_dist(j) && !cache && (rc = atm_job_default_cache(buf, sizeof buf)) == ATM_OK)
		cache = buf;
	if (job_dist(j) && (rc = atm_job_ranks_status(o->comm, rc)) == ATM_OK)
		rc = job_dist_private_cache(j, cache, copy, sizeof copy);
	if (rc < 0)
		return rc;
	rc = job_profile_graph(j->who, j->g, &o->mem, copy[0] ? copy : cache, o->estimate,
	                       o->isolated, o->quiet, o->stop, &pr, &j->prof, j->said_file);
	atm_prof_destroy(pr);
	if (copy[0])
		job_dist_drop_private_cache(copy);
	/* under mpirun rank 0 plans from its profile and hands the plan to the others */
	if (job_dist(j)) {
		/* the others may be timing an allreduce or an in-step step, inside a collective
		 * that waits for this rank: an interrupted profile ends the job here */
		if (rc == ATM_E_INTERRUPTED)
			job_dist_fail_alone(j, rc);
		if ((rc = atm_job_ranks_status(o->comm, rc)) < 0)
			return rc;
		if (job_rank(j) != 0)
			return job_dist_plan(j, ATM_OK);
		return job_dist_plan(j, solve(j, &oo, least, limit));
	}
	if (rc < 0)
		return rc;
	return solve(j, &oo, least, limit);
}

/* solve -- the plan from the profile: the limit settled (the least a plan needs, with 1:0),
 * the formulation solved and checked */
static atm_status solve(atm_job *j, atm_opt_options *opts, bool least, int64_t limit)
{
	const atm_job_opts *o = &j->o;
	const atm_backend_caps caps = backend_caps(&o->mem);
	atm_opt_options oo = *opts;
	const atm_plan *fit[ATM_JOB_MAX_STARTS];
	int map[ATM_JOB_MAX_STARTS], n_fit = 0;
	atm_status rc;
	if (least && (rc = atm_opt_least_limit(j->g, j->prof, o->formulation, &oo, &limit)) < 0)
		return rc;
	j->limit = atm_job_fast_limit(&o->mem, least && limit < 1 ? 1 : limit);
	if (!(j->kernel_pred_s = calloc((size_t)atm_graph_n_nodes(j->g) + 1, sizeof *j->kernel_pred_s)))
		return atm_err(ATM_E_NOMEM, "out of memory planning '%s'", atm_graph_name(j->g));
	if ((rc = job_starts_fit(j, &oo, fit, map, &n_fit)) < 0)
		return rc;
	oo.starts = fit;
	oo.n_starts = n_fit;
	if (o->keep_search)
		rc = atm_opt_search_new(&j->search, &j->plan, j->g, j->prof, j->limit, o->formulation,
		                        &oo, &j->rep);
	else
		rc = atm_opt_plan(&j->plan, j->g, j->prof, j->limit, o->formulation, &oo, &j->rep);
	if (rc < 0 || (rc = atm_opt_check_nodes(j->plan, j->prof, &oo, &j->chk, j->kernel_pred_s)) < 0)
		return rc;
	job_starts_said(j, map);
	/* a signal while the plan was finished and checked ends the job before it writes anything */
	if (o->stop && *o->stop)
		return atm_err(ATM_E_INTERRUPTED, "interrupted after planning");
	j->planned = true;
	j->has_cal = atm_profile_get_calibration(j->prof, j->g, &j->cal) == ATM_OK;
	atm_err_clear();
	atm_plan_info *info = atm_plan_info_of(j->plan);
	info->ratio_slow = o->ratio_slow;
	info->ratio_fast = o->ratio_fast;
	if ((rc = job_plans_out(j)) < 0)
		return rc;
	if (caps.device_only)
		j->oracle_s = j->chk.all_fast_kernel_s;
	if (o->formulation == ATM_OPT_2LM && !o->estimate)
		return memory_mode_plan(j);
	return ATM_OK;
}

atm_status atm_job_plan(atm_job *j)
{
	if (j->plan)
		return atm_err(ATM_E_USAGE, "the job is planned already");
	if (j->o.optimize)
		return optimize(j);
	atm_status rc = builtin_plan(j->g, j->o.placement ? j->o.placement : "all-fast",
	                             j->o.placement_seed, &j->plan);
	/* under mpirun each rank makes it; they must have made one */
	if (job_dist(j) && (rc = atm_job_ranks_status(j->o.comm, rc)) == ATM_OK)
		rc = job_dist_agree_plan(j);
	return rc;
}

atm_exec_opts job_exec_opts(const atm_job *j)
{
	const atm_job_opts *o = &j->o;
	atm_exec_opts eo = {
		.iters = o->iters,
		.warmup = o->warmup ? o->warmup : -1,
		.seed = o->seed,
		.tiers = o->mem.tiers,
		.emulate = o->mem.emulate,
		.gpu = j->o.mem.gpu,
		.stop = o->stop,
		.twolm_bytes = j->twolm_bytes,
		.quiet = o->quiet || !isatty(STDERR_FILENO),
		.weights = j->weights,
		.data = j->data,
	};
	if (job_dist(j)) {
		eo.whole = o->whole;
		eo.shard = job_rank(j);
		eo.n_shards = atm_comm_size(o->comm);
	}
	eo.gpu.managed = o->placement && !strcmp(o->placement, "managed") &&
	                 backend_caps(&o->mem).managed;
	return eo;
}

atm_status job_exec_open(atm_job *j)
{
	atm_exec_opts eo = job_exec_opts(j);
	if (j->o.estimate)
		return atm_err(ATM_E_USAGE, "a plan priced by an estimated profile is not run");
	atm_status rc = atm_exec_new(&j->exec, j->plan, &eo);
	if (rc == ATM_OK) {
		const atm_tier_desc *slow = atm_exec_slow_tier(j->exec);
		job_say_file(j->who, j->o.quiet, &slow->file, slow->emulated ? slow->emulation : NULL,
		             j->said_file);
	}
	return rc;
}

atm_status atm_job_execute(atm_job *j)
{
	if (!j->plan || j->exec || j->kept_kernel_s)
		return atm_err(ATM_E_USAGE, j->plan ? "the job ran already" : "plan the job first");
	atm_status rc = job_exec_open(j);
	if (rc == ATM_OK)
		rc = atm_exec_run(j->exec);
	/* the ranks go on together or not at all: one that failed here has left the others
	 * in an allreduce or about to enter one */
	job_dist_fail_alone(j, rc);
	if (rc == ATM_OK && job_dist(j))
		rc = job_dist_gather(j, atm_exec_result_get(j->exec),
		                     atm_exec_result_get(j->exec)->actual_runtime_s);
	if (rc == ATM_OK && j->o.weights_out)
		rc = job_write_weights(j, j->o.weights_out, j->o.weights_dtype);
	/* the optimizer's all-fast measures what the calibration measured */
	if (rc == ATM_OK && j->has_cal && j->o.optimize && j->o.formulation == ATM_OPT_ALL_FAST) {
		j->drift = atm_exec_result_get(j->exec)->actual_runtime_s / j->cal.step_s;
		job_say_drift(j->who, j->o.quiet, j->drift, &j->cal);
	}
	return rc;
}

bool atm_job_drift_note(double drift, const atm_profile_calibration *cal, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	if (!(drift > 0) || !cal || fabs(drift - 1) <= ATM_JOB_DRIFT_SAID)
		return false;
	snprintf(buf, len, "this machine is running %.0f%% %s than when it was profiled (%s): its "
	         "all-fast step takes %.6g s, %.6g s then;\n  its kernels and copies take about as "
	         "much %s than profiled, its emulated waits do not: a comparison's predictions "
	         "count both",
	         fabs(drift - 1) * 100, drift > 1 ? "slower" : "faster", cal->measured_at,
	         drift * cal->step_s, cal->step_s, drift > 1 ? "longer" : "less");
	return true;
}

void job_say_drift(const char *who, bool quiet, double drift, const atm_profile_calibration *cal)
{
	char note[512];
	if (!quiet && atm_job_drift_note(drift, cal, note, sizeof note))
		fprintf(stderr, "autotm %s: %s\n", who, note);
}

const atm_profile_calibration *atm_job_calibration(const atm_job *j)
{
	return j->has_cal ? &j->cal : NULL;
}

double atm_job_profile_drift(const atm_job *j)
{
	return j->drift;
}

/* keep_first -- the first turn's result copied whole into the job's own arrays */
static atm_status keep_first(atm_job *j, const atm_exec_result *r)
{
	size_t nn = (size_t)atm_graph_n_nodes(j->g) + 1;
	j->kept_kernel_s = calloc(nn, sizeof *j->kept_kernel_s);
	j->kept_step_kernel_s = calloc(nn, sizeof *j->kept_step_kernel_s);
	j->kept_losses = calloc((size_t)r->n_losses + 1, sizeof *j->kept_losses);
	if (!j->kept_kernel_s || !j->kept_step_kernel_s || !j->kept_losses) {
		free(j->kept_kernel_s);
		free(j->kept_step_kernel_s);
		free(j->kept_losses);
		j->kept_kernel_s = j->kept_step_kernel_s = NULL;
		j->kept_losses = NULL;
		return atm_err(ATM_E_NOMEM, "out of memory keeping a turn's measurements");
	}
	j->kept = *r;
	memcpy(j->kept_kernel_s, r->kernel_s, (nn - 1) * sizeof *r->kernel_s);
	memcpy(j->kept_step_kernel_s, r->step_kernel_s, (nn - 1) * sizeof *r->step_kernel_s);
	memcpy(j->kept_losses, r->losses, (size_t)r->n_losses * sizeof *r->losses);
	j->kept.kernel_s = j->kept_kernel_s;
	j->kept.step_kernel_s = j->kept_step_kernel_s;
	j->kept.losses = j->kept_losses;
	return ATM_OK;
}

/* keep_more -- a later turn's result merged into the kept one */
static atm_status keep_more(atm_job *j, const atm_exec_result *r)
{
	atm_exec_result *k = &j->kept;
	int32_t nn = atm_graph_n_nodes(j->g);
	/* a fresh executor starts from the seed: every turn trains to the same weights */
	if (strcmp(k->weights_checksum, r->weights_checksum) || k->n_losses != r->n_losses)
		return atm_err(ATM_E_INTERNAL, "placement '%s' trained to other weights in another turn "
		               "(%s, then %s)", atm_plan_info_get(j->plan)->formulation,
		               k->weights_checksum, r->weights_checksum);
	double n = k->n_iters + r->n_iters;
	k->mean_runtime_s = (k->mean_runtime_s * k->n_iters + r->mean_runtime_s * r->n_iters) / n;
	k->emulation_wait_s = (k->emulation_wait_s * k->n_iters + r->emulation_wait_s * r->n_iters) / n;
	k->move_wait_s = (k->move_wait_s * k->n_iters + r->move_wait_s * r->n_iters) / n;
	k->n_iters += r->n_iters;
	for (int32_t i = 0; i < nn; i++)
		if (r->kernel_s[i] < j->kept_kernel_s[i])
			j->kept_kernel_s[i] = r->kernel_s[i];
	if (r->actual_runtime_s < k->actual_runtime_s) {
		k->actual_runtime_s = r->actual_runtime_s;
		k->recompute_s = r->recompute_s; /* the fastest step's, as its kernels' */
		memcpy(j->kept_step_kernel_s, r->step_kernel_s, (size_t)nn * sizeof *r->step_kernel_s);
	}
	if (r->fast_high_water_bytes > k->fast_high_water_bytes) {
		k->fast_high_water_bytes = r->fast_high_water_bytes;
		memcpy(k->fast_high_water_at, r->fast_high_water_at, sizeof k->fast_high_water_at);
	}
	if (r->slow_high_water_bytes > k->slow_high_water_bytes)
		k->slow_high_water_bytes = r->slow_high_water_bytes;
	return ATM_OK;
}

atm_status job_keep_turn(atm_job *j)
{
	const atm_exec_result *r = atm_exec_result_get(j->exec);
	atm_status rc = j->kept_kernel_s ? keep_more(j, r) : keep_first(j, r);
	atm_exec_destroy(j->exec);
	j->exec = NULL;
	return rc;
}

/* in_step_nodes -- the graph's nodes the plan priced with an in-step time */
static int32_t in_step_nodes(const atm_job *j)
{
	int32_t n = 0;
	atm_profile_in_step st;
	if (!j->prof || !atm_profile_uses_in_step(j->prof))
		return 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(j->g); k++)
		n += atm_profile_get_in_step(j->prof, j->g, k, &st) == ATM_OK;
	atm_err_clear();
	return n;
}

/* overlap_loss -- the profile's overlap loss (0 without a profile or its moves) */
static double overlap_loss(const atm_job *j)
{
	atm_profile_moves mv;
	double l = j->prof && atm_profile_get_moves(j->prof, &mv) == ATM_OK ? mv.overlap_loss : 0;
	atm_err_clear();
	return l;
}

atm_run_measured job_measured(const atm_job *j, const atm_exec_result *r)
{
	const atm_job_opts *o = &j->o;
	const atm_backend_caps caps = backend_caps(&o->mem);
	return (atm_run_measured){
		.actual_runtime_s = r->actual_runtime_s,
		.mean_runtime_s = r->mean_runtime_s,
		.n_iters = r->n_iters,
		.kernel_s = r->kernel_s,
		.step_kernel_s = r->step_kernel_s,
		.kernel_pred_s = atm_job_kernel_predictions(j),
		.n_in_step_nodes = in_step_nodes(j),
		.overlap_loss = overlap_loss(j),
		.n_losses = r->n_losses,
		.losses = r->losses,
		.weights_checksum = r->weights_checksum,
		.dram_alloc_bytes = r->fast_high_water_bytes,
		.dram_high_water_at = r->fast_high_water_at,
		.scratch_bytes = r->scratch_bytes,
		.pmem_alloc_bytes = r->slow_high_water_bytes,
		.emulation_wait_s = r->emulation_wait_s,
		.move_wait_s = r->move_wait_s,
		.recompute_s = r->recompute_s,
		.emulated = r->emulated,
		.emulation = r->emulated ? r->emulation : NULL,
		.emulation_absolute = r->slow_tier.emulation_absolute,
		.emulation_scale = r->slow_tier.emulation_scale,
		.emulation_fast_gbps = r->slow_tier.emulation_fast_gbps,
		.emulation_reference_gbps = r->slow_tier.emulation_reference_gbps,
		.memory_mode = j->memory_mode ? j->memory_mode : j->twolm_bytes ? "emulated" : NULL,
		.fast_tier = r->fast_tier.name,
		.slow_tier = r->slow_tier.name,
		.slow_path = r->slow_tier.file.path[0] ? r->slow_tier.file.path : NULL,
		.slow_fs = r->slow_tier.file.path[0] ? r->slow_tier.file.fs : NULL,
		.slow_read_gbps = r->slow_tier.read_gbps,
		.slow_write_gbps = r->slow_tier.write_gbps,
		.seed = o->seed,
		.n_threads = r->n_threads,
		.backend = r->backend,
		.device = r->device,
		.versions = r->versions,
		.simulated = r->simulated,
		.has_energy = r->energy_per_step_j >= 0,
		.energy_per_step_j = r->energy_per_step_j,
		.sm_mhz = r->gpu_state.sm_mhz,
		.mem_mhz = r->gpu_state.mem_mhz,
		.power_limit_w = r->gpu_state.power_limit_w,
		.gpu_memory_bytes = caps.device_memory ? o->mem.gpu.memory_bytes : 0,
		.managed = o->placement && !strcmp(o->placement, "managed"),
		.oracle_s = j->oracle_s,
		.has_oracle = caps.device_only,
		.profile_calibrated_at = j->has_cal ? j->cal.measured_at : NULL,
		.profile_step_s = j->has_cal ? j->cal.step_s : -1,
		.profile_drift = j->drift,
	};
}

atm_status atm_job_write_results(atm_job *j)
{
	const atm_job_opts *o = &j->o;
	const atm_exec_result *r = atm_job_exec_result(j);
	atm_schedule *sched = NULL;
	atm_status rc;
	if (!o->results_path)
		return atm_err(ATM_E_USAGE, "the job has no results path");
	if (!j->plan)
		return atm_err(ATM_E_USAGE, "plan the job first");
	atm_run_measured m = {0};
	atm_results_workload w = o->workload;
	if (r)
		m = job_measured(j, r);
	else if (backend_caps(&o->mem).modelled)
		w.gpu_model = o->mem.gpu.model;
	if (r)
		job_dist_measured(j, r, &m);
	if ((rc = atm_schedule_new(&sched, j->plan)) == ATM_OK)
		rc = atm_results_write(o->results_path, j->plan, sched, &w, r ? &m : NULL, o->append);
	atm_schedule_destroy(sched);
	return rc;
}

atm_status atm_job_run(atm_job *j)
{
	atm_status rc = atm_job_plan(j);
	if (rc == ATM_OK && !j->o.estimate)
		rc = atm_job_execute(j);
	if (rc == ATM_OK && j->o.results_path)
		rc = atm_job_write_results(j);
	return rc;
}

const atm_graph *atm_job_graph(const atm_job *j)
{
	return j->g;
}

const atm_plan *atm_job_plan_get(const atm_job *j)
{
	return j->plan;
}

const atm_opt_report *atm_job_report(const atm_job *j)
{
	return j->planned ? &j->rep : NULL;
}

const atm_opt_check_result *atm_job_check(const atm_job *j)
{
	return j->planned ? &j->chk : NULL;
}

const double *atm_job_kernel_predictions(const atm_job *j)
{
	return j->planned ? j->kernel_pred_s : NULL;
}

atm_opt_search *atm_job_search(const atm_job *j)
{
	return j->planned ? j->search : NULL;
}

const atm_profile *atm_job_profile(const atm_job *j)
{
	return j->planned ? j->prof : NULL;
}

const atm_exec_result *atm_job_exec_result(const atm_job *j)
{
	return j->exec ? atm_exec_result_get(j->exec) : j->kept_kernel_s ? &j->kept : NULL;
}

bool atm_job_ranks_get(const atm_job *j, atm_run_measured *m)
{
	const atm_exec_result *r = atm_job_exec_result(j);
	if (!job_dist(j) || !r || !j->rank_step_s)
		return false;
	m->n_losses = r->n_losses;
	m->losses = r->losses;
	job_dist_measured(j, r, m);
	return true;
}
