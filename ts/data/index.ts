/** `torch.utils.data`: datasets and the loader. */
export { Dataset, TensorDataset } from './dataset.js';
export { DataLoader } from './loader.js';
export type { DataLoaderOptions } from './loader.js';
