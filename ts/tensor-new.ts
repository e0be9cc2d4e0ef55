/**
 * The `new_*` methods in camelCase (`t.newOnes(3, 4)`, `t.newZeros([2])`, `t.newFull([2], 7)`,
 * `t.newEmpty(2)`, `t.newTensor([1, 2])`): a tensor of the given size with `t`'s dtype and device
 * unless `{dtype, device, requiresGrad}` say otherwise. The snake_case names are the same
 * functions; this file is the one place either is set on `Tensor`. PyTorch's signatures: `new_ones(*size, …)`, `new_zeros(*size, …)`, `new_empty(*size, …)`
 * take the size as numbers or one array; `new_full(size, fill_value, …)` takes an array.
 */
import { Tensor, type NestedArray } from './tensor.js';
import { newMethods, sizeAndOptions, type SizeArgs, type TensorOptions } from './ops/creation.js';
import { bindArgs, REQUIRED, type PyArgs } from './args.js';

type FullArgs = PyArgs<[size: number[], fillValue: number | boolean], { size?: number[]; fillValue?: number | boolean } & TensorOptions>;

declare module './tensor.js' {
  interface Tensor {
    /** `t.new_ones(*size, {dtype, device, requiresGrad})`: ones with t's dtype and device. */
    newOnes(...args: SizeArgs): Tensor;
    /** `t.new_zeros(*size, {dtype, device, requiresGrad})`: zeros with t's dtype and device. */
    newZeros(...args: SizeArgs): Tensor;
    /** `t.new_empty(*size, {dtype, device, requiresGrad})`: uninitialised, with t's dtype and device. */
    newEmpty(...args: SizeArgs): Tensor;
    /** `t.new_full(size, fillValue, {dtype, device, requiresGrad})`: `fillValue` everywhere, with t's dtype and device. */
    newFull(...args: FullArgs): Tensor;
    /** `t.new_tensor(data, {dtype, device, requiresGrad})`: a copy of `data` with t's dtype and device. */
    newTensor(data: NestedArray, options?: TensorOptions): Tensor;
    new_ones(...args: SizeArgs): Tensor;
    new_zeros(...args: SizeArgs): Tensor;
    new_empty(...args: SizeArgs): Tensor;
    new_full(...args: FullArgs): Tensor;
    new_tensor(data: NestedArray, options?: TensorOptions): Tensor;
  }
}

const sized = (op: 'new_ones' | 'new_zeros' | 'new_empty') => function (this: Tensor, ...args: SizeArgs): Tensor {
  const [shape, o] = sizeAndOptions<TensorOptions>(op, args);
  return newMethods[op].call(this, shape, o);
};

const methods = {
  newOnes: sized('new_ones'),
  newZeros: sized('new_zeros'),
  newEmpty: sized('new_empty'),
  newFull(this: Tensor, ...args: FullArgs): Tensor {
    const { size, fillValue, ...o } = bindArgs('new_full', ['size', 'fillValue', 'dtype', 'device', 'requiresGrad'], args,
      { size: REQUIRED as number[], fillValue: REQUIRED as number | boolean } as { size: number[]; fillValue: number | boolean } & TensorOptions, 0, 2);
    if (!Array.isArray(size)) throw new TypeError(`new_full(): argument 'size' must be a sequence of ints, not ${typeof size}`);
    return newMethods.new_full.call(this, size, fillValue, o);
  },
  newTensor(this: Tensor, data: NestedArray, options?: TensorOptions): Tensor {
    return newMethods.new_tensor.call(this, data, options);
  },
};

Object.assign(Tensor.prototype, methods, {
  new_ones: methods.newOnes, new_zeros: methods.newZeros, new_empty: methods.newEmpty, new_full: methods.newFull, new_tensor: methods.newTensor,
});
