// Tests of the caching allocator (assembly/allocator + ts/memory).
//
// Rules: statistics are pinned to exact values for short known sequences,
// worked out from PyTorch's CUDACachingAllocator rules; a seeded random
// workload checks the structural invariants after every step.

import { describe, expect, it } from "vitest";
import { CachingAllocator, type CachingAllocatorOptions } from "../../ts/memory/allocator.js";
import { BlockError, formatSize, OutOfMemoryError } from "../../ts/memory/errors.js";
import { formatCountCell, formatSizeCell } from "../../ts/memory/summary.js";
import { allocatorWasm } from "../../ts/memory/allocator-wasm.generated.js";
import { decodeBase64, instantiateAllocator, WasmCode } from "../../ts/memory/wasm.js";

const KiB = 1024;
const MiB = 1024 * KiB;

interface Host {
  alloc: CachingAllocator;
  segments: Map<number, number>;
  log: string[];
}

function setup(overrides: Partial<CachingAllocatorOptions> = {}): Host {
  const segments = new Map<number, number>();
  const log: string[] = [];
  const alloc = new CachingAllocator({
    capacity: 1024 * MiB,
    label: "gpu:0",
    alignment: 256,
    createSegment(id, bytes) {
      if (segments.has(id)) throw new Error(`segment ${id} created twice`);
      segments.set(id, bytes);
      log.push(`create ${id} ${bytes}`);
      return true;
    },
    releaseSegment(id) {
      if (!segments.delete(id)) throw new Error(`segment ${id} released but unknown`);
      log.push(`release ${id}`);
    },
    ...overrides,
  });
  return { alloc, segments, log };
}

function stat(a: CachingAllocator, key: string): number {
  return (a.memoryStats() as Record<string, number>)[key]!;
}

describe("size classes", () => {
  it("rounds requests up to 512 B, 0 B included", () => {
    const { alloc } = setup();
    expect(alloc.malloc(1).size).toBe(512);
    expect(alloc.malloc(513).size).toBe(1024);
    expect(alloc.malloc(0).size).toBe(512);
    expect(alloc.malloc(512).size).toBe(512);
    const s = alloc.memoryStats();
    expect(s["allocated_bytes.all.current"]).toBe(2560);
    expect(s["requested_bytes.all.current"]).toBe(1 + 513 + 0 + 512);
    expect(s["allocation.small_pool.current"]).toBe(4);
    expect(s["segment.small_pool.current"]).toBe(1);
  });

  it("puts 1 MiB in the small pool and 1 MiB + 1 in a 20 MiB large segment", () => {
    const { alloc, log } = setup();
    const small = alloc.malloc(MiB);
    const large = alloc.malloc(MiB + 1);
    expect(small).toEqual({ block: small.block, segment: 1, offset: 0, size: MiB });
    expect(large).toEqual({ block: large.block, segment: 2, offset: 0, size: MiB + 512 });
    expect(log).toEqual([`create 1 ${2 * MiB}`, `create 2 ${20 * MiB}`]);
    const s = alloc.memoryStats();
    expect(s["reserved_bytes.small_pool.current"]).toBe(2 * MiB);
    expect(s["reserved_bytes.large_pool.current"]).toBe(20 * MiB);
    expect(s["allocated_bytes.large_pool.current"]).toBe(MiB + 512);
    expect(s["inactive_split.large_pool.current"]).toBe(1);
    expect(s["inactive_split_bytes.large_pool.current"]).toBe(19 * MiB - 512);
    expect(s["inactive_split_bytes.small_pool.current"]).toBe(MiB);
  });

  it("gives requests of 10 MiB and more a segment rounded to 2 MiB", () => {
    const { alloc, log } = setup();
    expect(alloc.malloc(12 * MiB).size).toBe(12 * MiB);
    expect(alloc.malloc(11 * MiB + 1).size).toBe(12 * MiB);
    expect(alloc.malloc(10 * MiB).size).toBe(10 * MiB);
    expect(log).toEqual([`create 1 ${12 * MiB}`, `create 2 ${12 * MiB}`, `create 3 ${10 * MiB}`]);
    const s = alloc.memoryStats();
    expect(s["segment.large_pool.current"]).toBe(3);
    expect(s["inactive_split.all.current"]).toBe(0);
    expect(s["reserved_bytes.all.current"]).toBe(34 * MiB);
  });
});

