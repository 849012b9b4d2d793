/* transformer.c -- GPT-2, BERT-base, ViT-B/16 and LLaMA-style training steps, their tensors named as PyTorch's modules name them
 *
 * Activations are [batch, seq, features]. Attention is composed of the graph's ops: one linear
 * layer makes q, k and v, a split and a permute give each [batch, heads, seq, head_dim],
 * matmuls make the scores and the weighted values, and a permute joins the heads again.
 * There is no dropout: a step is deterministic (docs/graph-format.md).
 */
#include <math.h>

#include "builder.h"

/* Sizes of one transformer. */
struct tf {
	int64_t layers, width, heads, positions, vocab;
	bool gelu_tanh, causal, pre_norm;
	float eps;
};

/* Module names of one block, as each family's PyTorch code has them. */
struct block_names {
	const char *ln1, *ln2;   /* the two layer norms */
	const char *attn;        /* the attention module, below which: */
	const char *qkv;         /* one q, k, v projection, LAYER.weight and LAYER.bias, */
	const char *qkv_weight, *qkv_bias; /* or named so (NULL: as qkv says), */
	const char *const *qkv_split;      /* or three projections (NULL: one) */
	const char *attn_out;    /* the output projection */
	const char *mlp;         /* the MLP module ("": the block itself), below which: */
	const char *fc, *proj;   /* its two linear layers */
};

/* attention -- self-attention of x [batch, seq, width] under module p: the q, k, v
 * projection, scores scaled by 1/sqrt(head_dim), softmax (causal or not), the heads
 * joined, the output projection */
static int32_t attention(zb *b, const struct tf *t, const char *p, int32_t x,
                         const struct block_names *n)
{
	char nm[ZB_NAME_MAX], w[ZB_NAME_MAX], bias[ZB_NAME_MAX];
	int64_t seq = zb_dim(b, x, 1), hd = t->width / t->heads;
	int64_t heads_dims[4] = {zb_dim(b, x, 0), t->heads, seq, hd};
	int64_t joined[3] = {heads_dims[0], seq, t->width};
	const int32_t to_heads[4] = {0, 2, 1, 3};
	int32_t part[3], h[3];
	if (n->qkv_split) {
		for (int i = 0; i < 3; i++)
			part[i] = zb_linear(b, zb_namef(nm, "%s.%s", p, n->qkv_split[i]), x, t->width, true);
	} else {
		if (n->qkv_weight)
			zb_param_names(b, zb_namef(w, "%s.%s", p, n->qkv_weight),
			               zb_namef(bias, "%s.%s", p, n->qkv_bias));
		x = zb_linear(b, zb_namef(nm, "%s.%s", p, n->qkv), x, 3 * t->width, true);
		zb_split(b, zb_namef(nm, "%s.qkv_split", p), x, 2, 3, part);
	}
	for (int i = 0; i < 3; i++)
		h[i] = zb_permute(b, zb_namef(nm, "%s.%c_heads", p, "qkv"[i]), part[i], 4, to_heads, 4,
		                  heads_dims);
	int32_t s = zb_matmul(b, zb_namef(nm, "%s.scores", p), h[0], h[1], false, true,
	                      (float)(1.0 / sqrt((double)hd)));
	s = zb_softmax(b, zb_namef(nm, "%s.softmax", p), s, t->causal);
	int32_t ctx = zb_matmul(b, zb_namef(nm, "%s.context", p), s, h[2], false, false, 1.0f);
	ctx = zb_permute(b, zb_namef(nm, "%s.join_heads", p), ctx, 4, to_heads, 3, joined);
	return zb_linear(b, zb_namef(nm, "%s.%s", p, n->attn_out), ctx, t->width, true);
}

/* mlp -- linear to 4 x width, GELU, linear back */
static int32_t mlp(zb *b, const struct tf *t, const char *p, int32_t x, const char *fc,
                   const char *proj)
{
	char nm[ZB_NAME_MAX];
	x = zb_linear(b, zb_namef(nm, "%s.%s", p, fc), x, 4 * t->width, true);
	x = zb_gelu(b, zb_namef(nm, "%s.gelu", p), x, t->gelu_tanh);
	return zb_linear(b, zb_namef(nm, "%s.%s", p, proj), x, t->width, true);
}

