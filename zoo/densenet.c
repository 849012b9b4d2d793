/* densenet.c -- DenseNet-121/169/201/264 (Huang et al. 2017, torchvision layout, growth 32, bottleneck 4x, compression 0.5) */
#include "builder.h"

#define GROWTH 32
#define BOTTLENECK (4 * GROWTH)
#define MAX_LAYERS 64 /* the longest block (DenseNet-264's third) */

/* dense_block -- n pre-activation layers (BN, ReLU, 1x1 conv to 128, BN, ReLU,
 * 3x3 conv to 32), each reading the concatenation of every feature before it;
 * returns the concatenation of all of them */
static int32_t dense_block(zb *b, int blk, int n, int32_t x)
{
	char p[ZB_NAME_MAX], nm[ZB_NAME_MAX];
	int32_t feats[MAX_LAYERS + 1];
	int n_feats = 0;
	feats[n_feats++] = x;
	for (int l = 1; l <= n; l++) {
		zb_namef(p, "denseblock%d.denselayer%d", blk, l);
		/* The first layer reads x itself: a concatenation of one adds no node. */
		int32_t y = zb_concat(b, zb_namef(nm, "%s.cat", p), n_feats, feats);
		y = zb_bn(b, zb_namef(nm, "%s.norm1", p), y);
		y = zb_relu(b, zb_namef(nm, "%s.relu1", p), y);
		y = zb_conv(b, zb_namef(nm, "%s.conv1", p), y, BOTTLENECK, 1, 1, 1, 0, 0, false);
		y = zb_bn(b, zb_namef(nm, "%s.norm2", p), y);
		y = zb_relu(b, zb_namef(nm, "%s.relu2", p), y);
		y = zb_conv(b, zb_namef(nm, "%s.conv2", p), y, GROWTH, 3, 3, 1, 1, 1, false);
		feats[n_feats++] = y;
	}
	return zb_concat(b, zb_namef(nm, "denseblock%d.cat", blk), n_feats, feats);
}

/* transition -- BN, ReLU, 1x1 conv halving the channels, 2x2/2 average pool */
static int32_t transition(zb *b, int t, int32_t x, int64_t out_c)
{
	char nm[ZB_NAME_MAX];
	x = zb_bn(b, zb_namef(nm, "transition%d.norm", t), x);
	x = zb_relu(b, zb_namef(nm, "transition%d.relu", t), x);
	x = zb_conv(b, zb_namef(nm, "transition%d.conv", t), x, out_c, 1, 1, 1, 0, 0, false);
	return zb_avgpool(b, zb_namef(nm, "transition%d.pool", t), x, 2, 2, 0, false);
}

/* densenet -- stem (7x7/2 conv, BN, ReLU, 3x3/2 max pool) to 64 channels, four dense blocks
 * (arg: the variant's layers per block) with transitions between them, final BN and ReLU,
 * global average pool, classifier */
static int32_t densenet(zb *b, int32_t x, const zb_spec *s, const void *arg)
{
	const int *blocks = arg;
	int64_t c = 64;
	x = zb_conv(b, "conv0", x, c, 7, 7, 2, 3, 3, false);
	x = zb_bn(b, "norm0", x);
	x = zb_relu(b, "relu0", x);
	x = zb_maxpool(b, "pool0", x, 3, 2, 1);
	for (int blk = 0; blk < 4; blk++) {
		x = dense_block(b, blk + 1, blocks[blk], x);
		c += (int64_t)blocks[blk] * GROWTH;
		if (blk < 3) {
			c /= 2;
			x = transition(b, blk + 1, x, c);
		}
	}
	x = zb_bn(b, "norm5", x);
	x = zb_relu(b, "relu5", x);
	x = zb_global_avgpool(b, "avgpool", x);
	return zb_fc(b, "classifier", x, s->n_classes);
}

atm_status zb_net_densenet(atm_graph **g, const zb_spec *s)
{
	static const int d121[4] = {6, 12, 24, 16}, d169[4] = {6, 12, 32, 32},
	                 d201[4] = {6, 12, 48, 32}, d264[4] = {6, 12, 64, 48};
	const int *blocks;
	switch (s->variant) {
	case 121: blocks = d121; break;
	case 169: blocks = d169; break;
	case 201: blocks = d201; break;
	case 264: blocks = d264; break;
	default: *g = NULL; return atm_err(ATM_E_INTERNAL, "densenet: no variant %d", s->variant);
	}
	return zb_build_image(g, s, 3, densenet, blocks);
}
