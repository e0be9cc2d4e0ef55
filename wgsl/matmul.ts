/**
 * Batched matmul: out[b] = A[b] · B[b], with A and B as (batch, row, col)-strided views, so
 * transposed operands and broadcast batches need no copy.
 *
 * A workgroup of 16×16 invocations computes a 64×64 tile of the output, each invocation a 4×4
 * block held in registers. A and B tiles of depth 16 are staged through workgroup memory. This
 * kernel and the direct one (variant 26) write contiguous f32: the worker casts a 16-bit output
 * afterwards. The vec4 kernels (variants 2 and up) read and write 16-bit storage themselves
 * (`vecMatmulIo`), accumulating in f32.
 * Params: [M, N, K, aOff, aBS, aRS, aCS, bOff, bBS, bRS, bCS, outOff].
 */
import { StorageCode } from '../ts/dtype.js';
import { load, slotBindings } from './dtype.js';
import { ENABLE_F16, HALF_HELPERS, loadVec, slotKind, storeVec, vecBindings } from './half.js';
import { SKINNY_TILINGS, matmulSkinnyShader, skinnyBlock, skinnyGrid, skinnyStorage } from './matmul-skinny.js';
export { SKINNY_TILINGS } from './matmul-skinny.js';

/**
 * The bindings of the vec4 matmul kernels (variants 2 and up) for operands and output of `dt`:
 * `rdK(i)` returns elements 4i..4i+3 of slot K as a `vec4<f32>`, `store(q, v)` writes four
 * outputs. f32 binds `vec4<f32>`; float16 and bfloat16 bind 8-byte words unpacked at the tile
 * load and packed at the store (or `vec4<f16>` with `nativeF16`), see wgsl/half.ts. The tiles and
 * the accumulators are f32 in every case, as PyTorch accumulates half products in float.
 */
function vecMatmulIo(dt: StorageCode, slots: number, nativeF16: boolean): { binds: string; store: (q: string, v: string) => string } {
  const kind = slotKind([dt], nativeF16, true);
  const kinds = Array.from({ length: slots }, () => kind);
  let binds = (kind === 'h4' ? ENABLE_F16 : '') + vecBindings(kinds) + (kind === 'w2' ? HALF_HELPERS : '');
  for (let k = 0; k < slots; k++) binds += `fn rd${k}(i: u32) -> vec4<f32> { return ${loadVec(dt, kind, k, 'i')}; }\n`;
  return { binds, store: (q, v) => storeVec(dt, kind, q, v) };
}

/** Output tile edge. */
export const TILE = 64;

/** WGSL of the tiled matmul for input dtype `dt` (a float storage code), A and B in slots `aSlot`, `bSlot`. */
export function matmulShader(dt: StorageCode, aSlot: number, bSlot: number, slots: number, packOut = false): string {
  // A 16-bit output written here (packOut: N and the output offset even) packs columns j, j + 1 of an invocation into one word.
  const store = packOut
    ? `for (var j = 0u; j < 4u; j += 2u) {
      let c = col0 + lid.x * 4u + j;
      if (c < N) { S0[(oBase + r * N + c) >> 1u] = ${pack2(dt, 'acc[i][j]', 'acc[i][j + 1u]')}; }
    }`
    : `for (var j = 0u; j < 4u; j++) {
      let c = col0 + lid.x * 4u + j;
      if (c < N) { S0[oBase + r * N + c] = bitcast<u32>(acc[i][j]); }
    }`;
  return `${slotBindings(slots)}${packOut ? HALF_HELPERS : ''}const BK = 16u;
var<workgroup> As: array<array<f32, 64>, 16>;
var<workgroup> Bs: array<array<f32, 64>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = P[0]; let N = P[1]; let K = P[2];
  let aBase = P[3] + wid.z * P[4];
  let bBase = P[7] + wid.z * P[8];
  let aRS = P[5]; let aCS = P[6]; let bRS = P[9]; let bCS = P[10];
  let row0 = wid.y * 64u; let col0 = wid.x * 64u;
  let tid = lid.y * 16u + lid.x;
  var acc: array<array<f32, 4>, 4>;
  for (var k0 = 0u; k0 < K; k0 += BK) {
    for (var l = tid; l < 1024u; l += 256u) {
      let r = l / 16u; let c = l % 16u;
      let gr = row0 + r; let gk = k0 + c;
      var av = 0.0;
      if (gr < M && gk < K) { av = ${load(`rd${aSlot}`, dt, 'aBase + gr * aRS + gk * aCS')}; }
      As[c][r] = av;
      let kr = l / 64u; let cc = l % 64u;
      let gk2 = k0 + kr; let gc = col0 + cc;
      var bv = 0.0;
      if (gk2 < K && gc < N) { bv = ${load(`rd${bSlot}`, dt, 'bBase + gk2 * bRS + gc * bCS')}; }
      Bs[kr][cc] = bv;
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      var a: array<f32, 4>;
      var b: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) { a[i] = As[k][lid.y * 4u + i]; b[i] = Bs[k][lid.x * 4u + i]; }
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) { acc[i][j] = fma(a[i], b[j], acc[i][j]); }
      }
    }
    workgroupBarrier();
  }
  let oBase = P[11] + wid.z * M * N;
  for (var i = 0u; i < 4u; i++) {
    let r = row0 + lid.y * 4u + i;
    if (r >= M) { continue; }
    ${store}
  }
}
`;
}

