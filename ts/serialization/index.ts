/**
 * `torch.save` and `torch.load`: checkpoints in PyTorch's own `.pt` format (a zip of a pickle and
 * raw storages; ts/serialization/pt.ts), which PyTorch's `torch.load` reads, and safetensors
 * (ts/serialization/safetensors-format.ts) when the path ends in `.safetensors`.
 *
 * Both are async: saving reads every tensor back from its device (the reads are queued at the
 * call, so the checkpoint holds the values as of the call, in stream order); loading uploads each
 * storage to the device it was saved from, or where `mapLocation` says. `torch.load` runs a
 * restricted unpickler (PyTorch's `weights_only=True`; ts/serialization/pickle-read.ts) and checks
 * every storage against the archive before it allocates anything, so a corrupt or lying file
 * raises and leaves nothing behind.
 */
import { Parameter } from '../nn/module.js';
import { bindArgs, type PyArgs } from '../args.js';
import { Tensor, view } from '../tensor.js';
import { elementSize, isFloating, type DType } from '../dtype.js';
import { readSource, writeAtomic, type Source } from './io.js';
import { isZip, readArchive, writeArchive } from './pt.js';
import { pickle, type TensorSlot } from './pickle-write.js';
import { PyDict, PyTuple, unpickle, type PyValue, type StorageRef, type TensorRef } from './pickle-read.js';
import { STORAGE_CLASS, checkBoolBytes, checkDType, checkLittleEndian, locationOf, placeDevices, readBytes, restorePlace, uploadStorage, type MapLocation, type Place } from './tensors.js';
import { decodeSafetensors, encodeSafetensors } from './safetensors-format.js';

export type { MapLocation } from './tensors.js';
export type { Source } from './io.js';

/** `torch.save`'s keywords (PyTorch's, camelCase); only PyTorch's defaults are supported. */
export interface SaveOptions { f?: string | null; pickleModule?: null; pickleProtocol?: number; _useNewZipfileSerialization?: boolean }
/** `torch.load`'s keywords. */
export interface LoadOptions { mapLocation?: MapLocation; pickleModule?: null; weightsOnly?: boolean; mmap?: boolean | null }

const isTensor = (x: unknown): x is Tensor => x instanceof Tensor;

/**
 * `await torch.save(obj, f?, {pickleProtocol})`: writes `obj` (a state dict, an optimizer's, nested
 * objects and arrays of tensors, numbers, strings, booleans and null) to the file `f` (Node; the
 * write is atomic, see ts/serialization/io.ts) in PyTorch's `.pt` format, or as safetensors when
 * `f` ends in `.safetensors` (a flat object of tensors). Without `f` it resolves with the `.pt`
 * bytes (a `Uint8Array`; in a browser, wrap them in a `Blob` to download). Tensors on any device
 * are read back; a `Uint8Array` (an RNG state) is saved as a uint8 tensor, as PyTorch's ByteTensor.
 */
export function save(obj: unknown, f: string, ...args: PyArgs<[pickleModule: null, pickleProtocol: number], Omit<SaveOptions, 'f'>>): Promise<void>;
export function save(obj: unknown, ...args: PyArgs<[f: null | undefined, pickleModule: null, pickleProtocol: number], SaveOptions & { f?: null }>): Promise<Uint8Array>;
export async function save(obj: unknown, ...args: unknown[]): Promise<Uint8Array | void> {
  const o = bindArgs('save', ['f', 'pickleModule', 'pickleProtocol', '_useNewZipfileSerialization'], args,
    { f: null as string | null, pickleModule: null, pickleProtocol: 2, _useNewZipfileSerialization: true }, 1);
  if (o.pickleModule != null) throw new TypeError('save(): pickleModule is not supported (webtorch writes its own pickle, as Python\'s pickle module would)');
  if (o.pickleProtocol !== 2) throw new RangeError(`save(): pickleProtocol ${o.pickleProtocol} is not supported; webtorch writes protocol 2, PyTorch's default`);
  if (o._useNewZipfileSerialization !== true) throw new RangeError('save(): the legacy (non-zip) format is not supported; _useNewZipfileSerialization must be true');
  if (o.f !== null && typeof o.f !== 'string') throw new TypeError(`save(): f must be a file path string (or left out for the bytes), got ${typeof o.f}`);
  checkLittleEndian();
  const bytes = o.f?.endsWith('.safetensors') ? await safetensorsBytes(obj, null, 'torch.save') : await ptBytes(obj);
  if (o.f === null) return bytes;
  await writeAtomic(o.f, bytes, 'torch.save');
  return undefined;
}

