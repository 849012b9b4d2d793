/* test_networks.c -- every network in the zoo: valid training steps, published parameter counts, shapes, options, presets */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_zoo.h"

#define BATCH 2

/* A feature map a network must produce, by tensor name. */
struct feature {
	const char *tensor;
	int ndim;
	int64_t dims[4]; /* dims[0] is the batch */
};

/* What each network must look like at BATCH and its default size. Parameter
 * counts are the published ones: torchvision for VGG, ResNet-50/101/152 and
 * DenseNet-121/169/201; ResNet-200 as in timm and osmr's imgclsmob; Inception-v4
 * as in timm (Cadene's port with 1000 classes); DenseNet-264 (growth 32) as in
 * the lucid model zoo. vgg416 and the tiny networks are computed here. */
struct expect {
	const char *name;
	int64_t params; /* 0: computed by the test */
	int64_t classes;
	int64_t image;
	struct feature features[4];
	int64_t seq;    /* a language model's default sequence; transformers are checked apart */
	bool tokens;    /* a transformer: token cross-entropy, i32 labels */
};

static const struct expect expects[] = {
	{"vgg16", 138357544, 1000, 224, {{"pool5.y", 4, {BATCH, 512, 7, 7}}, {"fc7.y", 2, {BATCH, 4096}}}, 0, false},
	{"vgg19", 143667240, 1000, 224, {{"pool5.y", 4, {BATCH, 512, 7, 7}}, {"pool1.y", 4, {BATCH, 64, 112, 112}}}, 0, false},
	{"vgg416", 0, 1000, 224, {{"pool5.y", 4, {BATCH, 512, 7, 7}}, {"conv5_83.y", 4, {BATCH, 512, 14, 14}}}, 0, false},
	{"resnet50", 25557032, 1000, 224,
	 {{"layer4.2.relu.y", 4, {BATCH, 2048, 7, 7}}, {"maxpool.y", 4, {BATCH, 64, 56, 56}},
	  {"layer1.2.relu.y", 4, {BATCH, 256, 56, 56}},
	  /* v1.5: the stride is on the 3x3 */
	  {"layer2.0.conv1.y", 4, {BATCH, 128, 56, 56}}}, 0, false},
	{"resnet101", 44549160, 1000, 224,
	 {{"layer4.2.relu.y", 4, {BATCH, 2048, 7, 7}}, {"layer3.22.relu.y", 4, {BATCH, 1024, 14, 14}}}, 0, false},
	{"resnet152", 60192808, 1000, 224,
	 {{"layer4.2.relu.y", 4, {BATCH, 2048, 7, 7}}, {"layer2.7.relu.y", 4, {BATCH, 512, 28, 28}}}, 0, false},
	{"resnet200", 64673832, 1000, 224,
	 {{"layer4.2.relu.y", 4, {BATCH, 2048, 7, 7}}, {"layer2.23.relu.y", 4, {BATCH, 512, 28, 28}}}, 0, false},
	{"inception_v4", 42679816, 1000, 299,
	 {{"inception_c3.cat.y", 4, {BATCH, 1536, 8, 8}}, {"mixed_5a.cat.y", 4, {BATCH, 384, 35, 35}},
	  {"reduction_a.cat.y", 4, {BATCH, 1024, 17, 17}}}, 0, false},
	{"densenet121", 7978856, 1000, 224,
	 {{"norm5.y", 4, {BATCH, 1024, 7, 7}}, {"denseblock1.cat.y", 4, {BATCH, 256, 56, 56}},
	  {"transition3.pool.y", 4, {BATCH, 512, 7, 7}},
	  {"denseblock2.denselayer12.cat.y", 4, {BATCH, 128 + 11 * 32, 28, 28}}}, 0, false},
	{"densenet169", 14149480, 1000, 224,
	 {{"norm5.y", 4, {BATCH, 1664, 7, 7}}, {"transition3.pool.y", 4, {BATCH, 640, 7, 7}}}, 0, false},
	{"densenet201", 20013928, 1000, 224,
	 {{"norm5.y", 4, {BATCH, 1920, 7, 7}}, {"transition3.pool.y", 4, {BATCH, 896, 7, 7}}}, 0, false},
	{"densenet264", 33337704, 1000, 224,
	 {{"norm5.y", 4, {BATCH, 2688, 7, 7}}, {"transition3.pool.y", 4, {BATCH, 1152, 7, 7}},
	  {"denseblock3.denselayer64.conv2.y", 4, {BATCH, 32, 14, 14}}}, 0, false},
	{"test_vgg", 143667240, 1000, 224, {{"pool5.y", 4, {BATCH, 512, 7, 7}}}, 0, false},
	{"tiny_cnn", 0, 10, 32, {{"cat.y", 4, {BATCH, 16, 16, 16}}, {"gap.y", 4, {BATCH, 16, 1, 1}}}, 0, false},
	{"tiny_mlp", 0, 10, 8, {{"fc2.y", 2, {BATCH, 32}}}, 0, false},
	/* 3*8*9 + 8, 8*4 + 4, 4*8 + 8, 8*9 (depthwise), 8 (layer scale), 8*4 (2 groups), 16 (the
	 * RMS norm's scale), 8*10 + 10 */
	{"tiny_se", 518, 10, 32, {{"se.excite.y", 4, {BATCH, 8, 1, 1}}, {"gate.mul.y", 4, {BATCH, 8, 16, 16}}},
	 0, false},
	/* transformers: the published counts (GPT-2 and BERT as Hugging Face's GPT2Model and
	 * BertModel with the pooler, ViT-B/16 as torchvision's); sequence 128 unless said */
	{"gpt2", 124439808, 50257, 0,
	 {{"transformer.h.11.attn.scores.y", 4, {BATCH, 12, 128, 128}},
	  {"transformer.h.0.mlp.c_fc.y", 3, {BATCH, 128, 3072}}, {"lm_head.y", 3, {BATCH, 128, 50257}}},
	 128, true},
	{"gpt2-medium", 354823168, 50257, 0, {{"transformer.h.23.attn.scores.y", 4, {BATCH, 16, 128, 128}}},
	 128, true},
	{"gpt2-large", 774030080, 50257, 0, {{"transformer.h.35.attn.scores.y", 4, {BATCH, 20, 64, 64}}},
	 64, true},
	{"gpt2-xl", 1557611200, 50257, 0, {{"transformer.h.47.attn.q_heads.y", 4, {BATCH, 25, 64, 64}}},
	 64, true},
	{"bert-base", 109482240, 30522, 0,
	 {{"encoder.layer.11.output.LayerNorm.y", 3, {BATCH, 128, 768}},
	  {"pooler.activation.y", 3, {BATCH, 1, 768}}, {"mlm_decoder.y", 3, {BATCH, 128, 30522}}},
	 128, true},
	{"vit_b_16", 86567656, 1000, 224,
	 {{"patches.y", 3, {BATCH, 196, 768}}, {"tokens.y", 3, {BATCH, 197, 768}},
	  {"heads.head.y", 3, {BATCH, 1, 1000}}},
	 0, true},
	/* LLaMA-style: the counts as the issue of each model gives them (Hugging Face's configs) */
	{"tinyllama-1.1b", 1100048384, 32000, 0,
	 {{"model.layers.21.self_attn.k_groups.y", 4, {BATCH, 32, 64, 64}},
	  {"model.layers.0.mlp.gate.y", 3, {BATCH, 64, 5632}}, {"lm_head.y", 3, {BATCH, 64, 32000}}},
	 64, true},
	{"llama-3.2-1b", 1235814400, 128256, 0,
	 {{"model.layers.15.self_attn.v_groups.y", 4, {BATCH, 32, 64, 64}},
	  {"model.layers.0.mlp.gate.y", 3, {BATCH, 64, 8192}}}, 64, true},
	{"llama-3-8b", 8030261248, 128256, 0,
	 {{"model.layers.31.self_attn.v_groups.y", 4, {BATCH, 32, 64, 128}},
	  {"model.layers.0.mlp.gate.y", 3, {BATCH, 64, 14336}}, {"lm_head.y", 3, {BATCH, 64, 128256}}},
	 64, true},
	{"tiny_gpt", 0, 512, 0, {{"transformer.h.1.attn.scores.y", 4, {BATCH, 4, 32, 32}}}, 32, true},
	{"tiny_bert", 0, 512, 0, {{"pooler.dense.y", 3, {BATCH, 1, 64}}}, 32, true},
	{"tiny_vit", 0, 10, 32, {{"tokens.y", 3, {BATCH, 17, 64}}}, 0, true},
	{"tiny_llama", 127296, 512, 0, {{"model.layers.1.self_attn.k_rope.y", 4, {BATCH, 2, 32, 16}},
	                                {"model.layers.1.self_attn.scores.y", 4, {BATCH, 4, 32, 32}}},
	 32, true},
};

