/**
 * The WGSL the float16 paths generate (wgsl/half.ts) and the worker's choice of path
 * (ts/worker/half.ts), without a device: with `shader-f16` a float16-only binding is `vec4<f16>`
 * under `enable f16;`, a binding shared with a 32-bit dtype stays words; without it every 16-bit
 * binding is words, unpacked with `unpack2x16float` and stored through `f16_round`. The kernels
 * themselves run on lavapipe in test/backend/f16-paths.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { StorageCode } from '../../ts/dtype.js';
import { chooseF16Path, half } from '../../ts/worker/half.js';
import { mapVec4Shader, type MapKernel } from '../../wgsl/elementwise.js';
import { matmulVariantShader } from '../../wgsl/matmul.js';

const map = (outDt: StorageCode, inputs: { dt: StorageCode; slot: number }[], slots: number, nativeF16: boolean): string =>
  mapVec4Shader({ rank: 1, slots, outDt, expr: 'x0', exprType: 'f32', nativeF16, inputs: inputs.map((i) => ({ ...i, contiguous: true })) } as MapKernel);

describe('float16 WGSL', () => {
  it('binds float16-only storages as vec4<f16> under enable f16 with shader-f16, as words without', () => {
    const native = map(StorageCode.F16, [{ dt: StorageCode.F16, slot: 1 }], 2, true);
    expect(native.startsWith('enable f16;')).toBe(true);
    expect(native).toContain('S0: array<vec4<f16>>');
    expect(native).toContain('S1: array<vec4<f16>>');
    const storage = map(StorageCode.F16, [{ dt: StorageCode.F16, slot: 1 }], 2, false);
    expect(storage).not.toContain('enable f16');
    expect(storage).toContain('S0: array<vec2<u32>>');
    expect(storage).toContain('unpack4xf16(S1[');
    expect(storage).toContain('S0[P[9] / 4u + w] = pack4xf16(o);');
  });

  it('keeps a binding shared by float32 and float16 as words, and bfloat16 always as words', () => {
    const cast = map(StorageCode.F16, [{ dt: StorageCode.F32, slot: 0 }], 1, true);
    expect(cast).not.toContain('enable f16');
    expect(cast).toContain('S0: array<vec2<u32>>');
    const bf = map(StorageCode.BF16, [{ dt: StorageCode.BF16, slot: 1 }], 2, true);
    expect(bf).not.toContain('f16>');
    expect(bf).toContain('pack4xbf16(o)');
    const f32 = map(StorageCode.F32, [{ dt: StorageCode.F32, slot: 1 }], 2, true);
    expect(f32).toContain('S1: array<vec4<u32>>');
  });

  it('gives 16-bit products the tiled kernels, unpacking at the tile load', () => {
    const native = matmulVariantShader(6, StorageCode.F16, 1, 2, 3, true);
    expect(native.startsWith('enable f16;')).toBe(true);
    expect(native).toContain('vec4<f32>(S1[i])');
    const storage = matmulVariantShader(6, StorageCode.F16, 1, 2, 3, false);
    expect(storage).toContain('unpack4xf16(S1[i])');
    expect(storage).toContain('pack4xf16(');
    expect(matmulVariantShader(10, StorageCode.BF16, 1, 2, 3, true)).toContain('unpack4xbf16(S2[i])');
    // the plain tiles and the direct kernel write 16-bit pairs when asked
    expect(matmulVariantShader(1, StorageCode.F16, 1, 2, 3, false, true)).toContain('f16_round(acc[i][j]) | (f16_round(acc[i][j + 1u]) << 16u)');
    expect(matmulVariantShader(26, StorageCode.BF16, 1, 2, 3, false, true)).toContain('bf16_round(acc0) | (bf16_round(acc1) << 16u)');
  });
});

describe('the float16 path (WEBTORCH_F16)', () => {
  it('uses shader-f16 where the adapter has it unless set to storage, and refuses other values', () => {
    expect(chooseF16Path(true, undefined)).toBe(true);
    expect(half.native).toBe(true);
    expect(chooseF16Path(true, 'native')).toBe(true);
    expect(chooseF16Path(true, 'storage')).toBe(false);
    expect(half.native).toBe(false);
    expect(chooseF16Path(false, 'native')).toBe(false);
    expect(chooseF16Path(false, undefined)).toBe(false);
    expect(() => chooseF16Path(true, 'f16')).toThrow("WEBTORCH_F16 must be 'storage' or 'native' (or unset), got 'f16'");
  });
});
