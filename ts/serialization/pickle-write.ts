/**
 * A pickler for what `torch.save` writes: protocol 2 (PyTorch's default), the opcodes PyTorch's
 * own `torch.save` emits, so that PyTorch's `torch.load` (also with `weights_only=True`) reads it.
 *
 * JS → Python: null → None, booleans, integral numbers → int (BigInt too), other numbers → float,
 * strings → str, arrays → list, plain objects and Maps → dict (an object key that is a canonical
 * non-negative integer, "0", "12", becomes an int key, as an optimizer's `state` has), tensors →
 * `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())`,
 * a Parameter wrapped in `_rebuild_parameter`. Each distinct tensor object is one storage.
 */
import type { Tensor } from '../tensor.js';

/** What the pickler asks of its caller for each tensor: the storage key, class name and location. */
export interface TensorSlot {
  key: string; storageClass: string; location: string; shape: readonly number[]; parameter: boolean; requiresGrad: boolean;
}

/**
 * Builds the pickle bytes of `obj`; `slot(t, path)` registers a tensor's storage (a Uint8Array,
 * such as an RNG state, is saved as a uint8 tensor: PyTorch's ByteTensor).
 */
export function pickle(obj: unknown, isTensor: (x: unknown) => x is Tensor, slot: (t: Tensor | Uint8Array, path: string) => TensorSlot): Uint8Array {
  const out = new Writer();
  out.byte(0x80, 2); // PROTO 2
  const seen = new Set<object>();
  const value = (v: unknown, path: string): void => {
    if (v === null) return out.byte(0x4e);
    if (v === true) return out.byte(0x88);
    if (v === false) return out.byte(0x89);
    if (typeof v === 'bigint') return out.int(v);
    if (typeof v === 'number') return Number.isInteger(v) && !Object.is(v, -0) ? out.int(v) : out.float(v);
    if (typeof v === 'string') return out.str(v);
    if (typeof v !== 'object') throw new TypeError(`torch.save: cannot save ${typeof v} at ${path || 'the top level'} (a checkpoint holds tensors, numbers, strings, booleans, null, arrays and objects)`);
    if (isTensor(v) || v instanceof Uint8Array) return tensor(slot(v, path));
    if (seen.has(v)) throw new TypeError(`torch.save: ${path || 'the object'} refers to itself (a circular structure cannot be saved)`);
    seen.add(v);
    if (Array.isArray(v)) {
      out.byte(0x5d); // EMPTY_LIST
      if (v.length) {
        out.byte(0x28); // MARK
        v.forEach((x, i) => value(x, `${path}[${i}]`));
        out.byte(0x65); // APPENDS
      }
    } else if (v instanceof Map || Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null) {
      const entries: [unknown, unknown][] = v instanceof Map ? [...v] : Object.entries(v);
      out.byte(0x7d); // EMPTY_DICT
      if (entries.length) {
        out.byte(0x28);
        for (const [k, x] of entries) {
          if (typeof k === 'string' && /^(0|[1-9]\d{0,14})$/.test(k)) out.int(Number(k));
          else if (typeof k === 'string' || typeof k === 'number' || typeof k === 'bigint') value(k, path);
          else throw new TypeError(`torch.save: a dict key at ${path || 'the top level'} must be a string or a number, got ${typeof k}`);
          if (x === undefined) throw new TypeError(`torch.save: ${path ? `${path}.` : ''}${String(k)} is undefined (Python has no undefined; use null)`);
          value(x, path ? `${path}.${String(k)}` : String(k));
        }
        out.byte(0x75); // SETITEMS
      }
    } else {
      throw new TypeError(`torch.save: cannot save a ${v.constructor?.name ?? 'object'} at ${path || 'the top level'} (only plain objects, Maps, arrays and tensors)`);
    }
    seen.delete(v);
  };
  const tensor = (s: TensorSlot) => {
    if (s.parameter) out.global('torch._utils', '_rebuild_parameter');
    out.global('torch._utils', '_rebuild_tensor_v2');
    out.byte(0x28); // MARK (the arguments' tuple)
    out.byte(0x28); // MARK (the persistent id)
    out.str('storage');
    out.global('torch', s.storageClass);
    out.str(s.key);
    out.str(s.location);
    out.int(s.shape.reduce((a, b) => a * b, 1));
    out.byte(0x74, 0x51); // TUPLE, BINPERSID
    out.int(0); // storage offset: each tensor is its own contiguous storage
    ints(s.shape);
    const stride: number[] = [];
    for (let i = s.shape.length - 1, k = 1; i >= 0; k *= s.shape[i--]) stride[i] = k;
    ints(stride);
    out.byte(s.requiresGrad && !s.parameter ? 0x88 : 0x89); // requires_grad (a parameter's is set by _rebuild_parameter)
    out.global('collections', 'OrderedDict');
    out.byte(0x29, 0x52); // EMPTY_TUPLE, REDUCE: backward_hooks
    out.byte(0x74, 0x52); // TUPLE, REDUCE
    if (s.parameter) {
      out.byte(s.requiresGrad ? 0x88 : 0x89);
      out.global('collections', 'OrderedDict');
      out.byte(0x29, 0x52, 0x87, 0x52); // EMPTY_TUPLE, REDUCE, TUPLE3, REDUCE
    }
  };
  const ints = (xs: readonly number[]) => {
    out.byte(0x28);
    xs.forEach((x) => out.int(x));
    out.byte(0x74);
  };
  value(obj, '');
  out.byte(0x2e); // STOP
  return out.bytes();
}

/** An append-only byte buffer. */
class Writer {
  private buf = new Uint8Array(256);
  private n = 0;
  private readonly enc = new TextEncoder();

  private room(k: number): void {
    if (this.n + k <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.n + k));
    next.set(this.buf.subarray(0, this.n));
    this.buf = next;
  }
  byte(...bs: number[]): void {
    this.room(bs.length);
    for (const b of bs) this.buf[this.n++] = b;
  }
  raw(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
  }
  u32(v: number): void {
    this.byte(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  }
  int(v: number | bigint): void {
    if (typeof v === 'number' && v >= 0 && v < 256) return this.byte(0x4b, v); // BININT1
    if (typeof v === 'number' && v >= 0 && v < 65536) return this.byte(0x4d, v & 0xff, v >>> 8); // BININT2
    if (typeof v === 'number' && v >= -(2 ** 31) && v < 2 ** 31) return this.byte(0x4a), this.u32(v >>> 0); // BININT
    // LONG1: little-endian two's complement, as few bytes as hold the sign
    let x = BigInt(v);
    const bytes: number[] = [];
    for (;;) {
      bytes.push(Number(x & 0xffn));
      x >>= 8n;
      const sign = bytes[bytes.length - 1] & 0x80;
      if ((x === 0n && !sign) || (x === -1n && sign)) break;
    }
    this.byte(0x8a, bytes.length, ...bytes);
  }
  float(v: number): void {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, false); // BINFLOAT is big-endian
    this.byte(0x47);
    this.raw(b);
  }
  str(s: string): void {
    const b = this.enc.encode(s);
    this.byte(0x58); // BINUNICODE
    this.u32(b.length);
    this.raw(b);
  }
  global(module: string, name: string): void {
    this.byte(0x63);
    this.raw(this.enc.encode(`${module}\n${name}\n`));
  }
  bytes(): Uint8Array {
    return this.buf.slice(0, this.n);
  }
}