#define N_EXPECTS ((int)(sizeof expects / sizeof expects[0]))

/* expect_msg -- the current message holds frag */
static void expect_msg(const char *frag)
{
	if (!strstr(atm_errmsg(), frag))
		fail_msg("message '%s' lacks '%s'", atm_errmsg(), frag);
}

/* vgg_params -- parameters of a VGG with n[g] 3x3 convolutions in group g and the 224 classifier */
static int64_t vgg_params(const int n[5])
{
	static const int64_t width[5] = {64, 128, 256, 512, 512};
	int64_t p = 0, c = 3;
	for (int g = 0; g < 5; g++)
		for (int i = 0; i < n[g]; i++) {
			p += c * width[g] * 9 + width[g];
			c = width[g];
		}
	return p + (25088 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 1000 + 1000);
}

/* expected_params -- the published count, or the formula for networks without one */
static int64_t expected_params(const struct expect *e)
{
	static const int vgg416[5] = {80, 81, 82, 83, 83};
	if (e->params)
		return e->params;
	if (strcmp(e->name, "vgg416") == 0)
		return vgg_params(vgg416);
	if (strcmp(e->name, "tiny_cnn") == 0) /* conv1 + conv2 + bn2 + res + a + b + fc */
		return (3 * 8 * 9 + 8) + 8 * 16 * 9 + 32 + (16 * 16 * 9 + 32) + 16 * 8 + (16 * 8 + 8) +
		       (16 * 10 + 10);
	if (strcmp(e->name, "tiny_mlp") == 0)
		return (64 * 32 + 32) + (32 * 32 + 32) + (32 * 10 + 10);
	/* the tiny transformers: per layer 4 (w^2 + w) of attention, 2 w 4w + 5 w of MLP and
	 * 2 x 2 w of layer norms at w = 64 */
	int64_t w = 64, layer = 4 * (w * w + w) + (w * 4 * w + 4 * w) + (4 * w * w + w) + 4 * w;
	if (strcmp(e->name, "tiny_gpt") == 0) /* tokens 512, positions 64, final norm */
		return 2 * layer + 512 * w + 64 * w + 2 * w;
	if (strcmp(e->name, "tiny_bert") == 0) /* words, positions, 2 types, norm, pooler */
		return 2 * layer + 512 * w + 64 * w + 2 * w + 2 * w + (w * w + w);
	if (strcmp(e->name, "tiny_vit") == 0) /* 8x8x3 patches, class token, 17 positions, norm, head */
		return 2 * layer + (8 * 8 * 3 * w + w) + w + 17 * w + 2 * w + (w * 10 + 10);
	fail_msg("no expected parameter count for %s", e->name);
	return -1;
}

