/** `torch.gpu.nvtx` (PyTorch's `torch.cuda.nvtx`): ranges that show in the profiler's table and trace. */
export { rangePush, rangePop, range, mark } from './ranges.js';
