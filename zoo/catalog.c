/* catalog.c -- the zoo's catalogue of networks, option checking, and the named size presets */
#include <math.h>
#include <string.h>

#include "atm_zoo.h"
#include "builder.h"

/* Limits on options: far beyond any real run, small enough that no shape overflows. */
#define MAX_BATCH 1000000
#define MAX_CLASSES 1000000
#define MAX_IMAGE 65536
#define DEFAULT_LR 0.01f
#define MAX_SEQ 1000000

enum { P_PAPER, P_LARGE, P_GPU, P_SMALL, N_PRESETS };

static const atm_zoo_preset_info presets[N_PRESETS] = {
	[P_PAPER] = {"paper", "AutoTM's conventional CPU runs (Figures 7, 9, 10, 11)"},
	[P_LARGE] = {"large", "AutoTM's large networks, compared with 2LM (Figure 8)"},
	[P_GPU] = {"gpu", "AutoTM's GPU runs (Figure 12)"},
	[P_SMALL] = {"small", "every network sized to train one step on a 2-core, 24 GB machine "
	                      "in well under a minute"},
};

struct entry {
	atm_zoo_model m;
	atm_status (*build)(atm_graph **g, const zb_spec *spec);
	int variant;
	atm_zoo_preset_sizes sizes[N_PRESETS];
};

/* Sizes: ONE(b) at the default image, AT(b, image) at a reduced one. */
#define ONE(b) {.n_batch = 1, .batch = {b}}
#define AT(b, img) {.n_batch = 1, .batch = {b}, .image = img}
#define SEQ(b, s) {.n_batch = 1, .batch = {b}, .seq = s}

/* The tiny transformers' counts: 2 layers of 12 w^2 + 13 w at width 64 (49,984 each), and
 * GPT: tokens 512 x 64 + positions 64 x 64 + final norm 128; BERT: words 512 x 64,
 * positions 64 x 64, 2 types x 64, embedding norm 128, pooler 64 x 64 + 64; ViT: 8x8x3
 * patches to 64 (12,352), class token 64, 17 positions x 64, final norm 128, head 64 x 10
 * + 10. */
#define TINY_GPT_PARAMS (2 * 49984 + 512 * 64 + 64 * 64 + 128)
#define TINY_BERT_PARAMS (2 * 49984 + 512 * 64 + 64 * 64 + 2 * 64 + 128 + 64 * 64 + 64)
/* tiny_llama: 2 layers of q, o 64 x 64, k, v 64 x 32, the MLP 3 x 64 x 96 and two norms of 64;
 * embedding and output 512 x 64 each (untied), the final norm 64 */
#define TINY_LLAMA_PARAMS (2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 96 + 2 * 64) + 2 * 512 * 64 + 64)
#define TINY_VIT_PARAMS (2 * 49984 + 12352 + 64 + 17 * 64 + 128 + 64 * 10 + 10)

/* The small preset keeps every step at or below ~100 GFLOP (forward + backward,
 * 2 flops per multiply-add, convolutions and inner products) so that a 2-core
 * machine doing 50-100 GFLOP/s runs it in seconds; the figures per model are in
 * the README of the zoo (zoo/README.md). default_batch is the small batch,
 * except for test_vgg, which is AutoTM's VGG19 at batch 16. */