/** A `.pt` file's bytes: the pickle, then every tensor read back, in the order first met. */
async function ptBytes(obj: unknown): Promise<Uint8Array> {
  const slots = new Map<Tensor | Uint8Array, TensorSlot>();
  const data = pickle(obj, isTensor, (t, path) => {
    const known = slots.get(t);
    if (known) return known;
    const key = String(slots.size);
    const s: TensorSlot = t instanceof Uint8Array
      ? { key, storageClass: 'ByteStorage', location: 'cpu', shape: [t.length], parameter: false, requiresGrad: false }
      : { key, storageClass: STORAGE_CLASS[t._check(`torch.save (${path || 'the object'})`).dtype], location: locationOf(t.device), shape: t.shape, parameter: t instanceof Parameter, requiresGrad: t.requiresGrad };
    slots.set(t, s);
    return s;
  });
  // The reads are queued in the same task as the call, after everything was checked: the values as of the call.
  const storages = await Promise.all([...slots.keys()].map((t) => (t instanceof Uint8Array ? Promise.resolve(t.slice()) : readBytes(t))));
  return writeArchive(data, [...slots.values()].map((s, i) => [s.key, storages[i]]));
}

/** A flat object (or Map) of tensors as safetensors bytes. */
export async function safetensorsBytes(obj: unknown, metadata: Record<string, string> | null, op: string): Promise<Uint8Array> {
  const entries = obj instanceof Map ? [...obj] : obj && typeof obj === 'object' && !Array.isArray(obj) && !isTensor(obj) ? Object.entries(obj) : null;
  if (!entries) throw new TypeError(`${op}: safetensors holds a flat object of tensors, got ${Array.isArray(obj) ? 'an array' : typeof obj}`);
  for (const [k, t] of entries) {
    if (!isTensor(t)) throw new TypeError(`${op}: safetensors holds a flat object of tensors, but "${String(k)}" is ${t === null ? 'null' : typeof t === 'object' ? (Array.isArray(t) ? 'an array' : 'an object') : typeof t} (save nested state, such as an optimizer's, as .pt)`);
    t._check(`${op} (${String(k)})`);
  }
  const bytes = await Promise.all(entries.map(([, t]) => readBytes(t as Tensor)));
  return encodeSafetensors(entries.map(([k, t], i) => ({ name: String(k), dtype: (t as Tensor).dtype, shape: [...(t as Tensor).shape], bytes: bytes[i] })), metadata);
}

/**
 * `await torch.load(f, mapLocation?, {mapLocation, weightsOnly})`: reads a checkpoint written by
 * `torch.save` (PyTorch's or webtorch's `.pt`, or safetensors) from a path (Node), a `Uint8Array`,
 * an `ArrayBuffer` or a `Blob`. Tensors load on the device they were saved from (`cuda:N` is
 * `gpu:N`) unless `mapLocation` says otherwise: a device for every storage (`'cpu'`), an object
 * from saved tag to device (`{'cuda:1': 'gpu:0'}`), or a function from the saved tag to a device
 * (null keeps it). Dicts become plain objects (an int key becomes its decimal string), tuples
 * become arrays. Only what a weights-only load allows unpickles (`weightsOnly` defaults to true, as
 * in PyTorch 2.6; webtorch cannot run Python, so false loads the same set).
 */
export async function load(f: Source, ...args: PyArgs<[mapLocation: MapLocation], LoadOptions>): Promise<any> {
  const o = bindArgs('load', ['mapLocation', 'pickleModule', 'weightsOnly', 'mmap'], args,
    { mapLocation: null as MapLocation, pickleModule: null, weightsOnly: true, mmap: null as boolean | null }, 1, 2);
  if (o.pickleModule != null) throw new TypeError('load(): pickleModule is not supported (webtorch reads the pickle with its own restricted unpickler)');
  if (o.mmap) throw new TypeError('load(): mmap is not supported');
  if (typeof o.weightsOnly !== 'boolean') throw new TypeError(`load(): weightsOnly must be a boolean, got ${typeof o.weightsOnly}`);
  checkLittleEndian();
  const bytes = await readSource(f, 'torch.load');
  if (isZip(bytes)) return loadPt(bytes, o.mapLocation);
  if (bytes.length >= 9 && bytes[8] === 0x7b) return loadSafetensors(bytes, restorePlace('cpu', o.mapLocation, 'a safetensors tensor'));
  if (bytes[0] === 0x80) throw new Error('torch.load: this is PyTorch\'s legacy format (saved with _use_new_zipfile_serialization=False, or before PyTorch 1.6); re-save it with a current torch.save');
  throw new Error(`torch.load: not a checkpoint: the ${bytes.length} bytes are neither a PyTorch zip archive nor safetensors (truncated or corrupt?)`);
}

/** Loads safetensors bytes: a plain object of tensors on one device. */
export async function loadSafetensors(bytes: Uint8Array, place: Place): Promise<Record<string, Tensor>> {
  const { entries } = decodeSafetensors(bytes);
  const [dev] = await placeDevices([place]);
  entries.forEach((e) => e.dtype === 'bool' && checkBoolBytes(e.bytes, `tensor "${e.name}"`));
  const out: Record<string, Tensor> = {};
  try {
    for (const e of entries) {
      const flat = uploadStorage(e.bytes, e.dtype, dev);
      out[e.name] = flat.reshape(e.shape);
      if (out[e.name] !== flat) flat.dispose();
    }
  } catch (err) {
    Object.values(out).forEach((t) => t.dispose());
    throw err;
  }
  return defineAll({}, Object.entries(out));
}

