/**
 * A restricted unpickler: PyTorch's `weights_only=True` loader, for the `data.pkl` of a
 * `torch.save` file. It builds only plain values (None, booleans, ints, floats, strings, lists,
 * tuples, dicts), `collections.OrderedDict`, `torch.Size`, and tensors through
 * `torch._utils._rebuild_tensor_v2` / `_rebuild_parameter` over storages named by a persistent id
 * (`('storage', torch.FloatStorage, key, location, numel)`). Any other global, and any opcode
 * outside this set, raises PyTorch's "Weights only load failed" error naming it: nothing in the file
 * can make this code call a function it does not list (there is no Python to run, and nothing here
 * looks a name up dynamically).
 *
 * The result is a tree of `PyValue`s whose tensors are `TensorRef`s (where the bytes are, not yet
 * on a device): ts/serialization/index.ts checks them against the archive and then uploads them.
 */
import type { DType } from '../dtype.js';

/** A storage a tensor views: a record `data/<key>` of the archive. */
export interface StorageRef { kind: 'storage'; dtype: DType | string; key: string; location: string; numel: number }
/** A tensor to rebuild: a strided view of a storage. */
export interface TensorRef {
  kind: 'tensor'; storage: StorageRef; offset: number; size: number[]; stride: number[]; requiresGrad: boolean; parameter: boolean;
}
/** A Python dict (also an OrderedDict): its keys in insertion order. */
export class PyDict { readonly entries = new Map<string | number | bigint, PyValue>(); }
/** A Python tuple (a JS array once converted). */
export class PyTuple { constructor(readonly items: PyValue[]) {} }
/** What unpickling builds. */
export type PyValue = null | boolean | number | bigint | string | PyValue[] | PyTuple | PyDict | TensorRef | StorageRef | Global;
/** An allowed global, before it is called. */
interface Global { kind: 'global'; name: string }

/** PyTorch's legacy storage classes and the dtypes they hold (a name webtorch cannot hold stays a string). */
export const STORAGE_DTYPES: Record<string, DType | string> = {
  FloatStorage: 'float32', HalfStorage: 'float16', BFloat16Storage: 'bfloat16', LongStorage: 'int64',
  IntStorage: 'int32', ByteStorage: 'uint8', BoolStorage: 'bool', CharStorage: 'int8', ShortStorage: 'int16',
  DoubleStorage: 'float64', ComplexFloatStorage: 'complex64', ComplexDoubleStorage: 'complex128',
  QInt8Storage: 'qint8', QUInt8Storage: 'quint8', QInt32Storage: 'qint32',
};

/** The globals a weights-only load may name. */
const ALLOWED = new Set([
  'collections.OrderedDict', 'torch._utils._rebuild_tensor_v2', 'torch._utils._rebuild_parameter', 'torch.Size',
  ...Object.keys(STORAGE_DTYPES).map((s) => `torch.${s}`),
]);

/** PyTorch's error for what a weights-only load refuses. */
export class UnpicklingError extends Error {
  override name = 'UnpicklingError';
}
const refuse = (why: string): never => {
  throw new UnpicklingError(`Weights only load failed. webtorch loads only tensors, numbers, strings, lists, tuples, dicts and OrderedDicts (it cannot run Python code, so weightsOnly: false would not help). WeightsUnpickler error: ${why}`);
};

const MARK = Symbol('mark');
type Slot = PyValue | typeof MARK;

