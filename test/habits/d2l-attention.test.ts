/**
 * Dive into Deep Learning, chapter 11 (Attention Mechanisms and Transformers, PyTorch version),
 * line by line (issue 31): each PyTorch line as a comment above its translation, as in
 * d2l-gpus.test.ts. 11.2 attention pooling by similarity (the kernels, `nadaraya_watson`), 11.3
 * scoring functions (`masked_softmax`, `DotProductAttention`, `AdditiveAttention`), 11.5
 * `MultiHeadAttention`, 11.6 `PositionalEncoding`, 11.7 the Transformer encoder, and a few
 * training steps of that encoder on a toy task. On `cpu` and `gpu:0`.
 *
 * What the translation adds to the chapter's lines: `{device}` on the tensors the chapter makes
 * (the chapter runs on the default device; webtorch has no `torch.set_default_device`), `.to(device)`
 * on the modules, `torch.tidy` around each call (the chapter's `forward`s are as they are, so
 * the intermediate tensors belong to the caller's `tidy`), and disposal of what a test keeps.
 * d2l's plotting (`d2l.plot`, `d2l.show_heatmaps`, `plt`) is replaced by checks on the values.
 *
 * Where webtorch differs from the chapter's PyTorch (each noted where it happens):
 *  - Fixed since this test was written, and written here as the chapter has them: `torch.max(a, b)`
 *    (elementwise), `F.softmax(X, {dim: -1})`, `x[None, :]` as `x.index(null, ':')`, iterating an
 *    `nn.Sequential`.
 *  - `X[~mask] = value`: `~` is `bitwiseNot()` (no `~` operator; on a bool mask it is `logicalNot()`, used here), and `X[m] = v` is
 *    `X.indexPut_(m, v)` (what PyTorch's `__setitem__` runs for a bool mask).
 *  - `P[:, :, 0::2] = torch.sin(X)`: `P.index(':', ':', '0::2')` is a view, so `.copy_(…)` into it
 *    is `__setitem__` exactly.
 *  - State a `forward` keeps on the module (`self.attention_weights`) is a tensor that the caller's
 *    `torch.tidy` disposes unless the caller returns it from the `tidy`; a view (`P[0, :, 6:10]`)
 *    keeps its base's storage alive until the view is disposed too.
 *  - Fixed too: backward through `masked_softmax`'s in-place write after `scores / math.sqrt(d)`
 *    (webtorch's `div` saved its output even when the divisor needed no gradient).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

type Tensor = torch.Tensor;
const { nn, F } = torch;
logicalGpuSuite(1, 'd2l attention');

/** The values of `t`, as numbers. */
async function vals(t: Tensor): Promise<number[]> {
  return Array.from(await t.data(), Number);
}

/** The values of the tensor `fn` makes inside a `torch.tidy`; the tensor is disposed after the read. */
async function read(fn: () => Tensor): Promise<number[]> {
  const t = torch.tidy(fn);
  try {
    return await vals(t);
  } finally {
    t.dispose();
  }
}

/** Element by element: the values of `t` (or of the tensor `t()` makes, see `read`) are `expected` to `digits` decimal places. */
async function expectClose(t: Tensor | (() => Tensor), expected: number[], digits = 5): Promise<void> {
  expect(t instanceof torch.Tensor ? await vals(t) : await read(t)).toEqual(expected.map((v) => expect.closeTo(v, digits)));
}

// ---------------------------------------------------------------- 11.2 attention pooling by similarity

// def gaussian(x):
//     return torch.exp(-x**2 / 2)
function gaussian(x: Tensor): Tensor {
  return torch.exp(x.pow(2).neg().div(2));
}

// def boxcar(x):
//     return torch.abs(x) < 1.0
function boxcar(x: Tensor): Tensor {
  return torch.abs(x).lt(1.0);
}

// def constant(x):
//     return 1.0 + 0 * x
function constant(x: Tensor): Tensor {
  return x.mul(0).add(1.0);
}

// def epanechikov(x):
//     return torch.max(1 - torch.abs(x), torch.zeros_like(x))
function epanechikov(x: Tensor): Tensor {
  return torch.max(torch.abs(x).neg().add(1), torch.zerosLike(x));
}

// def f(x):
//     return 2 * torch.sin(x) + x
function f(x: Tensor): Tensor {
  return torch.sin(x).mul(2).add(x);
}

// def nadaraya_watson(x_train, y_train, x_val, kernel):
function nadarayaWatson(xTrain: Tensor, yTrain: Tensor, xVal: Tensor, kernel: (x: Tensor) => Tensor): [Tensor, Tensor] {
  //     dists = x_train.reshape((-1, 1)) - x_val.reshape((1, -1))
  const dists = xTrain.reshape([-1, 1]).sub(xVal.reshape([1, -1]));
  //     # Each column/row corresponds to each query/key
  //     k = kernel(dists).type(torch.float32)
  const k = kernel(dists).type('float32');
  //     # Normalization over keys for each query
  //     attention_w = k / k.sum(0)
  const attentionW = k.div(k.sum(0));
  //     y_hat = y_train@attention_w
  const yHat = yTrain.matmul(attentionW);
  //     return y_hat, attention_w
  return [yHat, attentionW];
}

// def gaussian_with_width(sigma):
//     return (lambda x: torch.exp(-x**2 / (2*sigma**2)))
function gaussianWithWidth(sigma: number): (x: Tensor) => Tensor {
  return (x) => torch.exp(x.pow(2).neg().div(2 * sigma ** 2));
}

// ---------------------------------------------------------------- 11.3 attention scoring functions