/* block -- pre-norm (GPT-2, ViT: x + f(ln(x))) or post-norm (BERT: ln(x + f(x))) */
static int32_t block(zb *b, const struct tf *t, const char *p, int32_t x,
                     const struct block_names *n)
{
	char nm[ZB_NAME_MAX], pa[ZB_NAME_MAX], pm[ZB_NAME_MAX];
	zb_namef(pa, "%s.%s", p, n->attn);
	if (n->mlp[0])
		zb_namef(pm, "%s.%s", p, n->mlp);
	else
		zb_namef(pm, "%s", p);
	if (t->pre_norm) {
		int32_t h = zb_layer_norm(b, zb_namef(nm, "%s.%s", p, n->ln1), x, t->eps);
		h = attention(b, t, pa, h, n);
		x = zb_add(b, zb_namef(nm, "%s.attn_residual", p), x, h);
		h = zb_layer_norm(b, zb_namef(nm, "%s.%s", p, n->ln2), x, t->eps);
		h = mlp(b, t, pm, h, n->fc, n->proj);
		return zb_add(b, zb_namef(nm, "%s.mlp_residual", p), x, h);
	}
	int32_t h = attention(b, t, pa, x, n);
	x = zb_add(b, zb_namef(nm, "%s.attn_residual", p), x, h);
	x = zb_layer_norm(b, zb_namef(nm, "%s.%s", p, n->ln1), x, t->eps);
	h = mlp(b, t, pm, x, n->fc, n->proj);
	x = zb_add(b, zb_namef(nm, "%s.mlp_residual", p), x, h);
	return zb_layer_norm(b, zb_namef(nm, "%s.%s", p, n->ln2), x, t->eps);
}

/* zb_net_gpt2 -- GPT-2 as nanoGPT writes it (transformer.wte, .wpe, .h.N, .ln_f; lm_head tied
 * to wte): variant 12, 24, 36 or 48 layers, or 2 for the suite's tiny one; a token loss at
 * every position */
atm_status zb_net_gpt2(atm_graph **g, const zb_spec *s)
{
	static const struct {
		int layers;
		int64_t width, heads, positions;
	} sizes[] = {{12, 768, 12, 1024}, {24, 1024, 16, 1024}, {36, 1280, 20, 1024},
	             {48, 1600, 25, 1024}, {2, 64, 4, 64}};
	static const struct block_names names = {
		.ln1 = "ln_1", .ln2 = "ln_2", .attn = "attn", .qkv = "c_attn", .attn_out = "c_proj",
		.mlp = "mlp", .fc = "c_fc", .proj = "c_proj",
	};
	struct tf t = {.vocab = s->n_classes, .gelu_tanh = true, .causal = true, .pre_norm = true,
	               .eps = 1e-5f};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		if (sizes[i].layers == s->variant)
			t.layers = sizes[i].layers, t.width = sizes[i].width, t.heads = sizes[i].heads,
			t.positions = sizes[i].positions;
	zb *b = NULL;
	char nm[ZB_NAME_MAX];
	atm_status rc;
	*g = NULL;
	if ((rc = zb_new(&b, s)) < 0)
		return rc;
	int32_t ids = zb_tokens(b, "input_ids", s->seq);
	zb_param_names(b, "transformer.wte.weight", NULL);
	int32_t x = zb_embedding(b, "transformer.wte", ids, t.vocab, t.width);
	int32_t pos = zb_positions(b, "transformer.wpe", "transformer.wpe.weight", s->seq,
	                           t.positions, t.width, false);
	x = zb_add(b, "transformer.embed", x, pos);
	for (int64_t l = 0; l < t.layers; l++)
		x = block(b, &t, zb_namef(nm, "transformer.h.%lld", (long long)l), x, &names);
	x = zb_layer_norm(b, "transformer.ln_f", x, t.eps);
	zb_param_names(b, "transformer.wte.weight", NULL); /* tied: the same tensor */
	x = zb_linear(b, "lm_head", x, t.vocab, false);
	rc = zb_finish_tokens(b, 1, &x, (const char *[]){"labels"}, (const char *[]){"loss"}, g);
	zb_destroy(b);
	return rc;
}

/* zb_net_bert -- BERT-base as Hugging Face's BertModel names it (embeddings, encoder.layer.N,
 * pooler), 109,482,240 parameters. Its step's loss adds no parameter: a masked-LM loss at
 * every position through the word embeddings (tied, no bias), and a sentence loss over the
 * pooled output's features, so that every parameter, the pooler's too, trains. */
