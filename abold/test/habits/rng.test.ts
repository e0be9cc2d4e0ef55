/**
 * Seed 003, the torch.cuda overview's "Random Number Generation" section, line by line
 * (snake_case → camelCase; `torch.cuda` is `torch.gpu`, kept as the seed writes it). The seed's
 * "... perform operations ..." is a draw on the current GPU, so the restore can be checked.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { GPUS, habitsSetup } from './setup.js';

habitsSetup();

describe('torch.cuda overview: random number generation', () => {
  it('manual_seed, manual_seed_all, get_rng_state / set_rng_state', async () => {
    // Set random seed for reproducibility
    torch.cuda.manualSeed(42);
    expect(torch.cuda.initialSeed()).toBe(42);
    const first = torch.randn([100, 100], { device: 'cuda' });

    // Set seed for all GPUs
    torch.cuda.manualSeedAll(42);
    const onEach = Array.from({ length: GPUS }, (_, i) => torch.randn([100, 100], { device: `cuda:${i}` }));

    // Get/set RNG state
    const rngState = torch.cuda.getRngState();
    // ... perform operations ...
    const a = torch.rand([5], { device: 'cuda' });
    torch.cuda.setRngState(rngState); // Restore state
    const b = torch.rand([5], { device: 'cuda' });

    const firstValues = await first.tolist();
    for (const t of onEach) expect(await t.tolist()).toEqual(firstValues); // one seed, the same numbers on every GPU
    expect(await b.tolist()).toEqual(await a.tolist());
    expect(rngState).toBeInstanceOf(Uint8Array);
    [first, ...onEach, a, b].forEach((t) => t.dispose());
  });
});
