/**
 * Seed 003, the torch.cuda overview's "CUDA Graphs" section, word for word in camelCase: a static
 * input, a capture with `torch.cuda.graph(g)` (a callback, awaited: it synchronizes first), and
 * 100 replays (3 on a software adapter). (The CUDA semantics note among the seeds is an early version without graphs; the
 * graphs' own suite is test/device/graphs.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

habitsSetup();

describe('torch.cuda overview: CUDA Graphs', () => {
  it('captures static_input @ static_input.T and replays it 100 times', async () => {
    // The seed replays 100 times; a software adapter (lavapipe, two shared cores) takes seconds per
    // 1000³ product, so there the loop runs 3 times (the code is the seed's either way).
    const replays = (await torch.cuda.getDeviceProperties(0)).isSoftware ? 3 : 100;
    // Create static input
    const staticInput = torch.randn([1000, 1000], { device: 'cuda' });
    let staticOutput = torch.empty([1000, 1000], { device: 'cuda' });
    const empty = staticOutput;

    // Capture graph
    const g = new torch.cuda.CUDAGraph();

    await torch.cuda.graph(g, () => {
      staticOutput = torch.tidy(() => staticInput.matmul(staticInput.T)); // static_input @ static_input.T
    });

    // Replay graph (much faster)
    for (let i = 0; i < replays; i++) {
      g.replay();
    }

    // what the replays computed: the product, as eager computes it
    const eager = torch.tidy(() => staticInput.matmul(staticInput.T));
    const [got, want] = [await staticOutput.data(), await eager.data()];
    expect(staticOutput).not.toBe(empty); // the capture made a new (pool) tensor, as in PyTorch
    for (const i of [0, 1001, 999_999, 123_456]) expect(got[i]).toBeCloseTo(want[i], 3);
    g.reset();
    for (const t of [staticInput, staticOutput, empty, eager]) t.dispose();
  }, 120_000);
});
