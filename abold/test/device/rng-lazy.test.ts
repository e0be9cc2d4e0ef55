/**
 * Seeding a GPU before the GPUs are discovered, as PyTorch allows before CUDA starts: the seed
 * waits in the GPU's generator. (A file of its own: the other suites discover the GPUs first.)
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

// before suiteDevices' beforeAll discovers the GPUs
torch.cuda.manualSeed(5);
torch.manualSeed(3); // seeds cpu and every GPU made later: gpu:0's generator exists, so it takes 3 too
torch.cuda.manualSeed(6);
const devices = suiteDevices();

describe('seeding before discovery', () => {
  it('torch.cuda.manualSeed before torch.gpu.init() seeds gpu:0; GPUs made later take torch.manualSeed\'s seed', async () => {
    expect(devices).toContain('gpu:1');
    expect(torch.gpu.initialSeed()).toBe(6);
    expect(torch.gpu.withDevice(1, () => torch.gpu.initialSeed())).toBe(3);
    expect(torch.initialSeed()).toBe(3);
    const x = torch.rand([6], { device: 'gpu:0' });
    expect(Array.from((await x.data()) as Float32Array)).toEqual(Array.from(new torch.Generator().manualSeed(6).uniform(6)));
    x.dispose();
  });
});
