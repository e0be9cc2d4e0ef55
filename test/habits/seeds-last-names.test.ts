/**
 * The seeds' last names (issue 34), each with the seed's own lines translated into camelCase and
 * `await`: seed 003's `torch.cuda.OutOfMemoryError`, TF32 flags, `multi_processor_count`,
 * `torch.multiprocessing` (with ranks as processes), the DataLoader's `num_workers`; seed 000's
 * peer access; seed 002's `net[0]`; seed 001's `new_ones` and the other `new_*` functions.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

const { nn } = torch;
habitsSetup();

describe('seed 003: torch.cuda', () => {
  it('except torch.cuda.OutOfMemoryError: the same class as torch.OutOfMemoryError', () => {
    const printed: string[] = [];
    try {
      // Attempt large allocation
      const hugeTensor = torch.randn([100000, 100000], { device: 'cuda' });
      hugeTensor.dispose();
    } catch (e) {
      if (!(e instanceof torch.cuda.OutOfMemoryError)) throw e;
      printed.push('Out of memory! Clearing cache...');
      torch.cuda.emptyCache();
    }
    expect(printed).toEqual(['Out of memory! Clearing cache...']);
    expect(torch.cuda.OutOfMemoryError).toBe(torch.OutOfMemoryError);
  });

  it('TF32: isTf32Supported() is false, the flags are accepted, matmuls stay float32', async () => {
    const before = [torch.backends.cuda.matmul.allowTf32, torch.backends.cudnn.allowTf32];
    expect(before).toEqual([false, true]); // PyTorch's defaults
    // Check TF32 support
    if (torch.cuda.isTf32Supported()) {
      // Enable TF32 for matmul operations
      torch.backends.cuda.matmul.allowTf32 = true;
    }
    expect(torch.backends.cuda.matmul.allowTf32).toBe(false); // the seed's `if` did not run
    try {
      torch.backends.cuda.matmul.allowTf32 = true;
      torch.backends.cudnn.allowTf32 = false;
      expect([torch.backends.cuda.matmul.allowTf32, torch.backends.cudnn.allowTf32]).toEqual([true, false]);
      // full float32 either way: 1 + 2^-20 survives a product that TF32's 10-bit mantissa would round
      const a = torch.tensor([[1 + 2 ** -20]], { device: 'cuda' }), b = torch.tensor([[1]], { device: 'cuda', dtype: 'float32' });
      const c = a.matmul(b);
      expect(await c.item()).toBe(Math.fround(1 + 2 ** -20));
      for (const t of [a, b, c]) t.dispose();
      expect(() => {
        (torch.backends.cuda.matmul as Record<string, unknown>).allowTF32 = true;
      }).toThrow(TypeError);
      expect(() => {
        (torch.backends.cuda.matmul as Record<string, unknown>).allowTf32 = 1;
      }).toThrow('torch.backends.cuda.matmul.allowTf32 must be a boolean');
    } finally {
      torch.backends.cuda.matmul.allowTf32 = before[0];
      torch.backends.cudnn.allowTf32 = before[1];
    }
  });

  it('multi_processor_count: null on an adapter that does not name an NVIDIA GPU, not a made-up number', async () => {
    // Get device properties
    const props = await torch.cuda.getDeviceProperties(0);
    const printed = `Multi-processor count: ${props.multiProcessorCount}`;
    if (/nvidia/i.test(props.vendor) && /h100|h200|a100/.test(props.device)) expect(props.multiProcessorCount).toBeGreaterThan(100);
    else expect(printed).toBe('Multi-processor count: null');
  });

  it('torch.multiprocessing: setStartMethod(\'spawn\') and spawn(fn, {args, nprocs, join}) with ranks as processes, DDP inside', async () => {
    const mp = torch.multiprocessing;
    expect(mp.getStartMethod()).toBe('spawn');
    expect(() => mp.setStartMethod('fork')).toThrow("cannot find context for 'fork'");
    expect(mp.parentProcess()).toBeNull();
    const out = mkdtempSync(join(tmpdir(), 'webtorch-mp-'));
    try {
      const script = join(__dirname, 'fixtures', 'mp-ddp.mjs');
      const ok = await promisify(execFile)(process.execPath, [script, out]);
      expect(ok.stdout.trim()).toBe('joined');
      const ranks = [0, 1].map((r) => JSON.parse(readFileSync(join(out, `rank${r}.json`), 'utf8')));
      expect(ranks.map((r) => [r.rank, r.worldSize, r.parent])).toEqual([[0, 2, true], [1, 2, true]]);
      expect(ranks[0].weight).toEqual(ranks[1].weight); // DDP kept the processes' models equal
      expect(ranks[0].last).not.toBe(ranks[1].last); // each trained on its own data
      const failed = await promisify(execFile)(process.execPath, [script, out, 'fail']);
      expect(failed.stdout).toContain('ProcessRaisedException: \n\n-- Process 1 terminated with the following error:\nError: rank 1 failed on purpose');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('seed 000: peer access', () => {
  it('canDeviceAccessPeer is false between GPU devices (copies go through the host), and copy_ still works', async () => {
    expect(torch.cuda.canDeviceAccessPeer(0, 1)).toBe(false);
    expect(torch.cuda.canDeviceAccessPeer('cuda:1', { peerDevice: 'cuda:0' })).toBe(false);
    expect(() => torch.cuda.canDeviceAccessPeer(0, 9)).toThrow('Invalid device gpu:9');
    expect(() => torch.cuda.canDeviceAccessPeer(0, 'cpu')).toThrow('Expected a gpu device');
    const x = torch.ones([3], { device: 'cuda:0' });
    const y = torch.zeros([3], { device: 'cuda:1' });
    y.copy_(x); // the one op across devices: through the host
    expect(await y.tolist()).toEqual([1, 1, 1]);
    x.dispose();
    y.dispose();
  });
});

describe('seed 002: net[0]', () => {
  it('net[0].weight.data.device, negative indices, PyTorch\'s IndexError', async () => {
    const X = torch.ones([2, 20], { device: 'cuda:0' });
    let net = new nn.Sequential(new nn.LazyLinear(1));
    net = net.to({ device: 'cuda:0' });
    const out = net(X);
    // net[0].weight.data.device (webtorch's `data()` reads the values: the tensor's device is the same)
    expect(String((net[0] as torch.nn.Linear).weight.device)).toBe('gpu:0');
    expect(net[-1]).toBe(net[0]);
    expect(() => net[1]).toThrow('index 1 is out of range');
    expect(() => net[-2]).toThrow('index -2 is out of range');
    const list = new nn.ModuleList([new nn.ReLU(), new nn.Tanh()]);
    expect(list[1]).toBeInstanceOf(nn.Tanh);
    expect(list[-2]).toBeInstanceOf(nn.ReLU);
    expect(() => list[2]).toThrow('index 2 is out of range');
    list[0] = new nn.Sigmoid();
    expect([...list].map((m) => m.constructor.name)).toEqual(['Sigmoid', 'Tanh']);
    for (const t of [X, out, ...net.parameters()]) t.dispose();
  });
});

describe('seed 001: new_* functions in camelCase', () => {
  it('newOnes, newZeros, newFull, newEmpty keep dtype and device; the snake_case names are the same functions', async () => {
    const ones = torch.tidy(() => torch.ones([2]).cuda(0)); // Create a tensor of ones of size (2,) on GPU 0 (tidy frees the cpu one)
    const newOnes = ones.newOnes([3, 4]); // Create a new tensor of ones of size (3,4) on the same device as "ones"
    const z = ones.newZeros(2), f = ones.newFull([2], 7), e = ones.newEmpty([2, 2]), v = ones.newOnes(3, 4, { dtype: 'int32' });
    expect([newOnes.shape, String(newOnes.device), newOnes.dtype]).toEqual([[3, 4], 'gpu:0', 'float32']);
    const total = newOnes.sum();
    expect(await total.item()).toBe(12);
    total.dispose();
    expect([await z.tolist(), await f.tolist(), e.shape, String(e.device), v.dtype, v.shape]).toEqual([[0, 0], [7, 7], [2, 2], 'gpu:0', 'int32', [3, 4]]);
    expect(ones.new_ones).toBe(ones.newOnes);
    expect(() => ones.newFull([2], 1, { device: 'cpu', fill: 3 } as never)).toThrow("new_full() got an unexpected keyword argument 'fill'");
    for (const t of [ones, newOnes, z, f, e, v]) t.dispose();
  });
});

/** A dataset whose getItem costs 1 ms of waiting (as a synchronous read would). */
class SlowDataset extends torch.utils.data.Dataset<[Float32Array, number]> {
  constructor(readonly n: number) {
    super();
  }
  get length() {
    return this.n;
  }
  getItem(i: number): [Float32Array, number] {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    return [Float32Array.of(i, 2 * i), i % 10];
  }
}