/* find -- id of the tensor called name; fails the test when there is none */
static int32_t find(const atm_graph *g, const char *name)
{
	int32_t id = atm_graph_find_tensor(g, name);
	if (id < 0)
		fail_msg("%s: no tensor '%s'", atm_graph_name(g), name);
	return id;
}

/* expect_shape -- tensor name has exactly these dims */
static void expect_shape(const atm_graph *g, const char *name, int ndim, const int64_t *dims)
{
	const atm_tensor *t = atm_graph_tensor(g, find(g, name));
	int ok = t->ndim == ndim;
	for (int i = 0; ok && i < ndim; i++)
		ok = t->dims[i] == dims[i];
	if (!ok)
		fail_msg("%s: '%s' has %d dims [%lld, %lld, %lld, %lld]; expected [%lld, %lld, %lld, %lld]",
		         atm_graph_name(g), name, t->ndim, (long long)t->dims[0], (long long)t->dims[1],
		         (long long)(t->ndim > 2 ? t->dims[2] : 0), (long long)(t->ndim > 3 ? t->dims[3] : 0),
		         (long long)dims[0], (long long)dims[1], (long long)(ndim > 2 ? dims[2] : 0),
		         (long long)(ndim > 3 ? dims[3] : 0));
}

/* is_forward -- ops that belong to the forward pass (add belongs to both) */
static bool is_forward(atm_op op)
{
	return op == ATM_OP_CONV_FWD || op == ATM_OP_IP_FWD || op == ATM_OP_RELU_FWD ||
	       op == ATM_OP_MAXPOOL_FWD || op == ATM_OP_AVGPOOL_FWD || op == ATM_OP_BN_FWD ||
	       op == ATM_OP_CONCAT || op == ATM_OP_SOFTMAX_XENT_FWD || op == ATM_OP_SILU_FWD ||
	       op == ATM_OP_RMS_NORM_FWD || op == ATM_OP_SIGMOID_FWD || op == ATM_OP_HARDSWISH_FWD ||
	       op == ATM_OP_HARDSIGMOID_FWD || op == ATM_OP_RELU6_FWD;
}

/* check_sgd -- one SGD per parameter, right after the node that completes its
 * gradient (only other SGDs between), after every other reader of the parameter */
static void check_sgd(const atm_graph *g)
{
	int32_t nt = atm_graph_n_tensors(g), nn = atm_graph_n_nodes(g);
	int32_t *sgd_at = malloc((size_t)nt * sizeof *sgd_at);
	int32_t *producer = malloc((size_t)nt * sizeof *producer);
	int32_t *last_read = malloc((size_t)nt * sizeof *last_read);
	assert_non_null(sgd_at);
	assert_non_null(producer);
	assert_non_null(last_read);
	for (int32_t t = 0; t < nt; t++)
		sgd_at[t] = producer[t] = last_read[t] = -1;
	for (int32_t i = 0; i < nn; i++) {
		const atm_node *n = atm_graph_node(g, i);
		for (int k = 0; k < n->n_out; k++)
			producer[n->out[k]] = i;
		if (n->op == ATM_OP_SGD) {
			int32_t w = n->in[0], dw = n->in[1];
			const atm_tensor *tw = atm_graph_tensor(g, w), *tg = atm_graph_tensor(g, dw);
			assert_int_equal(tw->kind, ATM_KIND_PARAM);
			assert_int_equal(tg->kind, ATM_KIND_GRAD);
			if (sgd_at[w] >= 0)
				fail_msg("%s: param '%s' has two SGD nodes", atm_graph_name(g), tw->name);
			sgd_at[w] = i;
			assert_true(n->attrs.lr > 0);
			assert_true(producer[dw] >= 0 && producer[dw] < i);
			for (int32_t j = producer[dw] + 1; j < i; j++)
				if (atm_graph_node(g, j)->op != ATM_OP_SGD)
					fail_msg("%s: SGD of '%s' at %d is not right after its gradient's "
					         "producer %d (node %d is %s)", atm_graph_name(g), tw->name, i,
					         producer[dw], j, atm_op_name(atm_graph_node(g, j)->op));
		} else {
			for (int k = 0; k < n->n_in; k++)
				last_read[n->in[k]] = i;
		}
	}
	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (x->kind != ATM_KIND_PARAM)
			continue;
		if (sgd_at[t] < 0)
			fail_msg("%s: param '%s' has no SGD", atm_graph_name(g), x->name);
		if (last_read[t] > sgd_at[t])
			fail_msg("%s: param '%s' is read at %d after its SGD at %d", atm_graph_name(g),
			         x->name, last_read[t], sgd_at[t]);
	}
	free(last_read);
	free(producer);
	free(sgd_at);
}