/** Unpickles `data` (protocols 2 to 5, binary opcodes only). */
export function unpickle(data: Uint8Array): PyValue {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let pos = 0;
  const need = (n: number) => {
    if (n < 0 || pos + n > data.length) throw new UnpicklingError(`pickle data was truncated (needed ${n} bytes at offset ${pos} of ${data.length})`);
    const at = pos;
    pos += n;
    return at;
  };
  const u8 = () => data[need(1)];
  const u16 = () => view.getUint16(need(2), true);
  const u32 = () => view.getUint32(need(4), true);
  const bytes = (n: number) => data.subarray(need(n), pos);
  const text = (n: number) => {
    try {
      return utf8.decode(bytes(n));
    } catch {
      throw new UnpicklingError(`pickle data holds a string that is not UTF-8 at offset ${pos - n}`);
    }
  };
  const line = () => {
    const end = data.indexOf(0x0a, pos);
    if (end < 0) throw new UnpicklingError('pickle data was truncated (a GLOBAL without its newline)');
    return text(end - pos + 1).slice(0, -1);
  };
  let stack: Slot[] = [];
  const meta: Slot[][] = [];
  const memo = new Map<number, PyValue>();
  const pop = (): PyValue => {
    if (!stack.length) throw new UnpicklingError(`pickle stack underflow at offset ${pos - 1}`);
    const v = stack.pop()!;
    if (v === MARK) throw new UnpicklingError(`pickle data is corrupt: a MARK where a value was expected at offset ${pos - 1}`);
    return v;
  };
  const top = (): PyValue => {
    const v = stack[stack.length - 1];
    if (v === undefined || v === MARK) throw new UnpicklingError(`pickle stack underflow at offset ${pos - 1}`);
    return v;
  };
  const popMark = (): PyValue[] => {
    const items = stack as PyValue[];
    if (!meta.length) throw new UnpicklingError(`pickle data is corrupt: no MARK at offset ${pos - 1}`);
    stack = meta.pop()!;
    if ((items as Slot[]).includes(MARK)) throw new UnpicklingError(`pickle data is corrupt: an unmatched MARK before offset ${pos - 1}`);
    return items;
  };
  const setItems = (d: PyValue, items: PyValue[]) => {
    if (!(d instanceof PyDict)) refuse(`Can only set items of a dict, but got ${describe(d)}`);
    for (let i = 0; i + 1 < items.length; i += 2) (d as PyDict).entries.set(dictKey(items[i]), items[i + 1]);
  };
  const appendTo = (l: PyValue, items: PyValue[]) => {
    if (!Array.isArray(l)) refuse(`Can only append to lists, but got ${describe(l)}`);
    (l as PyValue[]).push(...items);
  };
  const global = (module: string, name: string) => {
    const full = `${module}.${name}`;
    if (!ALLOWED.has(full)) refuse(`Unsupported global: GLOBAL ${full} was not an allowed global by default.`);
    stack.push({ kind: 'global', name: full });
  };
  for (;;) {
    const op = u8();
    switch (op) {
      case 0x80: u8(); break; // PROTO
      case 0x95: need(8); break; // FRAME
      case 0x2e: return pop(); // STOP
      case 0x28: meta.push(stack); stack = []; break; // MARK
      case 0x30: pop(); break; // POP
      case 0x31: popMark(); break; // POP_MARK
      case 0x32: stack.push(top()); break; // DUP
      case 0x4e: stack.push(null); break; // NONE
      case 0x88: stack.push(true); break; // NEWTRUE
      case 0x89: stack.push(false); break; // NEWFALSE
      case 0x4a: stack.push(view.getInt32(need(4), true)); break; // BININT
      case 0x4b: stack.push(u8()); break; // BININT1
      case 0x4d: stack.push(u16()); break; // BININT2
      case 0x8a: stack.push(long(bytes(u8()))); break; // LONG1
      case 0x8b: stack.push(long(bytes(u32()))); break; // LONG4
      case 0x47: stack.push(view.getFloat64(need(8), false)); break; // BINFLOAT (big-endian)
      case 0x58: stack.push(text(u32())); break; // BINUNICODE
      case 0x8c: stack.push(text(u8())); break; // SHORT_BINUNICODE
      case 0x55: stack.push(text(u8())); break; // SHORT_BINSTRING (PyTorch reads it as text)
      case 0x29: stack.push(new PyTuple([])); break; // EMPTY_TUPLE
      case 0x74: { const items = popMark(); stack.push(new PyTuple(items)); break; } // TUPLE (popMark first: it replaces `stack`)
      case 0x85: stack.push(new PyTuple([pop()])); break; // TUPLE1
      case 0x86: { const b = pop(), a = pop(); stack.push(new PyTuple([a, b])); break; } // TUPLE2
      case 0x87: { const c = pop(), b = pop(), a = pop(); stack.push(new PyTuple([a, b, c])); break; } // TUPLE3
      case 0x5d: stack.push([]); break; // EMPTY_LIST
      case 0x6c: { const items = popMark(); stack.push(items); break; } // LIST
      case 0x61: { const v = pop(); appendTo(top(), [v]); break; } // APPEND
      case 0x65: { const items = popMark(); appendTo(top(), items); break; } // APPENDS
      case 0x7d: stack.push(new PyDict()); break; // EMPTY_DICT
      case 0x64: { const d = new PyDict(), items = popMark(); setItems(d, items); stack.push(d); break; } // DICT
      case 0x73: { const v = pop(), k = pop(); setItems(top(), [k, v]); break; } // SETITEM
      case 0x75: { const items = popMark(); setItems(top(), items); break; } // SETITEMS
      case 0x63: { const m = line(); global(m, line()); break; } // GLOBAL
      case 0x93: { const n = pop(), m = pop(); if (typeof m !== 'string' || typeof n !== 'string') refuse('STACK_GLOBAL needs two strings'); global(m as string, n as string); break; }
      case 0x52: { const args = pop(), fn = pop(); stack.push(call(fn, args)); break; } // REDUCE
      case 0x62: { const state = pop(); build(top(), state); break; } // BUILD
      case 0x51: stack.push(persistent(pop())); break; // BINPERSID
      case 0x71: memo.set(u8(), top()); break; // BINPUT
      case 0x72: memo.set(u32(), top()); break; // LONG_BINPUT
      case 0x94: memo.set(memo.size, top()); break; // MEMOIZE
      case 0x68: case 0x6a: { // BINGET, LONG_BINGET
        const i = op === 0x68 ? u8() : u32();
        if (!memo.has(i)) throw new UnpicklingError(`pickle data is corrupt: memo key ${i} was never stored`);
        stack.push(memo.get(i)!);
        break;
      }
      default: refuse(`Unsupported operand ${op} (opcode ${JSON.stringify(String.fromCharCode(op))} at offset ${pos - 1})`);
    }
  }
}

