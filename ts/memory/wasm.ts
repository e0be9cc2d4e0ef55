// Synchronous loading of the allocator's WebAssembly module.
//
// Rules: allocation must stay synchronous, so the module is embedded as base64
// (allocator-wasm.generated.ts, rebuilt by scripts/embed-wasm.mjs) and compiled
// with `new WebAssembly.Module`, once per JS realm. Decoding uses atob, which
// Node 20, browsers and workers all provide. Each allocator gets its own
// instance: the bookkeeping lives in the instance's globals and memory.

import { allocatorWasm } from "./allocator-wasm.generated.js";

/** Callbacks the WASM side imports (module `env`). */
export interface AllocatorImports {
  /** Create segment `id` of `bytes` bytes; 1 on success, 0 on failure. Must not throw. */
  createSegment(id: number, bytes: number): number;
  /** Release segment `id`. Must not throw. */
  releaseSegment(id: number): void;
  /** Wait for every stream; 1 if done, 0 if not possible. Must not throw. */
  synchronize(): number;
}

/** Raw exports of assembly/allocator/index.ts (see its header for the codes). */
export interface AllocatorExports {
  memory: WebAssembly.Memory;
  init(capacity: number, fraction: number, maxSplit: number, handleBase: number): number;
  setCapacity(bytes: number): number;
  getCapacity(): number;
  setFraction(f: number): number;
  getFraction(): number;
  getMaxSplitSize(): number;
  malloc(bytes: number, stream: number): number;
  lastSegment(): number;
  lastOffset(): number;
  lastSize(): number;
  lastOomSize(): number;
  free(handle: number): number;
  recordStream(handle: number, stream: number): number;
  streamDone(stream: number): number;
  streamDoneUpTo(stream: number, mark: number): number;
  streamMark(stream: number, mark: number): number;
  emptyCache(): void;
  keepPool(stream: number, kept: number): number;
  releasePool(stream: number): number;
  roundedSize(bytes: number): number;
  segmentSizeFor(rounded: number): number;
  statsPointer(): number;
  statsLength(): number;
  resetPeakStats(): void;
  resetAccumulatedStats(): void;
  segmentLimit(): number;
  segmentFirst(id: number): number;
  segmentBytes(id: number): number;
  segmentStream(id: number): number;
  segmentIsSmall(id: number): number;
  blockNext(record: number): number;
  blockOffset(record: number): number;
  blockSize(record: number): number;
  blockRequested(record: number): number;
  blockState(record: number): number;
  blockHandle(record: number): number;
}

/** Error codes returned by the raw exports. */
export const WasmCode = {
  ok: 0,
  outOfMemory: -1,
  badSize: -2,
  unknownBlock: -3,
  alreadyFreed: -4,
  badStream: -5,
  badConfig: -6,
} as const;

/** Decodes standard base64 without Node-only APIs. */
export function decodeBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

let compiled: WebAssembly.Module | undefined;

/** The compiled allocator module (compiled on first use, synchronously). */
export function allocatorModule(): WebAssembly.Module {
  compiled ??= new WebAssembly.Module(decodeBase64(allocatorWasm));
  return compiled;
}

/** A fresh, independent allocator instance wired to `imports`. */
export function instantiateAllocator(imports: AllocatorImports): AllocatorExports {
  const env = {
    createSegment: imports.createSegment,
    releaseSegment: imports.releaseSegment,
    synchronize: imports.synchronize,
    abort(): never {
      throw new Error("webtorch allocator: internal error (wasm abort)");
    },
  };
  const instance = new WebAssembly.Instance(allocatorModule(), { env });
  return instance.exports as unknown as AllocatorExports;
}
