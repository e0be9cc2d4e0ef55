/**
 * dtypes and PyTorch's type promotion.
 *
 * Storage: every dtype has a storage code shared by both kernel families (see `StorageCode`).
 * int64 is a real 64-bit integer (8 bytes: `i64` on the cpu, two 32-bit words, low first, on a
 * GPU). On the host its storage is a `BigInt64Array`; values that int64 cannot hold (beyond
 * ±2^63, NaN, infinities) are refused where they enter, never wrapped.
 *
 * Promotion follows `torch.result_type`: operands are ranked in three groups (tensors with
 * dims, zero-dim tensors, JS numbers). A lower group only changes the result when it is of a
 * higher category (bool < integer < floating), and then contributes its own dtype (zero-dim
 * tensors) or the default dtype of its category (numbers: float32, int64, bool).
 */

/** The dtypes webtorch knows. */
export type DType = 'float32' | 'float16' | 'bfloat16' | 'int32' | 'int64' | 'uint8' | 'bool';

/** Storage codes shared with the AssemblyScript and WGSL kernels. */
export enum StorageCode {
  F32 = 0,
  I32 = 1,
  U8 = 2,
  Bool = 3,
  F16 = 4,
  BF16 = 5,
  /** int64: 8 bytes (two u32 words, low word first, to WGSL). */
  I64 = 6,
}

interface DTypeInfo {
  code: StorageCode;
  bytes: number;
  category: 0 | 1 | 2;
  /** PyTorch's name for error messages ("Float", "Long", ...). */
  scalarName: string;
}

const INFO: Record<DType, DTypeInfo> = {
  float32: { code: StorageCode.F32, bytes: 4, category: 2, scalarName: 'Float' },
  float16: { code: StorageCode.F16, bytes: 2, category: 2, scalarName: 'Half' },
  bfloat16: { code: StorageCode.BF16, bytes: 2, category: 2, scalarName: 'BFloat16' },
  int32: { code: StorageCode.I32, bytes: 4, category: 1, scalarName: 'Int' },
  int64: { code: StorageCode.I64, bytes: 8, category: 1, scalarName: 'Long' },
  uint8: { code: StorageCode.U8, bytes: 1, category: 1, scalarName: 'Byte' },
  bool: { code: StorageCode.Bool, bytes: 1, category: 0, scalarName: 'Bool' },
};

const ALIASES: Record<string, DType> = {
  float: 'float32', half: 'float16', int: 'int32', long: 'int64',
};

/** All dtypes, in a stable order. */
export const DTYPES = Object.keys(INFO) as DType[];

/** Validates and normalises a dtype name (`'float'` → `'float32'`), throwing a TypeError otherwise. */
export function toDType(d: unknown, where = 'dtype'): DType {
  if (typeof d === 'string') {
    if (d in INFO) return d as DType;
    if (d in ALIASES) return ALIASES[d];
    if (d === 'float64' || d === 'double') {
      throw new TypeError(`${where}: float64 is not supported (WebGPU has no 64-bit floats); use float32`);
    }
  }
  throw new TypeError(`${where}: unknown dtype ${JSON.stringify(d)}; expected one of ${DTYPES.join(', ')}`);
}

/** Bytes one element occupies in storage. */
export const elementSize = (d: DType): number => INFO[d].bytes;
/** The kernels' storage code. */
export const storageCode = (d: DType): StorageCode => INFO[d].code;
/** PyTorch's scalar type name, used in error messages. */
export const scalarName = (d: DType): string => INFO[d].scalarName;
export const isFloating = (d: DType): boolean => INFO[d].category === 2;
export const isIntegral = (d: DType, includeBool = false): boolean =>
  INFO[d].category === 1 || (includeBool && d === 'bool');

const INT_RANK: Partial<Record<DType, number>> = { uint8: 1, int32: 2, int64: 3 };

/** `torch.promote_types` for two dtypes. */
export function promoteTypes(a: DType, b: DType): DType {
  if (a === b) return a;
  const ca = INFO[a].category, cb = INFO[b].category;
  if (ca !== cb) return ca > cb ? a : b;
  if (ca === 1) return INT_RANK[a]! > INT_RANK[b]! ? a : b;
  return 'float32';
}

