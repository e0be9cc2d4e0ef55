/** The `gpu` worker's entry point. */
import { serve } from './executor.js';
import { gpuBackend } from './gpu.js';

serve(gpuBackend);