/* check_all_read -- every tensor but the loss is read by some node: no gradient
 * part is dropped, no forward value is computed for nothing */
static void check_all_read(const atm_graph *g)
{
	int32_t nt = atm_graph_n_tensors(g);
	char *read = calloc((size_t)nt, 1);
	assert_non_null(read);
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
		const atm_node *n = atm_graph_node(g, i);
		for (int k = 0; k < n->n_in; k++)
			read[n->in[k]] = 1;
	}
	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (!read[t] && x->kind != ATM_KIND_OUTPUT)
			fail_msg("%s: nobody reads '%s'", atm_graph_name(g), x->name);
	}
	free(read);
}

/* expect_features -- e's feature tensors have their shapes at batch */
static void expect_features(const atm_graph *g, const struct expect *e, int64_t batch)
{
	for (int f = 0; f < 4 && e->features[f].tensor; f++) {
		int64_t dims[4];
		memcpy(dims, e->features[f].dims, sizeof dims);
		dims[0] = batch;
		expect_shape(g, e->features[f].tensor, e->features[f].ndim, dims);
	}
}

/* check_network -- everything a training step of e must satisfy */
static void check_network(const atm_graph *g, const struct expect *e, int64_t batch)
{
	int32_t nt = atm_graph_n_tensors(g), nn = atm_graph_n_nodes(g);
	int64_t params = 0;
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	assert_string_equal(atm_graph_name(g), e->name);

	for (int32_t t = 0; t < nt; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (x->kind == ATM_KIND_PARAM)
			params += x->n_elems;
		assert_int_equal(x->locations, ATM_LOC_ANY);
		if (strstr(x->name, ".grad"))
			assert_int_equal(x->kind, ATM_KIND_GRAD);
	}
	if (params != expected_params(e))
		fail_msg("%s: %lld parameters, expected %lld", e->name, (long long)params,
		         (long long)expected_params(e));

	/* The loss: a [1] output of softmax cross-entropy over [batch, classes] logits. */
	int32_t loss = find(g, "loss"), labels = find(g, "labels"), image = find(g, "image");
	assert_int_equal(atm_graph_tensor(g, loss)->kind, ATM_KIND_OUTPUT);
	expect_shape(g, "loss", 1, (int64_t[]){1});
	assert_int_equal(atm_graph_tensor(g, labels)->kind, ATM_KIND_INPUT);
	assert_int_equal(atm_graph_tensor(g, image)->kind, ATM_KIND_INPUT);
	assert_int_equal(atm_graph_tensor(g, image)->dims[0], batch);
	assert_int_equal(atm_graph_tensor(g, image)->dims[2], e->image);
	int32_t loss_node = -1;
	for (int32_t i = 0; i < nn; i++)
		if (atm_graph_node(g, i)->op == ATM_OP_SOFTMAX_XENT_FWD) {
			assert_int_equal(loss_node, -1);
			loss_node = i;
		}
	assert_true(loss_node > 0);
	const atm_node *ln = atm_graph_node(g, loss_node);
	assert_int_equal(ln->out[1], loss);
	assert_int_equal(ln->in[1], labels);
	const atm_tensor *logits = atm_graph_tensor(g, ln->in[0]);
	assert_int_equal(logits->ndim, 2);
	assert_int_equal(logits->dims[0], batch);
	assert_int_equal(logits->dims[1], e->classes);

	/* Forward pass, loss, then only backward nodes; the image gets no gradient. */
	for (int32_t i = 0; i < nn; i++) {
		atm_op op = atm_graph_node(g, i)->op;
		if (i < loss_node && !is_forward(op) && op != ATM_OP_ADD && op != ATM_OP_MUL)
			fail_msg("%s: node %d (%s) before the loss", e->name, i, atm_op_name(op));
		if (i > loss_node && is_forward(op))
			fail_msg("%s: node %d (%s) after the loss", e->name, i, atm_op_name(op));
	}
	assert_int_equal(atm_graph_find_tensor(g, "image.grad"), -1);
	check_sgd(g);
	check_all_read(g);

	expect_features(g, e, batch);

	atm_liveness *lv = NULL;
	assert_int_equal(atm_liveness_new(&lv, g), ATM_OK);
	assert_true(atm_liveness_peak_bytes(lv) > params * 4);
	atm_liveness_destroy(lv);
}

/* check_transformer -- a transformer's step: its count, an i32 labels input and the token
 * loss first after the forward pass, one SGD per parameter after its last read (a tied one
 * after its summed gradient), nothing computed for nothing */