/** What an operand of an op is, for promotion. */
export type Operand = { dtype: DType; ndim: number } | number | boolean;

function categoryOf(o: number | boolean): 0 | 1 | 2 {
  return typeof o === 'boolean' ? 0 : Number.isInteger(o) ? 1 : 2;
}

/** `torch.result_type` over tensors and JS scalars. */
export function resultType(...operands: Operand[]): DType {
  let dims: DType | undefined, zeros: DType | undefined, scalars: DType | undefined;
  for (const o of operands) {
    if (typeof o === 'object') {
      if (o.ndim > 0) dims = dims ? promoteTypes(dims, o.dtype) : o.dtype;
      else zeros = zeros ? promoteTypes(zeros, o.dtype) : o.dtype;
    } else {
      const d: DType = ['bool', 'int64', 'float32'][categoryOf(o)] as DType;
      scalars = scalars ? promoteTypes(scalars, d) : d;
    }
  }
  let out = dims;
  for (const next of [zeros, scalars]) {
    if (!next) continue;
    if (!out) out = next;
    else if (INFO[next].category > INFO[out].category) out = next;
  }
  return out ?? 'float32';
}

const I32_MIN = -2147483648, I32_MAX = 2147483647;
/** int64's range: [-2^63, 2^63). */
export const I64_MIN = -(2n ** 63n), I64_MAX = 2n ** 63n - 1n;

/** Checks that a number fits an integer dtype (int32, int64, uint8; PyTorch raises on overflow too); floats and bool take any number. */
export function checkFits(value: number, dtype: DType, where: string): void {
  if (dtype !== 'int64' && dtype !== 'int32' && dtype !== 'uint8') return;
  if (!Number.isFinite(value)) {
    throw new RangeError(`${where}: cannot convert ${value} to ${dtype} (value is not finite)`);
  }
  const fits = dtype === 'int32' ? value >= I32_MIN && value <= I32_MAX
    : dtype === 'uint8' ? value > -1 && value < 256 // truncated toward zero, as PyTorch converts
    : value >= -(2 ** 63) && value < 2 ** 63;
  if (!fits) throw new RangeError(`${where}: value ${value} does not fit in ${dtype}`);
}

/** Checks that a BigInt fits an integer dtype; returns it. */
export function checkBigFits(value: bigint, dtype: DType, where: string): bigint {
  const [lo, hi] = dtype === 'int64' ? [I64_MIN, I64_MAX] : dtype === 'int32' ? [BigInt(I32_MIN), BigInt(I32_MAX)] : [-Infinity, Infinity] as unknown as [bigint, bigint];
  if (value < lo || value > hi) throw new RangeError(`${where}: value ${value} does not fit in ${dtype}`);
  return value;
}

/** The error a float -> int64 cast raises on a value int64 cannot hold. */
export const castOutOfRange = (from: DType, to: DType): string =>
  `RuntimeError: cast from ${from} to ${to}: a value is NaN, infinite or outside [-2^63, 2^63), the range of ${to}; it would be undefined, so webtorch raises`;

/** The typed array that holds a dtype's values on the host. */
export type HostArray = Float32Array | Int32Array | Uint8Array | Uint16Array | BigInt64Array;

/** Allocates a host array for `n` elements of a dtype's storage. */
export function hostArray(dtype: DType, n: number): HostArray {
  switch (INFO[dtype].code) {
    case StorageCode.F32: return new Float32Array(n);
    case StorageCode.I32: return new Int32Array(n);
    case StorageCode.I64: return new BigInt64Array(n);
    case StorageCode.F16: case StorageCode.BF16: return new Uint16Array(n);
    default: return new Uint8Array(n);
  }
}

/** Views raw storage bytes as the dtype's host array. */
export function viewStorage(dtype: DType, buf: ArrayBuffer, byteOffset = 0, n?: number): HostArray {
  switch (INFO[dtype].code) {
    case StorageCode.F32: return new Float32Array(buf, byteOffset, n);
    case StorageCode.I32: return new Int32Array(buf, byteOffset, n);
    case StorageCode.I64: return new BigInt64Array(buf, byteOffset, n);
    case StorageCode.F16: case StorageCode.BF16: return new Uint16Array(buf, byteOffset, n);
    default: return new Uint8Array(buf, byteOffset, n);
  }
}

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);

