/**
 * `F.scaledDotProductAttention` under autocast: PyTorch runs it in the autocast dtype and returns
 * that dtype. Here q, k and v are cast to float32 and the fused kernels run (one `attention`
 * command forward, one `attentionGrad` backward, no [L, S] matmuls), and the output is cast to the
 * autocast dtype. Checked against float32 attention on the same bfloat16-rounded inputs: the
 * output to bfloat16 rounding, and the gradients that reach bfloat16 q, k, v.
 *
 * MUTATION RECORD: with the autocast case sent back to the composed path (the code before this
 * test), it fails at its first check: "causal: attention commands: expected undefined to be 1".
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const F = torch.nn.functional;
const devices = suiteDevices();

/** Runs `fn` under the worker's own profile and returns how many commands of each kind it ran. */
async function commandsOf(d: string, fn: () => void): Promise<Record<string, number>> {
  await torch._profileWorker(d, true);
  fn();
  const prof = (await torch._profileWorker(d, false))!;
  return Object.fromEntries(Object.entries(prof.commands).map(([k, v]) => [k, v.count]));
}

/** max |a − b| / (1 + max |b|), in float32. */
async function relDiff(a: torch.Tensor, b: torch.Tensor): Promise<number> {
  const t = torch.tidy(() => a.float().sub(b.float()).abs().max().div(b.float().abs().max().add(1)));
  const v = (await t.item()) as number;
  t.dispose();
  return v;
}

describe('scaled dot product attention under autocast', () => {
  it('one fused command each way, the autocast dtype out, float32 values to 16-bit rounding', async () => {
    for (const d of devices) {
      const type = d.startsWith('gpu') ? 'gpu' : 'cpu';
      torch.manualSeed(3);
      // q, k, v as nanoGPT makes them: a bfloat16 projection split and viewed as [B, H, T, D]
      const [B, H, T, D] = [2, 3, 37, 16];
      const x = torch.tidy(() => torch.randn([B, T, 3 * H * D], { device: d }).bfloat16()).requiresGrad_();
      const heads = (t: torch.Tensor) => t.view([B, T, H, D]).transpose(1, 2);
      const mask = torch.tidy(() => torch.randn([T, T], { device: d }).bfloat16()); // a float mask, cast to float32 too
      for (const [what, opts] of [['causal', { isCausal: true }], ['float mask', { attnMask: mask }]] as const) {
        let out: torch.Tensor | null = null;
        const fwd = await commandsOf(d, () => {
          out = torch.autocast(type, { dtype: 'bfloat16' }, () => torch.tidy(() => {
            const [q, k, v] = x.split(H * D, 2).map(heads);
            return F.scaledDotProductAttention(q, k, v, opts);
          }));
        });
        expect(fwd.attention, `${what}: attention commands`).toBe(1);
        expect(fwd.matmul ?? 0, `${what}: no composed matmul`).toBe(0);
        expect(out!.dtype).toBe('bfloat16');
        expect(out!.shape).toEqual([B, H, T, D]);
        // the reference: float32 attention of the same (bfloat16-valued) inputs
        const x32 = torch.tidy(() => x.detach().float()).requiresGrad_();
        const ref = torch.tidy(() => {
          const [q, k, v] = x32.split(H * D, 2).map(heads);
          return F.scaledDotProductAttention(q, k, v, 'attnMask' in opts ? { attnMask: mask.float() } : opts);
        });
        expect(await relDiff(out!, ref), `${what}: output`).toBeLessThan(1e-2);
        const g = torch.randn([B, H, T, D], { device: d });
        const bwd = await commandsOf(d, () => torch.tidy(() => out!.backward(g.bfloat16())));
        expect(bwd.attentionGrad, `${what}: attentionGrad commands`).toBe(1);
        torch.tidy(() => ref.backward(g));
        expect(x.grad!.dtype).toBe('bfloat16');
        expect(await relDiff(x.grad!, x32.grad!), `${what}: gradient of the projection`).toBeLessThan(2e-2);
        for (const t of [out!, ref, g, x32.grad!, x32, x.grad!]) t.dispose();
        x.grad = null;
      }
      for (const t of [x, mask]) t.dispose();
    }
  });
});
