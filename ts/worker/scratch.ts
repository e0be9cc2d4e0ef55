/**
 * The GPU worker's buffers beside the allocator's segments, in the allocator's figures.
 *
 * Note [scratch in the allocator's figures]: some commands need device memory of their own: a 32-bit scratch for a packed output, the sort's
 * key/index pairs, row-major operand copies for matmul, the mappable staging of a read. PyTorch
 * counts such workspaces (cuBLAS's) in `memory_reserved`, so webtorch does too: each is made by
 * `createScratch`, which adds its size to a counter in a SharedArrayBuffer that the calling
 * thread's allocator reads synchronously (its reserved bytes and the budget of new segments, see
 * ts/runtime/memory.ts), and `destroyBuffer` takes it off again. Slot 0 counts transient scratch
 * (gone at the next flush), slot 1 cached scratch (kept for reuse; `emptyCache` takes it off at
 * once and queues `dropScratch`, which destroys it in queue order and settles the difference).
 *
 * Slots 2 and 3 are the check: every GPUBuffer the device creates is counted there while alive
 * (slot 2), apart from the fixed buffers of the device itself (slot 3: the parameter ring, the
 * error words, timer queries, as PyTorch leaves out its CUDA context). The test compares the
 * allocator's reserved bytes with slot 2.
 *
 * Slots 4 and 5 come from the calling thread: the budget (capacity × memory fraction) and the
 * segments' bytes. A scratch buffer that would take the device past the budget first drops the
 * cached read staging (`onPressure`), then fails with PyTorch's out-of-memory wording; the
 * error reaches the caller at the next sync point.
 */

/** Slots of the shared counter. */
export enum ScratchSlot { transient = 0, cached = 1, alive = 2, context = 3, allowed = 4, segments = 5 }

let counter: BigInt64Array | null = null;
const kinds = new Map<GPUBuffer, ScratchSlot>();
let cachedLive = 0;

/** The shared counter the calling thread reads (null where SharedArrayBuffer does not exist). */
export function scratchCounter(): SharedArrayBuffer | null {
  if (typeof SharedArrayBuffer === 'undefined') return null;
  counter ??= new BigInt64Array(new SharedArrayBuffer(6 * 8));
  return counter.buffer as SharedArrayBuffer;
}

function add(slot: ScratchSlot, bytes: number): void {
  if (counter) Atomics.add(counter, slot, BigInt(bytes));
}

/** Counts every buffer `device` creates in slot 2 while it is alive (the check's truth). */
export function countBuffers(device: GPUDevice): void {
  const create = device.createBuffer.bind(device);
  device.createBuffer = (desc: GPUBufferDescriptor): GPUBuffer => {
    const b = create(desc), destroy = b.destroy.bind(b), size = b.size;
    let alive = true;
    add(ScratchSlot.alive, size);
    b.destroy = () => {
      if (alive) add(ScratchSlot.alive, -size);
      alive = false;
      forgetScratch(b);
      destroy();
    };
    return b;
  };
}

/** A buffer of the device itself (parameter ring, error words, timers): left out of the check. */
export function contextBuffer(b: GPUBuffer): GPUBuffer {
  kinds.set(b, ScratchSlot.context);
  add(ScratchSlot.context, b.size);
  return b;
}

let onPressure: () => void = () => {};

/** Sets what frees cached scratch when a new scratch buffer would pass the budget. */
export function setPressureHandler(f: () => void): void {
  onPressure = f;
}

const GiB = 1024 ** 3;
const fmt = (b: number) => (b >= GiB ? `${(b / GiB).toFixed(2)} GiB` : `${(b / 1024 ** 2).toFixed(2)} MiB`);

/** Throws when `size` more bytes of scratch would pass the budget the calling thread published. */
function checkBudget(size: number, what: string): void {
  if (!counter) return;
  const at = (s: ScratchSlot) => Number(Atomics.load(counter!, s));
  const allowed = at(ScratchSlot.allowed);
  if (!allowed) return; // not published yet
  const used = () => at(ScratchSlot.segments) + at(ScratchSlot.transient) + at(ScratchSlot.cached);
  if (used() + size <= allowed) return;
  onPressure();
  if (used() + size <= allowed) return;
  throw new Error(`OutOfMemoryError: Tried to allocate ${fmt(size)} of scratch memory for ${what}. The device's budget is ${fmt(allowed)}, ` +
    `of which ${fmt(at(ScratchSlot.segments))} is reserved by webtorch's segments and ${fmt(at(ScratchSlot.transient) + at(ScratchSlot.cached))} by its scratch buffers.`);
}

/** A scratch buffer, counted in the allocator's reserved bytes until it is destroyed; within the budget, or throws. */
export function createScratch(device: GPUDevice, size: number, usage: GPUBufferUsageFlags, cached = false, what = 'a kernel', mappedAtCreation = false): GPUBuffer {
  checkBudget(size, what);
  const b = device.createBuffer({ size, usage, mappedAtCreation });
  const slot = cached ? ScratchSlot.cached : ScratchSlot.transient;
  kinds.set(b, slot);
  if (cached) cachedLive += b.size;
  add(slot, b.size);
  return b;
}

/** Takes a destroyed buffer off its slot (no-op for segments). */
function forgetScratch(b: GPUBuffer): void {
  const slot = kinds.get(b);
  if (slot === undefined) return;
  kinds.delete(b);
  if (slot === ScratchSlot.cached) cachedLive -= b.size;
  add(slot, -b.size);
}

/**
 * After `destroyCached` destroyed every cached scratch buffer for `emptyCache`, which already
 * took `accounted` bytes off slot 1 on the calling thread: gives those back, so that slot 1
 * counts each buffer exactly once.
 */
export function settleDrop(accounted: number): void {
  add(ScratchSlot.cached, accounted);
}

/** The calling thread's side: reserved scratch bytes, and the check's figures. */
export function readScratch(shared: SharedArrayBuffer | null | undefined): { reserved: number; alive: number; context: number; cached: number } {
  if (!shared) return { reserved: 0, alive: 0, context: 0, cached: 0 };
  const c = new BigInt64Array(shared);
  const at = (s: ScratchSlot) => Number(Atomics.load(c, s));
  return { reserved: Math.max(0, at(ScratchSlot.transient) + at(ScratchSlot.cached)), alive: at(ScratchSlot.alive), context: at(ScratchSlot.context), cached: at(ScratchSlot.cached) };
}

/** The calling thread's half of `emptyCache`: takes the cached scratch off at once; returns the bytes taken. */
export function takeCached(shared: SharedArrayBuffer | null | undefined): number {
  if (!shared) return 0;
  const c = new BigInt64Array(shared);
  const bytes = Atomics.load(c, ScratchSlot.cached);
  Atomics.sub(c, ScratchSlot.cached, bytes);
  return Number(bytes);
}

/** The calling thread publishes the budget and its segments' bytes for the worker's check. */
export function publishBudget(shared: SharedArrayBuffer | null | undefined, allowed: number, segments: number): void {
  if (!shared) return;
  const c = new BigInt64Array(shared);
  Atomics.store(c, ScratchSlot.allowed, BigInt(Math.floor(allowed)));
  Atomics.store(c, ScratchSlot.segments, BigInt(segments));
}

/** Scratch in the cpu worker's heap (one command's own ranges): within the budget, or throws; counted until `releaseScratch`. */
export function reserveScratch(bytes: number, what: string): void {
  checkBudget(bytes, what);
  add(ScratchSlot.transient, bytes);
}

/** Ends a `reserveScratch`. */
export function releaseScratch(bytes: number): void {
  add(ScratchSlot.transient, -bytes);
}