atm_status zb_net_bert(atm_graph **g, const zb_spec *s)
{
	static const char *const qkv[3] = {"self.query", "self.key", "self.value"};
	static const struct block_names names = {
		.ln1 = "attention.output.LayerNorm", .ln2 = "output.LayerNorm", .attn = "attention",
		.qkv_split = qkv, .attn_out = "output.dense", .mlp = "", .fc = "intermediate.dense",
		.proj = "output.dense",
	};
	struct tf t = {.layers = 12, .width = 768, .heads = 12, .positions = 512,
	               .vocab = s->n_classes, .eps = 1e-12f};
	if (s->variant == 2) /* the suite's tiny one */
		t.layers = 2, t.width = 64, t.heads = 4, t.positions = 64;
	zb *b = NULL;
	char nm[ZB_NAME_MAX];
	atm_status rc;
	*g = NULL;
	if ((rc = zb_new(&b, s)) < 0)
		return rc;
	int32_t ids = zb_tokens(b, "input_ids", s->seq), types = zb_tokens(b, "token_type_ids", s->seq);
	int32_t x = zb_embedding(b, "embeddings.word_embeddings", ids, t.vocab, t.width);
	int32_t ty = zb_embedding(b, "embeddings.token_type_embeddings", types, 2, t.width);
	int32_t pos = zb_positions(b, "embeddings.position_embeddings",
	                           "embeddings.position_embeddings.weight", s->seq, t.positions,
	                           t.width, false);
	x = zb_add(b, "embeddings.add_types", x, ty);
	x = zb_add(b, "embeddings.add_positions", x, pos);
	x = zb_layer_norm(b, "embeddings.LayerNorm", x, t.eps);
	for (int64_t l = 0; l < t.layers; l++)
		x = block(b, &t, zb_namef(nm, "encoder.layer.%lld", (long long)l), x, &names);
	int32_t cls = zb_narrow(b, "pooler.first_token", x, 1, 1);
	int32_t pooled = zb_linear(b, "pooler.dense", cls, t.width, true);
	pooled = zb_tanh(b, "pooler.activation", pooled);
	zb_param_names(b, "embeddings.word_embeddings.weight", NULL);
	int32_t logits[2] = {zb_linear(b, "mlm_decoder", x, t.vocab, false), pooled};
	rc = zb_finish_tokens(b, 2, logits, (const char *[]){"labels", "sentence_labels"},
	                      (const char *[]){"loss", "sentence_loss"}, g);
	zb_destroy(b);
	return rc;
}

/* zb_net_vit -- ViT-B/16 as torchvision lays it out (conv_proj, class_token,
 * encoder.pos_embedding, encoder.layers.encoder_layer_N, encoder.ln, heads.head): 16x16
 * patches of the image, a class token, 12 pre-norm blocks, the class token's head */
atm_status zb_net_vit(atm_graph **g, const zb_spec *s)
{
	static const struct block_names names = {
		.ln1 = "ln_1", .ln2 = "ln_2", .attn = "self_attention", .qkv = "in_proj",
		.qkv_weight = "in_proj_weight", .qkv_bias = "in_proj_bias", .attn_out = "out_proj",
		.mlp = "mlp", .fc = "0", .proj = "3",
	};
	struct tf t = {.layers = 12, .width = 768, .heads = 12, .pre_norm = true, .eps = 1e-6f};
	int patch = 16;
	if (s->variant == 2) /* the suite's tiny one */
		t.layers = 2, t.width = 64, t.heads = 4, patch = 8;
	zb *b = NULL;
	char nm[ZB_NAME_MAX];
	atm_status rc;
	*g = NULL;
	if (s->image % patch)
		return atm_err(ATM_E_USAGE, "%s: image %lld is not a multiple of the %d-pixel patch",
		               s->name, (long long)s->image, patch);
	if ((rc = zb_new(&b, s)) < 0)
		return rc;
	int64_t grid = s->image / patch, seq = grid * grid + 1;
	int32_t x = zb_image(b, 3, s->image, s->image);
	zb_param_names(b, "conv_proj.weight", "conv_proj.bias");
	x = zb_conv(b, "conv_proj", x, t.width, patch, patch, patch, 0, 0, true);
	int64_t pd[3] = {s->batch, grid * grid, t.width};
	x = zb_permute(b, "patches", x, 3, (const int32_t[]){0, 2, 1}, 3, pd);
	int32_t cls = zb_positions(b, "class_token", "class_token", 1, 1, t.width, true);
	x = zb_concat_axis(b, "tokens", 2, (int32_t[]){cls, x}, 1);
	int32_t pos = zb_positions(b, "encoder.pos_embedding", "encoder.pos_embedding", seq, seq,
	                           t.width, true);
	x = zb_add(b, "encoder.add_positions", x, pos);
	for (int64_t l = 0; l < t.layers; l++)
		x = block(b, &t, zb_namef(nm, "encoder.layers.encoder_layer_%lld", (long long)l), x,
		          &names);
	x = zb_layer_norm(b, "encoder.ln", x, t.eps);
	x = zb_narrow(b, "class_token_out", x, 1, 1);
	x = zb_linear(b, "heads.head", x, s->n_classes, true);
	rc = zb_finish_tokens(b, 1, &x, (const char *[]){"labels"}, (const char *[]){"loss"}, g);
	zb_destroy(b);
	return rc;
}