// def masked_softmax(X, valid_lens):  #@save
//     """Perform softmax operation by masking elements on the last axis."""
//     # X: 3D tensor, valid_lens: 1D or 2D tensor
function maskedSoftmax(X: Tensor, validLens: Tensor | null): Tensor {
  //     def _sequence_mask(X, valid_len, value=0):
  function _sequenceMask(X: Tensor, validLen: Tensor, value = 0): Tensor {
    //         maxlen = X.size(1)
    const maxlen = X.size(1) as number;
    //         mask = torch.arange((maxlen), dtype=torch.float32,
    //                             device=X.device)[None, :] < valid_len[:, None]
    const mask = torch.arange(maxlen, { dtype: 'float32', device: X.device }).index(null, ':').lt(validLen.index(':', null));
    //         X[~mask] = value
    // `~mask` is `mask.logicalNot()`; `X[bool_mask] = value` is `X.indexPut_(bool_mask, value)`, what
    // PyTorch's __setitem__ runs (`X.maskedFill_(mask.logicalNot(), value)` is the same write)
    X.indexPut_(mask.logicalNot(), value);
    //         return X
    return X;
  }

  //     if valid_lens is None:
  //         return nn.functional.softmax(X, dim=-1)
  if (validLens === null) return nn.functional.softmax(X, { dim: -1 });
  //     else:
  //         shape = X.shape
  const shape = X.shape;
  //         if valid_lens.dim() == 1:
  //             valid_lens = torch.repeat_interleave(valid_lens, shape[1])
  if (validLens.dim() === 1) validLens = torch.repeatInterleave(validLens, shape[1]);
  //         else:
  //             valid_lens = valid_lens.reshape(-1)
  else validLens = validLens.reshape(-1);
  //         # On the last axis, replace masked elements with a very large negative
  //         # value, whose exponentiation outputs 0
  //         X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
  X = _sequenceMask(X.reshape(-1, shape[shape.length - 1]), validLens, -1e6);
  //         return nn.functional.softmax(X.reshape(shape), dim=-1)
  return nn.functional.softmax(X.reshape(shape), { dim: -1 });
}

// class DotProductAttention(nn.Module):  #@save
//     """Scaled dot product attention."""
class DotProductAttention extends nn.Module {
  dropout: torch.nn.Dropout;
  attentionWeights: Tensor | null = null;

  //     def __init__(self, dropout):
  //         super().__init__()
  //         self.dropout = nn.Dropout(dropout)
  constructor(dropout: number) {
    super();
    this.dropout = new nn.Dropout(dropout);
  }

  //     # Shape of queries: (batch_size, no. of queries, d)
  //     # Shape of keys: (batch_size, no. of key-value pairs, d)
  //     # Shape of values: (batch_size, no. of key-value pairs, value dimension)
  //     # Shape of valid_lens: (batch_size,) or (batch_size, no. of queries)
  //     def forward(self, queries, keys, values, valid_lens=None):
  forward(queries: Tensor, keys: Tensor, values: Tensor, validLens: Tensor | null = null): Tensor {
    //         d = queries.shape[-1]
    const d = queries.shape[queries.shape.length - 1];
    //         # Swap the last two dimensions of keys with keys.transpose(1, 2)
    //         scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
    const scores = torch.bmm(queries, keys.transpose(1, 2)).div(Math.sqrt(d));
    //         self.attention_weights = masked_softmax(scores, valid_lens)
    // (a tensor kept on the module: the caller's tidy disposes it unless the caller returns it)
    this.attentionWeights = maskedSoftmax(scores, validLens);
    //         return torch.bmm(self.dropout(self.attention_weights), values)
    return torch.bmm(this.dropout(this.attentionWeights), values);
  }
}

// class AdditiveAttention(nn.Module):  #@save
//     """Additive attention."""
class AdditiveAttention extends nn.Module {
  W_k: torch.nn.LazyLinear;
  W_q: torch.nn.LazyLinear;
  w_v: torch.nn.LazyLinear;
  dropout: torch.nn.Dropout;
  attentionWeights: Tensor | null = null;

  //     def __init__(self, num_hiddens, dropout, **kwargs):
  //         super(AdditiveAttention, self).__init__(**kwargs)
  //         self.W_k = nn.LazyLinear(num_hiddens, bias=False)
  //         self.W_q = nn.LazyLinear(num_hiddens, bias=False)
  //         self.w_v = nn.LazyLinear(1, bias=False)
  //         self.dropout = nn.Dropout(dropout)
  constructor(numHiddens: number, dropout: number) {
    super();
    this.W_k = new nn.LazyLinear(numHiddens, { bias: false });
    this.W_q = new nn.LazyLinear(numHiddens, { bias: false });
    this.w_v = new nn.LazyLinear(1, { bias: false });
    this.dropout = new nn.Dropout(dropout);
  }

  //     def forward(self, queries, keys, values, valid_lens):
  forward(queries: Tensor, keys: Tensor, values: Tensor, validLens: Tensor | null): Tensor {
    //         queries, keys = self.W_q(queries), self.W_k(keys)
    [queries, keys] = [this.W_q(queries), this.W_k(keys)];
    //         # After dimension expansion, shape of queries: (batch_size, no. of
    //         # queries, 1, num_hiddens) and shape of keys: (batch_size, 1, no. of
    //         # key-value pairs, num_hiddens). Sum them up with broadcasting
    //         features = queries.unsqueeze(2) + keys.unsqueeze(1)
    let features = queries.unsqueeze(2).add(keys.unsqueeze(1));
    //         features = torch.tanh(features)
    features = torch.tanh(features);
    //         # There is only one output of self.w_v, so we remove the last
    //         # one-dimensional entry from the shape. Shape of scores: (batch_size,
    //         # no. of queries, no. of key-value pairs)
    //         scores = self.w_v(features).squeeze(-1)
    const scores = this.w_v(features).squeeze(-1);
    //         self.attention_weights = masked_softmax(scores, valid_lens)
    this.attentionWeights = maskedSoftmax(scores, validLens);
    //         # Shape of values: (batch_size, no. of key-value pairs, value
    //         # dimension)
    //         return torch.bmm(self.dropout(self.attention_weights), values)
    return torch.bmm(this.dropout(this.attentionWeights), values);
  }
}

// ---------------------------------------------------------------- 11.5 multi-head attention

// class MultiHeadAttention(d2l.Module):  #@save
//     """Multi-head attention."""
// (d2l.Module is nn.Module plus d2l's plotting and training hooks; nn.Module here)
class MultiHeadAttention extends nn.Module {
  numHeads: number;
  attention: DotProductAttention;
  W_q: torch.nn.LazyLinear;
  W_k: torch.nn.LazyLinear;
  W_v: torch.nn.LazyLinear;
  W_o: torch.nn.LazyLinear;

