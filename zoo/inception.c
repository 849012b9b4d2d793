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

/* stem -- 299x299x3 to 35x35x384 */
static int32_t stem(zb *b, int32_t x)
{
	int32_t br[2], t;
	x = bc(b, "stem", "conv1", x, 32, 3, 3, 2, 0, 0);
	x = bc(b, "stem", "conv2", x, 32, 3, 3, 1, 0, 0);
	x = bc(b, "stem", "conv3", x, 64, 3, 3, 1, 1, 1);

	br[0] = zb_maxpool(b, "mixed_3a.pool", x, 3, 2, 0);
	br[1] = bc(b, "mixed_3a", "conv", x, 96, 3, 3, 2, 0, 0);
	x = cat(b, "mixed_3a", 2, br);

	t = bc(b, "mixed_4a", "b0_0", x, 64, 1, 1, 1, 0, 0);
	br[0] = bc(b, "mixed_4a", "b0_1", t, 96, 3, 3, 1, 0, 0);
	t = bc(b, "mixed_4a", "b1_0", x, 64, 1, 1, 1, 0, 0);
	t = bc(b, "mixed_4a", "b1_1", t, 64, 1, 7, 1, 0, 3);
	t = bc(b, "mixed_4a", "b1_2", t, 64, 7, 1, 1, 3, 0);
	br[1] = bc(b, "mixed_4a", "b1_3", t, 96, 3, 3, 1, 0, 0);
	x = cat(b, "mixed_4a", 2, br);

	br[0] = bc(b, "mixed_5a", "conv", x, 192, 3, 3, 2, 0, 0);
	br[1] = zb_maxpool(b, "mixed_5a.pool", x, 3, 2, 0);
	return cat(b, "mixed_5a", 2, br);
}

/* block_a -- 35x35x384 to 35x35x384 */
static int32_t block_a(zb *b, const char *p, int32_t x)
{
	int32_t br[4], t;
	br[0] = bc(b, p, "b0", x, 96, 1, 1, 1, 0, 0);
	t = bc(b, p, "b1_0", x, 64, 1, 1, 1, 0, 0);
	br[1] = bc(b, p, "b1_1", t, 96, 3, 3, 1, 1, 1);
	t = bc(b, p, "b2_0", x, 64, 1, 1, 1, 0, 0);
	t = bc(b, p, "b2_1", t, 96, 3, 3, 1, 1, 1);
	br[2] = bc(b, p, "b2_2", t, 96, 3, 3, 1, 1, 1);
	br[3] = bc(b, p, "b3_1", avg3(b, p, x), 96, 1, 1, 1, 0, 0);
	return cat(b, p, 4, br);
}

/* reduction_a -- 35x35x384 to 17x17x1024 */
static int32_t reduction_a(zb *b, int32_t x)
{
	const char *p = "reduction_a";
	int32_t br[3], t;
	br[0] = bc(b, p, "b0", x, 384, 3, 3, 2, 0, 0);
	t = bc(b, p, "b1_0", x, 192, 1, 1, 1, 0, 0);
	t = bc(b, p, "b1_1", t, 224, 3, 3, 1, 1, 1);
	br[1] = bc(b, p, "b1_2", t, 256, 3, 3, 2, 0, 0);
	br[2] = zb_maxpool(b, "reduction_a.pool", x, 3, 2, 0);
	return cat(b, p, 3, br);
}

/* block_b -- 17x17x1024 to 17x17x1024, factorized 7x7 convolutions */
static int32_t block_b(zb *b, const char *p, int32_t x)
{
	int32_t br[4], t;
	br[0] = bc(b, p, "b0", x, 384, 1, 1, 1, 0, 0);
	t = bc(b, p, "b1_0", x, 192, 1, 1, 1, 0, 0);
	t = bc(b, p, "b1_1", t, 224, 1, 7, 1, 0, 3);
	br[1] = bc(b, p, "b1_2", t, 256, 7, 1, 1, 3, 0);
	t = bc(b, p, "b2_0", x, 192, 1, 1, 1, 0, 0);
	t = bc(b, p, "b2_1", t, 192, 7, 1, 1, 3, 0);
	t = bc(b, p, "b2_2", t, 224, 1, 7, 1, 0, 3);
	t = bc(b, p, "b2_3", t, 224, 7, 1, 1, 3, 0);
	br[2] = bc(b, p, "b2_4", t, 256, 1, 7, 1, 0, 3);
	br[3] = bc(b, p, "b3_1", avg3(b, p, x), 128, 1, 1, 1, 0, 0);
	return cat(b, p, 4, br);
}

/* reduction_b -- 17x17x1024 to 8x8x1536 */
static int32_t reduction_b(zb *b, int32_t x)
{
	const char *p = "reduction_b";
	int32_t br[3], t;
	t = bc(b, p, "b0_0", x, 192, 1, 1, 1, 0, 0);
	br[0] = bc(b, p, "b0_1", t, 192, 3, 3, 2, 0, 0);
	t = bc(b, p, "b1_0", x, 256, 1, 1, 1, 0, 0);
	t = bc(b, p, "b1_1", t, 256, 1, 7, 1, 0, 3);
	t = bc(b, p, "b1_2", t, 320, 7, 1, 1, 3, 0);
	br[1] = bc(b, p, "b1_3", t, 320, 3, 3, 2, 0, 0);
	br[2] = zb_maxpool(b, "reduction_b.pool", x, 3, 2, 0);
	return cat(b, p, 3, br);
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

/* zb_net_inception -- stem, 4 x A, reduction A, 7 x B, reduction B, 3 x C,
 * global average pool (8x8 at 299), fc 1536 -> classes */
atm_status zb_net_inception(atm_graph **g, const zb_spec *s)
{
	char nm[ZB_NAME_MAX];
	zb *b = NULL;
	atm_status rc;
	*g = NULL;
	if (s->variant != 4)
		return atm_err(ATM_E_INTERNAL, "inception: no variant %d", s->variant);
	rc = zb_new(&b, s);
	if (rc < 0)
		return rc;
	int32_t x = zb_image(b, 3, s->image, s->image);
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
	x = zb_fc(b, "fc", x, s->n_classes);
	rc = zb_finish(b, x, g);
	zb_destroy(b);
	return rc;
}
