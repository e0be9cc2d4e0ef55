/**
 * Skinny matmuls (variants 29–34): products with fewer than 16 rows or columns and a long K, such
 * as a classifier's 256×1024 · 1024×10 or its weight gradient 10×256 · 256×1024.
 *
 * Why this file: the direct kernel (variant 26) gives each output one invocation and a serial
 * loop over K, so such a product has only m·n invocations, each waiting on K dependent rounds of
 * loads; the tiled kernels waste most of a 64-row tile. Here the invocations of a workgroup split
 * K instead: `tk` of them walk interleaved k (so `tk` consecutive k of a row of A, or of B's
 * column, are read together), each keeps an `rm`×`rn` block of accumulators in named registers,
 * and the loads of `u` k steps are issued before their FMAs. Then a tree halves the `tk` partial
 * blocks `log2 tk` times through workgroup memory (the upper half writes, the lower half adds into
 * its registers), and the `tz = 0` invocations write the block. No subgroup operations, so it runs
 * wherever WGSL does. Operands are (batch, row, column)-strided as for every matmul kernel (a
 * transposed operand or a broadcast batch needs no copy); rows and columns past the edge are read
 * at the last row or column (clamped addresses, no branches) and never stored.
 *
 * Two shapes of workgroup, by which side is narrow (`narrow`):
 * - `'n'` (n < 16): one invocation holds `rows` rows × all n columns (`rn` = n, fixed when the
 *   shader is made); the workgroup is `tk` invocations along K, and a workgroup per `rows` rows;
 * - `'m'` (m < 16): one invocation holds all m rows × one column; `tn` neighbouring invocations
 *   take neighbouring columns (B's rows are read coalesced, A's values are the same across them)
 *   and `tk` split K.
 * Output: contiguous f32, as variant 26 writes it (the worker casts a 16-bit result afterwards).
 * Params as in `matmulShader`: [M, N, K, aOff, aBS, aRS, aCS, bOff, bBS, bRS, bCS, outOff].
 */
import type { StorageCode } from '../ts/dtype.js';
import { load, slotBindings } from './dtype.js';

/** A skinny variant's workgroup (see the file's note). */
export interface SkinnyTiling {
  /** The side an invocation holds whole: 'n' (few columns) or 'm' (few rows). */
  narrow: 'm' | 'n';
  /** Invocations along output columns (narrow 'm'; 1 for 'n'). */
  tn: number;
  /** Invocations splitting K (a power of 2). */
  tk: number;
  /** Rows an invocation holds with narrow 'n'. */
  rows: number;
  /** K steps per loop round whose loads are issued together. */
  u: number;
}

/** The numbered skinny variants (bench/MATMUL-VARIANTS.md). */
export const SKINNY_TILINGS: Readonly<Record<number, SkinnyTiling>> = {
  29: { narrow: 'n', tn: 1, tk: 64, rows: 1, u: 4 },
  30: { narrow: 'n', tn: 1, tk: 256, rows: 1, u: 2 },
  31: { narrow: 'n', tn: 1, tk: 64, rows: 4, u: 2 },
  32: { narrow: 'm', tn: 16, tk: 16, rows: 0, u: 4 },
  33: { narrow: 'm', tn: 32, tk: 8, rows: 0, u: 4 },
  34: { narrow: 'm', tn: 8, tk: 32, rows: 0, u: 4 },
};

/** The most rows or columns an invocation of a skinny variant holds. */
export const SKINNY_WIDTH = 16;

/** The block an invocation of `t` holds for an m×n output: [rm, rn]. */
export function skinnyBlock(t: SkinnyTiling, m: number, n: number): [number, number] {
  return t.narrow === 'n' ? [t.rows, Math.max(1, Math.min(n, SKINNY_WIDTH))] : [Math.max(1, Math.min(m, SKINNY_WIDTH)), 1];
}

/** The dispatch grid of `t` for `batch` m×n outputs. */
export function skinnyGrid(t: SkinnyTiling, m: number, n: number, batch: number): [number, number, number] {
  const [rm, rn] = skinnyBlock(t, m, n);
  return [Math.ceil(n / (t.tn * rn)), Math.ceil(m / rm), batch];
}