/** The variant number of `matmulDirectShader`. */
export const DIRECT = 26;

/**
 * Variant 26, direct: one invocation per output element, a plain loop over K, no workgroup
 * memory and no barriers. For products with few rows or columns (conv weight gradients, the
 * sum of split-K partials, a classifier's 10 outputs), where a 64×64 tile would be mostly
 * empty: its grid is 8×8 outputs per workgroup. Params as in `matmulShader`.
 */
export function matmulDirectShader(dt: StorageCode, aSlot: number, bSlot: number, slots: number, packOut = false): string {
  if (packOut) return matmulDirectPackedShader(dt, aSlot, bSlot, slots);
  return `${slotBindings(slots)}@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let M = P[0]; let N = P[1]; let K = P[2];
  let r = gid.y; let c = gid.x;
  if (r >= M || c >= N) { return; }
  var a = P[3] + gid.z * P[4] + r * P[5];
  var b = P[7] + gid.z * P[8] + c * P[10];
  let aCS = P[6]; let bRS = P[9];
  var acc = 0.0;
  for (var k = 0u; k < K; k++) {
    acc = fma(${load(`rd${aSlot}`, dt, 'a')}, ${load(`rd${bSlot}`, dt, 'b')}, acc);
    a += aCS;
    b += bRS;
  }
  S0[P[11] + gid.z * M * N + r * N + c] = bitcast<u32>(acc);
}
`;
}

/**
 * Variant 26 for a 16-bit output written in place (N and the output offset even): each invocation
 * computes two neighbouring columns and writes them as one word, so its grid is half as wide.
 */
function matmulDirectPackedShader(dt: StorageCode, aSlot: number, bSlot: number, slots: number): string {
  return `${slotBindings(slots)}${HALF_HELPERS}@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let M = P[0]; let N = P[1]; let K = P[2];
  let r = gid.y; let c = gid.x * 2u;
  if (r >= M || c >= N) { return; }
  var a = P[3] + gid.z * P[4] + r * P[5];
  var b = P[7] + gid.z * P[8] + c * P[10];
  let aCS = P[6]; let bRS = P[9]; let bCS = P[10];
  var acc0 = 0.0; var acc1 = 0.0;
  for (var k = 0u; k < K; k++) {
    let av = ${load(`rd${aSlot}`, dt, 'a')};
    acc0 = fma(av, ${load(`rd${bSlot}`, dt, 'b')}, acc0);
    acc1 = fma(av, ${load(`rd${bSlot}`, dt, 'b + bCS')}, acc1);
    a += aCS;
    b += bRS;
  }
  S0[(P[11] + gid.z * M * N + r * N + c) >> 1u] = ${pack2(dt, 'acc0', 'acc1')};
}
`;
}

/** An expression: the word of two 16-bit floats of `dt`, `lo` in the low half. */
const pack2 = (dt: StorageCode, lo: string, hi: string): string =>
  dt === StorageCode.BF16 ? `(bf16_round(${lo}) | (bf16_round(${hi}) << 16u))` : `(f16_round(${lo}) | (f16_round(${hi}) << 16u))`;

/** Output tile edge of the vectorised kernel. */
export const TILE_V4 = 128;

