/**
 * Random numbers made on the devices (Philox4x32-10, ts/random.ts, wgsl/random.ts,
 * assembly/kernels/random.ts): Random123's known answers on the calling thread's reference and
 * on every device's kernel, the same numbers on cpu, gpu:0 and gpu:1 for one seed (bit for
 * bit, and equal to the reference), per-device generators, state round trips, forkRng,
 * generator isolation, the caller not waiting for the numbers, their moments, and the errors.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();

/** The bits of a tensor's elements (float32 or int32), read once. */
async function bits(t: torch.Tensor): Promise<Uint32Array> {
  const d = await t.data();
  return new Uint32Array(d.buffer, d.byteOffset, d.byteLength / 4).slice();
}

/** Reads and disposes. */
async function take(t: torch.Tensor): Promise<Uint32Array> {
  try {
    return await bits(t);
  } finally {
    t.dispose();
  }
}

// Random123's kat_vectors, the three "philox4x32 10" lines: counter (4 words), key (2), expected (4).
const KAT: [number[], number[], number[]][] = [
  [[0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]],
  [[0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff], [0xffffffff, 0xffffffff], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]],
  [[0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0], [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]],
];

describe('Philox4x32-10 known answers (Random123)', () => {
  it('the calling thread\'s reference matches every vector', () => {
    for (const [c, k, want] of KAT) expect(torch._philox(c as [number, number, number, number], k[0], k[1])).toEqual(want);
  });

  it('every device\'s kernel matches every vector', async () => {
    for (const d of devices) {
      for (const [c, k, want] of KAT) {
        const got = await take(torch._philoxBlock(torch.device(d), c as [number, number, number, number], k as [number, number]));
        expect([...got], `${d}, counter ${c.map((x) => x.toString(16))}`).toEqual(want);
      }
    }
  });
});