static void check_transformer(const atm_graph *g, const struct expect *e, int64_t batch)
{
	int64_t params = 0, n_params = 0, n_sgd = 0;
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (x->kind == ATM_KIND_PARAM)
			params += x->n_elems, n_params++;
	}
	if (params != expected_params(e))
		fail_msg("%s: %lld parameters, expected %lld", e->name, (long long)params,
		         (long long)expected_params(e));
	const atm_tensor *labels = atm_graph_tensor(g, find(g, "labels"));
	assert_int_equal(labels->dtype, ATM_I32);
	assert_int_equal(labels->dims[0], batch);
	assert_int_equal(atm_tensor_token_limit(g, labels->id), e->classes);
	assert_int_equal(atm_graph_tensor(g, find(g, "loss"))->kind, ATM_KIND_OUTPUT);
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++)
		n_sgd += atm_graph_node(g, i)->op == ATM_OP_SGD;
	assert_int_equal(n_sgd, n_params);
	check_sgd(g);
	check_all_read(g);
	expect_features(g, e, batch);
	int32_t wte = atm_graph_find_tensor(g, "transformer.wte.weight");
	if (wte >= 0) {
		/* tied: the embedding's and the output projection's gradients, summed once */
		int32_t grad = find(g, "transformer.wte.weight.grad");
		int32_t p = atm_graph_producer(g, grad);
		assert_int_equal(atm_graph_node(g, p)->op, ATM_OP_ADD);
		assert_true(atm_graph_find_tensor(g, "transformer.wte.weight.grad.1") >= 0);
		assert_true(atm_graph_find_tensor(g, "transformer.wte.weight.grad.2") >= 0);
	}
}

/* test_networks_training_step -- state: the expect of one network */
static void test_networks_training_step(void **state)
{
	const struct expect *e = *state;
	atm_graph *g = NULL;
	atm_zoo_opts o = {.batch = BATCH};
	if (atm_zoo_build(&g, e->name, &o) < 0)
		fail_msg("%s: %s", e->name, atm_errmsg());
	if (e->tokens)
		check_transformer(g, e, BATCH);
	else
		check_network(g, e, BATCH);
	atm_graph_destroy(g);
}

/* test_networks_catalogue -- the catalogue in display order, with counts, sizes and default batches */
static void test_networks_catalogue(void **state)
{
	(void)state;
	const atm_zoo_model *m = NULL;
	assert_int_equal(atm_zoo_n_models(), N_EXPECTS);
	for (int i = 0; i < N_EXPECTS; i++) {
		const atm_zoo_model *mi = atm_zoo_model_at(i);
		atm_zoo_preset_sizes small;
		assert_non_null(mi);
		assert_string_equal(mi->name, expects[i].name);
		assert_int_equal(mi->published_params, expected_params(&expects[i]));
		assert_int_equal(mi->default_image, expects[i].image);
		assert_int_equal(mi->default_classes, expects[i].classes);
		assert_int_equal(mi->default_seq, expects[i].seq);
		assert_non_null(mi->family);
		assert_true(strlen(mi->description) > 10);
		assert_int_equal(atm_zoo_find(mi->name, &m), ATM_OK);
		assert_ptr_equal(m, mi);
		assert_int_equal(atm_zoo_preset(mi->name, "small", &small), ATM_OK);
		assert_int_equal(small.n_batch, 1);
		if (strcmp(mi->name, "test_vgg") == 0)
			assert_int_equal(mi->default_batch, 16);
		else
			assert_int_equal(mi->default_batch, small.batch[0]);
	}
	assert_null(atm_zoo_model_at(-1));
	assert_null(atm_zoo_model_at(N_EXPECTS));
}