static const struct entry catalogue[] = {
	{{"vgg16", "vgg", "VGG-16: 13 3x3 convolutions and 3 fully connected layers", 224, 1000, 8,
	  138357544, 0},
	 zb_net_vgg, 16, {[P_SMALL] = AT(8, 64)}},
	{{"vgg19", "vgg", "VGG-19: 16 3x3 convolutions and 3 fully connected layers", 224, 1000, 8,
	  143667240, 0},
	 zb_net_vgg, 19,
	 {[P_PAPER] = ONE(2048),
	  [P_GPU] = {.n_batch = 2, .batch = {64, 128}},
	  [P_SMALL] = AT(8, 64)}},
	{{"vgg416", "vgg", "AutoTM's large VGG: 409 3x3 convolutions in five groups, 3 fully "
	  "connected layers", 224, 1000, 1, 577082664, 0},
	 zb_net_vgg, 416, {[P_LARGE] = ONE(320), [P_SMALL] = AT(1, 32)}},
	{{"resnet50", "resnet", "ResNet-50: bottleneck blocks [3, 4, 6, 3]", 224, 1000, 8, 25557032, 0},
	 zb_net_resnet, 50, {[P_SMALL] = AT(8, 112)}},
	{{"resnet101", "resnet", "ResNet-101: bottleneck blocks [3, 4, 23, 3]", 224, 1000, 8,
	  44549160, 0},
	 zb_net_resnet, 101, {[P_SMALL] = AT(8, 112)}},
	{{"resnet152", "resnet", "ResNet-152: bottleneck blocks [3, 8, 36, 3]", 224, 1000, 4,
	  60192808, 0},
	 zb_net_resnet, 152, {[P_SMALL] = AT(4, 112)}},
	{{"resnet200", "resnet", "ResNet-200: bottleneck blocks [3, 24, 36, 3]", 224, 1000, 4,
	  64673832, 0},
	 zb_net_resnet, 200,
	 {[P_PAPER] = ONE(512),
	  [P_LARGE] = ONE(2560),
	  [P_GPU] = {.n_batch = 3, .batch = {32, 64, 128}},
	  [P_SMALL] = AT(4, 112)}},
	{{"inception_v4", "inception", "Inception-v4: stem, 4 x A, 7 x B, 3 x C blocks, 299x299 input",
	  299, 1000, 4, 42679816, 0},
	 zb_net_inception, 4,
	 {[P_PAPER] = ONE(1024),
	  [P_LARGE] = ONE(6144),
	  [P_GPU] = {.n_batch = 3, .batch = {64, 128, 256}},
	  [P_SMALL] = AT(4, 149)}},
	{{"densenet121", "densenet", "DenseNet-121: dense blocks [6, 12, 24, 16], growth 32", 224,
	  1000, 8, 7978856, 0},
	 zb_net_densenet, 121, {[P_SMALL] = AT(8, 112)}},
	{{"densenet169", "densenet", "DenseNet-169: dense blocks [6, 12, 32, 32], growth 32", 224,
	  1000, 8, 14149480, 0},
	 zb_net_densenet, 169, {[P_SMALL] = AT(8, 112)}},
	{{"densenet201", "densenet", "DenseNet-201: dense blocks [6, 12, 48, 32], growth 32", 224,
	  1000, 8, 20013928, 0},
	 zb_net_densenet, 201, {[P_SMALL] = AT(8, 112)}},
	{{"densenet264", "densenet", "DenseNet-264: dense blocks [6, 12, 64, 48], growth 32", 224,
	  1000, 4, 33337704, 0},
	 zb_net_densenet, 264,
	 {[P_PAPER] = ONE(512),
	  [P_LARGE] = ONE(3072),
	  [P_GPU] = {.n_batch = 3, .batch = {32, 64, 128}},
	  [P_SMALL] = AT(4, 112)}},
	{{"test_vgg", "vgg", "AutoTM's check network: VGG-19 at batch 16", 224, 1000, 16, 143667240, 0},
	 zb_net_vgg, 19, {[P_SMALL] = AT(16, 32)}},
	{{"tiny_cnn", "tiny", "a 4,178-parameter CNN on 32x32x3 that uses every CNN op", 32, 10, 8, 4178, 0},
	 zb_net_tiny, ZB_TINY_CNN, {[P_SMALL] = ONE(8)}},
	{{"tiny_mlp", "tiny", "a 3-layer MLP on 8x8x1 inputs, 3,466 parameters", 8, 10, 8, 3466, 0},
	 zb_net_tiny, ZB_TINY_MLP, {[P_SMALL] = ONE(8)}},
	{{"tiny_se", "tiny", "a 518-parameter CNN on 32x32x3 with SiLU, depthwise and grouped "
	  "convolutions, a squeeze-and-excitation, a layer scale, a gate and an RMS norm", 32, 10, 8, 518, 0},
	 zb_net_tiny, ZB_TINY_SE, {[P_SMALL] = ONE(8)}},
	/* Transformers: classes are the vocabulary of the language models. Small: a step of
	 * seconds to tens of seconds here; paper: sequence 1024 (BERT 512) at batches whose
	 * step needs tens of GB; gpu: batches past an 80 GB card for the larger ones. */
	{{"gpt2", "gpt2", "GPT-2 (124M): 12 layers, 768 wide, 1024 positions, tied embeddings", 0,
	  50257, 2, 124439808, 128},
	 zb_net_gpt2, 12,
	 {[P_PAPER] = SEQ(16, 1024), [P_GPU] = {.n_batch = 2, .batch = {32, 64}, .seq = 1024},
	  [P_SMALL] = SEQ(2, 128)}},
	{{"gpt2-medium", "gpt2", "GPT-2 medium (355M): 24 layers, 1024 wide", 0, 50257, 1, 354823168,
	  128},
	 zb_net_gpt2, 24,
	 {[P_PAPER] = SEQ(8, 1024), [P_GPU] = {.n_batch = 2, .batch = {16, 32}, .seq = 1024},
	  [P_SMALL] = SEQ(1, 128)}},
	{{"gpt2-large", "gpt2", "GPT-2 large (774M): 36 layers, 1280 wide", 0, 50257, 1, 774030080,
	  64},
	 zb_net_gpt2, 36,
	 {[P_PAPER] = SEQ(4, 1024), [P_GPU] = {.n_batch = 2, .batch = {8, 16}, .seq = 1024},
	  [P_SMALL] = SEQ(1, 64)}},
	{{"gpt2-xl", "gpt2", "GPT-2 XL (1.5B): 48 layers, 1600 wide", 0, 50257, 1, 1557611200, 64},
	 zb_net_gpt2, 48,
	 {[P_PAPER] = SEQ(2, 1024), [P_GPU] = {.n_batch = 2, .batch = {4, 8}, .seq = 1024},
	  [P_SMALL] = SEQ(1, 64)}},
	{{"bert-base", "bert", "BERT-base: 12 post-norm layers, 768 wide, 512 positions, pooler", 0,
	  30522, 2, 109482240, 128},
	 zb_net_bert, 0,
	 {[P_PAPER] = SEQ(32, 512), [P_GPU] = {.n_batch = 2, .batch = {64, 128}, .seq = 512},
	  [P_SMALL] = SEQ(2, 128)}},
	{{"vit_b_16", "vit", "ViT-B/16: 16x16 patches, 12 layers, 768 wide (torchvision)", 224, 1000,
	  2, 86567656, 0},
	 zb_net_vit, 0,
	 {[P_PAPER] = ONE(256), [P_GPU] = {.n_batch = 2, .batch = {256, 512}},
	  [P_SMALL] = ONE(2)}},
	{{"tinyllama-1.1b", "llama", "TinyLlama-1.1B: 22 layers, 2048 wide, 32 heads, 4 key/value "
	  "heads, MLP 5632, untied", 0, 32000, 1, 1100048384, 64},
	 zb_net_llama, 1, {[P_PAPER] = SEQ(4, 2048), [P_SMALL] = SEQ(1, 64)}},
	{{"llama-3.2-1b", "llama", "Llama 3.2 1B: 16 layers, 2048 wide, 32 heads, 8 key/value heads, "
	  "MLP 8192, tied embeddings", 0, 128256, 1, 1235814400, 64},
	 zb_net_llama, 2, {[P_PAPER] = SEQ(4, 2048), [P_SMALL] = SEQ(1, 64)}},
	{{"llama-3-8b", "llama", "Llama 3 8B: 32 layers, 4096 wide, 32 heads, 8 key/value heads, "
	  "MLP 14336, untied, RoPE 500000", 0, 128256, 1, 8030261248, 64},
	 zb_net_llama, 3, {[P_PAPER] = SEQ(1, 8192), [P_SMALL] = SEQ(1, 64)}},
	{{"tiny_gpt", "tiny", "a 2-layer, 64-wide GPT-2 (causal, tied embeddings) on 512 tokens", 0,
	  512, 2, TINY_GPT_PARAMS, 32},
	 zb_net_gpt2, 2, {[P_SMALL] = SEQ(2, 32)}},
	{{"tiny_bert", "tiny", "a 2-layer, 64-wide BERT (post-norm, pooler, two losses)", 0, 512, 2,
	  TINY_BERT_PARAMS, 32},
	 zb_net_bert, 2, {[P_SMALL] = SEQ(2, 32)}},
	{{"tiny_vit", "tiny", "a 2-layer, 64-wide ViT on 32x32 images in 8x8 patches", 32, 10, 2,
	  TINY_VIT_PARAMS, 0},
	 zb_net_vit, 2, {[P_SMALL] = ONE(2)}},
	{{"tiny_llama", "tiny", "a 2-layer, 64-wide LLaMA (RMSNorm, rotary embeddings, 4 heads over 2 "
	  "key/value heads, SwiGLU) on 512 tokens", 0, 512, 2, TINY_LLAMA_PARAMS, 32},
	 zb_net_llama, 0, {[P_SMALL] = SEQ(2, 32)}},
};