describe('one seed gives the same numbers on every device', () => {
  it('rand, randn, randint, bernoulli, normal_, uniform_ and dropout are bit-identical on cpu, gpu:0 and gpu:1', async () => {
    const seen: Uint32Array[][] = [];
    for (const d of devices) {
      torch.manualSeed(1234);
      const x = torch.ones([7, 9], { device: d }), p = x.mul(0.3);
      const ts = [
        torch.rand([1001], { device: d }), torch.randn([1003], { device: d }), torch.randint(-5, 1000, [999], { device: d }),
        torch.randint(-(2 ** 31), 2 ** 31, [37], { dtype: 'int32', device: d }),
        torch.bernoulli(p), torch.empty([65], { device: d }).normal_(2, 3),
        torch.empty([66], { device: d }).uniform_(-1, 4), torch.dropout(x, 0.25, true),
      ];
      seen.push(await Promise.all(ts.map(take)));
      x.dispose();
      p.dispose();
    }
    for (let i = 1; i < seen.length; i++) {
      seen[i].forEach((b, j) => expect(b, `${devices[i]} vs cpu, draw ${j}`).toEqual(seen[0][j]));
    }
  });

  it('the devices\' numbers are the calling thread\'s reference numbers (uniform and normal, 1M normals on each device)', async () => {
    const ref = new torch.Generator().manualSeed(99);
    const u = ref.uniform(4097), n = ref.normal(1 << 20);
    for (const d of devices) {
      const g = new torch.Generator({ device: d }).manualSeed(99);
      expect(await take(torch.rand([4097], { device: d, generator: g })), d).toEqual(new Uint32Array(u.buffer));
      const got = await take(torch.randn([1 << 20], { device: d, generator: g }));
      const want = new Uint32Array(n.buffer);
      let diff = 0;
      for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) diff++;
      expect(diff, `${d}: elements of 1M normals that differ from the reference`).toBe(0);
    }
  });

  it('a draw larger than one GPU binding runs in chunks and still equals the cpu\'s', async () => {
    const limit = (await torch.gpu.getDeviceProperties(0)).limits.maxStorageBufferBindingSize;
    const n = Math.floor(limit / 4) + 4099; // just over the limit in float32: two chunks, the second starting mid-draw
    const seed = 12;
    const gpu = torch.randn([n], { device: 'gpu:0', generator: new torch.Generator({ device: 'gpu:0' }).manualSeed(seed) });
    try {
      if (n * 4 <= 256 * 2 ** 20) {
        // Small enough (lavapipe's 128 MiB binding): the cpu draws it all and every element is compared.
        const want = await take(torch.randn([n], { generator: new torch.Generator({ device: 'cpu' }).manualSeed(seed) }));
        const got = await bits(gpu);
        let diff = 0;
        for (let i = 0; i < n; i++) if (got[i] !== want[i]) diff++;
        expect(diff, 'elements that differ').toBe(0);
        return;
      }
      // Too large for the cpu's budget (a 2 GiB binding): Philox is counter-based (element i is word
      // i % 4 of the block at counter offset + ⌊i / 4⌋, and a normal pairs words of one block), so a
      // cpu generator set to the window's counter offset draws exactly the GPU's elements
      // [start, start + len) when start is a multiple of 4. Three windows: the start, across the end
      // of the first chunk (element limit / 4) and the end, each read from the GPU on its own.
      const W = 1 << 16;
      const edge = (Math.floor(limit / 4) - W / 2) & ~3; // a block's start (the H100's limit is 2^31 - 4 bytes: limit / 4 is odd)
      const windows: [string, number, number][] = [
        ['first', 0, W],
        ['chunk boundary', edge, Math.min(W, n - edge)], // the second chunk is short
        ['last', (n - W) & ~3, n - ((n - W) & ~3)],
      ];
      for (const [name, start, len] of windows) {
        expect(start % 4, `${name} window starts on a block`).toBe(0);
        const g = new torch.Generator({ device: 'cpu' }).manualSeed(seed);
        const state = g.getState(), v = new DataView(state.buffer, state.byteOffset, state.byteLength);
        const offset = start / 4;
        v.setUint32(8, offset >>> 0, true);
        v.setUint32(12, Math.floor(offset / 2 ** 32), true);
        g.setState(state);
        const want = await take(torch.randn([len], { generator: g }));
        const got = await take(gpu.narrow(0, start, len));
        expect(got.length, name).toBe(len);
        let diff = 0;
        for (let i = 0; i < len; i++) if (got[i] !== want[i]) diff++;
        expect(diff, `elements that differ in the ${name} window [${start}, ${start + len})`).toBe(0);
      }
    } finally {
      gpu.dispose();
    }
  });

  it('16-bit dtypes are the float32 draw rounded once', async () => {
    for (const d of devices) {
      torch.manualSeed(5);
      const h = torch.randn([100], { dtype: 'float16', device: d });
      torch.manualSeed(5);
      const f = torch.randn([100], { device: d });
      const fh = f.half();
      expect([...(await h.data())], d).toEqual([...(await fh.data())]);
      [h, f, fh].forEach((t) => t.dispose());
    }
  });
});

