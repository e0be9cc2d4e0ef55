/**
 * Checkpoints in a browser (headless Chromium): `torch.save(obj)` without a path gives the bytes,
 * `torch.load` takes them as a Blob (what an `<input type=file>` gives) or an ArrayBuffer, on the
 * cpu and on the browser's GPU; safetensors likewise; a file path says it needs Node. PyTorch's own
 * file (fetched from the test fixtures) loads too.
 */
import { describe, expect, it } from 'vitest';
import { browserSession, haveChromium } from './browser.js';

describe.runIf(haveChromium())('checkpoints in the browser', () => {
  const { openPage } = browserSession();

  it('bytes and Blobs round-trip on cpu and gpu:0; PyTorch\'s .pt loads; a path raises', async () => {
    const { page, errors } = await openPage('test/browser/pages/train.html');
    const got = await page.evaluate(async () => {
      const torch = (window as any).torch;
      const out: Record<string, unknown> = {};
      for (const d of ['cpu', await torch.tryGpu(0)].map(String)) {
        const net = new torch.nn.Linear(3, 2).to(d);
        const bytes = await torch.save({ sd: net.stateDict(), rng: torch.getRngState(), epoch: 4 });
        const back = await torch.load(new Blob([bytes]));
        const st = await torch.safetensors.save(net.stateDict());
        const st2 = await torch.safetensors.loadFile(new Blob([st]).slice(0), d);
        out[d] = {
          isBytes: bytes instanceof Uint8Array, device: String(back.sd.weight.device), epoch: back.epoch, rng: back.rng.shape,
          same: JSON.stringify(await back.sd.weight.tolist()) === JSON.stringify(await net.weight.tolist()),
          safetensors: JSON.stringify(await st2.bias.tolist()) === JSON.stringify(await net.bias.tolist()),
        };
      }
      const pt = await (await fetch('/test/fixtures/checkpoints/mlp.pt')).arrayBuffer();
      const sd = await torch.load(pt);
      out.pytorch = [sd['0.weight'].shape, sd['2.bias'].shape];
      try {
        await torch.save({}, 'model.pt');
      } catch (e) {
        out.pathError = (e as Error).message;
      }
      return out;
    });
    expect(errors).toEqual([]);
    for (const d of ['cpu', 'gpu:0']) expect(got[d], d).toEqual({ isBytes: true, device: d, epoch: 4, rng: [16], same: true, safetensors: true });
    expect(got.pytorch).toEqual([[8, 4], [3]]);
    expect(got.pathError).toMatch(/a file path needs Node's file system; in a browser call torch\.save\(obj\) without a path/);
  });
});