/**
 * Whether the vectorised kernel applies: f32 (or 16-bit float, see `vecMatmulIo`) operands whose rows are contiguous (column stride
 * 1) and whose offsets, row strides, batch strides, K and N are multiples of 4, so every tile
 * row is read and written as whole vec4s.
 */
export function vec4Eligible(m: number, n: number, k: number, a: { offset: number; strides: number[] }, b: { offset: number; strides: number[] }, outOffset: number): boolean {
  const four = (...xs: number[]) => xs.every((x) => x % 4 === 0);
  return m >= 64 && n >= 64 && a.strides[2] === 1 && b.strides[2] === 1 &&
    four(k, n, a.offset, b.offset, a.strides[0], a.strides[1], b.strides[0], b.strides[1], outOffset);
}

/**
 * matmul variants 2 (K steps of 8) and 3 (`bk` = 16, the default: half the barriers per FLOP;
 * 28.2 vs 25.3 TFLOP/s at 4096³ on an H200): 128×128 output tiles, 8×8 per invocation, vec4 loads and
 * stores. A's tile is stored k-major in workgroup memory so each invocation reads its 8 rows
 * and 8 columns of a k step as two vec4s each: 4 vec4 loads feed 64 FMAs. Bindings are
 * `array<vec4<f32>>` (one per distinct segment, as `slotBindings` explains); params as in
 * `matmulShader`, in elements.
 */
export function matmulVec4Shader(aSlot: number, bSlot: number, slots: number, bk = 8, dt: StorageCode = StorageCode.F32, nativeF16 = false): string {
  const { binds, store } = vecMatmulIo(dt, slots, nativeF16);
  const reps = bk / 8;
  return `${binds}
const BK = ${bk}u;
var<workgroup> As: array<vec4<f32>, ${bk * 32}>;
var<workgroup> Bs: array<vec4<f32>, ${bk * 32}>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = P[0]; let N = P[1]; let K = P[2];
  let aBase = P[3] + wid.z * P[4]; let aRS = P[5];
  let bBase = P[7] + wid.z * P[8]; let bRS = P[9];
  let oBase = P[11] + wid.z * M * N;
  let row0 = wid.y * 128u; let col0 = wid.x * 128u;
  let tid = lid.y * 16u + lid.x;
  var acc: array<vec4<f32>, 16>;
  for (var k0 = 0u; k0 < K; k0 += BK) {
    for (var rep = 0u; rep < ${reps}u; rep++) {
      let t = tid + rep * 256u;
      let ar = t % 128u; let akv = (t / 128u) * 4u;
      var av = vec4<f32>(0.0);
      if (row0 + ar < M && k0 + akv < K) { av = rd${aSlot}((aBase + (row0 + ar) * aRS + k0 + akv) / 4u); }
      let am = ar >> 2u; let ac = ar & 3u;
      As[(akv + 0u) * 32u + am][ac] = av.x;
      As[(akv + 1u) * 32u + am][ac] = av.y;
      As[(akv + 2u) * 32u + am][ac] = av.z;
      As[(akv + 3u) * 32u + am][ac] = av.w;
      let bk = t >> 5u; let bc = (t & 31u) * 4u;
      var bv = vec4<f32>(0.0);
      if (k0 + bk < K && col0 + bc < N) { bv = rd${bSlot}((bBase + (k0 + bk) * bRS + col0 + bc) / 4u); }
      Bs[bk * 32u + (bc >> 2u)] = bv;
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      let a0 = As[k * 32u + lid.y * 2u]; let a1 = As[k * 32u + lid.y * 2u + 1u];
      let b0 = Bs[k * 32u + lid.x * 2u]; let b1 = Bs[k * 32u + lid.x * 2u + 1u];
      for (var i = 0u; i < 4u; i++) {
        acc[i * 2u] = fma(vec4<f32>(a0[i]), b0, acc[i * 2u]);
        acc[i * 2u + 1u] = fma(vec4<f32>(a0[i]), b1, acc[i * 2u + 1u]);
        acc[8u + i * 2u] = fma(vec4<f32>(a1[i]), b0, acc[8u + i * 2u]);
        acc[8u + i * 2u + 1u] = fma(vec4<f32>(a1[i]), b1, acc[8u + i * 2u + 1u]);
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 8u; i++) {
    let r = row0 + lid.y * 8u + i;
    if (r >= M) { break; }
    for (var h = 0u; h < 2u; h++) {
      let c = col0 + lid.x * 8u + h * 4u;
      if (c < N) { ${store('(oBase + r * N + c) / 4u', 'acc[i * 2u + h]')} }
    }
  }
}
`;
}

