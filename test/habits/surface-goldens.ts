/**
 * The goldens of issue 31's surface (test/fixtures/make_goldens_surface_nn.py): builds each case's
 * module with PyTorch's weights on a device, runs it, checks the outputs and the gradients of
 * backward(Σ out·gradOut) on the float inputs and every parameter, and disposes everything.
 */
import { expect } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { loadGoldens, num, type TensorJson } from '../golden.js';

const { nn, F } = torch;

/** A module case of goldens-surface-nn.json. */
export interface SurfaceCase {
  kind: string; id: string; inputs: TensorJson[]; kwargs: Record<string, any>; outs: TensorJson[]; gradOuts: TensorJson[];
  grads: Record<string, TensorJson>; ctor?: Record<string, any>; state?: Record<string, TensorJson>;
}

/** The goldens file, parsed once. */
export const GOLDENS = loadGoldens('goldens-surface-nn.json') as unknown as {
  cases: SurfaceCase[]; schedulers: any[]; adagrad: any[]; clip: any[]; clipValue: any;
};

/** A golden tensor on a device. */
export function make(t: TensorJson, device: string): torch.Tensor {
  return torch.tidy(() => torch.tensor(t.data.map(num) as unknown as number[], { dtype: t.dtype as torch.DType, device }).reshape(t.shape));
}

/** Compares values within `atol + rtol·|want|` (NaN where PyTorch has NaN). */
export async function close(got: torch.Tensor, want: TensorJson, where: string, rtol = 1e-4, atol = 2e-5): Promise<void> {
  expect(got.shape, `${where}: shape`).toEqual(want.shape);
  expect(got.dtype, `${where}: dtype`).toBe(want.dtype);
  const values = (await got.values()) as number[];
  want.data.forEach((raw, i) => {
    const w = num(raw) as number, g = values[i];
    if (Number.isNaN(w)) return expect(g, `${where}[${i}] should be NaN`).toBeNaN();
    if (!Number.isFinite(w)) return expect(g, `${where}[${i}]`).toBe(w);
    expect(Math.abs(g - w), `${where}[${i}]: got ${g}, PyTorch ${w}`).toBeLessThanOrEqual(atol + rtol * Math.abs(w));
  });
}

/** Builds the case's module (kinds mha, encoder, decoder, transformer, convt, rnn) on `device` with PyTorch's weights. */
function buildModule(c: SurfaceCase, device: string): torch.nn.Module | null {
  if (!c.ctor) return null;
  let m: torch.nn.Module;
  if (c.kind === 'mha') {
    const { embedDim, numHeads, ...rest } = c.ctor;
    m = new nn.MultiheadAttention(embedDim, numHeads, rest);
  } else if (c.kind === 'encoder') {
    const { dModel, nhead, ...rest } = c.ctor;
    const layer = new nn.TransformerEncoderLayer(dModel, nhead, rest);
    m = c.kwargs.layers ? new nn.TransformerEncoder(layer, c.kwargs.layers) : layer;
    if (m !== layer) layer.parameters().forEach((p) => p.dispose());
  } else if (c.kind === 'decoder') {
    const { dModel, nhead, ...rest } = c.ctor;
    const layer = new nn.TransformerDecoderLayer(dModel, nhead, rest);
    m = c.kwargs.layers ? new nn.TransformerDecoder(layer, c.kwargs.layers, new nn.LayerNorm(dModel)) : layer;
    if (m !== layer) layer.parameters().forEach((p) => p.dispose());
  } else if (c.kind === 'transformer') {
    m = new nn.Transformer(c.ctor);
  } else if (c.kind === 'convt') {
    const { dims, inChannels, outChannels, kernelSize, ...rest } = c.ctor;
    m = dims === 2 ? new nn.ConvTranspose2d(inChannels, outChannels, kernelSize, rest) : new nn.ConvTranspose1d(inChannels, outChannels, kernelSize, rest);
  } else {
    const { kind, inputSize, hiddenSize, ...rest } = c.ctor;
    m = new (nn as any)[kind](inputSize, hiddenSize, rest);
  }
  m.to(device);
  expect(Object.keys(m.stateDict()), `${c.id}: state dict keys (PyTorch's names, in order)`).toEqual(Object.keys(c.state!));
  const state = Object.fromEntries(Object.entries(c.state!).map(([k, t]) => [k, make(t, device)]));
  m.loadStateDict(state);
  Object.values(state).forEach((t) => t.dispose());
  return m;
}