#define N_MODELS ((int)(sizeof catalogue / sizeof catalogue[0]))

int atm_zoo_n_models(void)
{
	return N_MODELS;
}

const atm_zoo_model *atm_zoo_model_at(int i)
{
	return i >= 0 && i < N_MODELS ? &catalogue[i].m : NULL;
}

/* model_names -- "vgg16, vgg19, ..." into buf */
static const char *model_names(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < N_MODELS && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
		                         catalogue[i].m.name);
	return buf;
}

/* find -- the catalogue entry named name, or NULL and a message listing the names */
static const struct entry *find(const char *name)
{
	char names[1024];
	for (int i = 0; name && i < N_MODELS; i++)
		if (strcmp(catalogue[i].m.name, name) == 0)
			return &catalogue[i];
	atm_err(ATM_E_NOTFOUND, "unknown model '%s'; valid models: %s", name ? name : "(null)",
	        model_names(names, sizeof names));
	return NULL;
}

atm_status atm_zoo_find(const char *name, const atm_zoo_model **model)
{
	const struct entry *e = find(name);
	*model = e ? &e->m : NULL;
	return e ? ATM_OK : ATM_E_NOTFOUND;
}

/* size_opt -- an option's size v into *out (0: the default, dflt, stays); a usage error naming
 * it as "PRE<v>POST" when it is below 0 or above max */