/**
 * Shape of a register-tiled vec4 matmul kernel (variants 4 and up). A workgroup of `wx`×`wy`
 * invocations computes a `wy·rm` × `wx·rn` output tile; each invocation an `rm`×`rn` block
 * (`rm`, `rn` ∈ {4, 8}) made of 4×4 sub-blocks spread by half a tile, so neighbouring invocations
 * read neighbouring vec4s of workgroup memory (no bank conflicts) and store neighbouring vec4s.
 * `bk` is the depth of a K step. With `double`, workgroup memory holds two K steps: the next step's
 * global loads go to registers before the current step's FMAs and to the other buffer after them,
 * so each step costs one barrier instead of two.
 */
export interface MatmulTiling {
  wx: number; wy: number; rm: 4 | 8; rn: 4 | 8; bk: 4 | 8 | 16 | 32; double: boolean;
  /** With `double`: unroll the K loop by two so that each half names its buffers by constants. */
  unroll2?: boolean;
  /**
   * Invocation (tx, ty) from the flat index so that a 32-wide subgroup covers 8×4 invocations
   * rather than 16×2: its reads of a k step touch 8 B vec4s and 4 A vec4s (one 128-byte
   * wavefront each) instead of 16 and 2.
   */
  swizzle?: boolean;
  /** A's global loads: consecutive invocations take consecutive rows (conflict-free stores into the k-major tile) instead of consecutive K. */
  aSpread?: boolean;
}

/** The numbered tilings (variants 1–3 are `matmulShader` and `matmulVec4Shader`); see bench/MATMUL-VARIANTS.md. */
export const MATMUL_TILINGS: Readonly<Record<number, MatmulTiling>> = {
  4: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 8, double: true },
  5: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 16, double: true },
  6: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 16, double: false },
  7: { wx: 16, wy: 16, rm: 4, rn: 4, bk: 16, double: true },
  8: { wx: 16, wy: 16, rm: 8, rn: 4, bk: 16, double: true },
  9: { wx: 32, wy: 8, rm: 4, rn: 4, bk: 16, double: true },
  10: { wx: 16, wy: 8, rm: 8, rn: 8, bk: 16, double: true },
  11: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 32, double: false },
  12: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 16, double: true, unroll2: true },
  13: { wx: 16, wy: 8, rm: 8, rn: 8, bk: 16, double: false },
  14: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 8, double: false },
  15: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 8, double: true, unroll2: true },
  16: { wx: 16, wy: 8, rm: 8, rn: 8, bk: 16, double: true, unroll2: true },
  17: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 16, double: false, swizzle: true },
  18: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 16, double: true, unroll2: true, swizzle: true },
  19: { wx: 16, wy: 8, rm: 8, rn: 8, bk: 16, double: false, swizzle: true },
  20: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 16, double: false, swizzle: true, aSpread: true },
  21: { wx: 16, wy: 16, rm: 8, rn: 8, bk: 8, double: true, unroll2: true, swizzle: true, aSpread: true },
  22: { wx: 16, wy: 32, rm: 8, rn: 8, bk: 8, double: false },
  23: { wx: 16, wy: 32, rm: 8, rn: 8, bk: 16, double: false },
  24: { wx: 8, wy: 8, rm: 8, rn: 8, bk: 16, double: true },
  25: { wx: 16, wy: 8, rm: 8, rn: 8, bk: 8, double: true },
  27: { wx: 16, wy: 4, rm: 4, rn: 8, bk: 16, double: false },
  28: { wx: 16, wy: 2, rm: 8, rn: 8, bk: 16, double: false },
  35: { wx: 16, wy: 8, rm: 4, rn: 4, bk: 16, double: true },
};

/** Output tile (rows, cols) of a tiling. */
export const tileOf = (t: MatmulTiling): [number, number] => [t.wy * t.rm, t.wx * t.rn];

/** Workgroup memory bytes a tiling needs (check it against `maxComputeWorkgroupStorageSize`). */
export const tilingStorage = (t: MatmulTiling): number => (t.double ? 2 : 1) * t.bk * tileOf(t).reduce((a, b) => a + b) * 4;