/** Workgroup memory bytes of `t` with an `rm`×`rn` block (the reduction's upper half). */
export const skinnyStorage = (t: SkinnyTiling, rm: number, rn: number): number => (t.tk / 2) * t.tn * rm * rn * 4;

/** WGSL of skinny variant `t` for input dtype `dt` (f32 or a 16-bit float), A and B in slots `aSlot`, `bSlot`, each invocation an `rm`×`rn` block. */
export function matmulSkinnyShader(dt: StorageCode, aSlot: number, bSlot: number, slots: number, t: SkinnyTiling, rm: number, rn: number): string {
  const { tn, tk, u } = t;
  const I = [...Array(rm).keys()], J = [...Array(rn).keys()], U = [...Array(u).keys()];
  const blk: [number, number][] = I.flatMap((i) => J.map((j): [number, number] => [i, j]));
  const half = (tk / 2) * tn;
  const lines = (xs: string[], pad: string) => xs.map((x) => pad + x).join('\n');
  // One loop round: the loads of k steps k + s·tk (s < u; the first is in range), then their FMAs.
  const step = U.map((s) => {
    const ks = s === 0 ? 'k' : `(k + ${s * tk}u)`;
    const loads = [...I.map((i) => `a${s}_${i} = ${load(`rd${aSlot}`, dt, `ar${i} + ${ks} * aCS`)};`),
      ...J.map((j) => `b${s}_${j} = ${load(`rd${bSlot}`, dt, `bc${j} + ${ks} * bRS`)};`)];
    const decl = lines([...I.map((i) => `var a${s}_${i} = 0.0;`), ...J.map((j) => `var b${s}_${j} = 0.0;`)], '    ');
    return s === 0 ? `${decl}\n${lines(loads, '    ')}` : `${decl}\n    if (${ks} < K) {\n${lines(loads, '      ')}\n    }`;
  }).join('\n');
  const fmas = U.flatMap((s) => blk.map(([i, j]) => `c${i}_${j} = fma(a${s}_${i}, b${s}_${j}, c${i}_${j});`));
  // The tree over tk: in the round of `s`, invocations tz in [s, 2s) hand their block to tz - s.
  let tree = '';
  for (let s = tk / 2; s >= 1; s /= 2) {
    tree += `  if (tz >= ${s}u && tz < ${2 * s}u) {\n${lines(blk.map(([i, j], e) => `red[${e * half}u + (tz - ${s}u) * ${tn}u + tx] = c${i}_${j};`), '    ')}\n  }
  workgroupBarrier();
  if (tz < ${s}u) {\n${lines(blk.map(([i, j], e) => `c${i}_${j} += red[${e * half}u + tz * ${tn}u + tx];`), '    ')}\n  }\n`;
    if (s > 1) tree += '  workgroupBarrier();\n';
  }
  return `${slotBindings(slots)}var<workgroup> red: array<f32, ${Math.max(1, half * rm * rn)}>;

@compute @workgroup_size(${tn}, ${tk})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = P[0]; let N = P[1]; let K = P[2];
  let aCS = P[6]; let bRS = P[9];
  let tx = lid.x; let tz = lid.y;
  let row0 = wid.y * ${rm}u; let col0 = wid.x * ${tn * rn}u + tx * ${rn}u;
  let aBase = P[3] + wid.z * P[4]; let bBase = P[7] + wid.z * P[8];
${lines(I.map((i) => `let ar${i} = aBase + min(row0 + ${i}u, M - 1u) * P[5];`), '  ')}
${lines(J.map((j) => `let bc${j} = bBase + min(col0 + ${j}u, N - 1u) * P[10];`), '  ')}
${lines(blk.map(([i, j]) => `var c${i}_${j} = 0.0;`), '  ')}
  for (var k = tz; k < K; k += ${tk * u}u) {
${step}
${lines(fmas, '    ')}
  }
${tree}  if (tz == 0u) {
    let oBase = P[11] + wid.z * M * N;
${lines(blk.map(([i, j]) => `if (row0 + ${i}u < M && col0 + ${j}u < N) { S0[oBase + (row0 + ${i}u) * N + col0 + ${j}u] = bitcast<u32>(c${i}_${j}); }`), '    ')}
  }
}
`;
}
