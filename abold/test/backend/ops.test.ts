/**
 * The shared op suite: every case of test/fixtures/goldens.json (made by PyTorch, see
 * make_goldens.py) on every device. Every op of the op table must have cases. After each test
 * the number of live storages on each device is back where it started.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { goldenTests, loadGoldens } from '../golden.js';

const goldens = loadGoldens('goldens.json');
const devices = await testDevices();

describe.each(devices)(`ops on %s (goldens from PyTorch ${goldens.torch})`, (device) => {
  leakCheck(() => devices);
  goldenTests(goldens.cases, device);
});

describe('the goldens cover the op table', () => {
  it('has cases for every op of the table', () => {
    const covered = new Set(goldens.cases.map((c) => c.op));
    const missing = torch.ELEMENTWISE.map((o) => o.name).filter((n) => !covered.has(n));
    expect(missing).toEqual([]);
    for (const op of ['where', 'sum', 'mean', 'max', 'min', 'argmax', 'argmin', 'prod', 'matmul']) expect(covered.has(op), op).toBe(true);
  });
});

afterAll(async () => {
  await torch.shutdown();
});
