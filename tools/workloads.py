#!/usr/bin/env python3
"""workloads.py -- generate dtsim's timing-only layer tables.

Each network is built here from its architecture definition (kernel sizes,
channels, strides, input size; widths, depths and vocabularies for the
transformers) and written as scenarios/workloads/NAME.txt, the text format
kern_timing_parse() reads (kernels/kernels.h, docs/workloads.md):

    # comments, one of them "# input N" (floats per sample the first layer reads)
    NAME PARAMS FWD_FLOPS ACTIVATIONS KIND [KEEP]

all per sample: PARAMS float32 parameters of the layer, FWD_FLOPS forward
FLOPs counting a multiply-add as 2, ACTIVATIONS floats of the layer's output.
KEEP (output, inplace or freed) says what backward keeps of that output
where the parser's default (an element-wise line as wide as its input runs
in place, every other line keeps its output) is not what frameworks do:
GELU keeps its own output beside its input, and a projection shortcut's
batch norm feeds only the residual add, which keeps nothing of it.

Counting rule, the same for every network, so that the totals can be set
beside published multiply-add counts:

  * FWD_FLOPS is 2 x the multiply-adds of convolutions, fully connected
    layers and the two attention matmuls (Q K^T and scores x V).  Bias adds,
    normalisation, activation functions, softmax, residual adds, pooling and
    embedding lookups count 0; together they are under 1% of any total here.
  * Batch norm and layer norm (gamma, beta: 2 per channel or feature; KIND
    norm), activation functions, residual adds, softmax and the loss (KIND
    elementwise), pooling (elementwise) and embedding lookups (KIND
    embedding) have lines of their own with 0 FLOPs: what they cost is the
    memory traffic of reading and writing their tensors, which the time
    model prices by KIND.  Running statistics are buffers, not parameters.
    Dropout runs inside the softmax and residual-add kernels (no line);
    flatten and concatenation move nothing (no line).

Usage: python3 tools/workloads.py [OUTDIR]   (default: scenarios/workloads
next to this script's parent).  Prints a summary table on stdout.
"""

import os
import sys


KINDS = ("gemm", "conv", "conv3x3", "attention", "elementwise", "norm", "embedding")


class Table:
    """Layers of one network in forward order, plus header text."""

    def __init__(self, name, input_floats):
        self.name = name
        self.input_floats = input_floats
        self.rows = []          # (name, params, fwd_flops, activations)
        self.notes = []         # header lines describing the network

    def add(self, name, params, flops, acts, kind=None, keep=""):
        """kind: gemm (the default with FLOPs), conv, conv3x3 (3 x 3, stride
        1: the convolutions Winograd's algorithm applies to), attention,
        elementwise (the default without), norm or embedding.  keep: "" (the
        parser's default), output, inplace or none."""
        assert len(name) <= 31, name
        assert all(r[0] != name for r in self.rows), name
        if kind is None:
            kind = "gemm" if flops > 0 else "elementwise"
        assert kind in KINDS, kind
        assert keep in ("", "output", "inplace", "freed"), keep
        self.rows.append((name, int(params), int(flops), int(acts), kind, keep))

    def params(self, prefix=""):
        return sum(r[1] for r in self.rows if r[0].startswith(prefix))

    def flops(self, prefix=""):
        return sum(r[2] for r in self.rows if r[0].startswith(prefix))

    def activations(self):
        return sum(r[3] for r in self.rows)

    def kept(self):
        """Floats per sample backward keeps, by the parser's KEEP rule."""
        total, inputs = 0, self.input_floats
        for r in self.rows:
            keep = r[5] or ("inplace" if r[4] == "elementwise" and r[3] == inputs
                            else "output")
            total += r[3] if keep == "output" else 0
            inputs = r[3]
        return total

    def kinds(self):
        """Lines per kind, in a fixed order."""
        out = []
        for k in KINDS:
            n = sum(1 for r in self.rows if r[4] == k)
            if n:
                out.append("%d %s" % (n, k))
        return ", ".join(out)


# --- convolutional networks -------------------------------------------------