/* The most query heads one key/value head serves (the zoo's: 8, TinyLlama's). */
#define LLAMA_MAX_GROUP 16

/* Sizes of a LLaMA-style decoder; heads / kv_heads <= LLAMA_MAX_GROUP. */
struct llama {
	int variant;
	int64_t layers, width, heads, kv_heads, mlp;
	float theta;
	bool tied;
};

/* repeat_heads -- k or v [batch, kv_heads, seq, head_dim] with each head repeated g times in
 * place ([batch, kv_heads * g, seq, head_dim], heads j*g .. j*g + g-1 reading head j, as
 * Hugging Face's repeat_kv): read as [batch, kv_heads, seq*head_dim], g copies concatenated
 * along the last axis, read back as heads (g <= LLAMA_MAX_GROUP) */
static int32_t repeat_heads(zb *b, const char *p, char which, int32_t x, int64_t g)
{
	char nm[ZB_NAME_MAX];
	const int32_t same[4] = {0, 1, 2, 3};
	int64_t bt = zb_dim(b, x, 0), kv = zb_dim(b, x, 1), seq = zb_dim(b, x, 2), hd = zb_dim(b, x, 3);
	int64_t flat[3] = {bt, kv, seq * hd}, heads[4] = {bt, kv * g, seq, hd};
	int32_t copies[LLAMA_MAX_GROUP];
	x = zb_permute(b, zb_namef(nm, "%s.%c_flat", p, which), x, 4, same, 3, flat);
	for (int64_t i = 0; i < g; i++)
		copies[i] = x;
	x = zb_concat_axis(b, zb_namef(nm, "%s.%c_repeat", p, which), (int)g, copies, 2);
	return zb_permute(b, zb_namef(nm, "%s.%c_groups", p, which), x, 3, same, 4, heads);
}

/* llama_attention -- x [batch, seq, width] under module p: bias-free q, k, v projections, k
 * and v of kv_heads heads, rotary embeddings on q and k, k and v repeated to the query heads,
 * causal attention scaled by 1/sqrt(head_dim), the heads joined, o_proj */
static int32_t llama_attention(zb *b, const struct llama *t, const char *p, int32_t x)
{
	char nm[ZB_NAME_MAX];
	int64_t bt = zb_dim(b, x, 0), seq = zb_dim(b, x, 1), hd = t->width / t->heads;
	int64_t qd[4] = {bt, t->heads, seq, hd}, kd[4] = {bt, t->kv_heads, seq, hd};
	int64_t joined[3] = {bt, seq, t->width};
	const int32_t to_heads[4] = {0, 2, 1, 3};
	int32_t q = zb_linear(b, zb_namef(nm, "%s.q_proj", p), x, t->width, false);
	int32_t k = zb_linear(b, zb_namef(nm, "%s.k_proj", p), x, t->kv_heads * hd, false);
	int32_t v = zb_linear(b, zb_namef(nm, "%s.v_proj", p), x, t->kv_heads * hd, false);
	q = zb_permute(b, zb_namef(nm, "%s.q_heads", p), q, 4, to_heads, 4, qd);
	k = zb_permute(b, zb_namef(nm, "%s.k_heads", p), k, 4, to_heads, 4, kd);
	v = zb_permute(b, zb_namef(nm, "%s.v_heads", p), v, 4, to_heads, 4, kd);
	q = zb_rope(b, zb_namef(nm, "%s.q_rope", p), q, t->theta);
	k = zb_rope(b, zb_namef(nm, "%s.k_rope", p), k, t->theta);
	if (t->heads > t->kv_heads) {
		k = repeat_heads(b, p, 'k', k, t->heads / t->kv_heads);
		v = repeat_heads(b, p, 'v', v, t->heads / t->kv_heads);
	}
	int32_t s = zb_matmul(b, zb_namef(nm, "%s.scores", p), q, k, false, true,
	                      (float)(1.0 / sqrt((double)hd)));
	s = zb_softmax(b, zb_namef(nm, "%s.softmax", p), s, true);
	int32_t ctx = zb_matmul(b, zb_namef(nm, "%s.context", p), s, v, false, false, 1.0f);
	ctx = zb_permute(b, zb_namef(nm, "%s.join_heads", p), ctx, 4, to_heads, 3, joined);
	return zb_linear(b, zb_namef(nm, "%s.o_proj", p), ctx, t->width, false);
}