describe('generators', () => {
  it('each device has its own default generator; torch.gpu.manualSeed seeds the current GPU only', async () => {
    torch.manualSeed(7);
    const a0 = await take(torch.rand([8], { device: 'gpu:0' }));
    torch.manualSeed(7);
    torch.rand([8], { device: 'gpu:1' }).dispose(); // gpu:1's draw leaves gpu:0's stream alone
    torch.rand([8]).dispose();
    expect(await take(torch.rand([8], { device: 'gpu:0' }))).toEqual(a0);
    torch.manualSeed(7);
    torch.gpu.withDevice(1, () => torch.gpu.manualSeed(8));
    expect(torch.gpu.initialSeed()).toBe(7);
    expect(torch.gpu.withDevice(1, () => torch.gpu.initialSeed())).toBe(8);
    expect(await take(torch.rand([8], { device: 'gpu:0' }))).toEqual(a0);
    torch.gpu.manualSeedAll(7);
    expect(await take(torch.rand([8], { device: 'gpu:1' }))).toEqual(a0);
    expect(torch.initialSeed()).toBe(7);
  });

  it('a Generator is isolated from the default generator and from other generators', async () => {
    for (const d of devices) {
      torch.manualSeed(3);
      const plain = [await take(torch.randn([10], { device: d })), await take(torch.randn([10], { device: d }))];
      torch.manualSeed(3);
      const g = new torch.Generator({ device: d }).manualSeed(3);
      const first = await take(torch.randn([10], { device: d }));
      const mine = await take(torch.randn([10], { device: d, generator: g }));
      expect(await take(torch.randn([10], { device: d })), d).toEqual(plain[1]);
      expect(first).toEqual(plain[0]);
      expect(mine, 'same seed, own stream').toEqual(plain[0]);
      expect(g.initialSeed()).toBe(3);
      expect(String(g.device)).toBe(d);
    }
  });

  it('seed() gives a fresh safe-integer seed; BigInt seeds wrap to uint64 as in PyTorch', () => {
    const g = new torch.Generator();
    const s = g.seed();
    expect(Number.isSafeInteger(s)).toBe(true);
    expect(g.initialSeed()).toBe(s);
    expect(g.manualSeed(-1).initialSeed()).toBe(2n ** 64n - 1n);
    expect(g.manualSeed(2n ** 40n).initialSeed()).toBe(2 ** 40);
  });
});

describe('RNG state', () => {
  it('getRngState/setRngState round-trip on cpu and each GPU; states are 16-byte Uint8Arrays that JSON can hold', async () => {
    torch.manualSeed(11);
    for (const d of devices) {
      const gpu = d !== 'cpu';
      const state = gpu ? torch.gpu.getRngState(d) : torch.getRngState();
      expect(state).toBeInstanceOf(Uint8Array);
      expect(state.length).toBe(16);
      const json = JSON.stringify({ state: Array.from(state), seed: gpu ? torch.gpu.initialSeed() : torch.initialSeed() });
      const a = await take(torch.randn([50], { device: d }));
      const back = Uint8Array.from(JSON.parse(json).state as number[]);
      if (gpu) torch.gpu.setRngState(back, d);
      else torch.setRngState(back);
      expect(await take(torch.randn([50], { device: d })), d).toEqual(a);
    }
    const all = torch.gpu.getRngStateAll();
    expect(all.length).toBe(2);
    const a = await take(torch.rand([5], { device: 'gpu:1' }));
    torch.gpu.setRngStateAll(all);
    expect(await take(torch.rand([5], { device: 'gpu:1' }))).toEqual(a);
  });

  it('a Generator\'s getState/setState round-trips', async () => {
    const g = new torch.Generator({ device: 'gpu:0' }).manualSeed(21);
    torch.rand([3], { device: 'gpu:0', generator: g }).dispose();
    const s = g.getState();
    const a = await take(torch.randint(0, 100, [20], { device: 'gpu:0', generator: g }));
    g.manualSeed(1);
    g.setState(s);
    expect(await take(torch.randint(0, 100, [20], { device: 'gpu:0', generator: g }))).toEqual(a);
    expect(g.initialSeed()).toBe(21);
  });

  it('a state of the wrong size or type raises a clear error', () => {
    expect(() => torch.setRngState(new Uint8Array(5))).toThrow('RNG state is wrong size: expected 16 bytes (seed and offset), got 5');
    expect(() => torch.gpu.setRngState(new Uint8Array(5040), 0)).toThrow('RNG state is wrong size');
    expect(() => torch.setRngState([1, 2, 3] as unknown as Uint8Array)).toThrow('expected the state as a Uint8Array');
    expect(() => new torch.Generator().setState(new Uint8Array(17))).toThrow('got 17');
  });
});