class ConvNet(Table):
    """Tracks the current (channels, height, width) of a CNN."""

    def __init__(self, name, c, h, w):
        super().__init__(name, c * h * w)
        self.shape = (c, h, w)

    def conv(self, name, cout, k, stride=1, pad=0, bn=True, bias=False,
             shape=None, relu=True, bn_name=None, relu_name=None, bn_keep=""):
        """k is an int or (kh, kw); pad likewise.  `shape` overrides the
        input shape (for the branches of an Inception module).  The conv's
        batch norm (gamma, beta: 2 per channel) and ReLU get lines of their
        own, named NAME.bn and NAME.relu unless bn_name / relu_name say
        otherwise.  Returns and records the output shape."""
        cin, h, w = shape if shape is not None else self.shape
        kh, kw = (k, k) if isinstance(k, int) else k
        ph, pw = (pad, pad) if isinstance(pad, int) else pad
        ho = (h + 2 * ph - kh) // stride + 1
        wo = (w + 2 * pw - kw) // stride + 1
        params = cin * kh * kw * cout + (cout if bias else 0)
        macs = cout * ho * wo * cin * kh * kw
        out = cout * ho * wo
        kind = "conv3x3" if (kh, kw) == (3, 3) and stride == 1 else "conv"
        self.add(name, params, 2 * macs, out, kind)
        if bn:
            self.add(bn_name or name + ".bn", 2 * cout, 0, out, "norm", bn_keep)
        if relu:
            self.add(relu_name or name + ".relu", 0, 0, out, "elementwise")
        self.shape = (cout, ho, wo)
        return self.shape

    def pool(self, name, k, stride, pad=0, shape=None):
        c, h, w = shape if shape is not None else self.shape
        ho = (h + 2 * pad - k) // stride + 1
        wo = (w + 2 * pad - k) // stride + 1
        self.add(name, 0, 0, c * ho * wo, "elementwise")
        self.shape = (c, ho, wo)
        return self.shape

    def global_pool(self, name):
        c, _, _ = self.shape
        self.add(name, 0, 0, c, "elementwise")
        self.shape = (c, 1, 1)
        return self.shape

    def fc(self, name, out, shape=None):
        c, h, w = shape if shape is not None else self.shape
        fin = c * h * w
        self.add(name, fin * out + out, 2 * fin * out, out, "gemm")
        self.shape = (out, 1, 1)
        return self.shape


def resnet(name, blocks, stride_in_3x3=True):
    """Bottleneck ResNet (He et al. 2016, Table 1) as torchvision builds it.
    stride_in_3x3=True is "v1.5" (torchvision, NVIDIA, MLPerf); False puts the
    stride in the first 1x1 conv as in the original Caffe model."""
    n = ConvNet(name, 3, 224, 224)
    n.conv("conv1", 64, 7, stride=2, pad=3, bn_name="bn1", relu_name="relu")
    n.pool("pool1", 3, 2, pad=1)
    cin = 64
    for stage, (width, count) in enumerate(zip((64, 128, 256, 512), blocks)):
        for b in range(count):
            stride = 2 if (b == 0 and stage > 0) else 1
            x = n.shape
            p = "layer%d.%d." % (stage + 1, b)
            n.conv(p + "conv1", width, 1, stride=1 if stride_in_3x3 else stride,
                   bn_name=p + "bn1", relu_name=p + "relu1")
            n.conv(p + "conv2", width, 3, stride=stride if stride_in_3x3 else 1, pad=1,
                   bn_name=p + "bn2", relu_name=p + "relu2")
            out = n.conv(p + "conv3", 4 * width, 1, bn_name=p + "bn3", relu=False)
            if b == 0:
                n.conv(p + "downsample", 4 * width, 1, stride=stride, shape=x,
                       bn_name=p + "downsample.bn", relu=False, bn_keep="freed")
            assert n.shape == out
            c, h, w = out
            n.add(p + "add", 0, 0, c * h * w, "elementwise")
            n.add(p + "relu3", 0, 0, c * h * w, "elementwise")
            cin = 4 * width
    assert cin == 2048
    n.global_pool("pool5")
    n.fc("fc", 1000)
    return n


def vgg16():
    """VGG configuration D (Simonyan & Zisserman 2015, Table 1): 3x3 convs
    with bias, no batch norm, three fully connected layers."""
    n = ConvNet("vgg-16", 3, 224, 224)
    cfg = [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]]
    for s, chans in enumerate(cfg):
        for i, c in enumerate(chans):
            n.conv("conv%d_%d" % (s + 1, i + 1), c, 3, pad=1, bn=False, bias=True)
        n.pool("pool%d" % (s + 1), 2, 2)
    assert n.shape == (512, 7, 7)
    n.fc("fc6", 4096)
    n.add("fc6.relu", 0, 0, 4096, "elementwise")
    n.fc("fc7", 4096)
    n.add("fc7.relu", 0, 0, 4096, "elementwise")
    n.fc("fc8", 1000)
    return n