static atm_status size_opt(const char *name, const char *pre, int64_t v, const char *post,
                           int64_t max, int64_t dflt, int64_t *out)
{
	if (v < 0 || v > max)
		return atm_err(ATM_E_USAGE, "%s: %s%lld%s is out of range; valid: 1 to %lld (0: the "
		               "default, %lld)", name, pre, (long long)v, post, (long long)max,
		               (long long)dflt);
	if (v)
		*out = v;
	return ATM_OK;
}

/* spec_of -- the build spec of e at opts, defaults applied, or a usage error */
static atm_status spec_of(const struct entry *e, const atm_zoo_opts *opts, zb_spec *s)
{
	const char *name = e->m.name;
	*s = (zb_spec){
		.name = name,
		.variant = e->variant,
		.batch = e->m.default_batch,
		.n_classes = e->m.default_classes,
		.image = e->m.default_image,
		.lr = DEFAULT_LR,
		.seq = e->m.default_seq,
	};
	if (!opts)
		return ATM_OK;
	if (opts->batch < 1 || opts->batch > MAX_BATCH)
		return atm_err(ATM_E_USAGE, "%s: batch %lld is out of range; valid: 1 to %d", name,
		               (long long)opts->batch, MAX_BATCH);
	s->batch = opts->batch;
	atm_status rc;
	if ((rc = size_opt(name, "", opts->n_classes, " classes", MAX_CLASSES,
	                   e->m.default_classes, &s->n_classes)) < 0 ||
	    (rc = size_opt(name, "image size ", opts->image, "", MAX_IMAGE, e->m.default_image,
	                   &s->image)) < 0)
		return rc;
	if (!isfinite(opts->lr) || opts->lr < 0)
		return atm_err(ATM_E_USAGE, "%s: learning rate %g is invalid; valid: a finite number > 0 "
		               "(0: the default, %g)", name, (double)opts->lr, (double)DEFAULT_LR);
	if (opts->lr > 0)
		s->lr = opts->lr;
	if (opts->seq && !e->m.default_seq)
		return atm_err(ATM_E_USAGE, "%s: takes no sequence length (only the language models "
		               "do; ViT's follows the image)", name);
	if (opts->seq < 0 || opts->seq > MAX_SEQ)
		return atm_err(ATM_E_USAGE, "%s: sequence %lld is out of range; valid: 1 to the "
		               "model's positions (0: the default, %lld)", name, (long long)opts->seq,
		               (long long)e->m.default_seq);
	if (opts->seq)
		s->seq = opts->seq;
	s->autocast = opts->bf16;
	return ATM_OK;
}