describe("split and merge", () => {
  it("tracks inactive splits and reuses the merged block", () => {
    const { alloc } = setup();
    const a = alloc.malloc(1000);
    const b = alloc.malloc(2000);
    const c = alloc.malloc(3000);
    expect([a.offset, b.offset, c.offset]).toEqual([0, 1024, 3072]);
    const tail = 2 * MiB - 6144;
    const split = () => [stat(alloc, "inactive_split.all.current"), stat(alloc, "inactive_split_bytes.all.current")];
    expect(split()).toEqual([1, tail]);
    alloc.free(b.block);
    expect(split()).toEqual([2, tail + 2048]);
    alloc.free(a.block);
    expect(split()).toEqual([2, tail + 3072]);
    const snap = alloc.memorySnapshot()[0]!;
    expect(snap.blocks.map((x) => [x.offset, x.size, x.state])).toEqual([
      [0, 3072, "inactive"],
      [3072, 3072, "active_allocated"],
      [6144, tail, "inactive"],
    ]);
    const d = alloc.malloc(2500);
    expect([d.segment, d.offset, d.size]).toEqual([1, 0, 2560]);
    expect(split()).toEqual([2, tail + 512]);
    alloc.free(d.block);
    alloc.free(c.block);
    expect(split()).toEqual([0, 0]);
    const s = alloc.memoryStats();
    expect(s["inactive_split.all.allocated"]).toBe(2);
    expect(s["inactive_split.all.freed"]).toBe(2);
    expect(s["inactive_split.all.peak"]).toBe(2);
    expect(alloc.memorySnapshot()[0]!.blocks).toEqual([{ offset: 0, size: 2 * MiB, requestedSize: 0, state: "inactive" }]);
    expect(s["active.all.current"]).toBe(0);
    expect(s["allocated_bytes.all.allocated"]).toBe(1024 + 2048 + 3072 + 2560);
  });

  it("best fit prefers the smallest block, then the lower offset", () => {
    const { alloc } = setup();
    const blocks = [4096, 1024, 2048, 1024, 1024].map((n) => alloc.malloc(n));
    alloc.free(blocks[0]!.block);
    alloc.free(blocks[2]!.block);
    expect(alloc.malloc(1500).offset).toBe(blocks[2]!.offset);
    expect(alloc.malloc(1500).offset).toBe(blocks[0]!.offset);
  });

  it("splits large blocks only when more than 1 MiB remains", () => {
    const { alloc } = setup();
    const a = alloc.malloc(9 * MiB);
    expect(alloc.memorySnapshot()[0]!.blocks.map((x) => x.size)).toEqual([9 * MiB, 11 * MiB]);
    alloc.free(a.block);
    const b = alloc.malloc(19 * MiB + 1);
    expect([b.segment, b.size]).toEqual([1, 20 * MiB]);
    expect(alloc.memorySnapshot()[0]!.blocks.length).toBe(1);
  });
});

describe("peaks and resets", () => {
  it("keeps peaks until reset and zeroes totals on resetAccumulated", () => {
    const { alloc } = setup();
    const a = alloc.malloc(MiB);
    const b = alloc.malloc(12 * MiB);
    alloc.free(b.block);
    expect(alloc.memoryAllocated()).toBe(MiB);
    expect(alloc.maxMemoryAllocated()).toBe(13 * MiB);
    expect(alloc.memoryReserved()).toBe(14 * MiB);
    expect(alloc.maxMemoryReserved()).toBe(14 * MiB);
    alloc.resetPeakMemoryStats();
    expect(alloc.maxMemoryAllocated()).toBe(MiB);
    alloc.resetAccumulatedMemoryStats();
    const s = alloc.memoryStats();
    expect(s["allocated_bytes.all.allocated"]).toBe(0);
    expect(s["allocated_bytes.all.freed"]).toBe(0);
    expect(s["allocated_bytes.all.current"]).toBe(MiB);
    expect(s.num_device_alloc).toBe(0);
    alloc.free(a.block);
    expect(stat(alloc, "allocated_bytes.all.freed")).toBe(MiB);
    expect(stat(alloc, "allocated_bytes.all.peak")).toBe(MiB);
  });

  it("reports every PyTorch key, sorted", () => {
    const keys = Object.keys(setup().alloc.memoryStats());
    expect(keys.length).toBe(9 * 3 * 4 + 2 * 4 + 6);
    expect([...keys].sort()).toEqual(keys);
    for (const k of ["num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free", "max_split_size", "oversize_segments.peak", "requested_bytes.large_pool.freed"]) {
      expect(keys).toContain(k);
    }
    expect(setup().alloc.memoryStats().max_split_size).toBe(-1);
  });
});