/** Python's little-endian two's-complement long, as a number when exact, else a BigInt. */
function long(b: Uint8Array): number | bigint {
  let v = 0n;
  for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]);
  if (b.length && b[b.length - 1] & 0x80) v -= 1n << BigInt(8 * b.length);
  return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v;
}

function dictKey(k: PyValue): string | number | bigint {
  if (typeof k === 'string' || typeof k === 'number' || typeof k === 'bigint') return k;
  return refuse(`a dict key must be a str or an int to load in JavaScript, but got ${describe(k)}`);
}

function describe(v: PyValue | undefined): string {
  if (v === null) return 'None';
  if (Array.isArray(v)) return 'list';
  if (v instanceof PyTuple) return 'tuple';
  if (v instanceof PyDict) return 'dict';
  if (typeof v === 'object' && v && 'kind' in v) return v.kind === 'global' ? v.name : `a ${v.kind}`;
  return typeof v;
}

const isInt = (v: PyValue): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const ints = (v: PyValue, what: string): number[] => {
  const items = v instanceof PyTuple ? v.items : Array.isArray(v) ? v : refuse(`${what} must be a tuple of ints, got ${describe(v)}`);
  if (!items.every((x) => isInt(x) && x >= 0)) refuse(`${what} must hold non-negative ints`);
  return items as number[];
};