describe('forkRng', () => {
  it('restores the cpu and GPU generators after a synchronous fn, and after a throw', async () => {
    torch.manualSeed(5);
    const want = [await take(torch.rand([6])), await take(torch.rand([6], { device: 'gpu:1' }))];
    torch.manualSeed(5);
    const inside = torch.random.forkRng(() => {
      torch.rand([6]).dispose();
      torch.rand([6], { device: 'gpu:1' }).dispose();
      return 42;
    });
    expect(inside).toBe(42);
    expect(() => torch.random.forkRng({ devices: [1] }, () => {
      torch.rand([6], { device: 'gpu:1' }).dispose();
      throw new Error('boom');
    })).toThrow('boom');
    expect(await take(torch.rand([6]))).toEqual(want[0]);
    expect(await take(torch.rand([6], { device: 'gpu:1' }))).toEqual(want[1]);
  });

  it('restores after an async fn settles; only the listed GPUs; enabled: false does not fork', async () => {
    torch.manualSeed(6);
    const want0 = await take(torch.rand([4], { device: 'gpu:0' }));
    const next1 = await take(torch.rand([4], { device: 'gpu:1' }));
    torch.manualSeed(6);
    torch.rand([4], { device: 'gpu:1' }).dispose();
    const after1 = await take(torch.rand([4], { device: 'gpu:1' }));
    torch.manualSeed(6);
    torch.rand([4], { device: 'gpu:1' }).dispose();
    const r = await torch.random.forkRng({ devices: ['gpu:0'] }, async () => {
      const t = torch.rand([4], { device: 'gpu:0' });
      await torch.gpu.synchronize();
      torch.rand([4], { device: 'gpu:1' }).dispose(); // not forked: advances for good
      return take(t);
    });
    expect(r).toEqual(want0);
    expect(await take(torch.rand([4], { device: 'gpu:0' }))).toEqual(want0);
    expect(await take(torch.rand([4], { device: 'gpu:1' }))).not.toEqual(after1);
    torch.manualSeed(6);
    torch.random.forkRng({ enabled: false }, () => torch.rand([4], { device: 'gpu:1' }).dispose());
    expect(await take(torch.rand([4], { device: 'gpu:1' }))).toEqual(after1);
    expect(after1).not.toEqual(next1);
    expect(() => torch.random.forkRng({ devices: ['cpu'] }, () => 0)).toThrow('expected a gpu device');
    expect(() => torch.random.forkRng({ bogus: 1 } as never, () => 0)).toThrow("unexpected keyword argument 'bogus'");
  });
});

