/**
 * `torch.safetensors`: the `safetensors.torch` Python API in camelCase, over a flat object of
 * tensors (the format: ts/serialization/safetensors-format.ts). All four are async: saving reads
 * the tensors back from their devices, loading uploads them.
 *
 *     await torch.safetensors.saveFile(model.stateDict(), 'model.safetensors', {metadata: {format: 'pt'}});
 *     const sd = await torch.safetensors.loadFile('model.safetensors', 'gpu:0');
 */
import type { DeviceLike } from '../device.js';
import { bindArgs, type PyArgs } from '../args.js';
import type { Tensor } from '../tensor.js';
import { readSource, writeAtomic, type Source } from './io.js';
import { loadSafetensors, safetensorsBytes } from './index.js';
import { decodeSafetensors } from './safetensors-format.js';
import { checkLittleEndian, restorePlace } from './tensors.js';

/** Tensors by name: a plain object or a Map. */
export type TensorDict = Record<string, Tensor> | Map<string, Tensor>;
/** String metadata (`__metadata__`). */
export type Metadata = Record<string, string> | null;

/** `await save(tensors, metadata?)`: the safetensors bytes (Python's `save` returns `bytes`). */
export async function save(tensors: TensorDict, ...args: PyArgs<[metadata: Metadata], { metadata?: Metadata }>): Promise<Uint8Array> {
  const { metadata } = bindArgs('save', ['metadata'], args, { metadata: null as Metadata }, 1);
  checkLittleEndian();
  return safetensorsBytes(tensors, metadata, 'safetensors.save');
}

/** `await saveFile(tensors, filename, metadata?)`: writes the file (Node; atomically, as `torch.save`). */
export async function saveFile(tensors: TensorDict, filename: string, ...args: PyArgs<[metadata: Metadata], { metadata?: Metadata }>): Promise<void> {
  const { metadata } = bindArgs('save_file', ['metadata'], args, { metadata: null as Metadata }, 2);
  checkLittleEndian();
  await writeAtomic(filename, await safetensorsBytes(tensors, metadata, 'safetensors.saveFile'), 'safetensors.saveFile');
}

/** `await load(data)`: tensors on the cpu from safetensors bytes (a Uint8Array, ArrayBuffer or Blob). */
export async function load(data: Uint8Array | ArrayBuffer | Blob, ...rest: []): Promise<Record<string, Tensor>> {
  bindArgs('load', [], rest, {}, 1);
  if (typeof data === 'string') throw new TypeError('safetensors.load: expected bytes; to read a file use loadFile(filename)');
  checkLittleEndian();
  return loadSafetensors(await readSource(data, 'safetensors.load'), { type: 'cpu', index: 0 });
}

/** `await loadFile(filename, device = 'cpu')`: tensors on `device` (a path in Node; bytes or a Blob anywhere). */
export async function loadFile(filename: Source, ...args: PyArgs<[device: DeviceLike], { device?: DeviceLike }>): Promise<Record<string, Tensor>> {
  const { device } = bindArgs('load_file', ['device'], args, { device: 'cpu' as DeviceLike }, 1);
  checkLittleEndian();
  const place = restorePlace('cpu', device, 'a safetensors tensor');
  return loadSafetensors(await readSource(filename, 'safetensors.loadFile'), place);
}

/** `await metadata(filename)`: the file's `__metadata__` (Python: `safe_open(filename, 'pt').metadata()`), null when absent. */
export async function metadata(filename: Source): Promise<Record<string, string> | null> {
  return decodeSafetensors(await readSource(filename, 'safetensors.metadata')).metadata;
}