  //     def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
  //         super().__init__()
  //         self.num_heads = num_heads
  //         self.attention = d2l.DotProductAttention(dropout)
  //         self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
  //         self.W_k = nn.LazyLinear(num_hiddens, bias=bias)
  //         self.W_v = nn.LazyLinear(num_hiddens, bias=bias)
  //         self.W_o = nn.LazyLinear(num_hiddens, bias=bias)
  constructor(numHiddens: number, numHeads: number, dropout: number, bias = false) {
    super();
    this.numHeads = numHeads;
    this.attention = new DotProductAttention(dropout);
    this.W_q = new nn.LazyLinear(numHiddens, { bias });
    this.W_k = new nn.LazyLinear(numHiddens, { bias });
    this.W_v = new nn.LazyLinear(numHiddens, { bias });
    this.W_o = new nn.LazyLinear(numHiddens, { bias });
  }

  //     def forward(self, queries, keys, values, valid_lens):
  forward(queries: Tensor, keys: Tensor, values: Tensor, validLens: Tensor | null): Tensor {
    //         # Shape of queries, keys, or values:
    //         # (batch_size, no. of queries or key-value pairs, num_hiddens)
    //         # Shape of valid_lens: (batch_size,) or (batch_size, no. of queries)
    //         # After transposing, shape of output queries, keys, or values:
    //         # (batch_size * num_heads, no. of queries or key-value pairs,
    //         # num_hiddens / num_heads)
    //         queries = self.transpose_qkv(self.W_q(queries))
    queries = this.transposeQkv(this.W_q(queries));
    //         keys = self.transpose_qkv(self.W_k(keys))
    keys = this.transposeQkv(this.W_k(keys));
    //         values = self.transpose_qkv(self.W_v(values))
    values = this.transposeQkv(this.W_v(values));

    //         if valid_lens is not None:
    //             # On axis 0, copy the first item (scalar or vector) for num_heads
    //             # times, then copy the next item, and so on
    //             valid_lens = torch.repeat_interleave(
    //                 valid_lens, repeats=self.num_heads, dim=0)
    if (validLens !== null) validLens = torch.repeatInterleave(validLens, { repeats: this.numHeads, dim: 0 });

    //         # Shape of output: (batch_size * num_heads, no. of queries,
    //         # num_hiddens / num_heads)
    //         output = self.attention(queries, keys, values, valid_lens)
    const output = this.attention(queries, keys, values, validLens);
    //         # Shape of output_concat: (batch_size, no. of queries, num_hiddens)
    //         output_concat = self.transpose_output(output)
    const outputConcat = this.transposeOutput(output);
    //         return self.W_o(output_concat)
    return this.W_o(outputConcat);
  }

  // @d2l.add_to_class(MultiHeadAttention)  #@save
  // def transpose_qkv(self, X):
  // (d2l.add_to_class adds a method after the class; a TypeScript class declares it in the body)
  transposeQkv(X: Tensor): Tensor {
    //     """Transposition for parallel computation of multiple attention heads."""
    //     # Shape of input X: (batch_size, no. of queries or key-value pairs,
    //     # num_hiddens). Shape of output X: (batch_size, no. of queries or
    //     # key-value pairs, num_heads, num_hiddens / num_heads)
    //     X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
    X = X.reshape(X.shape[0], X.shape[1], this.numHeads, -1);
    //     # Shape of output X: (batch_size, num_heads, no. of queries or key-value
    //     # pairs, num_hiddens / num_heads)
    //     X = X.permute(0, 2, 1, 3)
    X = X.permute(0, 2, 1, 3);
    //     # Shape of output: (batch_size * num_heads, no. of queries or key-value
    //     # pairs, num_hiddens / num_heads)
    //     return X.reshape(-1, X.shape[2], X.shape[3])
    return X.reshape(-1, X.shape[2], X.shape[3]);
  }

  // @d2l.add_to_class(MultiHeadAttention)  #@save
  // def transpose_output(self, X):
  transposeOutput(X: Tensor): Tensor {
    //     """Reverse the operation of transpose_qkv."""
    //     X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
    X = X.reshape(-1, this.numHeads, X.shape[1], X.shape[2]);
    //     X = X.permute(0, 2, 1, 3)
    X = X.permute(0, 2, 1, 3);
    //     return X.reshape(X.shape[0], X.shape[1], -1)
    return X.reshape(X.shape[0], X.shape[1], -1);
  }
}

// ---------------------------------------------------------------- 11.6 positional encoding

// class PositionalEncoding(nn.Module):  #@save
//     """Positional encoding."""
class PositionalEncoding extends nn.Module {
  dropout: torch.nn.Dropout;
  P: Tensor;

  //     def __init__(self, num_hiddens, dropout, max_len=1000):
  constructor(numHiddens: number, dropout: number, maxLen = 1000) {
    //         super().__init__()
    super();
    //         self.dropout = nn.Dropout(dropout)
    this.dropout = new nn.Dropout(dropout);
    //         # Create a long enough P
    //         self.P = torch.zeros((1, max_len, num_hiddens))
    // (a plain tensor field, as in the chapter: not a buffer, so it stays on the cpu and forward
    // moves it; made inside a torch.tidy, the tidy would dispose it)
    this.P = torch.zeros([1, maxLen, numHiddens]);
    //         X = torch.arange(max_len, dtype=torch.float32).reshape(
    //             -1, 1) / torch.pow(10000, torch.arange(
    //             0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)
    torch.tidy(() => {
      const X = torch.arange(maxLen, { dtype: 'float32' }).reshape(-1, 1).div(torch.pow(10000, torch.arange(0, numHiddens, 2, { dtype: 'float32' }).div(numHiddens)));
      //         self.P[:, :, 0::2] = torch.sin(X)
      // P[:, :, 0::2] = v is a copy_ into the strided view P[:, :, 0::2]: `index` with a '0::2' slice
      // is that view (indexPut_ takes index tensors and a bool mask, not slices)
      this.P.index(':', ':', '0::2').copy_(torch.sin(X));
      //         self.P[:, :, 1::2] = torch.cos(X)
      this.P.index(':', ':', '1::2').copy_(torch.cos(X));
    });
  }

  //     def forward(self, X):
  forward(X: Tensor): Tensor {
    //         X = X + self.P[:, :X.shape[1], :].to(X.device)
    X = X.add(this.P.index(':', `:${X.shape[1]}`, ':').to(X.device));
    //         return self.dropout(X)
    return this.dropout(X);
  }
}

// ---------------------------------------------------------------- 11.7 the Transformer encoder

// class PositionWiseFFN(nn.Module):  #@save
//     """The positionwise feed-forward network."""
class PositionWiseFFN extends nn.Module {
  dense1: torch.nn.LazyLinear;
  relu: torch.nn.ReLU;
  dense2: torch.nn.LazyLinear;

