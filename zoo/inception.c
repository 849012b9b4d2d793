/* inception.c -- Inception-v4 (Szegedy et al. 2016), in the layout of the widely used PyTorch port */
#include "builder.h"

/* bc -- the port's BasicConv: convolution without bias, BN, ReLU, named PREFIX.SUFFIX.* */
static int32_t bc(zb *b, const char *prefix, const char *suffix, int32_t x, int64_t out_c, int kh,
                  int kw, int stride, int ph, int pw)
{
	char nm[ZB_NAME_MAX];
	return zb_conv_bn_relu(b, zb_namef(nm, "%s.%s", prefix, suffix), x, out_c, kh, kw, stride, ph,
	                       pw);
}

/* avg3 -- the 3x3/1 average pool of the A, B and C blocks (padding not counted) */
static int32_t avg3(zb *b, const char *prefix, int32_t x)
{
	char nm[ZB_NAME_MAX];
	return zb_avgpool(b, zb_namef(nm, "%s.b3_pool", prefix), x, 3, 1, 1, true);
}

/* cat -- a block's output: its branches joined along channels */
static int32_t cat(zb *b, const char *prefix, int n, const int32_t *xs)
{
	char nm[ZB_NAME_MAX];
	return zb_concat(b, zb_namef(nm, "%s.cat", prefix), n, xs);
}

/* One branch of a block: the block's input, pooled first when pool says so, through a chain of
 * BasicConvs (bc); the block concatenates its branches' outputs in order. */
enum pool { NO_POOL, AVG3, MAX3 };
struct conv {
	const char *suffix;
	int64_t out_c;
	int kh, kw, stride, ph, pw;
};
struct branch {
	enum pool pool;
	int n_convs;
	struct conv convs[5];
};

/* block -- n branches of x, named PREFIX.*, joined along channels; an average pool is
 * PREFIX.b3_pool (avg3), a max pool (3x3/2) PREFIX.pool */
static int32_t block(zb *b, const char *p, int32_t x, int n, const struct branch *brs)
{
	char nm[ZB_NAME_MAX];
	int32_t out[4]; /* the A and B blocks have the most branches (block_c's six are its own) */
	for (int i = 0; i < n; i++) {
		const struct branch *br = &brs[i];
		int32_t t = x;
		if (br->pool == AVG3)
			t = avg3(b, p, x);
		else if (br->pool == MAX3)
			t = zb_maxpool(b, zb_namef(nm, "%s.pool", p), x, 3, 2, 0);
		for (int k = 0; k < br->n_convs; k++) {
			const struct conv *c = &br->convs[k];
			t = bc(b, p, c->suffix, t, c->out_c, c->kh, c->kw, c->stride, c->ph, c->pw);
		}
		out[i] = t;
	}
	return cat(b, p, n, out);
}

/* stem -- 299x299x3 to 35x35x384 */
static int32_t stem(zb *b, int32_t x)
{
	static const struct branch mixed_3a[2] = {
		{MAX3, 0, {{0}}},
		{NO_POOL, 1, {{"conv", 96, 3, 3, 2, 0, 0}}},
	};
	static const struct branch mixed_4a[2] = {
		{NO_POOL, 2, {{"b0_0", 64, 1, 1, 1, 0, 0}, {"b0_1", 96, 3, 3, 1, 0, 0}}},
		{NO_POOL, 4, {{"b1_0", 64, 1, 1, 1, 0, 0}, {"b1_1", 64, 1, 7, 1, 0, 3},
		              {"b1_2", 64, 7, 1, 1, 3, 0}, {"b1_3", 96, 3, 3, 1, 0, 0}}},
	};
	static const struct branch mixed_5a[2] = {
		{NO_POOL, 1, {{"conv", 192, 3, 3, 2, 0, 0}}},
		{MAX3, 0, {{0}}},
	};
	x = bc(b, "stem", "conv1", x, 32, 3, 3, 2, 0, 0);
	x = bc(b, "stem", "conv2", x, 32, 3, 3, 1, 0, 0);
	x = bc(b, "stem", "conv3", x, 64, 3, 3, 1, 1, 1);
	x = block(b, "mixed_3a", x, 2, mixed_3a);
	x = block(b, "mixed_4a", x, 2, mixed_4a);
	return block(b, "mixed_5a", x, 2, mixed_5a);
}

/* block_a -- 35x35x384 to 35x35x384 */
static int32_t block_a(zb *b, const char *p, int32_t x)
{
	static const struct branch a[4] = {
		{NO_POOL, 1, {{"b0", 96, 1, 1, 1, 0, 0}}},
		{NO_POOL, 2, {{"b1_0", 64, 1, 1, 1, 0, 0}, {"b1_1", 96, 3, 3, 1, 1, 1}}},
		{NO_POOL, 3, {{"b2_0", 64, 1, 1, 1, 0, 0}, {"b2_1", 96, 3, 3, 1, 1, 1},
		              {"b2_2", 96, 3, 3, 1, 1, 1}}},
		{AVG3, 1, {{"b3_1", 96, 1, 1, 1, 0, 0}}},
	};
	return block(b, p, x, 4, a);
}