/** Rounds an f32 to IEEE half bits (round to nearest even). */
export function f32ToF16(v: number): number {
  f32[0] = v;
  const x = u32[0], sign = (x >>> 16) & 0x8000, exp = (x >>> 23) & 0xff, man = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = man | 0x800000, shift = 14 - e;
    let h = m >>> shift;
    const rem = m & ((1 << shift) - 1), half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (man >>> 13);
  const rem = man & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  return sign | h;
}

/** IEEE half bits to a number. */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >>> 10) & 0x1f, man = h & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24;
  if (exp === 0x1f) return man ? NaN : sign * Infinity;
  return sign * (1 + man / 1024) * 2 ** (exp - 15);
}

/** Rounds an f32 to bfloat16 bits (round to nearest even; NaN stays NaN). */
export function f32ToBF16(v: number): number {
  f32[0] = v;
  const x = u32[0];
  if (Number.isNaN(v)) return (x >>> 16) | 0x40;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/** bfloat16 bits to a number. */
export function bf16ToF32(h: number): number {
  u32[0] = h << 16;
  return f32[0];
}

/** Encodes JS values into a dtype's host storage. */
export function encode(values: ArrayLike<number | boolean | bigint>, dtype: DType, where: string): HostArray {
  // Typed arrays that already hold the storage format are copied in one go.
  if (values instanceof Float32Array && dtype === 'float32') return values.slice();
  if (values instanceof Int32Array && dtype === 'int32') return values.slice();
  if (values instanceof BigInt64Array && dtype === 'int64') return values.slice();
  if (values instanceof Int32Array && dtype === 'int64') return BigInt64Array.from(values, BigInt);
  if (values instanceof Uint8Array && dtype === 'uint8') return values.slice();
  const out = hostArray(dtype, values.length);
  const code = INFO[dtype].code;
  if (code === StorageCode.I64) {
    const o = out as BigInt64Array;
    for (let i = 0; i < values.length; i++) {
      const x = values[i];
      // A BigInt reaches int64 exactly or not at all; a number must be an integer int64 holds.
      if (typeof x === 'bigint') o[i] = checkBigFits(x, dtype, where);
      else {
        const v = Number(x);
        checkFits(v, dtype, where);
        o[i] = BigInt(Math.trunc(v));
      }
    }
    return o;
  }
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (typeof x === 'bigint' && code === StorageCode.I32) checkBigFits(x, dtype, where);
    const v = Number(x);
    if (code === StorageCode.I32 || code === StorageCode.U8) checkFits(v, dtype, where);
    out[i] = code === StorageCode.F16 ? f32ToF16(v)
      : code === StorageCode.BF16 ? f32ToBF16(v)
      : code === StorageCode.Bool ? (v !== 0 ? 1 : 0)
      : v;
  }
  return out;
}

/** An int64 as a JS number when it is a safe integer, else as the BigInt itself. */
export const int64Value = (x: bigint): number | bigint => (x >= -9007199254740991n && x <= 9007199254740991n ? Number(x) : x);

/**
 * Decodes a dtype's host storage into JS values: numbers (booleans for bool). int64 values
 * beyond ±(2^53 - 1) stay BigInts (a number would round them); `item()` and `tolist()` refuse
 * those (see `Tensor.item`).
 */
export function decode(arr: HostArray, dtype: DType): (number | boolean | bigint)[] {
  const code = INFO[dtype].code, out = new Array<number | boolean | bigint>(arr.length);
  if (code === StorageCode.I64) {
    for (let i = 0; i < arr.length; i++) out[i] = int64Value((arr as BigInt64Array)[i]);
    return out;
  }
  const a = arr as Exclude<HostArray, BigInt64Array>;
  for (let i = 0; i < a.length; i++) {
    out[i] = code === StorageCode.F16 ? f16ToF32(a[i]) : code === StorageCode.BF16 ? bf16ToF32(a[i])
      : code === StorageCode.Bool ? a[i] !== 0 : a[i];
  }
  return out;
}
