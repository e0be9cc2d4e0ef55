/** Loads the AssemblyScript kernels' `.wasm` (built by `npm run build`) for the unit tests. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Instantiates build/webtorch.wasm and returns its exports as `T`. */
export async function loadKernels<T>(): Promise<T> {
  const wasm = readFileSync(fileURLToPath(new URL('../../build/webtorch.wasm', import.meta.url)));
  const { instance } = await WebAssembly.instantiate(wasm, { env: { abort() { throw new Error('abort'); } } });
  return instance.exports as unknown as T;
}

/**
 * A bump allocator over the kernels' memory above `heapBase()`, 64-byte aligned, growing the memory
 * as needed: `alloc(bytes)`; `reset()` starts again at the heap base (before each test).
 */
export function arena(k: () => { memory: WebAssembly.Memory; heapBase(): number }): { alloc(bytes: number): number; reset(): void } {
  let top = 0;
  return {
    alloc(bytes: number): number {
      const { memory } = k();
      const p = (top + 63) & ~63;
      top = p + Math.max(bytes, 16);
      const have = memory.buffer.byteLength;
      if (top > have) memory.grow(Math.ceil((top - have) / 65536));
      return p;
    },
    reset(): void {
      top = k().heapBase();
    },
  };
}