/* test_networks_tiny_cnn_uses_every_op -- tiny_cnn reaches every CNN op (conv with and without bias), and with the tiny transformers every op */
static void test_networks_tiny_cnn_uses_every_op(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	int count[ATM_N_OPS] = {0};
	int conv_bias = 0, conv_plain = 0, exclude_pad = 0, causal = 0, plain_softmax = 0;
	static const char *const tiny[] = {"tiny_cnn", "tiny_gpt", "tiny_bert", "tiny_vit", "tiny_se",
	                                   "tiny_llama"};
	for (int m = 0; m < 6; m++) {
		assert_int_equal(atm_zoo_build(&g, tiny[m], NULL), ATM_OK);
		for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
			const atm_node *n = atm_graph_node(g, i);
			count[n->op]++;
			if (n->op == ATM_OP_CONV_FWD)
				*(n->n_in == 3 ? &conv_bias : &conv_plain) += 1;
			if (n->op == ATM_OP_AVGPOOL_FWD && n->attrs.exclude_pad)
				exclude_pad++;
			if (n->op == ATM_OP_SOFTMAX_FWD)
				*(n->attrs.causal ? &causal : &plain_softmax) += 1;
		}
		if (m == 0)
			for (int op = 0; op <= ATM_OP_SGD; op++)
				if (!count[op])
					fail_msg("tiny_cnn lacks %s", atm_op_name((atm_op)op));
		atm_graph_destroy(g);
	}
	/* the updates with state come from rewriting a step's SGD (atm_graph_with_update) */
	for (int u = ATM_UPDATE_MOMENTUM; u <= ATM_UPDATE_ADAMW; u++) {
		atm_graph *c = NULL;
		atm_update up = atm_update_defaults((atm_update_kind)u);
		assert_int_equal(atm_zoo_build(&g, "tiny_mlp", NULL), ATM_OK);
		assert_int_equal(atm_graph_with_update(g, &up, &c), ATM_OK);
		for (int32_t i = 0; i < atm_graph_n_nodes(c); i++)
			count[atm_graph_node(c, i)->op]++;
		atm_graph_destroy(c);
		atm_graph_destroy(g);
	}
	/* the allreduce comes from making a step data-parallel (atm_graph_with_allreduce) */
	atm_graph *dp = NULL;
	assert_int_equal(atm_zoo_build(&g, "tiny_mlp", NULL), ATM_OK);
	assert_int_equal(atm_graph_with_allreduce(g, 2, 0, &dp), ATM_OK);
	for (int32_t i = 0; i < atm_graph_n_nodes(dp); i++)
		count[atm_graph_node(dp, i)->op]++;
	atm_graph_destroy(dp);
	atm_graph_destroy(g);
	/* a cast comes from a graph file only until the builder trains in bf16 (tests/core,
	 * tests/runtime) */
	for (int op = 0; op < ATM_N_OPS; op++)
		if (!count[op] && op != ATM_OP_CAST)
			fail_msg("the tiny networks lack %s", atm_op_name((atm_op)op));
	assert_true(conv_bias > 0 && conv_plain > 0);
	assert_true(exclude_pad > 0);
	assert_true(causal > 0 && plain_softmax > 0);
}

/* test_networks_names_and_kinds -- readable names, kinds, dtypes and attributes in ResNet-50 */
static void test_networks_names_and_kinds(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_zoo_opts o = {.batch = 1};
	assert_int_equal(atm_zoo_build(&g, "resnet50", &o), ATM_OK);
	assert_int_equal(atm_graph_tensor(g, find(g, "conv1.w"))->kind, ATM_KIND_PARAM);
	assert_int_equal(atm_graph_tensor(g, find(g, "bn1.gamma"))->kind, ATM_KIND_PARAM);
	assert_int_equal(atm_graph_tensor(g, find(g, "bn1.beta"))->kind, ATM_KIND_PARAM);
	assert_int_equal(atm_graph_tensor(g, find(g, "bn1.mean"))->kind, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_tensor(g, find(g, "bn1.var"))->kind, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_tensor(g, find(g, "conv1.y"))->kind, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_tensor(g, find(g, "conv1.y.grad"))->kind, ATM_KIND_GRAD);
	assert_int_equal(atm_graph_tensor(g, find(g, "conv1.w.grad"))->kind, ATM_KIND_GRAD);
	const atm_tensor *am = atm_graph_tensor(g, find(g, "maxpool.argmax"));
	assert_int_equal(am->kind, ATM_KIND_ACTIVATION);
	assert_int_equal(am->dtype, ATM_I32);
	/* maxpool.y feeds the first block's conv1 and its downsample: a summed gradient */
	assert_int_equal(atm_graph_tensor(g, find(g, "maxpool.y.grad"))->kind, ATM_KIND_GRAD);
	/* conv layers followed by BN have no bias; fc has one */
	assert_int_equal(atm_graph_find_tensor(g, "conv1.b"), -1);
	find(g, "fc.b");
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
		const atm_node *n = atm_graph_node(g, i);
		if (n->op == ATM_OP_BN_FWD || n->op == ATM_OP_BN_BWD)
			assert_true(fabsf(n->attrs.epsilon - 1e-5f) < 1e-9f);
		if (n->op == ATM_OP_SGD)
			assert_true(fabsf(n->attrs.lr - 0.01f) < 1e-9f);
	}
	atm_graph_destroy(g);
}

/* test_networks_inception_pools -- the A, B, C blocks' 3x3/1 average pools leave the
 * padding out of the divisor; the final pool covers the 8x8 map */
static void test_networks_inception_pools(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_zoo_opts o = {.batch = 1};
	int branch_pools = 0, global_pools = 0, others = 0;
	assert_int_equal(atm_zoo_build(&g, "inception_v4", &o), ATM_OK);
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
		const atm_node *n = atm_graph_node(g, i);
		if (n->op != ATM_OP_AVGPOOL_FWD)
			continue;
		const atm_attrs *a = &n->attrs;
		if (a->kernel[0] == 3 && a->stride[0] == 1 && a->pad[0] == 1 && a->exclude_pad)
			branch_pools++;
		else if (a->kernel[0] == 8 && a->kernel[1] == 8 && a->pad[0] == 0)
			global_pools++;
		else
			others++;
	}
	assert_int_equal(branch_pools, 4 + 7 + 3);
	assert_int_equal(global_pools, 1);
	assert_int_equal(others, 0);
	/* b1_0 of a C block forks into a 1x3 and a 3x1 convolution: two partial
	 * gradients summed into one */
	find(g, "inception_c1.b1_0.relu.y.grad.1");
	find(g, "inception_c1.b1_0.relu.y.grad.2");
	find(g, "inception_c1.b1_0.relu.y.grad");
	atm_graph_destroy(g);
}

