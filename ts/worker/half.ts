/**
 * Which path float16 kernels take on this worker's GPU (wgsl/half.ts), chosen once when the
 * device starts: `shader-f16` (f16 loads and stores, `enable f16;`) where the adapter has the
 * feature, else 16-bit words unpacked to f32. `WEBTORCH_F16=storage` turns `shader-f16` off (to
 * compare the two, or to check the storage path on an adapter that has the feature);
 * `WEBTORCH_F16=native` (or unset) uses it where the adapter has it. bfloat16 always takes the
 * storage path: WGSL has no bfloat16 type. Arithmetic is float32 on both paths.
 */

/** The float16 path of this worker (set by `chooseF16Path` at init). */
export const half = { native: false };

/** Sets and returns whether float16 kernels use `shader-f16`; an unknown `WEBTORCH_F16` raises. */
export function chooseF16Path(hasFeature: boolean, setting: string | undefined): boolean {
  const s = (setting ?? '').trim().toLowerCase();
  if (s !== '' && s !== 'storage' && s !== 'native') throw new Error(`WEBTORCH_F16 must be 'storage' or 'native' (or unset), got '${setting}'`);
  half.native = hasFeature && s !== 'storage';
  return half.native;
}
