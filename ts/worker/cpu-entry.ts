/** The `cpu` worker's entry point. */
import { serve } from './executor.js';
import { cpuBackend } from './cpu.js';

serve(cpuBackend);