/* test_networks_unknown_model -- unknown names are usage errors listing every model */
static void test_networks_unknown_model(void **state)
{
	(void)state;
	/* not NULL, so the tests see the out-parameters cleared */
	atm_graph *g = (atm_graph *)(uintptr_t)1;
	const atm_zoo_model *m = (const atm_zoo_model *)(uintptr_t)1;
	atm_zoo_opts o = {.batch = 1};
	assert_int_equal(atm_zoo_build(&g, "vgg17", &o), ATM_E_NOTFOUND);
	assert_null(g);
	expect_msg("unknown model 'vgg17'");
	expect_msg("vgg16, vgg19, vgg416, resnet50");
	expect_msg("tiny_mlp");
	assert_int_equal(atm_zoo_find("resnet", &m), ATM_E_NOTFOUND);
	assert_null(m);
	expect_msg("densenet264");
	assert_int_equal(atm_zoo_find(NULL, &m), ATM_E_NOTFOUND);
	assert_null(m);
}

/* test_networks_bad_options -- options out of range are usage errors saying what is valid */
static void test_networks_bad_options(void **state)
{
	(void)state;
	static const struct {
		atm_zoo_opts o;
		const char *frag;
	} bad[] = {
		{{.batch = 0}, "batch 0 is out of range; valid: 1 to 1000000"},
		{{.batch = -4}, "batch -4"},
		{{.batch = 1000001}, "batch 1000001"},
		{{.batch = 1, .n_classes = -1}, "classes"},
		{{.batch = 1, .n_classes = 2000000}, "classes"},
		{{.batch = 1, .image = -1}, "image size -1"},
		{{.batch = 1, .image = 100000}, "image size 100000"},
		{{.batch = 1, .lr = -0.5f}, "learning rate"},
		{{.batch = 1, .lr = NAN}, "learning rate"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		atm_graph *g = NULL;
		assert_int_equal(atm_zoo_build(&g, "tiny_cnn", &bad[i].o), ATM_E_USAGE);
		assert_null(g);
		expect_msg("tiny_cnn");
		expect_msg(bad[i].frag);
	}
}

/* test_networks_image_too_small -- an image too small for a network names the layer where it runs out */
static void test_networks_image_too_small(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_zoo_opts o = {.batch = 1, .image = 16};
	assert_int_equal(atm_zoo_build(&g, "vgg19", &o), ATM_E_USAGE);
	assert_null(g);
	expect_msg("vgg19 at batch 1, image 16");
	expect_msg("pool5");
	expect_msg("too small");
	o.image = 40;
	assert_int_equal(atm_zoo_build(&g, "inception_v4", &o), ATM_E_USAGE);
	assert_null(g);
	expect_msg("too small");
	/* padding carries ResNet down to 1x1 even from a 1x1 image; DenseNet's
	 * unpadded transition pools do not */
	o.image = 8;
	assert_int_equal(atm_zoo_build(&g, "densenet121", &o), ATM_E_USAGE);
	assert_null(g);
	expect_msg("transition2.pool");
	o.image = 1;
	assert_int_equal(atm_zoo_build(&g, "resnet50", &o), ATM_OK);
	atm_graph_destroy(g);
}

/* test_networks_options -- defaults, classes, image and learning rate reach the graph */
static void test_networks_options(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	/* NULL options: every default, the batch of the catalogue */
	assert_int_equal(atm_zoo_build(&g, "tiny_cnn", NULL), ATM_OK);
	expect_shape(g, "image", 4, (int64_t[]){8, 3, 32, 32});
	expect_shape(g, "labels", 2, (int64_t[]){8, 10});
	atm_graph_destroy(g);

	atm_zoo_opts o = {.batch = 3, .n_classes = 7, .image = 48, .lr = 0.5f};
	assert_int_equal(atm_zoo_build(&g, "tiny_cnn", &o), ATM_OK);
	expect_shape(g, "image", 4, (int64_t[]){3, 3, 48, 48});
	expect_shape(g, "fc.y", 2, (int64_t[]){3, 7});
	expect_shape(g, "fc.w", 2, (int64_t[]){7, 16});
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++)
		if (atm_graph_node(g, i)->op == ATM_OP_SGD)
			assert_true(atm_graph_node(g, i)->attrs.lr == 0.5f);
	atm_graph_destroy(g);

	/* Global pooling keeps the parameter count at any image; VGG's fc6 follows it. */
	o = (atm_zoo_opts){.batch = 1, .image = 112};
	assert_int_equal(atm_zoo_build(&g, "resnet50", &o), ATM_OK);
	expect_shape(g, "layer4.2.relu.y", 4, (int64_t[]){1, 2048, 4, 4});
	atm_graph_stats st;
	assert_int_equal(atm_graph_stats_compute(g, &st), ATM_OK);
	assert_int_equal(st.n_params, 25557032);
	atm_graph_destroy(g);
	o.image = 64;
	assert_int_equal(atm_zoo_build(&g, "vgg19", &o), ATM_OK);
	expect_shape(g, "fc6.w", 2, (int64_t[]){4096, 512 * 2 * 2});
	atm_graph_destroy(g);
}