/** Loads a `.pt` archive: unpickle, check every storage against its record, then upload. */
async function loadPt(bytes: Uint8Array, map: MapLocation): Promise<unknown> {
  const archive = readArchive(bytes);
  const tree = unpickle(archive.pickle);
  // Every storage: its dtype, its record's size, and each view within it; then its device.
  const storages = new Map<string, { ref: StorageRef; dtype: DType; place: Place }>();
  const refs: TensorRef[] = [];
  collect(tree, (t) => refs.push(t));
  for (const t of refs) {
    const s = t.storage, what = `storage data/${s.key} (${s.dtype})`;
    if (!storages.has(s.key)) {
      const dtype = checkDType(String(s.dtype), `a tensor (${what})`);
      const rec = archive.records.get(s.key);
      if (!rec) throw new Error(`torch.load: the archive has no record data/${s.key}, which a tensor needs (the file is truncated or corrupt)`);
      if (rec.length !== s.numel * elementSize(dtype)) {
        throw new Error(`torch.load: record data/${s.key} holds ${rec.length} bytes, but the pickle says ${s.numel} ${dtype} elements (${s.numel * elementSize(dtype)} bytes): the file is corrupt`);
      }
      if (dtype === 'bool') checkBoolBytes(rec, what);
      storages.set(s.key, { ref: s, dtype, place: restorePlace(s.location, map, `torch.${STORAGE_CLASS[dtype]}`) });
    } else if (storages.get(s.key)!.ref.dtype !== s.dtype) {
      throw new Error(`torch.load: storage data/${s.key} is read as two dtypes (${storages.get(s.key)!.ref.dtype} and ${s.dtype}): the file is corrupt`);
    }
    const n = t.size.reduce((a, b) => a * b, 1);
    const last = t.offset + t.size.reduce((a, d, i) => a + (d - 1) * t.stride[i], 0);
    if (n > 0 && last >= storages.get(s.key)!.ref.numel) {
      throw new Error(`torch.load: a tensor of size [${t.size}] and stride [${t.stride}] at offset ${t.offset} reaches element ${last} of ${what}, which has ${s.numel}: the file is corrupt`);
    }
  }
  const devices = await placeDevices([...storages.values()].map((s) => s.place));
  const made = new Map<TensorRef, Tensor>();
  const bases = new Map<string, Tensor>();
  try {
    [...storages].forEach(([key, s], i) => bases.set(key, uploadStorage(archive.records.get(key)!, s.dtype, devices[i])));
    for (const r of refs) {
      if (made.has(r)) continue;
      const base = bases.get(r.storage.key)!;
      let t = view(base, r.size, r.stride, r.offset);
      if (r.parameter) {
        const p = Parameter.of(t, r.requiresGrad && isFloating(t.dtype));
        t.dispose();
        t = p;
      } else if (r.requiresGrad && isFloating(t.dtype)) t.requiresGrad = true;
      made.set(r, t);
    }
  } catch (e) {
    [...made.values()].forEach((t) => t.dispose());
    throw e;
  } finally {
    bases.forEach((b) => b.dispose()); // the views keep their storages
  }
  try {
    return toJs(tree, made);
  } catch (e) {
    [...made.values()].forEach((t) => t.dispose());
    throw e;
  }
}

/** Calls `fn` on every tensor in an unpickled tree. */
function collect(v: PyValue, fn: (t: TensorRef) => void): void {
  if (Array.isArray(v)) v.forEach((x) => collect(x, fn));
  else if (v instanceof PyTuple) v.items.forEach((x) => collect(x, fn));
  else if (v instanceof PyDict) v.entries.forEach((x) => collect(x, fn));
  else if (v && typeof v === 'object' && 'kind' in v && v.kind === 'tensor') fn(v);
}

/** Sets keys with defineProperty, so that a key such as `__proto__` is data, not a prototype. */
function defineAll<T>(o: Record<string, T>, entries: [string, T][]): Record<string, T> {
  for (const [k, v] of entries) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return o;
}

/** The unpickled tree as JS values: dicts → objects, lists and tuples → arrays, tensors → the loaded ones. */
function toJs(v: PyValue, made: Map<TensorRef, Tensor>): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => toJs(x, made));
  if (v instanceof PyTuple) return v.items.map((x) => toJs(x, made));
  if (v instanceof PyDict) {
    const keys = [...v.entries.keys()].map(String);
    const dup = keys.find((k, i) => keys.indexOf(k) !== i);
    if (dup !== undefined) throw new Error(`torch.load: a dict has the keys ${dup} and '${dup}', which are one key in JavaScript`);
    return defineAll({}, [...v.entries].map(([k, x]) => [String(k), toJs(x, made)]));
  }
  if (v.kind === 'tensor') return made.get(v)!;
  throw new Error(`torch.load: the checkpoint holds a bare ${v.kind === 'global' ? v.name : 'storage'}, which webtorch does not load (only tensors, numbers, strings, lists and dicts)`);
}
