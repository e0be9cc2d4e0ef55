// webtorch's WebAssembly kernels: the entry module re-exports every kernel.
//
// Memory contract: the kernels never allocate. The host owns `memory`, keeps
// [0, heapBase()) for statics and the scratch area, and passes byte pointers;
// descriptors are i32 words the host writes at scratch().

export { copy, copyChecked, copyStrided } from "./kernels/copy";
export { unary, unaryPart } from "./kernels/unary";
export { binary, binaryPart, where } from "./kernels/binary";
// Each pool thread picks its slice of the iterator's static memory.
export { setThread } from "./kernels/iter";
export { reduce } from "./kernels/reduce";
export { matmul, matmulPart, matmulWorkspaceBytes } from "./kernels/matmul";
export { fill, arange } from "./kernels/fill";

// Row normalisations (softmax, log-softmax, layer norm) and their gradients, one row at a time.
export { rowNorm, rowNormPart } from "./kernels/rownorm";

// Sliding windows (im2col) with the padding inside, for conv and pooling.
export { foldWindows, foldWindowsPart, windows, windowsPart } from "./kernels/window";

// 2-D convolution and its gradients an image at a time, the windows in the workspace.
export { conv, convGrad, convGradPart, convGradSum, convPart, convWorkspaceBytes } from "./kernels/conv";

// Max and average pooling and their gradients, a plane at a time.
export { avgPool, avgPoolPart, maxPool, maxPoolGrad, maxPoolGradPart, maxPoolPart } from "./kernels/pool";

// Philox4x32-10 random numbers (ts/random.ts is the reference).
export { random, randomPart } from "./kernels/random";

// The index family (gather, scatter, cumulative, sort, one_hot).
export { gather, scatter, cumulative, sortIndices, sortWorkspaceBytes, oneHot, badIndex } from "./kernels/index";

// The fused negative log likelihood (nll_loss, cross_entropy's NLL) and its gradient.
export { nll, nllGrad } from "./kernels/loss";

// GradScaler's fused inf check and unscale.
export { ampUnscale } from "./kernels/amp";

// The optimizers' fused step (Adam, AdamW, SGD).
export { optimStep } from "./kernels/optim";

// clipGradNorm_'s multi-tensor norm and scale (_foreach_norm, _foreach_mul_).
export { foreachNorm, foreachMul, foreachClamp } from "./kernels/foreach";

// Fused scaled dot product attention and its gradient (online softmax; no L×S matrix).
export { attentionPart } from "./kernels/attention";

const SCRATCH = memory.data(16384, 16);

/** First byte the host may use for tensor storage: __heap_base rounded to 64 B, plus 64 KiB. */
export function heapBase(): usize {
  return ((__heap_base + 63) & ~<usize>63) + 65536;
}

/** Address of the static 16 KiB, 16-byte-aligned descriptor area. */
export function scratch(): usize {
  return SCRATCH;
}