describe('the work is on the device', () => {
  it('randn of 1M elements returns to the caller in under 1 ms, with mean ≈ 0 and std ≈ 1', async () => {
    for (const d of devices) {
      torch.randn([1000, 1000], { device: d }).dispose(); // compiles the kernel and caches the block
      await torch.gpu.synchronize(d);
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        const x = torch.randn([1000, 1000], { device: d });
        best = Math.min(best, performance.now() - t0);
        const [m, s] = [torch.mean(x), torch.std(x)];
        expect(Math.abs(await m.item()), `${d} mean`).toBeLessThan(0.005);
        expect(Math.abs((await s.item()) - 1), `${d} std`).toBeLessThan(0.005);
        [x, m, s].forEach((t) => t.dispose());
      }
      expect(best, `${d}: the synchronous randn call (ms)`).toBeLessThan(1);
    }
  });

  it('rand, randint and bernoulli have the right moments and ranges', async () => {
    for (const d of devices) {
      torch.manualSeed(17);
      const u = torch.rand([1 << 18], { device: d });
      const um = torch.mean(u), uv = torch.var(u), lo = torch.min(u), hi = torch.max(u);
      expect(Math.abs((await um.item()) - 0.5), d).toBeLessThan(0.005);
      expect(Math.abs((await uv.item()) - 1 / 12), d).toBeLessThan(0.002);
      expect(await lo.item()).toBeGreaterThanOrEqual(0);
      expect(await hi.item()).toBeLessThan(1);
      const r = torch.randint(-3, 4, [1 << 16], { device: d });
      const vals = Array.from((await r.data()) as BigInt64Array, Number); // randint gives int64
      const counts = new Map<number, number>();
      for (const v of vals) counts.set(v, (counts.get(v) ?? 0) + 1);
      expect([...counts.keys()].sort((a, b) => a - b)).toEqual([-3, -2, -1, 0, 1, 2, 3]);
      for (const c of counts.values()) expect(Math.abs(c / vals.length - 1 / 7)).toBeLessThan(0.01);
      const p = torch.full([1 << 16], 0.2, { device: d }), b = torch.bernoulli(p), bm = torch.mean(b);
      expect(Math.abs((await bm.item()) - 0.2)).toBeLessThan(0.01);
      [u, um, uv, lo, hi, r, p, b, bm].forEach((t) => t.dispose());
    }
  });

  it('normal_, uniform_ and bernoulli_ fill strided views in place; dropout scales the kept elements', async () => {
    for (const d of devices) {
      const x = torch.zeros([4, 6], { device: d });
      const col = x.index(':', '1::2');
      col.uniform_(2, 3);
      const vals = (await x.tolist()) as number[][];
      for (const row of vals) {
        row.forEach((v, j) => (j % 2 ? expect(v >= 2 && v < 3, `${d} ${v}`).toBe(true) : expect(v).toBe(0)));
      }
      const [r0, r1] = [x.index(0), x.index(1)];
      r0.bernoulli_(1);
      expect((await x.tolist() as number[][])[0]).toEqual([1, 1, 1, 1, 1, 1]);
      r1.normal_({ mean: 10, std: 0 });
      expect((await x.tolist() as number[][])[1]).toEqual([10, 10, 10, 10, 10, 10]);
      const one = torch.ones([1000], { device: d }), y = torch.dropout(one, 0.4, true);
      one.dispose();
      const ys = (await y.tolist()) as number[];
      expect(new Set(ys.map((v) => Math.fround(v)))).toEqual(new Set([0, Math.fround(1 / 0.6)]));
      expect(Math.abs(ys.filter((v) => v === 0).length / 1000 - 0.4)).toBeLessThan(0.06);
      [x, col, r0, r1, y].forEach((t) => t.dispose());
    }
  });
});

