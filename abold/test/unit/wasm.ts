/** Loads the AssemblyScript kernels' `.wasm` (built by `npm run build`) for the unit tests. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Instantiates build/webtorch.wasm and returns its exports as `T`. */
export async function loadKernels<T>(): Promise<T> {
  const wasm = readFileSync(fileURLToPath(new URL('../../build/webtorch.wasm', import.meta.url)));
  const { instance } = await WebAssembly.instantiate(wasm, { env: { abort() { throw new Error('abort'); } } });
  return instance.exports as unknown as T;
}