/* llama_mlp -- SwiGLU: down_proj(silu(gate_proj(x)) * up_proj(x)), bias-free */
static int32_t llama_mlp(zb *b, const struct llama *t, const char *p, int32_t x)
{
	char nm[ZB_NAME_MAX];
	int32_t gate = zb_linear(b, zb_namef(nm, "%s.gate_proj", p), x, t->mlp, false);
	int32_t up = zb_linear(b, zb_namef(nm, "%s.up_proj", p), x, t->mlp, false);
	gate = zb_silu(b, zb_namef(nm, "%s.act", p), gate);
	x = zb_mul(b, zb_namef(nm, "%s.gate", p), gate, up);
	return zb_linear(b, zb_namef(nm, "%s.down_proj", p), x, t->width, false);
}

/* zb_net_llama -- a LLaMA-style decoder as Hugging Face's LlamaForCausalLM names it
 * (model.embed_tokens, model.layers.N.{input_layernorm, self_attn, post_attention_layernorm,
 * mlp}, model.norm, lm_head): pre-norm RMSNorm blocks, grouped-query attention with rotary
 * embeddings, a SwiGLU MLP, the output projection tied to the embedding or not; variant 1:
 * TinyLlama-1.1B, 2: Llama 3.2 1B, 3: Llama 3 8B, 0: the suite's tiny one; a token loss at
 * every position */
atm_status zb_net_llama(atm_graph **g, const zb_spec *s)
{
	static const struct llama sizes[] = {
		{1, 22, 2048, 32, 4, 5632, 10000.0f, false},
		{2, 16, 2048, 32, 8, 8192, 500000.0f, true},
		{3, 32, 4096, 32, 8, 14336, 500000.0f, false},
		{0, 2, 64, 4, 2, 96, 10000.0f, false},
	};
	struct llama t = sizes[2];
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		if (sizes[i].variant == s->variant)
			t = sizes[i];
	zb *b = NULL;
	char nm[ZB_NAME_MAX], p[ZB_NAME_MAX];
	atm_status rc;
	*g = NULL;
	if ((rc = zb_new(&b, s)) < 0)
		return rc;
	int32_t ids = zb_tokens(b, "input_ids", s->seq);
	zb_param_names(b, "model.embed_tokens.weight", NULL);
	int32_t x = zb_embedding(b, "model.embed_tokens", ids, s->n_classes, t.width);
	for (int64_t l = 0; l < t.layers; l++) {
		zb_namef(p, "model.layers.%lld", (long long)l);
		int32_t h = zb_rms_norm(b, zb_namef(nm, "%s.input_layernorm", p), x, 1e-5f);
		h = llama_attention(b, &t, zb_namef(nm, "%s.self_attn", p), h);
		x = zb_add(b, zb_namef(nm, "%s.attn_residual", p), x, h);
		h = zb_rms_norm(b, zb_namef(nm, "%s.post_attention_layernorm", p), x, 1e-5f);
		h = llama_mlp(b, &t, zb_namef(nm, "%s.mlp", p), h);
		x = zb_add(b, zb_namef(nm, "%s.mlp_residual", p), x, h);
	}
	x = zb_rms_norm(b, "model.norm", x, 1e-5f);
	if (t.tied)
		zb_param_names(b, "model.embed_tokens.weight", NULL);
	x = zb_linear(b, "lm_head", x, s->n_classes, false);
	rc = zb_finish_tokens(b, 1, &x, (const char *[]){"labels"}, (const char *[]){"loss"}, g);
	zb_destroy(b);
	return rc;
}