describe("streams", () => {
  it("never hands a block freed on one stream to another", () => {
    const { alloc, log } = setup();
    const a = alloc.malloc(1000, 1);
    alloc.free(a.block);
    const b = alloc.malloc(1000, 2);
    expect(b.segment).not.toBe(a.segment);
    const c = alloc.malloc(1000, 1);
    expect([c.segment, c.offset]).toEqual([a.segment, a.offset]);
    expect(log.length).toBe(2);
    expect(alloc.memorySnapshot().map((s) => s.stream)).toEqual([1, 2]);
  });

  it("defers reuse of a recorded block until streamDone", () => {
    const { alloc } = setup();
    const a = alloc.malloc(1000);
    alloc.recordStream(a.block, 5);
    alloc.recordStream(a.block, 6);
    alloc.recordStream(a.block, 0);
    alloc.free(a.block);
    expect(alloc.memoryAllocated()).toBe(0);
    expect(stat(alloc, "active_bytes.all.current")).toBe(1024);
    expect(alloc.memorySnapshot()[0]!.blocks[0]!.state).toBe("active_pending_free");
    expect(alloc.malloc(1000).offset).toBe(1024);
    expect(alloc.streamDone(5)).toBe(0);
    expect(alloc.streamDone(7)).toBe(0);
    expect(alloc.malloc(1000).offset).toBe(2048);
    expect(alloc.streamDone(6)).toBe(1);
    expect(stat(alloc, "active_bytes.all.current")).toBe(2048);
    expect(alloc.malloc(1000).offset).toBe(0);
    expect(() => alloc.free(a.block)).toThrow(`block ${a.block} was already freed`);
  });

  it("completes a recorded free only once its stream has passed the mark set before the free", () => {
    const { alloc } = setup();
    const a = alloc.malloc(1000), b = alloc.malloc(1000);
    alloc.recordStream(a.block, 4);
    alloc.recordStream(b.block, 4);
    alloc.streamMark(4, 10);
    alloc.free(a.block); // waits for mark 10 of stream 4
    alloc.streamMark(4, 12);
    alloc.free(b.block); // waits for mark 12
    expect(alloc.streamDoneUpTo(4, 9)).toBe(0);
    expect(alloc.streamDoneUpTo(5, 20)).toBe(0);
    expect(alloc.streamDoneUpTo(4, 11)).toBe(1);
    expect(stat(alloc, "active_bytes.all.current")).toBe(1024);
    expect(alloc.streamDoneUpTo(4, 12)).toBe(1);
    expect(stat(alloc, "active_bytes.all.current")).toBe(0);
    expect(() => alloc.streamMark(-1, 1)).toThrow(RangeError);
  });

  it("keeps segments with pending frees out of emptyCache unless the host can synchronize", () => {
    const { alloc, log } = setup();
    const a = alloc.malloc(1000);
    alloc.recordStream(a.block, 3);
    alloc.free(a.block);
    alloc.emptyCache();
    expect(log).toEqual([`create 1 ${2 * MiB}`]);
    alloc.streamDone(3);
    alloc.emptyCache();
    expect(log).toEqual([`create 1 ${2 * MiB}`, "release 1"]);

    const synced = setup({ synchronize: () => true });
    const b = synced.alloc.malloc(1000);
    synced.alloc.recordStream(b.block, 3);
    synced.alloc.free(b.block);
    synced.alloc.emptyCache();
    expect(synced.log).toEqual([`create 1 ${2 * MiB}`, "release 1"]);
    expect(stat(synced.alloc, "num_sync_all_streams")).toBe(1);
    expect(stat(synced.alloc, "active.all.current")).toBe(0);
  });
});

