/**
 * Batched matmul: out[b] = A[b] · B[b], with A and B as (batch, row, col)-strided views, so
 * transposed operands and broadcast batches need no copy.
 *
 * A workgroup of 16×16 invocations computes a 64×64 tile of the output, each invocation a 4×4
 * block held in registers. A and B tiles of depth 16 are staged through workgroup memory. The
 * output is contiguous f32; 16-bit outputs are cast afterwards by the worker.
 * Params: [M, N, K, aOff, aBS, aRS, aCS, bOff, bBS, bRS, bCS, outOff].
 */
import type { StorageCode } from '../ts/dtype.js';
import { load, slotBindings } from './dtype.js';

/** Output tile edge. */
export const TILE = 64;

/** WGSL of the tiled matmul for input dtype `dt` (a float storage code), A and B in slots `aSlot`, `bSlot`. */
export function matmulShader(dt: StorageCode, aSlot: number, bSlot: number, slots: number): string {
  return `${slotBindings(slots)}const BK = 16u;
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
    for (var j = 0u; j < 4u; j++) {
      let c = col0 + lid.x * 4u + j;
      if (c < N) { S0[oBase + r * N + c] = bitcast<u32>(acc[i][j]); }
    }
  }
}
`;
}