def inception_v3():
    """Inception-v3 (Szegedy et al. 2016, Table 1 and Figures 5-7) as
    torchvision builds it: every conv is conv (no bias) + BN + ReLU; the
    auxiliary classifier on the 17x17 grid is included, because it runs
    and trains in every training step (it has the "aux." prefix)."""
    n = ConvNet("inception-v3", 3, 299, 299)
    n.conv("Conv2d_1a_3x3", 32, 3, stride=2)
    n.conv("Conv2d_2a_3x3", 32, 3)
    n.conv("Conv2d_2b_3x3", 64, 3, pad=1)
    n.pool("maxpool1", 3, 2)
    n.conv("Conv2d_3b_1x1", 80, 1)
    n.conv("Conv2d_4a_3x3", 192, 3)
    n.pool("maxpool2", 3, 2)

    def block_a(p, pool_features):
        x = n.shape
        n.conv(p + "branch1x1", 64, 1, shape=x)
        n.conv(p + "branch5x5_1", 48, 1, shape=x)
        n.conv(p + "branch5x5_2", 64, 5, pad=2)
        n.conv(p + "branch3x3dbl_1", 64, 1, shape=x)
        n.conv(p + "branch3x3dbl_2", 96, 3, pad=1)
        n.conv(p + "branch3x3dbl_3", 96, 3, pad=1)
        n.pool(p + "avgpool", 3, 1, pad=1, shape=x)
        n.conv(p + "branch_pool", pool_features, 1)
        n.shape = (64 + 64 + 96 + pool_features, x[1], x[2])

    def block_b(p):
        x = n.shape
        _, h, w = n.conv(p + "branch3x3", 384, 3, stride=2, shape=x)
        n.conv(p + "branch3x3dbl_1", 64, 1, shape=x)
        n.conv(p + "branch3x3dbl_2", 96, 3, pad=1)
        n.conv(p + "branch3x3dbl_3", 96, 3, stride=2)
        n.pool(p + "maxpool", 3, 2, shape=x)
        n.shape = (384 + 96 + x[0], h, w)

    def block_c(p, c7):
        x = n.shape
        n.conv(p + "branch1x1", 192, 1, shape=x)
        n.conv(p + "branch7x7_1", c7, 1, shape=x)
        n.conv(p + "branch7x7_2", c7, (1, 7), pad=(0, 3))
        n.conv(p + "branch7x7_3", 192, (7, 1), pad=(3, 0))
        n.conv(p + "branch7x7dbl_1", c7, 1, shape=x)
        n.conv(p + "branch7x7dbl_2", c7, (7, 1), pad=(3, 0))
        n.conv(p + "branch7x7dbl_3", c7, (1, 7), pad=(0, 3))
        n.conv(p + "branch7x7dbl_4", c7, (7, 1), pad=(3, 0))
        n.conv(p + "branch7x7dbl_5", 192, (1, 7), pad=(0, 3))
        n.pool(p + "avgpool", 3, 1, pad=1, shape=x)
        n.conv(p + "branch_pool", 192, 1)
        n.shape = (768, x[1], x[2])

    def block_d(p):
        x = n.shape
        n.conv(p + "branch3x3_1", 192, 1, shape=x)
        _, h, w = n.conv(p + "branch3x3_2", 320, 3, stride=2)
        n.conv(p + "branch7x7x3_1", 192, 1, shape=x)
        n.conv(p + "branch7x7x3_2", 192, (1, 7), pad=(0, 3))
        n.conv(p + "branch7x7x3_3", 192, (7, 1), pad=(3, 0))
        n.conv(p + "branch7x7x3_4", 192, 3, stride=2)
        n.pool(p + "maxpool", 3, 2, shape=x)
        n.shape = (320 + 192 + x[0], h, w)

    def block_e(p):
        x = n.shape
        n.conv(p + "branch1x1", 320, 1, shape=x)
        y = n.conv(p + "branch3x3_1", 384, 1, shape=x)
        n.conv(p + "branch3x3_2a", 384, (1, 3), pad=(0, 1), shape=y)
        n.conv(p + "branch3x3_2b", 384, (3, 1), pad=(1, 0), shape=y)
        n.conv(p + "branch3x3dbl_1", 448, 1, shape=x)
        y = n.conv(p + "branch3x3dbl_2", 384, 3, pad=1)
        n.conv(p + "branch3x3dbl_3a", 384, (1, 3), pad=(0, 1), shape=y)
        n.conv(p + "branch3x3dbl_3b", 384, (3, 1), pad=(1, 0), shape=y)
        n.pool(p + "avgpool", 3, 1, pad=1, shape=x)
        n.conv(p + "branch_pool", 192, 1)
        n.shape = (320 + 768 + 768 + 192, x[1], x[2])

    assert n.shape == (192, 35, 35)
    block_a("Mixed_5b.", 32)
    block_a("Mixed_5c.", 64)
    block_a("Mixed_5d.", 64)
    assert n.shape == (288, 35, 35)
    block_b("Mixed_6a.")
    assert n.shape == (768, 17, 17)
    block_c("Mixed_6b.", 128)
    block_c("Mixed_6c.", 160)
    block_c("Mixed_6d.", 160)
    block_c("Mixed_6e.", 192)
    x = n.shape
    n.pool("aux.avgpool", 5, 3, shape=x)
    n.conv("aux.conv0", 128, 1)
    n.conv("aux.conv1", 768, 5)
    assert n.shape == (768, 1, 1)
    n.fc("aux.fc", 1000)
    n.shape = x
    block_d("Mixed_7a.")
    assert n.shape == (1280, 8, 8)
    block_e("Mixed_7b.")
    block_e("Mixed_7c.")
    assert n.shape == (2048, 8, 8)
    n.global_pool("avgpool")
    n.fc("fc", 1000)
    return n