atm_status atm_zoo_build(atm_graph **g, const char *name, const atm_zoo_opts *opts)
{
	atm_graph *built = NULL;
	zb_spec s;
	atm_status rc;
	*g = NULL;
	const struct entry *e = find(name);
	if (!e)
		return ATM_E_NOTFOUND;
	rc = spec_of(e, opts, &s);
	if (rc < 0)
		return rc;
	rc = e->build(&built, &s);
	/* The graph rejects a tensor as bad input only when the options make it
	 * overflow; within today's limits none does, but should the limits grow,
	 * that is the caller's bad usage, not a bad file. */
	if (rc == ATM_E_INPUT)
		rc = ATM_E_USAGE;
	if (rc < 0)
		return atm_err_prefix(rc, "%s at batch %lld, image %lld: ", name, (long long)s.batch,
		                      (long long)s.image);
	/* A network the zoo builds is valid by construction; if not, it is our bug. */
	rc = atm_graph_validate(built);
	if (rc < 0) {
		atm_graph_destroy(built);
		if (rc == ATM_E_NOMEM)
			return rc;
		return atm_err_prefix(ATM_E_INTERNAL, "%s: the zoo built an invalid graph: ", name);
	}
	*g = built;
	return ATM_OK;
}

int atm_zoo_n_presets(void)
{
	return N_PRESETS;
}

const atm_zoo_preset_info *atm_zoo_preset_at(int i)
{
	return i >= 0 && i < N_PRESETS ? &presets[i] : NULL;
}

atm_status atm_zoo_preset(const char *model, const char *preset, atm_zoo_preset_sizes *out)
{
	char names[256];
	size_t used = 0;
	memset(out, 0, sizeof *out);
	const struct entry *e = find(model);
	if (!e)
		return ATM_E_NOTFOUND;
	for (int p = 0; p < N_PRESETS; p++)
		if (preset && strcmp(presets[p].name, preset) == 0) {
			*out = e->sizes[p];
			return ATM_OK;
		}
	names[0] = '\0';
	for (int p = 0; p < N_PRESETS && used < sizeof names; p++)
		used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", p ? ", " : "",
		                         presets[p].name);
	return atm_err(ATM_E_USAGE, "unknown preset '%s'; valid presets: %s", preset ? preset : "(null)",
	               names);
}
