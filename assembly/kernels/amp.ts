// GradScaler's fused check (PyTorch's `_amp_foreach_non_finite_check_and_unscale_`) on the cpu.
//
// One call walks every gradient of the device: each element that is inf or NaN (tested on its
// bits, before unscaling, as PyTorch tests the value it read) sets the found-inf flag and is left
// as it is (inf * invScale stays inf, NaN stays NaN); every finite element is multiplied by
// invScale in f32 and stored back in its own dtype (f16 and bf16 round to nearest even).

import { BF16, F16, F32, bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from "./dtype";

/**
 * Unscales `n` gradients in place. `p` holds 3 i32 words per gradient: its byte address, its
 * dtype code (f32, f16 or bf16) and its element count. `inv` is the address of the f32
 * inverse scale; `found` the address of the f32 flag, set to 1.0 when a value was not finite
 * (never cleared). Returns 1 when it set the flag.
 */
export function ampUnscale(p: usize, n: i32, inv: usize, found: usize): i32 {
  const s = load<f32>(inv);
  let bad = 0;
  for (let g = 0; g < n; g++) {
    const base = <usize>load<i32>(p + (<usize>g * 12));
    const dt = load<i32>(p + (<usize>g * 12) + 4);
    const count = load<i32>(p + (<usize>g * 12) + 8);
    if (dt == F32) {
      // four at a time (SIMD) while all four are finite; a group holding a bad value goes one by one
      const e4 = i32x4.splat(0x7f800000), s4 = f32x4.splat(s);
      const n4 = count & ~3;
      let i = 0;
      for (; i < n4; i += 4) {
        const a = base + (<usize>i << 2);
        const v = v128.load(a);
        if (v128.any_true(i32x4.eq(v128.and(v, e4), e4))) {
          bad = 1;
          for (let k = 0; k < 4; k++) {
            const x = load<u32>(a + (<usize>k << 2));
            if ((x & 0x7f800000) != 0x7f800000) store<f32>(a + (<usize>k << 2), reinterpret<f32>(x) * s);
          }
        } else {
          v128.store(a, f32x4.mul(v, s4));
        }
      }
      for (; i < count; i++) {
        const a = base + (<usize>i << 2);
        const x = load<u32>(a);
        if ((x & 0x7f800000) == 0x7f800000) bad = 1;
        else store<f32>(a, reinterpret<f32>(x) * s);
      }
    } else if (dt == F16) {
      for (let i = 0; i < count; i++) {
        const a = base + (<usize>i << 1);
        const h = <u32>load<u16>(a);
        if ((h & 0x7c00) == 0x7c00) bad = 1;
        else store<u16>(a, <u16>f32ToF16(f16ToF32(h) * s));
      }
    } else if (dt == BF16) {
      for (let i = 0; i < count; i++) {
        const a = base + (<usize>i << 1);
        const h = <u32>load<u16>(a);
        if ((h & 0x7f80) == 0x7f80) bad = 1;
        else store<u16>(a, <u16>f32ToBf16(bf16ToF32(h) * s));
      }
    } else {
      unreachable();
    }
  }
  if (bad) store<f32>(found, 1.0);
  return bad;
}