describe("emptyCache", () => {
  it("releases only fully free segments, with the right ids", () => {
    const { alloc, log, segments } = setup();
    const a = alloc.malloc(1000);
    const b = alloc.malloc(12 * MiB);
    const c = alloc.malloc(5 * MiB);
    const d = alloc.malloc(5 * MiB);
    alloc.free(b.block);
    alloc.free(c.block);
    alloc.emptyCache();
    expect(log).toEqual([`create 1 ${2 * MiB}`, `create 2 ${12 * MiB}`, `create 3 ${20 * MiB}`, "release 2"]);
    expect([...segments.keys()]).toEqual([1, 3]);
    const s = alloc.memoryStats();
    expect(s["reserved_bytes.all.current"]).toBe(22 * MiB);
    expect(s.num_device_alloc).toBe(3);
    expect(s.num_device_free).toBe(1);
    expect(alloc.malloc(MiB * 12).segment).toBe(2);
    alloc.free(a.block);
    alloc.free(d.block);
    alloc.emptyCache();
    expect(log.slice(-2)).toEqual(["release 1", "release 3"]);
  });
});

describe("out of memory", () => {
  it("throws PyTorch's message after releasing the cache, then recovers", () => {
    const { alloc, log } = setup({ capacity: 8 * MiB });
    const cached = [1, 2, 3].map((s) => alloc.malloc(1000, s));
    cached.forEach((x) => alloc.free(x.block));
    const live = alloc.malloc(1000, 4);
    let error: unknown;
    try {
      alloc.malloc(20 * MiB);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutOfMemoryError);
    const oom = error as OutOfMemoryError;
    expect(oom.name).toBe("OutOfMemoryError");
    expect(oom.message).toBe(
      "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 8.00 MiB of which 6.00 MiB is free. " +
        "Of the allocated memory 1024 bytes is allocated by webtorch, and 2.00 MiB is reserved by webtorch but unallocated.",
    );
    expect(oom.details.requestedBytes).toBe(20 * MiB);
    expect(log.filter((l) => l.startsWith("release"))).toEqual(["release 1", "release 2", "release 3"]);
    const s = alloc.memoryStats();
    expect([s.num_ooms, s.num_alloc_retries]).toEqual([1, 1]);
    expect(s["segment.all.current"]).toBe(1);
    expect(alloc.malloc(MiB, 5).segment).toBe(1);
    alloc.free(live.block);
  });

  it("frees cached segments to make room without failing", () => {
    const { alloc, log } = setup({ capacity: 8 * MiB });
    [1, 2, 3, 4].map((s) => alloc.malloc(1000, s)).forEach((x) => alloc.free(x.block));
    const x = alloc.malloc(1000, 5);
    expect(x.segment).toBe(1);
    expect(log.slice(4)).toEqual(["release 1", "release 2", "release 3", "release 4", `create 1 ${2 * MiB}`]);
    expect([stat(alloc, "num_alloc_retries"), stat(alloc, "num_ooms")]).toEqual([1, 0]);
  });

  it("honours the memory fraction and names the CPU", () => {
    const { alloc } = setup({ capacity: 64 * MiB, label: "cpu" });
    alloc.setMemoryFraction(0.25);
    expect(() => alloc.malloc(17 * MiB)).toThrow(
      "Tried to allocate 18.00 MiB. CPU has a total capacity of 64.00 MiB of which 64.00 MiB is free. 16.00 MiB allowed; " +
        "Of the allocated memory 0 bytes is allocated by webtorch, and 0 bytes is reserved by webtorch but unallocated.",
    );
    alloc.setMemoryFraction(1);
    expect(alloc.malloc(17 * MiB).size).toBe(18 * MiB);
    for (const bad of [0, -0.5, 1.5, Number.NaN]) {
      expect(() => alloc.setMemoryFraction(bad)).toThrow(RangeError);
    }
    expect(() => alloc.setMemoryFraction(0)).toThrow("memory fraction must be a number in (0, 1], got 0");
    alloc.capacity = 8 * MiB;
    expect(alloc.capacity).toBe(8 * MiB);
    expect(() => alloc.malloc(1)).toThrow(OutOfMemoryError);
  });

  it("treats createSegment returning false like OOM, with nothing half-allocated", () => {
    let fail = true;
    const { alloc, log } = setup({ capacity: 100 * MiB });
    const cached = alloc.malloc(1000, 1);
    alloc.free(cached.block);
    const failing = setup({
      createSegment: (id, bytes) => {
        log.push(`try ${id} ${bytes}`);
        return !fail;
      },
      releaseSegment: (id) => void log.push(`release ${id}`),
    });
    expect(() => failing.alloc.malloc(1000)).toThrow(OutOfMemoryError);
    expect(log.slice(-2)).toEqual([`try 1 ${2 * MiB}`, `try 1 ${2 * MiB}`]);
    const s = failing.alloc.memoryStats();
    expect([s["segment.all.current"], s["allocated_bytes.all.current"], s.num_device_alloc, s.num_ooms]).toEqual([0, 0, 0, 1]);
    expect(failing.alloc.memorySnapshot()).toEqual([]);
    fail = false;
    expect(failing.alloc.malloc(1000)).toMatchObject({ segment: 1, offset: 0 });
  });

  it("releases the cache and retries once when createSegment fails", () => {
    let calls = 0;
    const segments = new Set<number>();
    const alloc = new CachingAllocator({
      capacity: 1024 * MiB,
      label: "gpu:1",
      createSegment: (id) => {
        calls++;
        if (calls === 2) return false;
        segments.add(id);
        return true;
      },
      releaseSegment: (id) => void segments.delete(id),
    });
    alloc.free(alloc.malloc(1000, 1).block);
    const x = alloc.malloc(1000, 2);
    expect(calls).toBe(3);
    expect([...segments]).toEqual([x.segment]);
    expect(stat(alloc, "num_alloc_retries")).toBe(1);
  });

  it("reports a throwing createSegment as the cause", () => {
    const boom = new Error("device lost");
    const { alloc } = setup({
      createSegment: () => {
        throw boom;
      },
    });
    let error: unknown;
    try {
      alloc.malloc(1);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect((error as Error).cause).toBe(boom);
  });

  it("refuses re-entrant calls from callbacks", () => {
    let inner: unknown;
    const box: { alloc?: CachingAllocator } = {};
    box.alloc = setup({
      createSegment: () => {
        try {
          box.alloc!.malloc(1);
        } catch (e) {
          inner = e;
        }
        return true;
      },
    }).alloc;
    box.alloc.malloc(1);
    expect(String(inner)).toMatch(/re-entrant/);
    expect(stat(box.alloc, "allocation.all.current")).toBe(1);
  });
});

describe("maxSplitSize", () => {
  it("keeps oversize blocks whole and away from small requests", () => {
    const { alloc, log } = setup({ maxSplitSize: 32 * MiB });
    const a = alloc.malloc(40 * MiB);
    let s = alloc.memoryStats();
    expect(s.max_split_size).toBe(32 * MiB);
    expect([s["oversize_allocations.current"], s["oversize_segments.current"]]).toEqual([1, 1]);
    alloc.free(a.block);
    const b = alloc.malloc(12 * MiB);
    expect(b.segment).toBe(2);
    const c = alloc.malloc(36 * MiB);
    expect([c.segment, c.size]).toEqual([1, 40 * MiB]);
    alloc.free(c.block);
    const d = alloc.malloc(14 * MiB);
    expect(d.segment).toBe(3);
    s = alloc.memoryStats();
    expect([s["oversize_allocations.current"], s["oversize_allocations.allocated"], s["oversize_segments.current"]]).toEqual([0, 2, 1]);
    expect(log.length).toBe(3);
  });

  it("releases cached oversize segments before asking for more", () => {
    const { alloc, log } = setup({ capacity: 80 * MiB, maxSplitSize: 32 * MiB });
    alloc.free(alloc.malloc(60 * MiB).block);
    const x = alloc.malloc(34 * MiB);
    expect(x.size).toBe(34 * MiB);
    expect(log).toEqual([`create 1 ${60 * MiB}`, "release 1", `create 1 ${34 * MiB}`]);
    expect([stat(alloc, "num_alloc_retries"), stat(alloc, "num_device_free")]).toEqual([0, 1]);
  });

  it("must exceed 20 MiB", () => {
    expect(() => setup({ maxSplitSize: 20 * MiB })).toThrow(RangeError);
    expect(() => setup({ maxSplitSize: 1.5 })).toThrow(TypeError);
  });
});

describe("bad input", () => {
  it("rejects bad sizes and streams, naming the value, without touching the pool", () => {
    const { alloc } = setup();
    const keep = alloc.malloc(100);
    expect(() => alloc.malloc(-1)).toThrow(new RangeError("malloc: size must not be negative, got -1"));
    expect(() => alloc.malloc(Number.NaN)).toThrow(new TypeError("malloc: size must be an integer number of bytes, got NaN"));
    expect(() => alloc.malloc(1.5)).toThrow(new TypeError("malloc: size must be an integer number of bytes, got 1.5"));
    expect(() => alloc.malloc(Infinity)).toThrow(RangeError);
    expect(() => alloc.malloc("8" as unknown as number)).toThrow(new TypeError('malloc: size must be a number of bytes, got "8"'));
    expect(() => alloc.malloc(8, -1)).toThrow(RangeError);
    expect(() => alloc.malloc(8, 0.5)).toThrow(TypeError);
    expect(() => alloc.recordStream(keep.block, -2)).toThrow(RangeError);
    expect(stat(alloc, "allocation.all.current")).toBe(1);
    expect(alloc.memorySnapshot()[0]!.blocks.length).toBe(2);
  });

  it("detects double frees and foreign handles", () => {
    const { alloc } = setup();
    const other = setup().alloc;
    const a = alloc.malloc(100);
    const b = alloc.malloc(100);
    const foreign = other.malloc(100);
    alloc.free(a.block);
    expect(() => alloc.free(a.block)).toThrow(new BlockError(a.block, "already-freed", "gpu:0"));
    expect(() => alloc.free(a.block)).toThrow(`block ${a.block} was already freed`);
    expect(() => alloc.recordStream(a.block, 1)).toThrow("was already freed");
    expect(() => alloc.free(foreign.block)).toThrow(`block ${foreign.block} is not a block of the gpu:0 allocator`);
    expect(() => alloc.free(123456)).toThrow(BlockError);
    expect(() => alloc.free(-1)).toThrow(BlockError);
    expect(() => alloc.free(2.5)).toThrow(BlockError);
    expect(() => alloc.free("1" as unknown as number)).toThrow(TypeError);
    const c = alloc.malloc(100);
    expect(c.offset).toBe(a.offset);
    expect(() => alloc.free(a.block)).toThrow("already freed");
    expect(stat(alloc, "allocation.all.current")).toBe(2);
    alloc.free(b.block);
    alloc.free(c.block);
    expect(stat(alloc, "allocated_bytes.all.current")).toBe(0);
  });

  it("rejects bad options", () => {
    expect(() => setup({ capacity: -5 })).toThrow(RangeError);
    expect(() => setup({ alignment: 1024 })).toThrow(RangeError);
    expect(() => setup({ alignment: 3 })).toThrow(RangeError);
    expect(() => setup({ label: "" })).toThrow(TypeError);
    expect(() => setup({ memoryFraction: 2 })).toThrow(RangeError);
  });

  it("validates on the WASM side as well", () => {
    const w = instantiateAllocator({ createSegment: () => 1, releaseSegment: () => {}, synchronize: () => 0 });
    expect(w.init(64 * MiB, 0, 2 ** 53, 0)).toBe(WasmCode.badConfig);
    expect(w.init(64 * MiB, 1, 5 * MiB, 0)).toBe(WasmCode.badConfig);
    expect(w.init(-1, 1, 2 ** 53, 0)).toBe(WasmCode.badConfig);
    expect(w.init(64 * MiB, 1, 2 ** 53, 0)).toBe(WasmCode.ok);
    for (const bad of [-1, Number.NaN, 1.5, Infinity, 2 ** 53]) expect(w.malloc(bad, 0)).toBe(WasmCode.badSize);
    expect(w.malloc(8, -1)).toBe(WasmCode.badStream);
    const h = w.malloc(8, 0);
    expect(h).toBe(1);
    expect(w.recordStream(h, -3)).toBe(WasmCode.badStream);
    expect(w.free(99)).toBe(WasmCode.unknownBlock);
    expect(w.free(0)).toBe(WasmCode.unknownBlock);
    expect(w.free(Number.NaN)).toBe(WasmCode.unknownBlock);
    expect(w.free(h)).toBe(WasmCode.ok);
    expect(w.free(h)).toBe(WasmCode.alreadyFreed);
    expect(w.recordStream(h, 1)).toBe(WasmCode.alreadyFreed);
    expect(w.streamDone(-1)).toBe(WasmCode.badStream);
    expect(w.setFraction(0)).toBe(WasmCode.badConfig);
    expect(w.malloc(100 * MiB, 0)).toBe(WasmCode.outOfMemory);
    expect(w.lastOomSize()).toBe(100 * MiB);
  });
});

describe("formatting", () => {
  it("formats OOM sizes like PyTorch's format_size", () => {
    expect(formatSize(0)).toBe("0 bytes");
    expect(formatSize(1024)).toBe("1024 bytes");
    expect(formatSize(1025)).toBe("1.00 KiB");
    expect(formatSize(1152)).toBe("1.12 KiB");
    expect(formatSize(1536)).toBe("1.50 KiB");
    expect(formatSize(MiB)).toBe("1024.00 KiB");
    expect(formatSize(20 * MiB)).toBe("20.00 MiB");
    expect(formatSize(8192 * MiB)).toBe("8.00 GiB");
    expect(formatSize(Math.round(7.63 * 1024 * MiB))).toBe("7.63 GiB");
  });

  it("formats summary cells like _format_size and _format_count", () => {
    expect(formatSizeCell(512, 512)).toBe("   512 B  ");
    expect(formatSizeCell(MiB, MiB)).toBe("  1024 KiB");
    expect(formatSizeCell(20 * MiB, 20 * MiB)).toBe(" 20480 KiB");
    expect(formatSizeCell(768 * MiB, 768 * MiB)).toBe("   768 MiB");
    expect(formatSizeCell(1536, 768 * KiB)).toBe("     1 KiB");
    expect(formatCountCell(5, 5)).toBe("      5   ");
    expect(formatCountCell(750000, 750000)).toBe("    750 K ");
    expect(formatCountCell(749999, 749999)).toBe(" 749999   ");
  });

  it("lays out memorySummary like torch.cuda.memory_summary", () => {
    const { alloc } = setup();
    alloc.malloc(1000);
    alloc.malloc(12 * MiB);
    const text = alloc.memorySummary();
    const lines = text.split("\n");
    expect(text.endsWith("|\n")).toBe(true);
    expect(lines.slice(0, 6)).toEqual([
      `|${"=".repeat(75)}|`,
      "|                  webtorch memory summary, device gpu:0                    |",
      `|${"-".repeat(75)}|`,
      "|                 OOMs: 0            |      device alloc retries: 0         |",
      `|${"=".repeat(75)}|`,
      "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |",
    ]);
    for (const line of lines.slice(0, -1)) expect(line.length).toBe(77);
    const titles = lines.filter((l) => /^\| [A-Z]/.test(l)).map((l) => l.slice(2, 23).trim());
    expect(titles).toEqual([
      "Allocated memory", "Active memory", "Requested memory", "GPU reserved memory", "Non-releasable memory",
      "Allocations", "Active allocs", "GPU reserved segments", "Non-releasable allocs",
      "Oversize allocations", "Oversize GPU segments",
    ]);
    expect(lines).toContain("| Allocated memory      |  12289 KiB |  12289 KiB |  12289 KiB |      0 B   |");
    expect(lines).toContain("|       from large pool |  12288 KiB |  12288 KiB |  12288 KiB |      0 B   |");
    expect(lines).toContain("|       from small pool |      1 KiB |      1 KiB |      1 KiB |      0 B   |");
    expect(lines).toContain("| GPU reserved segments |       2    |       2    |       2    |       0    |");
    expect(lines).toContain("| Non-releasable memory |   2047 KiB |   2047 KiB |   2047 KiB |      0 B   |");
    expect(lines.at(-2)).toBe(`|${"=".repeat(75)}|`);
    const short = alloc.memorySummary(true).split("\n");
    expect(short.some((l) => l.includes("from large pool"))).toBe(false);
    expect(short.length).toBe(lines.length - 18);
  });

  it("embeds a valid module with a generated header", async () => {
    expect(WebAssembly.validate(decodeBase64(allocatorWasm))).toBe(true);
    const { readFileSync } = await import("node:fs");
    const first = readFileSync(new URL("../../ts/memory/allocator-wasm.generated.ts", import.meta.url), "utf8").split("\n")[0];
    expect(first).toMatch(/^\/\/ Generated by `node scripts\/embed-wasm\.mjs build\/allocator\.wasm/);
  });
});

function assert(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("randomized workload", () => {
  for (const seed of [1, 7, 2024]) {
    it(`keeps its invariants (seed ${seed})`, () => {
      const rand = mulberry32(seed);
      const pick = (n: number) => Math.floor(rand() * n);
      const sync = seed === 7;
      const { alloc, segments } = setup({
        capacity: seed === 2024 ? 512 * MiB : 160 * MiB,
        maxSplitSize: seed === 2024 ? 24 * MiB : undefined,
        synchronize: sync ? () => true : undefined,
      });
      const live = new Map<number, { segment: number; offset: number; size: number; requested: number }>();
      let ooms = 0;

      const check = () => {
        const s = alloc.memoryStats();
        const snap = alloc.memorySnapshot();
        const host = [...segments.entries()].sort((x, y) => x[0] - y[0]);
        assert(snap.length === host.length, "snapshot and host disagree on the segment count");
        snap.forEach((g, i) => assert(g.segment === host[i]![0] && g.totalSize === host[i]![1], `segment ${g.segment} differs from the host's`));
        assert(s["reserved_bytes.all.current"] === host.reduce((x, y) => x + y[1], 0), "reserved_bytes != sum of segment sizes");
        assert(s["segment.all.current"] === segments.size, "segment count");
        let allocated = 0;
        let active = 0;
        let requested = 0;
        let splitCount = 0;
        let splitBytes = 0;
        let seen = 0;
        for (const g of snap) {
          let end = 0;
          g.blocks.forEach((b, i) => {
            assert(b.offset === end, `segment ${g.segment}: block at ${b.offset} overlaps or leaves a gap at ${end}`);
            end += b.size;
            if (b.state === "inactive") {
              assert(g.blocks[i + 1]?.state !== "inactive", `segment ${g.segment}: unmerged free neighbours`);
              if (g.blocks.length > 1) {
                splitCount++;
                splitBytes += b.size;
              }
            } else {
              active += b.size;
              requested += b.requestedSize;
            }
            if (b.state === "active_allocated") {
              const mine = live.get(b.block!);
              assert(
                mine !== undefined && mine.segment === g.segment && mine.offset === b.offset && mine.size === b.size && mine.requested === b.requestedSize,
                `block ${b.block} does not match what malloc returned`,
              );
              allocated += b.size;
              seen++;
            }
          });
          assert(end === g.totalSize, `segment ${g.segment}: blocks do not cover it`);
        }
        assert(seen === live.size && s["allocation.all.current"] === live.size, "live block count");
        let liveBytes = 0;
        for (const b of live.values()) liveBytes += b.size;
        assert(s["allocated_bytes.all.current"] === liveBytes && liveBytes === allocated, "allocated_bytes != sum of live blocks");
        assert(s["allocated_bytes.all.current"] === s["allocated_bytes.small_pool.current"] + s["allocated_bytes.large_pool.current"], "pool split");
        assert(s["active_bytes.all.current"] === active, "active_bytes");
        assert(s["requested_bytes.all.current"] === requested, "requested_bytes");
        assert(s["inactive_split.all.current"] === splitCount && s["inactive_split_bytes.all.current"] === splitBytes, "inactive_split");
        for (const key of ["allocated_bytes", "reserved_bytes", "segment", "active", "inactive_split_bytes"]) {
          const get = (m: string) => (s as Record<string, number>)[`${key}.all.${m}`]!;
          assert(get("current") === get("allocated") - get("freed") && get("peak") >= get("current"), `${key} totals`);
        }
      };

      for (let step = 0; step < 3000; step++) {
        const op = rand();
        if (op < 0.5 || live.size === 0) {
          const r = rand();
          const bytes = r < 0.7 ? pick(64 * KiB) : r < 0.95 ? pick(12 * MiB) : pick(48 * MiB);
          const stream = pick(3);
          try {
            const a = alloc.malloc(bytes, stream);
            assert(a.offset % 512 === 0, "offset not 512-aligned");
            live.set(a.block, { segment: a.segment, offset: a.offset, size: a.size, requested: bytes });
          } catch (e) {
            if (!(e instanceof OutOfMemoryError)) throw e;
            ooms++;
          }
        } else if (op < 0.9) {
          const keys = [...live.keys()];
          const block = keys[pick(keys.length)]!;
          if (rand() < 0.2) alloc.recordStream(block, 3 + pick(3));
          alloc.free(block);
          live.delete(block);
        } else if (op < 0.97) {
          alloc.streamDone(3 + pick(3));
        } else {
          alloc.emptyCache();
        }
        check();
      }
      for (const block of [...live.keys()]) alloc.free(block);
      live.clear();
      for (const stream of [3, 4, 5]) alloc.streamDone(stream);
      alloc.emptyCache();
      check();
      const s = alloc.memoryStats();
      for (const [key, value] of Object.entries(s)) {
        if (key.endsWith(".current")) expect([key, value]).toEqual([key, 0]);
      }
      expect(segments.size).toBe(0);
      expect(s.num_ooms).toBe(ooms);
      expect(s.num_device_alloc).toBe(s.num_device_free);
    });
  }
});