# --- transformers -------------------------------------------------------------

def attention_block(t, p, s, d, heads, pre_ln):
    """One transformer block of width d on s tokens: fused Q,K,V projection,
    scores Q K^T (heads x s x s), softmax, context scores x V, output
    projection, residual add, then the MLP d -> 4d -> d with GELU and its
    residual add.  Each layer norm (2d parameters) has a line, before the
    attention and the MLP (pre-LN, GPT-2) or after each residual add
    (post-LN, BERT).  Dropout (on the probabilities and before each add)
    runs in the softmax and add kernels and has no line.  The attention
    matmuls are counted over the full s x s matrix, as dense kernels compute
    it, also where a causal mask discards half of it."""
    ln = 2 * d
    if pre_ln:
        t.add(p + "ln_1", ln, 0, s * d, "norm")
    t.add(p + "attn.qkv", 3 * d * d + 3 * d, 2 * s * d * 3 * d, 3 * s * d, "gemm")
    t.add(p + "attn.score", 0, 2 * s * s * d, heads * s * s, "attention")
    t.add(p + "attn.softmax", 0, 0, heads * s * s, "elementwise")
    t.add(p + "attn.context", 0, 2 * s * s * d, s * d, "attention")
    t.add(p + "attn.proj", d * d + d, 2 * s * d * d, s * d, "gemm")
    t.add(p + "attn.add", 0, 0, s * d, "elementwise")
    if pre_ln:
        t.add(p + "ln_2", ln, 0, s * d, "norm")
    else:
        t.add(p + "attn.ln", ln, 0, s * d, "norm")
    t.add(p + "mlp.fc", d * 4 * d + 4 * d, 2 * s * d * 4 * d, 4 * s * d, "gemm")
    t.add(p + "mlp.gelu", 0, 0, 4 * s * d, "elementwise", "output")
    t.add(p + "mlp.proj", 4 * d * d + d, 2 * s * 4 * d * d, s * d, "gemm")
    t.add(p + "mlp.add", 0, 0, s * d, "elementwise")
    if not pre_ln:
        t.add(p + "mlp.ln", ln, 0, s * d, "norm")