/** REDUCE: calls one of the allowed globals. */
function call(fn: PyValue, args: PyValue): PyValue {
  if (typeof fn !== 'object' || fn === null || !('kind' in fn) || fn.kind !== 'global') return refuse(`Trying to call reduce for unrecognized function ${describe(fn)}`);
  if (!(args instanceof PyTuple)) return refuse(`REDUCE needs a tuple of arguments, got ${describe(args)}`);
  const a = args.items;
  switch (fn.name) {
    case 'collections.OrderedDict': {
      const d = new PyDict();
      if (a.length) {
        if (!Array.isArray(a[0])) refuse('OrderedDict(...) takes a list of pairs');
        for (const kv of a[0] as PyValue[]) {
          if (!(kv instanceof PyTuple) || kv.items.length !== 2) refuse('OrderedDict(...) takes a list of pairs');
          d.entries.set(dictKey((kv as PyTuple).items[0]), (kv as PyTuple).items[1]);
        }
      }
      return d;
    }
    case 'torch.Size': return ints(a[0] ?? new PyTuple([]), 'torch.Size');
    case 'torch._utils._rebuild_tensor_v2': {
      const [storage, offset, size, stride, requiresGrad] = a;
      if (a.length < 4 || !storage || typeof storage !== 'object' || !('kind' in storage) || storage.kind !== 'storage') {
        return refuse('_rebuild_tensor_v2 needs (storage, storage_offset, size, stride, requires_grad, backward_hooks)');
      }
      if (!isInt(offset) || offset < 0) return refuse('_rebuild_tensor_v2: storage_offset must be a non-negative int');
      const s = ints(size, 'size'), st = ints(stride, 'stride');
      if (s.length !== st.length) refuse(`_rebuild_tensor_v2: size [${s}] and stride [${st}] differ in length`);
      return { kind: 'tensor', storage: storage as StorageRef, offset, size: s, stride: st, requiresGrad: requiresGrad === true, parameter: false };
    }
    case 'torch._utils._rebuild_parameter': {
      const [t, requiresGrad] = a;
      if (!t || typeof t !== 'object' || !('kind' in t) || t.kind !== 'tensor') return refuse('_rebuild_parameter needs a tensor');
      return { ...(t as TensorRef), requiresGrad: requiresGrad === true, parameter: true };
    }
    default: return refuse(`Trying to call reduce for unrecognized function ${fn.name}`);
  }
}

/** BUILD: only an OrderedDict's attributes (`_metadata`, which webtorch does not keep) and a Parameter's empty state. */
function build(inst: PyValue, state: PyValue): void {
  if (inst instanceof PyDict) return;
  if (inst && typeof inst === 'object' && 'kind' in inst && inst.kind === 'tensor' && (state === null || (state instanceof PyDict && !state.entries.size) || state instanceof PyTuple)) return;
  refuse(`Can only build Tensor, parameter or dict objects, but got ${describe(inst)}`);
}

/** BINPERSID: only PyTorch's storages. */
function persistent(pid: PyValue): StorageRef {
  if (!(pid instanceof PyTuple) || pid.items[0] !== 'storage' || pid.items.length !== 5) return refuse(`Only persistent_load of storage is allowed, but got ${describe(pid instanceof PyTuple ? pid.items[0] : pid)}`);
  const [, cls, key, location, numel] = pid.items;
  if (!cls || typeof cls !== 'object' || !('kind' in cls) || cls.kind !== 'global' || !cls.name.endsWith('Storage')) return refuse(`a storage's type must be a torch storage class, got ${describe(cls)}`);
  if (typeof key !== 'string' || typeof location !== 'string' || !isInt(numel) || numel < 0) return refuse('a storage id must be (\'storage\', type, key, location, numel)');
  return { kind: 'storage', dtype: STORAGE_DTYPES[cls.name.slice('torch.'.length)], key, location, numel };
}