/* test_networks_small_preset_builds -- each model at its small preset is a valid step */
static void test_networks_small_preset_builds(void **state)
{
	(void)state;
	for (int i = 0; i < atm_zoo_n_models(); i++) {
		const atm_zoo_model *m = atm_zoo_model_at(i);
		atm_zoo_preset_sizes s;
		atm_graph *g = NULL;
		assert_int_equal(atm_zoo_preset(m->name, "small", &s), ATM_OK);
		atm_zoo_opts o = {.batch = s.batch[0], .image = s.image, .seq = s.seq};
		if (atm_zoo_build(&g, m->name, &o) < 0)
			fail_msg("%s small: %s", m->name, atm_errmsg());
		assert_int_equal(atm_graph_validate(g), ATM_OK);
		assert_int_equal(atm_graph_batch(g), s.batch[0]);
		atm_graph_destroy(g);
	}
}

/* expect_sizes -- model under preset has these batches and this image */
static void expect_sizes(const char *model, const char *preset, int n, const int64_t *batch,
                         int64_t image)
{
	atm_zoo_preset_sizes s;
	assert_int_equal(atm_zoo_preset(model, preset, &s), ATM_OK);
	if (s.n_batch != n)
		fail_msg("%s/%s: %d batches, expected %d", model, preset, s.n_batch, n);
	for (int i = 0; i < n; i++)
		assert_int_equal(s.batch[i], batch[i]);
	assert_int_equal(s.image, image);
}

/* test_networks_presets -- the paper's batch sizes, the small preset, unknown names */
static void test_networks_presets(void **state)
{
	(void)state;
	static const char *names[] = {"paper", "large", "gpu", "small"};
	assert_int_equal(atm_zoo_n_presets(), 4);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(atm_zoo_preset_at(i)->name, names[i]);
		assert_non_null(atm_zoo_preset_at(i)->description);
	}
	assert_null(atm_zoo_preset_at(4));

	expect_sizes("inception_v4", "paper", 1, (int64_t[]){1024}, 0);
	expect_sizes("resnet200", "paper", 1, (int64_t[]){512}, 0);
	expect_sizes("vgg19", "paper", 1, (int64_t[]){2048}, 0);
	expect_sizes("densenet264", "paper", 1, (int64_t[]){512}, 0);
	expect_sizes("resnet50", "paper", 0, NULL, 0);

	expect_sizes("inception_v4", "large", 1, (int64_t[]){6144}, 0);
	expect_sizes("vgg416", "large", 1, (int64_t[]){320}, 0);
	expect_sizes("resnet200", "large", 1, (int64_t[]){2560}, 0);
	expect_sizes("densenet264", "large", 1, (int64_t[]){3072}, 0);
	expect_sizes("vgg19", "large", 0, NULL, 0);

	expect_sizes("inception_v4", "gpu", 3, (int64_t[]){64, 128, 256}, 0);
	expect_sizes("resnet200", "gpu", 3, (int64_t[]){32, 64, 128}, 0);
	expect_sizes("densenet264", "gpu", 3, (int64_t[]){32, 64, 128}, 0);
	expect_sizes("vgg19", "gpu", 2, (int64_t[]){64, 128}, 0);
	expect_sizes("tiny_cnn", "gpu", 0, NULL, 0);

	expect_sizes("test_vgg", "small", 1, (int64_t[]){16}, 32);

	atm_zoo_preset_sizes s = {.n_batch = 9};
	assert_int_equal(atm_zoo_preset("vgg19", "huge", &s), ATM_E_USAGE);
	assert_int_equal(s.n_batch, 0);
	expect_msg("unknown preset 'huge'; valid presets: paper, large, gpu, small");
	assert_int_equal(atm_zoo_preset("vgg20", "small", &s), ATM_E_NOTFOUND);
	expect_msg("unknown model 'vgg20'");
}

/* main -- one test per network, then the catalogue-wide ones */
int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_networks_catalogue),
		cmocka_unit_test(test_networks_tiny_cnn_uses_every_op),
		cmocka_unit_test(test_networks_names_and_kinds),
		cmocka_unit_test(test_networks_inception_pools),
		cmocka_unit_test(test_networks_unknown_model),
		cmocka_unit_test(test_networks_bad_options),
		cmocka_unit_test(test_networks_image_too_small),
		cmocka_unit_test(test_networks_options),
		cmocka_unit_test(test_networks_small_preset_builds),
		cmocka_unit_test(test_networks_presets),
	};
	enum { N_FIXED = sizeof fixed / sizeof fixed[0] };
	static char names[N_EXPECTS][64];
	struct CMUnitTest all[N_EXPECTS + N_FIXED];
	/* one test per network, named after it */
	for (int i = 0; i < N_EXPECTS; i++) {
		snprintf(names[i], sizeof names[i], "test_networks_training_step(%s)", expects[i].name);
		all[i] = (struct CMUnitTest){names[i], test_networks_training_step, NULL, NULL,
		                             (void *)&expects[i]};
	}
	memcpy(all + N_EXPECTS, fixed, sizeof fixed);
	return _cmocka_run_group_tests("zoo.networks", all, N_EXPECTS + N_FIXED, NULL, NULL);
}