def bert_large(s=128, masked=20, name="bert-large"):
    """BERT-large (Devlin et al. 2019, Section 3): L=24, H=1024, A=16, FFN
    4096, WordPiece vocabulary 30522, 512 positions, 2 segment types; with
    the pre-training heads: pooler, masked-LM head (dense + LN, decoder tied
    to the word embeddings with its own bias) on the `masked` predicted
    positions, next-sentence classifier."""
    L, d, heads, vocab, npos = 24, 1024, 16, 30522, 512
    t = Table(name, 2 * s)
    t.add("embed", vocab * d + npos * d + 2 * d, 0, s * d, "embedding")
    t.add("embed.ln", 2 * d, 0, s * d, "norm")
    for i in range(L):
        attention_block(t, "enc.%d." % i, s, d, heads, pre_ln=False)
    t.add("pooler", d * d + d, 2 * d * d, d, "gemm")
    t.add("mlm.transform", d * d + d, 2 * masked * d * d, masked * d, "gemm")
    t.add("mlm.transform.ln", 2 * d, 0, masked * d, "norm")
    t.add("mlm.decoder", vocab, 2 * masked * d * vocab, masked * vocab, "gemm")
    t.add("mlm.loss", 0, 0, masked * vocab, "elementwise")
    t.add("nsp", 2 * d + 2, 2 * d * 2, 2, "gemm")
    t.seq, t.L, t.d, t.vocab, t.masked = s, L, d, vocab, masked
    return t


def bert_large_squad(s=384):
    """BERT-large fine-tuned for SQuAD question answering (Devlin et al.
    2019, Section 4.2): the encoder of bert_large with the span head (a
    linear layer d -> 2 giving start and end logits per token) instead of
    the pre-training heads; every sequence padded to s tokens, as the
    reference fine-tuning feeds them."""
    L, d, heads, vocab, npos = 24, 1024, 16, 30522, 512
    t = Table("bert-large-squad", 2 * s)
    t.add("embed", vocab * d + npos * d + 2 * d, 0, s * d, "embedding")
    t.add("embed.ln", 2 * d, 0, s * d, "norm")
    for i in range(L):
        attention_block(t, "enc.%d." % i, s, d, heads, pre_ln=False)
    t.add("qa_outputs", 2 * d + 2, 2 * s * d * 2, 2 * s, "gemm")
    t.add("qa.loss", 0, 0, 2 * s, "elementwise")
    t.seq, t.L, t.d = s, L, d
    return t


def gpt2(name, L, d, heads, s=1024, vocab=50257, npos=1024):
    """GPT-2 (Radford et al. 2019; sizes from the released checkpoints):
    pre-LN blocks, BPE vocabulary 50257, 1024 positions, final layer norm,
    LM head tied to the token embedding.  Megatron-LM's GPT is the same
    network with its own vocabulary (padded to 51200) and context."""
    t = Table(name, s)
    t.add("embed", vocab * d + npos * d, 0, s * d, "embedding")
    for i in range(L):
        attention_block(t, "h.%d." % i, s, d, heads, pre_ln=True)
    t.add("ln_f", 2 * d, 0, s * d, "norm")
    t.add("lm_head", 0, 2 * s * d * vocab, s * vocab, "gemm")
    t.add("lm_loss", 0, 0, s * vocab, "elementwise")
    t.seq, t.L, t.d, t.vocab = s, L, d, vocab
    return t


# --- output -------------------------------------------------------------------

def g(x):
    return "%.4g" % x


def write(t, outdir, describe):
    path = os.path.join(outdir, t.name + ".txt")
    with open(path, "w") as f:
        f.write("# %s: timing-only layer table for dtsim (docs/workloads.md).\n" % t.name)
        f.write("# Generated by tools/workloads.py from the architecture; do not edit.\n#\n")
        for line in describe:
            f.write(("# " + line).rstrip() + "\n")
        f.write("#\n# Columns, per sample: NAME PARAMS FWD_FLOPS ACTIVATIONS KIND [KEEP]\n"
                "#   PARAMS float32 parameters, FWD_FLOPS forward FLOPs (a multiply-add\n"
                "#   counts 2), ACTIVATIONS floats of the layer's output, KIND what its\n"
                "#   kernels are: gemm, conv, attention, elementwise, norm or embedding;\n"
                "#   KEEP what backward keeps of the output where the default (an\n"
                "#   element-wise line as wide as its input in place, else output)\n"
                "#   is not what frameworks do: output, inplace or none.\n"
                "# Counted: multiply-adds of conv, linear and attention matmuls only;\n"
                "# normalisation, activation, softmax, residual adds, pooling and\n"
                "# lookups have lines of their own (their memory traffic is most of\n"
                "# their cost) with 0 FLOPs.\n#\n")
        f.write("# Totals: %d layers (%s), %d parameters,\n"
                "#   %d forward FLOPs per sample (%s multiply-adds),\n"
                "#   %d activation floats per sample, %d of them kept for backward.\n#\n"
                % (len(t.rows), t.kinds(), t.params(), t.flops(), g(t.flops() / 2),
                   t.activations(), t.kept()))
        f.write("# Floats per sample the first layer reads:\n# input %d\n\n" % t.input_floats)
        width = max(len(r[0]) for r in t.rows)
        for r in t.rows:
            f.write(("%-*s %d %d %d %s %s" % (width, r[0], r[1], r[2], r[3], r[4], r[5]))
                    .rstrip() + "\n")
    return path