/** Runs the case's op or module on its inputs; returns the outputs (nulls dropped), flattened as the script did. */
function runCase(c: SurfaceCase, m: torch.nn.Module | null, x: torch.Tensor[]): torch.Tensor[] {
  const kw = c.kwargs;
  const masks = Object.fromEntries(((kw.masks ?? []) as string[]).map((n, i) => [n, x[(kw.selfAttn || c.kind === 'encoder' ? 1 : 3) + i]]));
  switch (c.kind) {
    case 'sdpa':
      return [F.scaledDotProductAttention(x[0], x[1], x[2], x[3] ?? null, { scale: kw.scale ?? null, isCausal: kw.isCausal ?? false })];
    case 'mha': {
      const { masks: _m, selfAttn, ...opts } = kw;
      const [q, k, v] = selfAttn ? [x[0], x[0], x[0]] : x;
      return (m!(q, k, v, { ...opts, ...masks }) as (torch.Tensor | null)[]).filter((t): t is torch.Tensor => !!t);
    }
    case 'encoder':
      return [kw.layers ? m!(x[0], { mask: masks.srcMask, srcKeyPaddingMask: masks.srcKeyPaddingMask }) : m!(x[0], masks)];
    case 'group_norm':
      return [F.groupNorm(x[0], kw.numGroups, x[1] ?? null, x[2] ?? null, kw.eps ?? 1e-5)];
    case 'rms_norm':
      return [F.rmsNorm(x[0], kw.normalizedShape, x[1] ?? null, kw.eps ?? null)];
    case 'leaky_relu':
      return [F.leakyRelu(x[0], kw.negativeSlope)];
    case 'convt':
      return [m!(x[0])];
    case 'decoder':
    case 'transformer': {
      const ms = Object.fromEntries(((kw.masks ?? []) as string[]).map((n, i) => [n, x[2 + i]]));
      return [m!(x[0], x[1], ms)];
    }
    case 'interpolate':
      return [F.interpolate(x[0], kw)];
    case 'rnn': {
      const kind = c.ctor!.kind as string;
      const out = x.length === 1 ? m!(x[0]) : kind.startsWith('LSTM') ? m!(x[0], [x[1], x[2]]) : m!(x[0], x[1]);
      if (kind.endsWith('Cell')) return out instanceof torch.Tensor ? [out] : out;
      const [y, h] = out as [torch.Tensor, torch.Tensor | torch.Tensor[]];
      return [y, ...(Array.isArray(h) ? h : [h])];
    }
  }
  throw new Error(`unknown case kind ${c.kind}`);
}

/** Runs one golden case on a device and checks outputs and gradients; disposes all it made. */
export async function checkCase(c: SurfaceCase, device: string): Promise<void> {
  const owned: torch.Tensor[] = [];
  const m = buildModule(c, device);
  try {
    const inputs = c.inputs.map((t, i) => {
      const x = make(t, device);
      owned.push(x);
      if (!c.grads[`input${i}`]) return x;
      const leaf = x.detach().requiresGrad_();
      owned.push(leaf);
      return leaf;
    });
    const outs = runCase(c, m, inputs);
    owned.push(...outs);
    expect(outs.length, `${c.id}: number of outputs`).toBe(c.outs.length);
    for (let i = 0; i < outs.length; i++) await close(outs[i], c.outs[i], `${c.id} out[${i}]`);
    const gOuts = c.gradOuts.map((g) => make(g, device));
    owned.push(...gOuts);
    const loss = torch.tidy(() => outs.map((o, i) => o.mul(gOuts[i]).sum()).reduce((a, b) => a.add(b)));
    owned.push(loss);
    loss.backward();
    const params = Object.fromEntries(m ? m.namedParameters() : []);
    for (const [name, want] of Object.entries(c.grads)) {
      const leaf = name.startsWith('input') ? inputs[Number(name.slice(5))] : params[name];
      expect(leaf, `${c.id}: ${name} exists`).toBeDefined();
      expect(leaf.grad, `${c.id}: grad of ${name}`).not.toBeNull();
      await close(leaf.grad!, want, `${c.id} grad ${name}`, 1e-4, 5e-5);
    }
    inputs.forEach((x) => x.grad?.dispose());
  } finally {
    owned.forEach((t) => t.dispose());
    if (m) {
      m.zeroGrad();
      m.parameters().forEach((p) => p.dispose());
    }
  }
}