describe('seed 003: DataLoader(num_workers=N)', () => {
  const epoch = (numWorkers: number) => {
    const t0 = performance.now();
    let rows = 0;
    const trainLoader = new torch.utils.data.DataLoader(new SlowDataset(1000), { batchSize: 32, numWorkers });
    for (const [input, target] of trainLoader) {
      rows += input.shape[0];
      input.dispose();
      target.dispose();
    }
    return { ms: performance.now() - t0, rows };
  };

  it('numWorkers: 2 runs getItem in worker threads, faster than numWorkers: 0', async () => {
    const [x, y] = new torch.utils.data.DataLoader(new SlowDataset(8), { batchSize: 4, numWorkers: 2 })[Symbol.iterator]().next().value!;
    expect([await x.tolist(), x.dtype, await y.tolist(), y.dtype]).toEqual([[[0, 0], [1, 2], [2, 4], [3, 6]], 'float32', [0, 1, 2, 3], 'int64']);
    x.dispose();
    y.dispose();
    const serial = epoch(0), threads = epoch(2);
    expect([serial.rows, threads.rows]).toEqual([1000, 1000]);
    console.log(`DataLoader over 1000 items of 1 ms each: numWorkers 0 ${serial.ms.toFixed(0)} ms, numWorkers 2 ${threads.ms.toFixed(0)} ms, ratio ${(serial.ms / threads.ms).toFixed(2)}`);
    expect(serial.ms / threads.ms).toBeGreaterThan(1.3);
  }, 30_000);

  it('a dataset that cannot be sent to a worker raises an error naming numWorkers', () => {
    class OnDevice extends torch.utils.data.Dataset<number> {
      data = torch.ones([4]);
      get length() {
        return 4;
      }
      getItem(i: number) {
        return i;
      }
    }
    const ds = new OnDevice();
    expect(() => [...new torch.utils.data.DataLoader(ds, { numWorkers: 2 })]).toThrow("DataLoader(numWorkers: 2): the dataset cannot be sent to a worker thread: its field 'data' is a Tensor");
    ds.data.dispose();
  });
});