/* reduction_a -- 35x35x384 to 17x17x1024 */
static int32_t reduction_a(zb *b, int32_t x)
{
	static const struct branch r[3] = {
		{NO_POOL, 1, {{"b0", 384, 3, 3, 2, 0, 0}}},
		{NO_POOL, 3, {{"b1_0", 192, 1, 1, 1, 0, 0}, {"b1_1", 224, 3, 3, 1, 1, 1},
		              {"b1_2", 256, 3, 3, 2, 0, 0}}},
		{MAX3, 0, {{0}}},
	};
	return block(b, "reduction_a", x, 3, r);
}

/* block_b -- 17x17x1024 to 17x17x1024, factorized 7x7 convolutions */
static int32_t block_b(zb *b, const char *p, int32_t x)
{
	static const struct branch bb[4] = {
		{NO_POOL, 1, {{"b0", 384, 1, 1, 1, 0, 0}}},
		{NO_POOL, 3, {{"b1_0", 192, 1, 1, 1, 0, 0}, {"b1_1", 224, 1, 7, 1, 0, 3},
		              {"b1_2", 256, 7, 1, 1, 3, 0}}},
		{NO_POOL, 5, {{"b2_0", 192, 1, 1, 1, 0, 0}, {"b2_1", 192, 7, 1, 1, 3, 0},
		              {"b2_2", 224, 1, 7, 1, 0, 3}, {"b2_3", 224, 7, 1, 1, 3, 0},
		              {"b2_4", 256, 1, 7, 1, 0, 3}}},
		{AVG3, 1, {{"b3_1", 128, 1, 1, 1, 0, 0}}},
	};
	return block(b, p, x, 4, bb);
}

/* reduction_b -- 17x17x1024 to 8x8x1536 */
static int32_t reduction_b(zb *b, int32_t x)
{
	static const struct branch r[3] = {
		{NO_POOL, 2, {{"b0_0", 192, 1, 1, 1, 0, 0}, {"b0_1", 192, 3, 3, 2, 0, 0}}},
		{NO_POOL, 4, {{"b1_0", 256, 1, 1, 1, 0, 0}, {"b1_1", 256, 1, 7, 1, 0, 3},
		              {"b1_2", 320, 7, 1, 1, 3, 0}, {"b1_3", 320, 3, 3, 2, 0, 0}}},
		{MAX3, 0, {{0}}},
	};
	return block(b, "reduction_b", x, 3, r);
}

/* block_c -- 8x8x1536 to 8x8x1536; two branches fork into 1x3 and 3x1 halves.
 * One six-way concatenation equals the port's nested ones, channel for channel. */
static int32_t block_c(zb *b, const char *p, int32_t x)
{
	int32_t br[6], t;
	br[0] = bc(b, p, "b0", x, 256, 1, 1, 1, 0, 0);
	t = bc(b, p, "b1_0", x, 384, 1, 1, 1, 0, 0);
	br[1] = bc(b, p, "b1_1a", t, 256, 1, 3, 1, 0, 1);
	br[2] = bc(b, p, "b1_1b", t, 256, 3, 1, 1, 1, 0);
	t = bc(b, p, "b2_0", x, 384, 1, 1, 1, 0, 0);
	t = bc(b, p, "b2_1", t, 448, 3, 1, 1, 1, 0);
	t = bc(b, p, "b2_2", t, 512, 1, 3, 1, 0, 1);
	br[3] = bc(b, p, "b2_3a", t, 256, 1, 3, 1, 0, 1);
	br[4] = bc(b, p, "b2_3b", t, 256, 3, 1, 1, 1, 0);
	br[5] = bc(b, p, "b3_1", avg3(b, p, x), 256, 1, 1, 1, 0, 0);
	return cat(b, p, 6, br);
}

/* inception -- stem, 4 x A, reduction A, 7 x B, reduction B, 3 x C, global average pool
 * (8x8 at 299), fc 1536 -> classes */
static int32_t inception(zb *b, int32_t x, const zb_spec *s, const void *arg)
{
	char nm[ZB_NAME_MAX];
	(void)arg;
	x = stem(b, x);
	for (int i = 1; i <= 4; i++)
		x = block_a(b, zb_namef(nm, "inception_a%d", i), x);
	x = reduction_a(b, x);
	for (int i = 1; i <= 7; i++)
		x = block_b(b, zb_namef(nm, "inception_b%d", i), x);
	x = reduction_b(b, x);
	for (int i = 1; i <= 3; i++)
		x = block_c(b, zb_namef(nm, "inception_c%d", i), x);
	x = zb_global_avgpool(b, "avgpool", x);
	return zb_fc(b, "fc", x, s->n_classes);
}

atm_status zb_net_inception(atm_graph **g, const zb_spec *s)
{
	if (s->variant != 4) {
		*g = NULL;
		return atm_err(ATM_E_INTERNAL, "inception: no variant %d", s->variant);
	}
	return zb_build_image(g, s, 3, inception, NULL);
}