/** The dispatch grid of a tiling for an m×n output and `batch` products. */
export function tilingGrid(t: MatmulTiling, m: number, n: number, batch: number): [number, number, number] {
  const [tm, tn] = tileOf(t);
  return [Math.ceil(n / tn), Math.ceil(m / tm), batch];
}

/**
 * WGSL of a register-tiled matmul (see `MatmulTiling`). Applies where `matmulVec4Shader` does
 * (`vec4Eligible`: rows contiguous; K, N, offsets and strides multiples of 4), with any M; params,
 * bindings and output as there.
 */
export function matmulTiledShader(aSlot: number, bSlot: number, slots: number, t: MatmulTiling, dt: StorageCode = StorageCode.F32, nativeF16 = false): string {
  const { wx, wy, rm, rn, bk, double, unroll2, swizzle, aSpread } = t;
  const threads = wx * wy;
  const [tm, tn] = tileOf(t);
  const aVecs = (tm * bk) / 4, bVecs = (tn * bk) / 4; // vec4s per K step
  const aRow = tm / 4, bRow = tn / 4; // vec4s per k row of As and Bs
  const bufA = aVecs, bufB = bVecs;
  const { binds, store: put } = vecMatmulIo(dt, slots, nativeF16);
  const aMap = aSpread ? `let row = idx % ${tm}u; let kv = (idx / ${tm}u) * 4u;` : `let row = idx / ${bk / 4}u; let kv = (idx % ${bk / 4}u) * 4u;`;
  const loadsOf = (count: number) => Array.from({ length: Math.ceil(count / threads) }, (_, r) => r);
  const aReps = loadsOf(aVecs), bReps = loadsOf(bVecs);
  const guard = (count: number, r: number) => ((r + 1) * threads > count ? `idx < ${count}u && ` : '');
  // Global loads of one K step (at k0) into registers pa*, pb*.
  const fetch = aReps.map((r) => `    {
      let idx = tid + ${r * threads}u;
      ${aMap}
      pa${r} = vec4<f32>(0.0);
      if (${guard(aVecs, r)}row0 + row < M && k0 + kv < K) { pa${r} = rd${aSlot}((aBase + (row0 + row) * aRS + k0 + kv) / 4u); }
    }`).concat(bReps.map((r) => `    {
      let idx = tid + ${r * threads}u;
      let kr = idx / ${bRow}u; let cv = idx % ${bRow}u;
      pb${r} = vec4<f32>(0.0);
      if (${guard(bVecs, r)}k0 + kr < K && col0 + cv * 4u < N) { pb${r} = rd${bSlot}((bBase + (k0 + kr) * bRS + col0 + cv * 4u) / 4u); }
    }`)).join('\n');
  // Registers into workgroup memory buffer `sb` (a WGSL expression: 0u or 1u): A transposed, k-major.
  const stash = (sb: string) => aReps.map((r) => `    {
      let idx = tid + ${r * threads}u;
      ${guard(aVecs, r) ? `if (idx < ${aVecs}u) {` : '{'}
        ${aMap}
        let at = ${sb} * ${bufA}u + kv * ${aRow}u + row / 4u; let c = row % 4u;
        As[at][c] = pa${r}.x; As[at + ${aRow}u][c] = pa${r}.y; As[at + ${2 * aRow}u][c] = pa${r}.z; As[at + ${3 * aRow}u][c] = pa${r}.w;
      }
    }`).concat(bReps.map((r) => `    {
      let idx = tid + ${r * threads}u;
      ${guard(bVecs, r) ? `if (idx < ${bVecs}u) { ` : ''}Bs[${sb} * ${bufB}u + idx] = pb${r};${guard(bVecs, r) ? ' }' : ''}
    }`)).join('\n');
  // FMAs of one K step from buffer `sb`, fully unrolled over k, rows and column groups.
  const ah = rm / 4, bh = rn / 4;
  const fmaStep = (sb: string) => {
    let s = `    let ab = ${sb} * ${bufA}u + ty; let bb = ${sb} * ${bufB}u + tx;\n`;
    for (let k = 0; k < bk; k++) {
      s += '    {\n';
      for (let h = 0; h < ah; h++) s += `      let a${h} = As[ab + ${k * aRow + h * (aRow / ah)}u];\n`;
      for (let h = 0; h < bh; h++) s += `      let b${h} = Bs[bb + ${k * bRow + h * (bRow / bh)}u];\n`;
      for (let i = 0; i < rm; i++) {
        for (let h = 0; h < bh; h++) s += `      c${i}_${h} = fma(vec4<f32>(a${i >> 2}[${i & 3}]), b${h}, c${i}_${h});\n`;
      }
      s += '    }\n';
    }
    return s;
  };
  const accs = [];
  for (let i = 0; i < rm; i++) for (let h = 0; h < bh; h++) accs.push(`  var c${i}_${h} = vec4<f32>(0.0);`);
  const regs = [...aReps.map((r) => `pa${r}`), ...bReps.map((r) => `pb${r}`)].map((v) => `  var ${v}: vec4<f32>;`).join('\n');
  let store = '';
  for (let i = 0; i < rm; i++) {
    const r = `row0 + ${(i >> 2) * (tm / ah)}u + ty * 4u + ${i & 3}u`;
    store += `  if (${r} < M) {\n`;
    for (let h = 0; h < bh; h++) store += `    { let c = col0 + ${h * (tn / bh)}u + tx * 4u; if (c < N) { ${put(`(oBase + (${r}) * N + c) / 4u`, `c${i}_${h}`)} } }\n`;
    store += '  }\n';
  }
  // One double-buffered K step: prefetch the step at `next` into registers while computing from
  // buffer `cur`, then stash the registers into buffer `other` (a WGSL flag `more` guards the last step).
  const prefetchStep = (next: string, more: string, cur: string, other: string) => `    k0 = ${next};
    let ${more} = k0 < K;
    if (${more}) {
${fetch}
    }
${fmaStep(cur)}
    if (${more}) {
${stash(other)}
    }
    workgroupBarrier();`;
  const loop = double && unroll2
    ? `  var k0 = 0u;
${fetch}
${stash('0u')}
  workgroupBarrier();
  for (var kt = 0u; kt < K; kt += 2u * BK) {
${prefetchStep('kt + BK', 'more', '0u', '1u')}
    if (more) {
${prefetchStep('kt + 2u * BK', 'more2', '1u', '0u')}
    }
  }`
    : double
    ? `  var k0 = 0u;
${fetch}
${stash('0u')}
  workgroupBarrier();
  var sb = 0u;
  for (var kt = 0u; kt < K; kt += BK) {
${prefetchStep('kt + BK', 'more', 'sb', '(1u - sb)')}
    sb = 1u - sb;
  }`
    : `  var k0 = 0u;
${fetch}
  for (var kt = 0u; kt < K; kt += BK) {
${stash('0u')}
    workgroupBarrier();
    k0 = kt + BK;
    if (k0 < K) {
${fetch}
    }
${fmaStep('0u')}
    workgroupBarrier();
  }`;
  return `${binds}
const BK = ${bk}u;
var<workgroup> As: array<vec4<f32>, ${(double ? 2 : 1) * bufA}>;
var<workgroup> Bs: array<vec4<f32>, ${(double ? 2 : 1) * bufB}>;

@compute @workgroup_size(${wx}, ${wy})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = P[0]; let N = P[1]; let K = P[2];
  let aBase = P[3] + wid.z * P[4]; let aRS = P[5];
  let bBase = P[7] + wid.z * P[8]; let bRS = P[9];
  let oBase = P[11] + wid.z * M * N;
  let row0 = wid.y * ${tm}u; let col0 = wid.x * ${tn}u;
  let tid = lid.y * ${wx}u + lid.x;
${swizzle ? `  let lane = tid % 32u; let warp = tid / 32u;
  let tx = (warp % ${wx / 8}u) * 8u + lane % 8u; let ty = (warp / ${wx / 8}u) * 4u + lane / 8u;` : '  let tx = lid.x; let ty = lid.y;'}
${accs.join('\n')}
${regs}
${loop}
${store}}
`;
}

/**
 * Whether a register-tiled variant (4 and up) applies: f32, float16 or bfloat16 operands with contiguous rows, and K, N,
 * offsets, row and batch strides multiples of 4 (every tile row moves as whole vec4s). Any M.
 */
export function tiledEligible(k: number, n: number, a: { offset: number; strides: number[] }, b: { offset: number; strides: number[] }, outOffset: number): boolean {
  const four = (...xs: number[]) => xs.every((x) => x % 4 === 0);
  return a.strides[2] === 1 && b.strides[2] === 1 && four(k, n, a.offset, b.offset, a.strides[0], a.strides[1], b.strides[0], b.strides[1], outOffset);
}

/**
 * WGSL of matmul variant `v` (1: `matmulShader` for `dt`; 2, 3: `matmulVec4Shader`; 29–34:
 * `matmulSkinnyShader`, made for an m×n output; 4 and up: `matmulTiledShader`). Variants 2–25,
 * 27 and 28 write a 16-bit `dt` themselves; `packOut` makes variants 1 and 26 do so too (else they
 * write f32 for the worker to cast; the skinny ones always do: `packsOutput`).
 */
export function matmulVariantShader(v: number, dt: StorageCode, aSlot: number, bSlot: number, slots: number, nativeF16 = false, packOut = false, m = 1, n = 1): string {
  if (v === 1) return matmulShader(dt, aSlot, bSlot, slots, packOut);
  if (v === DIRECT) return matmulDirectShader(dt, aSlot, bSlot, slots, packOut);
  const s = SKINNY_TILINGS[v];
  if (s) return matmulSkinnyShader(dt, aSlot, bSlot, slots, s, ...skinnyBlock(s, m, n));
  if (v === 2 || v === 3) return matmulVec4Shader(aSlot, bSlot, slots, v === 2 ? 8 : 16, dt, nativeF16);
  const t = MATMUL_TILINGS[v];
  if (!t) throw new Error(`no matmul variant ${v}`);
  return matmulTiledShader(aSlot, bSlot, slots, t, dt, nativeF16);
}

/** The dispatch grid of variant `v` for `batch` m×n outputs (`packOut` as in `matmulVariantShader`). */
export function matmulVariantGrid(v: number, m: number, n: number, batch: number, packOut = false): [number, number, number] {
  if (v === 1) return [Math.ceil(n / TILE), Math.ceil(m / TILE), batch];
  if (v === DIRECT) return [Math.ceil(n / (packOut ? 16 : 8)), Math.ceil(m / 8), batch];
  if (SKINNY_TILINGS[v]) return skinnyGrid(SKINNY_TILINGS[v], m, n, batch);
  if (v === 2 || v === 3) return [Math.ceil(n / TILE_V4), Math.ceil(m / TILE_V4), batch];
  return tilingGrid(MATMUL_TILINGS[v], m, n, batch);
}

/**
 * Which matmul variant runs a product (`batch` products of m×k · k×n). `tiled`: whether
 * `tiledEligible` holds (f32, rows contiguous, multiples of 4); `forced`: `WEBTORCH_MATMUL` (0 = by
 * shape); `storage`: the device's `maxComputeWorkgroupStorageSize`. Measured on an H100
 * (bench/MATMUL-VARIANTS.md, 2026-11-22): variant 6 (128×128 tiles) from 256 such tiles up
 * (39.2–39.9 TFLOP/s at 2048³–8192³, 37.1 batched 32×512³); below, and for fewer than 128 rows
 * (split-K partials of a skinny product: 78.5 µs with 10 vs 126.9 with 6), variant 10 (64×128 tiles,
 * twice the workgroups: 28.8 TFLOP/s at 1024³ where variant 6 gives 17.3 and variant 1 18.0).
 * Variant 1 takes every other product the vec4 kernels cannot. Fewer than 16 rows or columns
 * take variant 26 (direct): on lavapipe a 16×8×784 · 784×9 batch (a conv's weight gradient) took
 * 60 ms with variant 1's 16 mostly-empty tiles. On a CPU adapter (`cpuAdapter`: lavapipe), 16 to 48
 * rows take variant 28 (16×128 tiles): a conv's 16×144 · 144×784 batch of 4 took 7.4–9 ms there
 * against 21 with variant 10's 64-row tiles. On the H100 variant 28 was slower for the 32-row
 * split-K partials of a skinny product (85.8 against 79.1 µs), so GPUs keep variant 10.
 * On a GPU that is not a CPU adapter, a long K with fewer than 16 rows or columns takes a skinny
 * variant (`chooseSkinny`: K split across a workgroup), and fewer than `FEW_TILES` tiles of variant
 * 10 take variant 35's 32×64 tiles (bench/MATMUL-VARIANTS.md, "Skinny products and few tiles").
 */
export function chooseMatmul(m: number, n: number, k: number, batch: number, tiled: boolean, forced = 0, storage = 16384, cpuAdapter = false): number {
  const fits = (v: number) => tilingStorage(MATMUL_TILINGS[v]) <= storage;
  if (forced === 1 || forced === DIRECT) return forced;
  if (SKINNY_TILINGS[forced]) return skinnyFits(forced, m, n, batch, storage) ? forced : DIRECT;
  if (forced === 2 || forced === 3) return tiled && m >= 64 && n >= 64 ? forced : 1;
  if (forced >= 4) return tiled && MATMUL_TILINGS[forced] && fits(forced) ? forced : 1;
  if (m < 16 || n < 16) return chooseSkinny(m, n, k, batch, storage, cpuAdapter);
  if (!tiled) return 1;
  if (cpuAdapter && m <= 48 && fits(28)) return 28;
  if (m >= 128 && batch * Math.ceil(m / 128) * Math.ceil(n / 128) >= 256) return 6;
  if (!cpuAdapter && batch * Math.ceil(m / 64) * Math.ceil(n / 128) < FEW_TILES && fits(35)) return 35;
  return fits(10) ? 10 : 13;
}

/**
 * Below this many 64×128 tiles a GPU (not a CPU adapter) takes variant 35's 32×64 tiles, four
 * times the workgroups: 256×1024 · 1024×1024 is 32 tiles of variant 10, a quarter of an H100's
 * 132 SMs. WebGPU does not tell the SM count, so this is a guess at "a big GPU"; a smaller one
 * fills up with fewer tiles but loses little, each tile doing a quarter of the work.
 */
export const FEW_TILES = 64;

/** Products with a K shorter than this keep the direct kernel: each output's loop is short already. */
export const SKINNY_MIN_K = 128;

/** Whether skinny variant `v` can run `batch` m×n outputs (grid within WebGPU's 65,535 per dimension, workgroup memory within `storage`). */
function skinnyFits(v: number, m: number, n: number, batch: number, storage: number): boolean {
  const t = SKINNY_TILINGS[v];
  return skinnyGrid(t, m, n, batch).every((g) => g <= 65535) && skinnyStorage(t, ...skinnyBlock(t, m, n)) <= storage;
}

/**
 * A product with fewer than 16 rows or columns: on a GPU with a long K, variant 29 (K split across
 * a workgroup per row, all n columns in each invocation) where n < 16, variant 32 (K split by 16,
 * all m rows in each invocation, 16 columns per workgroup) where m < 16; where both are, the one with
 * more workgroups. Otherwise, and on a CPU adapter, variant 26 (direct).
 */
function chooseSkinny(m: number, n: number, k: number, batch: number, storage: number, cpuAdapter: boolean): number {
  if (cpuAdapter || k < SKINNY_MIN_K) return DIRECT;
  const groups = (v: number) => (skinnyFits(v, m, n, batch, storage) ? skinnyGrid(SKINNY_TILINGS[v], m, n, 1).reduce((a, b) => a * b) : 0);
  const byN = n < 16 ? groups(29) : 0, byM = m < 16 ? groups(32) : 0;
  if (!byN && !byM) return DIRECT;
  return byN >= byM ? 29 : 32;
}

/** The part of a pipeline key that a matmul variant's shader depends on beyond dtype and slots: a skinny variant's block. */
export function matmulVariantKey(v: number, m: number, n: number): string {
  const t = SKINNY_TILINGS[v];
  return t ? skinnyBlock(t, m, n).join('x') : '';
}

/** Whether variant `v` can write a 16-bit output itself (`packOut`); the others write f32 for the worker to cast. */
export const packsOutput = (v: number): boolean => !SKINNY_TILINGS[v];

/**
 * Whether the worker copies a large transposed operand row-major before variant `v` (see
 * `runMatmul`): the vec4 tiles need contiguous rows, and the direct kernel has always had it; a
 * skinny variant does not (the operand it could copy is the small one, with under 16 rows or columns).
 */
export const copiesTransposed = (v: number): boolean => v !== 1 && !SKINNY_TILINGS[v];
