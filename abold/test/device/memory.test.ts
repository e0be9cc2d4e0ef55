/**
 * The caching allocator behind real tensors on every device: PyTorch's statistics for known
 * sequences, emptyCache, the out-of-memory path of the seeds' example, the summary table, and
 * tensors freed by the garbage collector.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';

const MiB = 1024 * 1024;
const devices = await testDevices();

beforeAll(() => {
  for (const d of devices) torch.gpu.emptyCache(d);
});
leakCheck(() => devices);
afterAll(async () => {
  await torch.shutdown();
});

describe.each(devices)('the caching allocator on %s', (d) => {
  const stat = (k: string) => torch.gpu.memoryStats(d)[k as keyof torch.MemoryStats];

  it("runs the seeds' example: out of memory, emptyCache, a smaller allocation succeeds", async () => {
    let caught: unknown;
    try {
      torch.randn([100000, 100000], { device: d });
    } catch (e) {
      caught = e;
      torch.gpu.emptyCache(d);
    }
    expect(caught).toBeInstanceOf(torch.OutOfMemoryError);
    const label = d === 'cpu' ? 'CPU' : `GPU ${d.slice(4)}`;
    expect((caught as Error).message).toMatch(new RegExp(`^Tried to allocate 37\\.25 GiB\\. ${label} has a total capacity of [\\d.]+ GiB of which [\\d.]+ GiB is free\\. Of the allocated memory .* is allocated by webtorch, and .* is reserved by webtorch but unallocated\\.$`));
    expect(stat('num_ooms')).toBeGreaterThanOrEqual(1);
    const smaller = torch.randn([1000, 1000], { device: d });
    expect(smaller.shape).toEqual([1000, 1000]);
    const mean = smaller.mean();
    expect(Math.abs((await mean.item()) as number)).toBeLessThan(0.01);
    smaller.dispose();
    mean.dispose();
  });

  it('pins the statistics of a known sequence: rounding, pools, splitting, peaks, emptyCache', async () => {
    torch.gpu.emptyCache(d);
    torch.gpu.resetPeakMemoryStats(d);
    torch.gpu.resetAccumulatedMemoryStats(d);
    const base = torch.gpu.memoryAllocated(d);
    expect(torch.gpu.memoryReserved(d)).toBe(0);

    const one = torch.empty([1], { device: d });                       // 4 B → one 512 B block of a 2 MiB small segment
    expect(torch.gpu.memoryAllocated(d) - base).toBe(512);
    expect(torch.gpu.memoryReserved(d)).toBe(2 * MiB);
    const two = torch.empty([129], { device: d });                     // 516 B → 1024 B, same segment (split)
    expect(torch.gpu.memoryAllocated(d) - base).toBe(1536);
    expect(stat('segment.small_pool.current')).toBe(1);
    expect(stat('allocation.small_pool.current')).toBe(2);
    expect(stat('requested_bytes.all.current')).toBe(4 + 516);

    const big = torch.empty([MiB / 4 + 1], { device: d });             // 1 MiB + 4 B → large pool, 20 MiB segment
    expect(torch.gpu.memoryAllocated(d) - base).toBe(1536 + MiB + 512);
    expect(torch.gpu.memoryReserved(d)).toBe(22 * MiB);
    const mid = torch.empty([(12 * MiB) / 4], { device: d });          // 12 MiB fits the cached rest of that segment
    expect(torch.gpu.memoryReserved(d)).toBe(22 * MiB);
    const huge = torch.empty([(24 * MiB) / 4], { device: d });         // 24 MiB → its own 24 MiB segment
    expect(torch.gpu.memoryReserved(d)).toBe(46 * MiB);
    expect(stat('segment.large_pool.current')).toBe(2);
    const peak = torch.gpu.memoryAllocated(d);

    huge.dispose();
    mid.dispose();
    big.dispose();
    expect(torch.gpu.memoryAllocated(d) - base).toBe(1536);
    expect(torch.gpu.maxMemoryAllocated(d)).toBe(peak);
    expect(torch.gpu.memoryReserved(d)).toBe(46 * MiB);              // cached, not given back
    const again = torch.empty([MiB / 4 + 1], { device: d });           // reuses a cached segment
    expect(torch.gpu.memoryReserved(d)).toBe(46 * MiB);
    again.dispose();

    torch.gpu.emptyCache(d);                                            // gives back the large segments only
    expect(torch.gpu.memoryReserved(d)).toBe(2 * MiB);
    expect(stat('num_device_free')).toBe(2);
    torch.gpu.resetPeakMemoryStats(d);
    expect(torch.gpu.maxMemoryAllocated(d)).toBe(torch.gpu.memoryAllocated(d));

    one.dispose();
    two.dispose();                                                      // the blocks merge back into one free segment
    expect(stat('inactive_split.all.current')).toBe(0);
    torch.gpu.emptyCache(d);
    expect(torch.gpu.memoryReserved(d)).toBe(0);

    const t = torch.tidy(() => torch.arange(10, undefined, 1, { device: d, dtype: 'float32' }).mul(2).sum());
    expect(await t.item()).toBe(90);                                    // segments were really released and recreated
    t.dispose();
  });

  it('prints memorySummary in PyTorch’s layout', () => {
    const keep = torch.empty([100], { device: d });
    const s = torch.gpu.memorySummary(d);
    const lines = s.split('\n');
    expect(lines[0]).toMatch(/^\|=+\|$/);
    expect(s).toContain(`webtorch memory summary, device ${d}`);
    expect(s).toMatch(/\|\s+Metric\s+\|\s+Cur Usage\s+\|\s+Peak Usage\s+\|\s+Tot Alloc\s+\|\s+Tot Freed\s+\|/);
    for (const section of ['Allocated memory', 'Active memory', 'Requested memory', 'GPU reserved memory', 'Non-releasable memory', 'Allocations', 'Active allocs', 'GPU reserved segments', 'Non-releasable allocs', 'Oversize allocations', 'Oversize GPU segments']) {
      expect(s).toContain(section);
    }
    expect(s).toMatch(/\|\s+from small pool\s+\|/);
    keep.dispose();
  });

  it('caps allocations with setPerProcessMemoryFraction', () => {
    torch.gpu.setPerProcessMemoryFraction(0.001, d);
    try {
      expect(() => torch.empty([16 * MiB], { device: d })).toThrow(torch.OutOfMemoryError);
      expect(() => torch.gpu.setPerProcessMemoryFraction(1.5, d)).toThrow(RangeError);
    } finally {
      torch.gpu.setPerProcessMemoryFraction(1, d);
    }
  });

  it('gives raw blocks with cachingAllocatorAlloc/Delete', () => {
    const base = torch.gpu.memoryAllocated(d);
    const b = torch.gpu.cachingAllocatorAlloc(1000, d);
    expect(b.size).toBe(1024);
    expect(b.offset % 512).toBe(0);
    expect(torch.gpu.memoryAllocated(d) - base).toBe(1024);
    torch.gpu.cachingAllocatorDelete(b);
    expect(torch.gpu.memoryAllocated(d)).toBe(base);
    expect(() => torch.gpu.cachingAllocatorDelete(b)).toThrow(/already freed/);
    expect(() => torch.gpu.cachingAllocatorAlloc(-1, d)).toThrow(RangeError);
  });
});

describe('tensors nobody holds are freed', () => {
  it.each(devices)('drops thousands of tensors on %s without dispose, and the memory comes back', (d) => {
    const script = `
      const torch = await import('./dist/webtorch.js');
      ${d === 'cpu' ? '' : 'torch.gpu.configure({ devices: 2 }); await torch.gpu.init();'}
      const dev = '${d}';
      const start = torch.gpu.memoryAllocated(dev);
      for (let i = 0; i < 5000; i++) torch.full([256], i, { device: dev });   // 1 KiB each, never disposed
      const dropped = torch.gpu.memoryAllocated(dev) - start;
      for (let i = 0; i < 20 && torch.gpu.memoryAllocated(dev) > start; i++) {
        globalThis.gc();
        await new Promise((r) => setTimeout(r, 20));
      }
      console.log(JSON.stringify({ dropped, after: torch.gpu.memoryAllocated(dev) - start }));
      await torch.shutdown();`;
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
      encoding: 'utf8', env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' },
    });
    expect(r.status, r.stderr).toBe(0);
    const { dropped, after } = JSON.parse(r.stdout.trim().split('\n').pop()!);
    expect(dropped).toBeGreaterThan(0);
    expect(after).toBe(0);
  });
});