  //     def __init__(self, ffn_num_hiddens, ffn_num_outputs):
  //         super().__init__()
  //         self.dense1 = nn.LazyLinear(ffn_num_hiddens)
  //         self.relu = nn.ReLU()
  //         self.dense2 = nn.LazyLinear(ffn_num_outputs)
  constructor(ffnNumHiddens: number, ffnNumOutputs: number) {
    super();
    this.dense1 = new nn.LazyLinear(ffnNumHiddens);
    this.relu = new nn.ReLU();
    this.dense2 = new nn.LazyLinear(ffnNumOutputs);
  }

  //     def forward(self, X):
  //         return self.dense2(self.relu(self.dense1(X)))
  forward(X: Tensor): Tensor {
    return this.dense2(this.relu(this.dense1(X)));
  }
}

// class AddNorm(nn.Module):  #@save
//     """The residual connection followed by layer normalization."""
class AddNorm extends nn.Module {
  dropout: torch.nn.Dropout;
  ln: torch.nn.LayerNorm;

  //     def __init__(self, norm_shape, dropout):
  //         super().__init__()
  //         self.dropout = nn.Dropout(dropout)
  //         self.ln = nn.LayerNorm(norm_shape)
  constructor(normShape: number | number[], dropout: number) {
    super();
    this.dropout = new nn.Dropout(dropout);
    this.ln = new nn.LayerNorm(normShape);
  }

  //     def forward(self, X, Y):
  //         return self.ln(self.dropout(Y) + X)
  forward(X: Tensor, Y: Tensor): Tensor {
    return this.ln(this.dropout(Y).add(X));
  }
}

// class TransformerEncoderBlock(nn.Module):  #@save
//     """The Transformer encoder block."""
class TransformerEncoderBlock extends nn.Module {
  attention: MultiHeadAttention;
  addnorm1: AddNorm;
  ffn: PositionWiseFFN;
  addnorm2: AddNorm;

  //     def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout,
  //                  use_bias=False):
  //         super().__init__()
  //         self.attention = d2l.MultiHeadAttention(num_hiddens, num_heads,
  //                                                 dropout, use_bias)
  //         self.addnorm1 = AddNorm(num_hiddens, dropout)
  //         self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
  //         self.addnorm2 = AddNorm(num_hiddens, dropout)
  constructor(numHiddens: number, ffnNumHiddens: number, numHeads: number, dropout: number, useBias = false) {
    super();
    this.attention = new MultiHeadAttention(numHiddens, numHeads, dropout, useBias);
    this.addnorm1 = new AddNorm(numHiddens, dropout);
    this.ffn = new PositionWiseFFN(ffnNumHiddens, numHiddens);
    this.addnorm2 = new AddNorm(numHiddens, dropout);
  }

  //     def forward(self, X, valid_lens):
  //         Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
  //         return self.addnorm2(Y, self.ffn(Y))
  forward(X: Tensor, validLens: Tensor | null): Tensor {
    const Y = this.addnorm1(X, this.attention(X, X, X, validLens));
    return this.addnorm2(Y, this.ffn(Y));
  }
}

// class TransformerEncoder(d2l.Encoder):  #@save
//     """The Transformer encoder."""
// (d2l.Encoder is an nn.Module with an abstract forward; nn.Module here)
class TransformerEncoder extends nn.Module {
  numHiddens: number;
  embedding: torch.nn.Embedding;
  posEncoding: PositionalEncoding;
  blks: torch.nn.Sequential;
  attentionWeights: (Tensor | null)[] = [];

  //     def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens,
  //                  num_heads, num_blks, dropout, use_bias=False):
  constructor(vocabSize: number, numHiddens: number, ffnNumHiddens: number, numHeads: number, numBlks: number, dropout: number, useBias = false) {
    //         super().__init__()
    super();
    //         self.num_hiddens = num_hiddens
    this.numHiddens = numHiddens;
    //         self.embedding = nn.Embedding(vocab_size, num_hiddens)
    this.embedding = new nn.Embedding(vocabSize, numHiddens);
    //         self.pos_encoding = d2l.PositionalEncoding(num_hiddens, dropout)
    this.posEncoding = new PositionalEncoding(numHiddens, dropout);
    //         self.blks = nn.Sequential()
    this.blks = new nn.Sequential();
    //         for i in range(num_blks):
    //             self.blks.add_module("block"+str(i), TransformerEncoderBlock(
    //                 num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias))
    for (let i = 0; i < numBlks; i++) this.blks.addModule('block' + String(i), new TransformerEncoderBlock(numHiddens, ffnNumHiddens, numHeads, dropout, useBias));
  }

  //     def forward(self, X, valid_lens):
  forward(X: Tensor, validLens: Tensor | null): Tensor {
    //         # Since positional encoding values are between -1 and 1, the embedding
    //         # values are multiplied by the square root of the embedding dimension
    //         # to rescale before they are summed up
    //         X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
    X = this.posEncoding(this.embedding(X).mul(Math.sqrt(this.numHiddens)));
    //         self.attention_weights = [None] * len(self.blks)
    this.attentionWeights = new Array<Tensor | null>(this.blks.length).fill(null);
    //         for i, blk in enumerate(self.blks):
    for (const [i, blk] of [...this.blks].entries()) {
      //             X = blk(X, valid_lens)
      X = blk(X, validLens);
      //             self.attention_weights[
      //                 i] = blk.attention.attention.attention_weights
      this.attentionWeights[i] = (blk as TransformerEncoderBlock).attention.attention.attentionWeights;
    }
    //         return X
    return X;
  }
}

/** Disposes a module's parameters and buffers (what PyTorch's garbage collector does when the module goes). */
function disposeModule(m: torch.nn.Module): void {
  for (const t of [...m.parameters(), ...m.buffers()]) t.dispose();
}