describe('randperm', () => {
  it('is a permutation made on the device, the same on every device for one seed, in any dtype', async () => {
    const seen: number[][] = [];
    for (const d of devices) {
      torch.manualSeed(4);
      const p = torch.randperm(5000, { device: d });
      const v = (await p.tolist()) as number[];
      expect(p.dtype).toBe('int64');
      expect([...v].sort((a, b) => a - b)).toEqual(Array.from({ length: 5000 }, (_, i) => i));
      expect(v.slice(0, 10)).not.toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      seen.push(v);
      const f = torch.randperm(7, { device: d, dtype: 'float32', generator: new torch.Generator({ device: d }).manualSeed(4) });
      expect(f.dtype).toBe('float32');
      expect([...((await f.tolist()) as number[])].sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
      const e = torch.randperm(0, { device: d });
      expect(e.shape).toEqual([0]);
      [p, f, e].forEach((t) => t.dispose());
    }
    for (let i = 1; i < seen.length; i++) expect(seen[i], devices[i]).toEqual(seen[0]);
  });
});

describe('multinomial', () => {
  it('samples follow the probabilities, with and without replacement, and repeat under one seed on every device', async () => {
    const seen: number[][][] = [];
    for (const d of devices) {
      torch.manualSeed(8);
      const probs = torch.tensor([[0, 1, 3, 6], [5, 0, 0, 5]], { device: d, dtype: 'float32' });
      const many = torch.multinomial(probs, 4000, true);
      const rows = (await many.tolist()) as number[][];
      expect(many.dtype).toBe('int64');
      expect(many.shape).toEqual([2, 4000]);
      const freq = (r: number[], c: number) => r.filter((v) => v === c).length / r.length;
      [0.0, 0.1, 0.3, 0.6].forEach((p, c) => expect(Math.abs(freq(rows[0], c) - p), `${d} category ${c}`).toBeLessThan(0.03));
      expect(freq(rows[1], 1) + freq(rows[1], 2)).toBe(0);
      const perm = torch.multinomial(probs, 2, { generator: new torch.Generator({ device: d }).manualSeed(1) });
      const pr = (await perm.tolist()) as number[][];
      expect(new Set(pr[1])).toEqual(new Set([0, 3]));            // without replacement: both non-zero categories
      const row0 = probs.index(0), one = row0.multinomial(3);          // 1-D input: [numSamples]
      const o = (await one.tolist()) as number[];
      expect(o.length).toBe(3);
      expect(new Set(o).size).toBe(3);
      expect(o).not.toContain(0);
      seen.push([rows[0].slice(0, 50), pr[0], o]);
      [probs, many, perm, row0, one].forEach((t) => t.dispose());
    }
    for (let i = 1; i < seen.length; i++) expect(seen[i], devices[i]).toEqual(seen[0]);
  });

  it('refuses bad arguments', () => {
    const p = torch.ones([3]);
    try {
      expect(() => torch.multinomial(p, 4)).toThrow('cannot sample n_sample > prob_dist.size(-1) samples without replacement');
      expect(() => torch.multinomial(p, 0)).toThrow('cannot sample n_sample <= 0 samples');
      const i = torch.ones([3], { dtype: 'int64' }), s = torch.ones([]);
      expect(() => torch.multinomial(i, 1)).toThrow('multinomial only supports floating-point dtypes for input, got: Long');
      expect(() => torch.multinomial(s, 1)).toThrow('prob_dist must be 1 or 2 dim');
      [i, s].forEach((t) => t.dispose());
    } finally {
      p.dispose();
    }
  });
});

describe('errors', () => {
  it('bad arguments raise with PyTorch\'s wording', () => {
    const g = new torch.Generator();
    expect(() => torch.rand([2], { device: 'gpu:0', generator: g })).toThrow("Expected a 'gpu' device type for generator but found 'cpu'");
    expect(() => torch.randn([2], { generator: new torch.Generator({ device: 'gpu:1' }) })).toThrow("Expected a 'cpu' device type for generator but found 'gpu'");
    expect(() => torch.rand([2], { dtype: 'int32' })).toThrow(`"check_uniform_bounds" not implemented for 'Int'`);
    expect(() => torch.randn([2], { dtype: 'int64' })).toThrow(`"normal_kernel" not implemented for 'Long'`);
    expect(() => torch.manualSeed(1.5)).toThrow('seed must be an integer');
    expect(() => torch.manualSeed(2n ** 64n)).toThrow('Overflow when unpacking long');
    expect(() => torch.randint(0, 2 ** 33, [2], { dtype: 'float32' })).toThrow('must lie within int32');
    const t = torch.zeros([3]);
    try {
      expect(() => t.normal_(0, -1)).toThrow('normal expects std >= 0.0, but found std -1');
      expect(() => t.uniform_(2, 1)).toThrow('uniform_ expects to return a [from, to) range, but found from=2 > to=1');
      expect(() => t.bernoulli_(1.5)).toThrow('bernoulli_ expects p to be in [0, 1], but got p=1.5');
      expect(() => torch.bernoulli(t, 2)).toThrow('bernoulli expects p to be in [0, 1], but got p=2');
      expect(() => t.normal_({ bogus: 1 } as never)).toThrow("unexpected keyword argument 'bogus'");
      expect(() => t.uniform_(0, 1, { generator: {} as never })).toThrow("argument 'generator' must be torch.Generator");
      const w = torch.zeros([3], { requiresGrad: true });
      expect(() => w.normal_()).toThrow('a leaf Variable that requires grad is being used in an in-place operation');
      torch.noGrad(() => w.normal_());
      w.dispose();
      const i = torch.zeros([3], { dtype: 'int64' });
      expect(() => i.normal_()).toThrow(`not implemented for 'Long'`);
      expect(() => torch.bernoulli(i)).toThrow(`not implemented for 'Long'`);
      i.dispose();
    } finally {
      t.dispose();
    }
  });
});