def pct(mine, ref):
    return "%+.2f%%" % (100.0 * (mine - ref) / ref)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "scenarios", "workloads")
    os.makedirs(outdir, exist_ok=True)
    summary = []

    for name, title, blocks, paper_macs, tv_params, tv_macs in (
            ("resnet-50", "ResNet-50", (3, 4, 6, 3), 3.8e9, 25557032, 4.089e9),
            ("resnet-101", "ResNet-101", (3, 4, 23, 3), 7.6e9, 44549160, 7.801e9)):
        t = resnet(name, blocks)
        v1 = resnet(name, blocks, stride_in_3x3=False)
        write(t, outdir, [
            "%s v1.5, as torchvision and NVIDIA/MLPerf train it: bottleneck" % title,
            "blocks %s, stride 2 in the 3x3 conv of the first block of stages 3-5."
            % "-".join(map(str, blocks)),
            "Input 3 x 224 x 224; 1000 classes.  Every conv is followed by its batch",
            "norm (gamma/beta on the bn line) and, but conv3 and the shortcut, ReLU;",
            "the projection shortcut is the 'downsample' line after conv3 of each",
            "stage's first block; each block ends with the residual add and ReLU.",
            "Max pool after conv1 and global average pool before fc have lines.",
            "",
            "Published: He et al. 2016, Table 1: %s FLOPs (multiply-adds) for the" % g(paper_macs),
            "original v1 (stride in the first 1x1 conv), which this generator gives as",
            "%s multiply-adds (%s); v1.5 adds the cost of running the first 1x1 of"
            % (g(v1.flops() / 2), pct(v1.flops() / 2, paper_macs)),
            "three blocks at full resolution.  torchvision v1.5: %d params, %s"
            % (tv_params, g(tv_macs)),
            "multiply-adds.  Here: %s params, %s multiply-adds (%s)."
            % (pct(t.params(), tv_params), g(t.flops() / 2), pct(t.flops() / 2, tv_macs)),
        ])
        summary.append((name, t.params(), tv_params, t.flops() / 2, tv_macs,
                        "v1 %s vs paper %s" % (g(v1.flops() / 2), g(paper_macs))))

    t = vgg16()
    write(t, outdir, [
        "VGG-16, configuration D of Simonyan & Zisserman 2015 (Table 1): thirteen",
        "3x3 convs (pad 1, with bias, no batch norm), five 2x2 max pools, fully",
        "connected 25088-4096-4096-1000.  Input 3 x 224 x 224.  Every ReLU and",
        "pool has a line; dropout (in the fully connected part) has none.",
        "",
        "Published: Simonyan & Zisserman 2015, Table 2: 138M parameters (D).",
        "torchvision vgg16: 138357544 params, 15.47e9 multiply-adds.  Here: %s"
        % pct(t.params(), 138357544),
        "params, %s multiply-adds (%s)." % (g(t.flops() / 2), pct(t.flops() / 2, 15.47e9)),
    ])
    summary.append(("vgg-16", t.params(), 138357544, t.flops() / 2, 15.47e9, "paper: 138M params"))

    t = inception_v3()
    aux_p, aux_f = t.params("aux."), t.flops("aux.")
    write(t, outdir, [
        "Inception-v3 (Szegedy et al. 2016) as torchvision builds it: every conv",
        "is conv without bias + BN + ReLU, each with a line.  Input",
        "3 x 299 x 299; 1000 classes.  The auxiliary classifier on the 17x17",
        "grid (lines 'aux.*', after Mixed_6e as torchvision runs it) is included:",
        "it runs and is trained in every training step.  Branch convs of an",
        "Inception module are listed branch after branch; each module's",
        "avg/max pool branch has a line.",
        "",
        "Without aux: %d params, %s multiply-adds; aux adds %d params,"
        % (t.params() - aux_p, g((t.flops() - aux_f) / 2), aux_p),
        "%s multiply-adds." % g(aux_f / 2),
        "Published: Szegedy et al. 2016, abstract: '5 billion multiply-adds per",
        "inference' and 'less than 25 million parameters' (no aux).  torchvision:",
        "27161264 params with aux, 5.713e9 multiply-adds (inference, no aux).",
        "Here with aux: %s params vs torchvision; without aux %s"
        % (pct(t.params(), 27161264), g((t.flops() - aux_f) / 2)),
        "multiply-adds (%s vs torchvision)." % pct((t.flops() - aux_f) / 2, 5.713e9),
    ])
    summary.append(("inception-v3", t.params(), 27161264, (t.flops() - aux_f) / 2, 5.713e9,
                    "no aux: %d params" % (t.params() - aux_p)))

    t = bert_large()
    s, L, d, V = t.seq, t.L, t.d, t.vocab
    narayanan = 24 * L * s * d * d * (1 + s / (6.0 * d))
    encoder = t.params() - t.params("mlm.") - t.params("nsp")
    write(t, outdir, [
        "BERT-large (Devlin et al. 2019): L=24, H=1024, A=16, FFN 4096, vocabulary",
        "30522, 512 positions, 2 segment types, post-LN.  Sequence length %d" % s,
        "(pre-training phase 1), masked-LM head on %d predicted positions per" % t.masked,
        "sequence (max_predictions_per_seq of the reference pre-training at 128).",
        "Per block: fused Q,K,V projection, scores (16 x s x s), context, output",
        "projection (+ LN), FFN in, FFN out (+ LN).  'embed' holds word, position",
        "and segment embeddings and their LN; lookups count 0 FLOPs.  The MLM",
        "decoder is tied to the word embedding: its line holds only its bias.",
        "Input: token ids and segment ids, 2 x %d values per sample." % s,
        "",
        "Published: Devlin et al. 2019, Section 3: 340M parameters.  Here: %d" % t.params(),
        "(%s); encoder + pooler alone %d.  Forward FLOPs of the 24 blocks"
        % (pct(t.params(), 340e6), encoder),
        "match Narayanan et al. 2021 (24 B s l h^2 (1 + s/6h) per pass) exactly:",
        "%s; the pooler and pre-training heads add %s." % (g(narayanan), g(t.flops() - narayanan)),
    ])
    summary.append(("bert-large", t.params(), 340e6, t.flops() / 2, narayanan / 2,
                    "s=128; ref FLOPs = Narayanan blocks"))

    t = bert_large(s=512, masked=80, name="bert-large-512")
    s, L, d = t.seq, t.L, t.d
    narayanan = 24 * L * s * d * d * (1 + s / (6.0 * d))
    write(t, outdir, [
        "BERT-large at sequence length %d (pre-training phase 2): the model of" % s,
        "bert-large.txt with %d masked-LM predictions per sequence" % t.masked,
        "(max_predictions_per_seq of the reference pre-training at 512).",
        "Input: token ids and segment ids, 2 x %d values per sample." % s,
        "",
        "Forward FLOPs of the 24 blocks (Narayanan et al. 2021, 24 B s l h^2",
        "(1 + s/6h)): %s; the pooler and pre-training heads add %s."
        % (g(narayanan), g(t.flops() - narayanan)),
    ])
    summary.append(("bert-large-512", t.params(), 340e6, t.flops() / 2, narayanan / 2,
                    "s=512; ref FLOPs = Narayanan blocks"))

    for name, title, L, d, heads, paper, release in (
            ("gpt-2", "GPT-2 small", 12, 768, 12, 117e6, 124e6),
            ("gpt-2-xl", "GPT-2 XL", 48, 1600, 25, 1542e6, 1558e6)):
        t = gpt2(name, L, d, heads)
        s, V = t.seq, t.vocab
        narayanan = 24 * L * s * d * d * (1 + s / (6.0 * d) + V / (12.0 * L * d))
        nonembed = t.params() - t.params("embed")
        write(t, outdir, [
            "%s (Radford et al. 2019): %d pre-LN blocks of width %d, %d heads," % (title, L, d, heads),
            "BPE vocabulary 50257, context 1024; sequence length %d." % s,
            "Each layer norm has its line (ln_1 and ln_2 in every block, ln_f at the",
            "end).  'embed' holds token and position embeddings",
            "(lookups count 0 FLOPs); lm_head is tied to the token embedding, so",
            "it has FLOPs (2 s d V) but no parameters of its own.  Attention",
            "matmuls counted over the full s x s matrix (no causal halving).",
            "Input: %d token ids per sample." % s,
            "",
            "Published: Radford et al. 2019, Table 2 gives %dM; the openai/gpt-2" % (paper / 1e6),
            "README says the paper's counts were wrong, and the released checkpoint",
            "is named %dM.  Here: %d (%s vs %dM, %s vs the paper);"
            % (release / 1e6, t.params(), pct(t.params(), release), release / 1e6,
               pct(t.params(), paper)),
            "non-embedding %d." % nonembed,
            "Forward FLOPs equal Narayanan et al. 2021's count (24 B s l h^2 (1 +",
            "s/6h + V/(12 l h)) per pass, its F/3 without recomputation): %s." % g(narayanan),
            "Kaplan et al. 2020, Table 1 (C_forward = 2N + 2 n_layer n_ctx d per",
            "token, N non-embedding, no LM head): %s per sample."
            % g(s * (2 * nonembed + 2 * L * s * d)),
        ])
        summary.append((name, t.params(), release, t.flops() / 2, narayanan / 2,
                        "ref FLOPs = Narayanan"))

    t = bert_large_squad()
    s, L, d = t.seq, t.L, t.d
    narayanan = 24 * L * s * d * d * (1 + s / (6.0 * d))
    write(t, outdir, [
        "BERT-large fine-tuned on SQuAD (Devlin et al. 2019, Section 4.2): the",
        "encoder of bert-large.txt at sequence length %d (every sequence padded" % s,
        "to it) and the span head (start and end logits per token) in place of",
        "the pre-training heads.  Input: token ids and segment ids, 2 x %d." % s,
        "",
        "Forward FLOPs of the 24 blocks (Narayanan et al. 2021, 24 B s l h^2",
        "(1 + s/6h)): %s; the span head adds %s." % (g(narayanan), g(t.flops() - narayanan)),
    ])
    summary.append(("bert-large-squad", t.params(), 335e6, t.flops() / 2, narayanan / 2,
                    "s=384; ref FLOPs = Narayanan blocks"))

    # Megatron-LM's 1.7B GPT (Narayanan et al. 2021, Table 1 / the Megatron-LM
    # README's weak-scaling table): 24 layers of width 2304, 24 heads,
    # vocabulary padded to 51200, sequence length 2048.
    L, d, heads, s, V = 24, 2304, 24, 2048, 51200
    t = gpt2("gpt-1.7b", L, d, heads, s=s, vocab=V, npos=s)
    narayanan = 24 * L * s * d * d * (1 + s / (6.0 * d) + V / (12.0 * L * d))
    write(t, outdir, [
        "GPT of 1.7B parameters as Megatron-LM trains it (Narayanan et al. 2021,",
        "the first row of their weak-scaling table): %d pre-LN blocks of width %d," % (L, d),
        "%d heads, vocabulary 51200 (GPT-2's BPE padded), learned positions and" % heads,
        "sequence length %d; LM head tied to the token embedding.  Layer lines" % s,
        "as in gpt-2.txt.  Input: %d token ids per sample." % s,
        "",
        "Here: %d parameters (the paper's 1.7B)." % t.params(),
        "Forward FLOPs equal Narayanan et al. 2021's count (24 B s l h^2 (1 +",
        "s/6h + V/(12 l h)) per pass): %s." % g(narayanan),
    ])
    summary.append(("gpt-1.7b", t.params(), 1.7e9, t.flops() / 2, narayanan / 2,
                    "ref FLOPs = Narayanan"))

    print("%-13s %14s %14s %8s %12s %12s %8s  %s"
          % ("network", "params", "published", "diff", "fwd MACs", "reference", "diff", "note"))
    for name, p, pp, f, fp, note in summary:
        print("%-13s %14d %14d %8s %12s %12s %8s  %s"
              % (name, p, pp, pct(p, pp), g(f), g(fp), pct(f, fp), note))


if __name__ == "__main__":
    main()