describe.each(['cpu', 'gpu:0'])('d2l ch. 11, attention and Transformers, on %s', (device) => {
  it('11.2 kernels and Nadaraya-Watson: weights columns sum to 1, the gaussian estimate follows f', async () => {
    torch.manualSeed(0);
    // kernels = (gaussian, boxcar, constant, epanechikov)
    // names = ('Gaussian', 'Boxcar', 'Constant', 'Epanechikov')
    const kernels = [gaussian, boxcar, constant, epanechikov];
    const names = ['Gaussian', 'Boxcar', 'Constant', 'Epanechikov'];
    // x = torch.arange(-2.5, 2.5, 0.1)
    const x = torch.arange(-2.5, 2.5, 0.1, { device });
    // for kernel, name, ax in zip(kernels, names, axes):
    //     ax.plot(x.detach().numpy(), kernel(x).detach().numpy())
    const xs = await vals(x);
    expect(xs.length).toBe(50);
    const curves = torch.tidy(() => kernels.map((kernel) => kernel(x)));
    expect(curves[1].dtype).toBe('bool'); // boxcar is a comparison, as in PyTorch
    await expectClose(curves[0], xs.map((v) => Math.exp(-(v ** 2) / 2)));
    expect(await vals(curves[1])).toEqual(xs.map((v) => (Math.abs(v) < 1 ? 1 : 0)));
    await expectClose(curves[2], xs.map(() => 1));
    await expectClose(curves[3], xs.map((v) => Math.max(1 - Math.abs(v), 0)));
    expect(names.length).toBe(kernels.length);

    // n = 40
    // x_train, _ = torch.sort(torch.rand(n) * 5)
    // y_train = f(x_train) + torch.randn(n)
    // x_val = torch.arange(0, 5, 0.1)
    // y_val = f(x_val)
    const n = 40;
    const [xTrain, yTrain, xVal, yVal] = torch.tidy(() => {
      const [xTrain] = torch.sort(torch.rand([n], { device }).mul(5));
      const yTrain = f(xTrain).add(torch.randn([n], { device }));
      const xVal = torch.arange(0, 5, 0.1, { device });
      return [xTrain, yTrain, xVal, f(xVal)];
    });
    const xt = await vals(xTrain);
    expect(xt.every((v, i) => i === 0 || v >= xt[i - 1])).toBe(true);
    const truth = await vals(yVal);

    // def plot(x_train, y_train, x_val, y_val, kernels, names, attention=False):
    //     for kernel, name, ax in zip(kernels, names, axes):
    //         y_hat, attention_w = nadaraya_watson(x_train, y_train, x_val, kernel)
    const maeOf: Record<string, number> = {};
    for (const [j, kernel] of kernels.entries()) {
      const [yHat, attentionW] = torch.tidy(() => nadarayaWatson(xTrain, yTrain, xVal, kernel));
      expect(attentionW.shape).toEqual([n, 50]);
      expect(String(attentionW.device)).toBe(device);
      // each column (a query) is a distribution over the 40 keys
      await expectClose(() => attentionW.sum(0), Array(50).fill(1), 4);
      expect(Math.min(...(await vals(attentionW)))).toBeGreaterThanOrEqual(0);
      const est = await vals(yHat);
      maeOf[names[j]] = est.reduce((s, v, i) => s + Math.abs(v - truth[i]), 0) / est.length;
      for (const t of [yHat, attentionW]) t.dispose();
    }
    // the gaussian estimate is close to f (sigma 1 smooths the bends and the ends); the constant
    // kernel's is the mean of y_train everywhere, far from it
    expect(maeOf.Gaussian).toBeLessThan(0.6);
    expect(maeOf.Gaussian).toBeLessThan(0.7 * maeOf.Constant);
    const yMean = (await vals(yTrain)).reduce((s, v) => s + v, 0) / n;
    const constHat = torch.tidy(() => nadarayaWatson(xTrain, yTrain, xVal, constant)[0]);
    await expectClose(constHat, Array(50).fill(yMean), 4);

    // sigmas = (0.1, 0.2, 0.5, 1)
    // kernels = [gaussian_with_width(sigma) for sigma in sigmas]
    // plot(x_train, y_train, x_val, y_val, kernels, names)
    const sigmas = [0.1, 0.2, 0.5, 1];
    const peaks: number[] = [];
    for (const kernel of sigmas.map(gaussianWithWidth)) {
      const peak = torch.tidy(() => nadarayaWatson(xTrain, yTrain, xVal, kernel)[1].amax(0).mean());
      peaks.push((await peak.item()) as number);
      peak.dispose();
    }
    // the narrower the kernel, the more a query's weight sits on its nearest key
    expect(peaks.every((p, i) => i === 0 || p < peaks[i - 1])).toBe(true);
    for (const t of [x, ...curves, xTrain, yTrain, xVal, yVal, constHat]) t.dispose();
  });

  it('11.3 masked_softmax: masked positions are 0, rows sum to 1, with 1-D and 2-D valid_lens', async () => {
    torch.manualSeed(1);
    // masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3]))
    const a = torch.tidy(() => maskedSoftmax(torch.rand([2, 2, 4], { device }), torch.tensor([2, 3], { device })));
    // masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]]))
    const b = torch.tidy(() => maskedSoftmax(torch.rand([2, 2, 4], { device }), torch.tensor([[1, 3], [2, 4]], { device })));
    for (const [w, lens] of [[a, [2, 2, 3, 3]], [b, [1, 3, 2, 4]]] as const) {
      expect(w.shape).toEqual([2, 2, 4]);
      const v = await vals(w);
      for (let row = 0; row < 4; row++) {
        const r = v.slice(4 * row, 4 * row + 4);
        expect(r.slice(lens[row])).toEqual(Array(4 - lens[row]).fill(0)); // exactly 0: exp(-1e6 - max) underflows
        expect(r.slice(0, lens[row]).every((p) => p > 0)).toBe(true);
        expect(r.reduce((s, p) => s + p, 0)).toBeCloseTo(1, 5);
      }
    }
    // no valid_lens: a plain softmax over the last axis
    const X = torch.rand([2, 2, 4], { device });
    const c = torch.tidy(() => maskedSoftmax(X, null));
    const ref = torch.tidy(() => F.softmax(X, -1));
    await expectClose(c, await vals(ref), 6);
    // gradients flow through the in-place masking (after a mul: see the div bug below): the masked scores get none
    const scores = torch.rand([2, 2, 4], { device, requiresGrad: true });
    const g = torch.tidy(() => {
      maskedSoftmax(scores.mul(1), torch.tensor([2, 3], { device })).mul(torch.arange(4, { dtype: 'float32', device })).sum().backward();
      return scores.grad!;
    });
    const gv = await vals(g);
    for (const [row, len] of [2, 2, 3, 3].entries()) expect(gv.slice(4 * row + len, 4 * row + 4)).toEqual(Array(4 - len).fill(0));
    expect(gv.some((v) => v !== 0)).toBe(true);
    for (const t of [a, b, X, c, ref, scores, g]) t.dispose();
  });

  it('11.3 bmm, DotProductAttention against a hand computation, AdditiveAttention: (2, 1, 4)', async () => {
    torch.manualSeed(2);
    // Q = torch.ones((2, 3, 4))
    // K = torch.ones((2, 4, 6))
    // d2l.check_shape(torch.bmm(Q, K), (2, 3, 6))
    const QK = torch.tidy(() => {
      const Q = torch.ones([2, 3, 4], { device });
      const K = torch.ones([2, 4, 6], { device });
      return torch.bmm(Q, K);
    });
    expect(QK.shape).toEqual([2, 3, 6]);
    await expectClose(QK, Array(36).fill(4));

    // queries = torch.normal(0, 1, (2, 1, 2))
    // keys = torch.normal(0, 1, (2, 10, 2))
    // values = torch.normal(0, 1, (2, 10, 4))
    // valid_lens = torch.tensor([2, 6])
    const queries = torch.normal(0, 1, [2, 1, 2], { device });
    const keys = torch.normal(0, 1, [2, 10, 2], { device });
    const values = torch.normal(0, 1, [2, 10, 4], { device });
    const validLens = torch.tensor([2, 6], { device });

    // attention = DotProductAttention(dropout=0.5)
    // attention.eval()
    // d2l.check_shape(attention(queries, keys, values, valid_lens), (2, 1, 4))
    const attention = new DotProductAttention(0.5).to(device);
    attention.eval();
    const [out, weights] = torch.tidy(() => [attention(queries, keys, values, validLens), attention.attentionWeights!]);
    expect(out.shape).toEqual([2, 1, 4]);
    // d2l.show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)), xlabel='Keys', ylabel='Queries')
    const w = await read(() => weights.reshape([1, 1, 2, 10]));
    expect(w.slice(2, 10)).toEqual(Array(8).fill(0));
    expect(w.slice(16, 20)).toEqual(Array(4).fill(0));

    // by hand: each batch's scores over its valid keys only, F.softmax, then matmul with those values
    const hand = torch.tidy(() =>
      torch.cat([2, 6].map((len, i) => {
        const q = queries.index(i), k = keys.index(i, `:${len}`), v = values.index(i, `:${len}`);
        return F.softmax(q.matmul(k.T).div(Math.sqrt(2)), -1).matmul(v).unsqueeze(0);
      })),
    );
    await expectClose(out, await vals(hand), 5);
    // and webtorch's fused F.scaledDotProductAttention with a bool mask (true: may attend) agrees
    const sdpa = torch.tidy(() => {
      const mask = torch.arange(10, { device }).unsqueeze(0).lt(validLens.unsqueeze(1)).unsqueeze(1);
      return F.scaledDotProductAttention(queries, keys, values, { attnMask: mask });
    });
    await expectClose(sdpa, await vals(hand), 5);

    // dropout(0.5) acts in train mode (on the weights), not in eval mode
    attention.train();
    const [t1, t2] = torch.tidy(() => [attention(queries, keys, values, validLens), attention(queries, keys, values, validLens)]);
    expect(await vals(t1)).not.toEqual(await vals(t2));
    attention.eval();
    const again = torch.tidy(() => attention(queries, keys, values, validLens));
    expect(await vals(again)).toEqual(await vals(out));

    // attention = AdditiveAttention(num_hiddens=8, dropout=0.1)
    // attention.eval()
    // d2l.check_shape(attention(queries, keys, values, valid_lens), (2, 1, 4))
    const additive = new AdditiveAttention(8, 0.1).to(device);
    additive.eval();
    const [aOut, aW] = torch.tidy(() => [additive(queries, keys, values, validLens), additive.attentionWeights!]);
    expect(aOut.shape).toEqual([2, 1, 4]);
    expect(additive.W_q.weight!.shape).toEqual([8, 2]); // LazyLinear took in_features from the queries
    expect(String(additive.w_v.weight!.device)).toBe(device);
    expect(additive.W_k.bias).toBeNull();
    // d2l.show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)), ...)
    const aw = await read(() => aW.reshape([1, 1, 2, 10]));
    expect(aw.slice(2, 10)).toEqual(Array(8).fill(0));
    expect(aw.slice(16, 20)).toEqual(Array(4).fill(0));
    expect(aw.slice(0, 10).reduce((s, p) => s + p, 0)).toBeCloseTo(1, 5);
    expect(aw.slice(10, 20).reduce((s, p) => s + p, 0)).toBeCloseTo(1, 5);
    // the output is the weights' average of the values, by hand
    const aHand = torch.tidy(() => torch.bmm(aW, values));
    await expectClose(aOut, await vals(aHand), 5);

    for (const t of [QK, queries, keys, values, validLens, out, weights, hand, sdpa, t1, t2, again, aOut, aW, aHand]) t.dispose();
    disposeModule(additive);
  });

  it('11.5 and 11.6 MultiHeadAttention: (2, 4, 100), heads round trip, self-attention', async () => {
    torch.manualSeed(3);
    // num_hiddens, num_heads = 100, 5
    // attention = MultiHeadAttention(num_hiddens, num_heads, 0.5)
    const [numHiddens, numHeads] = [100, 5];
    const attention = new MultiHeadAttention(numHiddens, numHeads, 0.5).to(device);
    // batch_size, num_queries, num_kvpairs = 2, 4, 6
    // valid_lens = torch.tensor([3, 2])
    // X = torch.ones((batch_size, num_queries, num_hiddens))
    // Y = torch.ones((batch_size, num_kvpairs, num_hiddens))
    // d2l.check_shape(attention(X, Y, Y, valid_lens),
    //                 (batch_size, num_queries, num_hiddens))
    const [batchSize, numQueries, numKvpairs] = [2, 4, 6];
    const validLens = torch.tensor([3, 2], { device });
    const X = torch.ones([batchSize, numQueries, numHiddens], { device });
    const Y = torch.ones([batchSize, numKvpairs, numHiddens], { device });
    const [out, w] = torch.tidy(() => [attention(X, Y, Y, validLens), attention.attention.attentionWeights!]);
    expect(out.shape).toEqual([batchSize, numQueries, numHiddens]);
    // the heads' weights: (batch_size * num_heads, no. of queries, no. of kv pairs), valid_lens
    // repeated per head by repeat_interleave: the first 5 heads see 3 keys, the next 5 see 2
    expect(w.shape).toEqual([batchSize * numHeads, numQueries, numKvpairs]);
    const wv = await vals(w);
    for (let h = 0; h < batchSize * numHeads; h++) {
      const len = h < numHeads ? 3 : 2;
      for (let q = 0; q < numQueries; q++) {
        const row = wv.slice((h * numQueries + q) * numKvpairs, (h * numQueries + q + 1) * numKvpairs);
        expect(row.slice(len)).toEqual(Array(numKvpairs - len).fill(0));
        expect(row.slice(0, len)).toEqual(Array(len).fill(expect.closeTo(1 / len, 5))); // equal keys: uniform
      }
    }
    const rep = torch.repeatInterleave(validLens, { repeats: numHeads, dim: 0 });
    expect(await rep.tolist()).toEqual([3, 3, 3, 3, 3, 2, 2, 2, 2, 2]);
    // transpose_output undoes transpose_qkv; head h of batch b is columns 20h..20h+19
    const Z = torch.randn([batchSize, numKvpairs, numHiddens], { device });
    const [heads, back] = torch.tidy(() => {
      const heads = attention.transposeQkv(Z);
      return [heads, attention.transposeOutput(heads)];
    });
    expect(heads.shape).toEqual([batchSize * numHeads, numKvpairs, numHiddens / numHeads]);
    expect(await vals(back)).toEqual(await vals(Z));
    const [h7, z7] = torch.tidy(() => [heads.index(7).contiguous(), Z.index(1, ':', '40:60').contiguous()]);
    expect(await vals(h7)).toEqual(await vals(z7));

    // 11.6: batch_size, num_queries, valid_lens = 2, 4, torch.tensor([3, 2])
    // X = torch.ones((batch_size, num_queries, num_hiddens))
    // d2l.check_shape(attention(X, X, X, valid_lens),
    //                 (batch_size, num_queries, num_hiddens))
    const self = torch.tidy(() => attention(X, X, X, validLens));
    expect(self.shape).toEqual([batchSize, numQueries, numHiddens]);

    for (const t of [validLens, X, Y, out, w, rep, Z, heads, back, h7, z7, self]) t.dispose();
    disposeModule(attention);
  });

  it('11.6 PositionalEncoding: P from sin and cos in the even and odd columns', async () => {
    // encoding_dim, num_steps = 32, 60
    // pos_encoding = PositionalEncoding(encoding_dim, 0)
    // X = pos_encoding(torch.zeros((1, num_steps, encoding_dim)))
    // P = pos_encoding.P[:, :X.shape[1], :]
    const [encodingDim, numSteps] = [32, 60];
    const posEncoding = new PositionalEncoding(encodingDim, 0);
    const X = torch.tidy(() => posEncoding(torch.zeros([1, numSteps, encodingDim], { device })));
    expect(X.shape).toEqual([1, numSteps, encodingDim]);
    expect(String(X.device)).toBe(device);
    expect(String(posEncoding.P.device)).toBe('cpu'); // a plain field: it stays where it was made
    const P = posEncoding.P.index(':', `:${X.shape[1]}`, ':');
    // zeros + P, dropout 0: the encoding itself
    await expectClose(X, await vals(P), 6);
    // the formula: P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(i / 10000^(2j/d))
    const pv = await vals(P); // (read(() => P.contiguous()) would dispose P: contiguous() returns P itself)
    for (const [i, j] of [[0, 0], [1, 0], [1, 3], [7, 5], [59, 15], [33, 1]]) {
      const angle = i / 10000 ** ((2 * j) / encodingDim);
      expect(pv[i * encodingDim + 2 * j]).toBeCloseTo(Math.sin(angle), 5);
      expect(pv[i * encodingDim + 2 * j + 1]).toBeCloseTo(Math.cos(angle), 5);
    }
    // d2l.plot(torch.arange(num_steps), P[0, :, 6:10].T, xlabel='Row (position)',
    //          figsize=(6, 2.5), legend=["Col %d" % d for d in torch.arange(6, 10)])
    const cols = torch.tidy(() => P.index(0, ':', '6:10').T); // (the intermediate view holds P's storage too)
    expect(cols.shape).toEqual([4, numSteps]);
    // for i in range(8):
    //     print(f'{i} in binary is {i:>03b}')
    const lines = Array.from({ length: 8 }, (_, i) => `${i} in binary is ${i.toString(2).padStart(3, '0')}`);
    expect(lines[5]).toBe('5 in binary is 101');
    // P = P[0, :, :].unsqueeze(0).unsqueeze(0)
    // d2l.show_heatmaps(P, xlabel='Column (encoding dimension)', ylabel='Row (position)', ...)
    const P4 = torch.tidy(() => P.index(0, ':', ':').unsqueeze(0).unsqueeze(0));
    expect(P4.shape).toEqual([1, 1, numSteps, encodingDim]);
    for (const t of [X, P, P4, cols, posEncoding.P]) t.dispose();
  });

  it('11.7 PositionWiseFFN, AddNorm, layer vs batch norm, the encoder block and encoder: (2, 100, 24)', async () => {
    torch.manualSeed(4);
    // ffn = PositionWiseFFN(4, 8)
    // ffn.eval()
    // ffn(torch.ones((2, 3, 4)))[0]
    const ffn = new PositionWiseFFN(4, 8).to(device);
    ffn.eval();
    const f0 = torch.tidy(() => ffn(torch.ones([2, 3, 4], { device })).index(0));
    expect(f0.shape).toEqual([3, 8]);
    const fv = await vals(f0); // the same input at every position: the same output
    expect(fv.slice(8, 16)).toEqual(fv.slice(0, 8));
    expect(fv.slice(16, 24)).toEqual(fv.slice(0, 8));

    // ln = nn.LayerNorm(2)
    // bn = nn.LazyBatchNorm1d()
    // X = torch.tensor([[1, 2], [2, 3]], dtype=torch.float32)
    // # Compute mean and variance from X in the training mode
    // print('layer norm:', ln(X), '\nbatch norm:', bn(X))
    const ln = new nn.LayerNorm(2).to(device);
    const bn = new nn.LazyBatchNorm1d().to(device);
    const X = torch.tensor([[1, 2], [2, 3]], { dtype: 'float32', device });
    const [lnX, bnX] = torch.tidy(() => [ln(X), bn(X)]);
    await expectClose(lnX, [-1, 1, -1, 1], 4);
    await expectClose(bnX, [-1, -1, 1, 1], 4);

    // add_norm = AddNorm(4, 0.5)
    // shape = (2, 3, 4)
    // d2l.check_shape(add_norm(torch.ones(shape), torch.ones(shape)), shape)
    const addNorm = new AddNorm(4, 0.5).to(device);
    const shape = [2, 3, 4];
    const an = torch.tidy(() => addNorm(torch.ones(shape, { device }), torch.ones(shape, { device })));
    expect(an.shape).toEqual(shape);

    // X = torch.ones((2, 100, 24))
    // valid_lens = torch.tensor([3, 2])
    // encoder_blk = TransformerEncoderBlock(24, 48, 8, 0.5)
    // encoder_blk.eval()
    // d2l.check_shape(encoder_blk(X, valid_lens), X.shape)
    const Xb = torch.ones([2, 100, 24], { device });
    const validLens = torch.tensor([3, 2], { device });
    const encoderBlk = new TransformerEncoderBlock(24, 48, 8, 0.5).to(device);
    encoderBlk.eval();
    const blkOut = torch.tidy(() => encoderBlk(Xb, validLens));
    expect(blkOut.shape).toEqual(Xb.shape);
    // LayerNorm last: each position's 24 features have mean 0
    await expectClose(() => blkOut.mean(-1).abs().amax(), [0], 4);

    // encoder = TransformerEncoder(200, 24, 48, 8, 2, 0.5)
    // d2l.check_shape(encoder(torch.ones((2, 100), dtype=torch.long), valid_lens),
    //                 (2, 100, 24))
    const encoder = new TransformerEncoder(200, 24, 48, 8, 2, 0.5).to(device);
    const [encOut, ...ws] = torch.tidy(() => [encoder(torch.ones([2, 100], { dtype: 'int64', device }), validLens), ...(encoder.attentionWeights as Tensor[])]);
    expect(encOut.shape).toEqual([2, 100, 24]);
    expect(String(encOut.device)).toBe(device);
    // one (batch_size * num_heads, 100, 100) weight tensor per block, rows summing to 1
    expect(ws.map((t) => t.shape)).toEqual([[16, 100, 100], [16, 100, 100]]);
    await expectClose(() => ws[1].sum(-1).sub(1).abs().amax(), [0], 4);
    expect(await read(() => ws[0].index(8, 0, '2:').abs().amax())).toEqual([0]); // batch 1 sees 2 keys

    for (const t of [f0, X, lnX, bnX, an, Xb, validLens, blkOut, encOut, ...ws]) t.dispose();
    for (const m of [ffn, ln, bn, addNorm, encoderBlk, encoder]) disposeModule(m);
    encoder.posEncoding.P.dispose();
  });

  it('11.3 masked_softmax under autograd: backward through the in-place mask after the scaling', async () => {
    // DotProductAttention: scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d), then
    // masked_softmax writes X[~mask] = -1e6 into those scores. As in PyTorch the division by a
    // number saves nothing the write changes, so backward runs; the gradient of the masked keys'
    // positions is what the unmasked computation over the valid keys gives.
    torch.manualSeed(6);
    const attention = new DotProductAttention(0).to(device);
    const queries = torch.randn([2, 1, 2], { device, requiresGrad: true });
    const keys = torch.randn([2, 10, 2], { device });
    const values = torch.randn([2, 10, 4], { device });
    const validLens = torch.tensor([2, 6], { device });
    torch.tidy(() => attention(queries, keys, values, validLens).sum().backward());
    const got = queries.grad!;
    // the same batch item by item over its valid keys only, without masking
    const want = torch.tidy(() => torch.cat([0, 1].map((i) => {
      const n = [2, 6][i];
      const q = queries.index(i).detach().requiresGrad_(), k = keys.index(i, `:${n}`), v = values.index(i, `:${n}`);
      F.softmax(q.matmul(k.T).div(Math.sqrt(2)), -1).matmul(v).sum().backward();
      return q.grad!.unsqueeze(0);
    }), 0));
    const [g, w] = [await got.data(), await want.data()];
    for (let i = 0; i < w.length; i++) expect(Math.abs(g[i] - w[i]), `grad[${i}]: ${g[i]} against ${w[i]}`).toBeLessThan(1e-5);
    for (const t of [got, want, queries, keys, values, validLens]) t.dispose();
  });

  it('11.7 a few training steps of the encoder and a linear head: the loss goes down', async () => {
    torch.manualSeed(5);
    // a toy task: every position predicts the sequence's first token, which only attention can
    // bring to it
    const [vocabSize, numSteps, batchSize] = [8, 6, 8];
    const encoder = new TransformerEncoder(vocabSize, 16, 32, 2, 2, 0.1).to(device);
    const head = new nn.LazyLinear(vocabSize).to(device);
    const X = torch.randint(0, vocabSize, [batchSize, numSteps], { device });
    const Y = torch.tidy(() => X.index(':', ':1').expand(batchSize, numSteps).contiguous());
    // every sequence's valid length is the whole sequence but the last, so masking runs in training
    const validLens = torch.full([batchSize], numSteps - 1, { device });
    const net = (X: Tensor) => head(encoder(X, validLens));
    // the lazy layers take their sizes at the first call (d2l's apply_init runs one batch first),
    // then the optimizer gets the parameters
    torch.tidy(() => void net(X));
    const params = [...encoder.parameters(), ...head.parameters()];
    expect(params.every((p) => String(p.device) === device)).toBe(true);
    const opt = new torch.optim.Adam(params, { lr: 0.01 });
    const losses: number[] = [];
    for (let step = 0; step < 15; step++) {
      const loss = torch.tidy(() => {
        const l = F.crossEntropy(net(X).reshape(-1, vocabSize), Y.reshape(-1));
        opt.zeroGrad();
        l.backward();
        opt.step();
        return l;
      });
      losses.push((await loss.item()) as number);
      loss.dispose();
    }
    expect(losses[0]).toBeCloseTo(Math.log(vocabSize), 0);
    expect(losses.every(Number.isFinite)).toBe(true);
    expect(losses[14]).toBeLessThan(0.6 * losses[0]);
    opt.zeroGrad();
    for (const s of opt.state.values()) for (const v of Object.values(s)) if (v instanceof torch.Tensor) v.dispose();
    for (const t of [X, Y, validLens, ...params, encoder.posEncoding.P]) t.dispose();
  });
});
