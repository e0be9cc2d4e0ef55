/**
 * Issue 31's attention and normalisation layers against PyTorch's goldens (make_goldens_surface_nn.py):
 * `F.scaledDotProductAttention`, `nn.MultiheadAttention`, `nn.TransformerEncoderLayer`/`Encoder`, `nn.TransformerDecoderLayer`/`Decoder`, `nn.Transformer`,
 * `F.groupNorm`, `F.rmsNorm`, `F.leakyRelu`, `F.interpolate`, `nn.ConvTranspose1d`/`2d`: outputs and gradients on cpu, gpu:0
 * (and a few on gpu:1), then the refusals PyTorch makes.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';
import { checkCase, GOLDENS } from './surface-goldens.js';

const { nn, F } = torch;
logicalGpuSuite(2, 'surface-nn');

const KINDS = ['sdpa', 'mha', 'encoder', 'decoder', 'transformer', 'group_norm', 'rms_norm', 'leaky_relu', 'interpolate', 'convt'];
const cases = GOLDENS.cases.filter((c) => KINDS.includes(c.kind));
const ON_GPU1 = new Set(['sdpa-bool-mask', 'mha-key-padding', 'encoder-post-relu', 'group-norm-affine', 'interp-bilinear-{"scaleFactor": 1.7}', 'convt2d-stride-pad-outpad', 'transformer']);

describe.each(['cpu', 'gpu:0', 'gpu:1'])('goldens on %s', (device) => {
  const mine = device === 'gpu:1' ? cases.filter((c) => ON_GPU1.has(c.id)) : cases;
  it.each(mine.map((c) => [c.id, c] as const))('%s', async (_id, c) => {
    await checkCase(c, device);
  });
});

describe('refusals', () => {
  const q = () => torch.randn([2, 4, 8]);
  it('scaledDotProductAttention: a mask of the wrong shape names the shapes', () => {
    const [a, m] = [q(), torch.ones([3, 5], { dtype: 'bool' })];
    expect(() => F.scaledDotProductAttention(a, a, a, m)).toThrow(/attn_mask of shape \[3, 5\].*\[2, 4, 4\]/);
    a.dispose();
    m.dispose();
  });
  it('scaledDotProductAttention: isCausal with a mask', () => {
    const [a, m] = [q(), torch.ones([4, 4], { dtype: 'bool' })];
    expect(() => F.scaledDotProductAttention(a, a, a, m, 0, true)).toThrow('Explicit attn_mask should not be set when is_causal=True');
    expect(() => F.scaledDotProductAttention(a, a, a, { isCasual: true } as never)).toThrow("unexpected keyword argument 'isCasual'");
    a.dispose();
    m.dispose();
  });
  it('MultiheadAttention: embed_dim must be divisible by num_heads; unknown options; mask shapes', () => {
    expect(() => new nn.MultiheadAttention(10, 3)).toThrow('embed_dim must be divisible by num_heads');
    expect(() => new nn.MultiheadAttention(8, 2, { batch_first: true } as never)).toThrow("unexpected keyword argument 'batch_first'");
    const m = new nn.MultiheadAttention(8, 2);
    const x = torch.randn([4, 2, 8]), bad = torch.zeros([4, 3], { dtype: 'bool' });
    expect(() => m(x, x, x, { attnMask: bad })).toThrow('The shape of the 2D attn_mask is [4, 3], but should be [4, 4].');
    expect(() => m(x, x, x, { needWeight: false })).toThrow("unexpected keyword argument 'needWeight'");
    [x, bad, ...m.parameters()].forEach((t) => t.dispose());
  });
  it('TransformerEncoderLayer: unknown activation and options', () => {
    expect(() => new nn.TransformerEncoderLayer(8, 2, { activation: 'tanh' as never })).toThrow('activation should be relu/gelu, not tanh');
    expect(() => new nn.TransformerEncoderLayer(8, 2, { dim_feedforward: 4 } as never)).toThrow("unexpected keyword argument 'dim_feedforward'");
  });
  it('GroupNorm and interpolate refuse what PyTorch refuses', () => {
    expect(() => new nn.GroupNorm(4, 6)).toThrow('num_channels must be divisible by num_groups');
    const x = torch.randn([2, 6, 3]);
    expect(() => F.groupNorm(x, 4)).toThrow(/divisible by num_groups, but got input of shape \[2, 6, 3\] and num_groups=4/);
    expect(() => F.interpolate(x, { size: 4, scaleFactor: 2 })).toThrow('only one of size or scale_factor should be defined');
    expect(() => F.interpolate(x, { scaleFactor: 2, alignCorners: true })).toThrow('align_corners option can only be set with the interpolating modes');
    expect(() => F.interpolate(x, { scaleFactor: 2, mode: 'bilinear' })).toThrow('Got 3D input, but bilinear mode needs 4D input');
    const w = torch.ones([4, 2, 3]);
    expect(() => F.convTranspose1d(x, w)).toThrow(/weight of size \[4, 2, 3\], expected input\[2, 6, 3\] to have 4 channels, but got 6 channels instead/);
    const x4 = torch.ones([1, 4, 3]);
    expect(() => F.convTranspose1d(x4, w, { stride: 2, outputPadding: 2 })).toThrow('output padding must be smaller than either stride or dilation');
    [x, w, x4].forEach((t) => t.dispose());
  });
});

describe('Transformer.generateSquareSubsequentMask', () => {
  it('-inf above the diagonal, 0 elsewhere', async () => {
    const m = nn.Transformer.generateSquareSubsequentMask(3);
    expect(await m.tolist()).toEqual([[0, -Infinity, -Infinity], [0, 0, -Infinity], [0, 0, 0]]);
    expect(() => nn.Transformer.generateSquareSubsequentMask(3, { dtyp: 'float32' } as never)).toThrow("unexpected keyword argument 'dtyp'");
    m.dispose();
  });
});

describe('attention dropout', () => {
  it('scaledDotProductAttention drops weights whenever dropoutP > 0 (seeded: repeatable); MHA only in training', async () => {
    const q = torch.randn([2, 3, 4]);
    const all = F.scaledDotProductAttention(q, q, q, null, 1);
    expect(((await all.tolist()) as number[][][]).flat(2).every((v) => v === 0)).toBe(true);
    torch.manualSeed(5);
    const a = F.scaledDotProductAttention(q, q, q, { dropoutP: 0.5 });
    torch.manualSeed(5);
    const b = F.scaledDotProductAttention(q, q, q, { dropoutP: 0.5 });
    const plain = F.scaledDotProductAttention(q, q, q);
    expect(await a.tolist()).toEqual(await b.tolist());
    expect(await a.tolist()).not.toEqual(await plain.tolist());
    const m = new nn.MultiheadAttention(4, 2, { dropout: 1, batchFirst: true });
    const [oTrain, wTrain] = m(q, q, q);
    expect(((await wTrain!.tolist()) as number[][][]).flat(2).every((v) => v === 0)).toBe(true);
    m.eval();
    const [oEval, wEval] = m(q, q, q);
    const rows = (await wEval!.tolist()) as number[][][];
    rows.flat().forEach((r) => expect(r.reduce((x, y) => x + y, 0)).toBeCloseTo(1, 5));
    [q, all, a, b, plain, oTrain, wTrain!, oEval, wEval!, ...m.parameters()].forEach((t) => t.dispose());
  });
});

describe('modules', () => {
  it('Identity returns its input; LeakyReLU, Upsample and RMSNorm run their functional forms', async () => {
    const x = torch.tensor([[-2, 0.5], [1, -1]]);
    expect(new nn.Identity(3, { any: 1 })(x)).toBe(x);
    const y = new nn.LeakyReLU(0.1)(x);
    expect(await y.tolist()).toEqual([[-0.2 * 1.0000000298023224, 0.5], [1, -0.10000000149011612]].map((r) => r.map((v) => Math.fround(v))));
    const img = x.reshape([1, 1, 2, 2]);
    const up = new nn.Upsample({ scaleFactor: 2 })(img);
    expect(await up.tolist()).toEqual([[[[-2, -2, 0.5, 0.5], [-2, -2, 0.5, 0.5], [1, 1, -1, -1], [1, 1, -1, -1]]]]);
    const norm = new nn.RMSNorm(2);
    expect(Object.keys(norm.stateDict())).toEqual(['weight']);
    const r = norm(x);
    const want = [[-2, 0.5], [1, -1]].map((row) => row.map((v) => v / Math.sqrt((row[0] ** 2 + row[1] ** 2) / 2 + 1.1920928955078125e-7)));
    (await r.tolist() as number[][]).flat().forEach((v, i) => expect(v).toBeCloseTo(want.flat()[i], 5));
    const g = new nn.GroupNorm(2, 4);
    expect(Object.keys(g.stateDict())).toEqual(['weight', 'bias']);
    [x, y, img, up, r, ...norm.parameters(), ...g.parameters()].forEach((t) => t.dispose());
  });
});
