/** `torch.random`: PyTorch's `torch.random` module (ts/rng.ts holds the generators). */
export { manualSeed, seed, initialSeed, getRngState, setRngState, forkRng } from './rng.js';
export type { ForkRngOptions } from './rng.js';
