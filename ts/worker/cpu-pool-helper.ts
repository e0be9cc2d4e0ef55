/**
 * A helper thread of the `cpu` device (see `cpu-pool.ts`): instantiates the kernels on the
 * worker's shared memory, says it is ready, then runs its part of each job until told to quit.
 */
import { helperInit } from '../platform.js';
import { helperLoop, type HelperInit } from './cpu-pool-loop.js';

const { data, reply } = await helperInit();
const { module, memory, control, part } = data as HelperInit;
try {
  const instance = await WebAssembly.instantiate(module, {
    env: {
      memory,
      abort: (_msg: number, _file: number, line: number, col: number) => {
        throw new Error(`wasm kernel aborted at ${line}:${col}`);
      },
    },
  });
  // The iterator's static memory has a slice per thread (assembly/kernels/iter.ts).
  (instance.exports.setThread as ((part: number) => void) | undefined)?.(part);
  reply('ready');
  helperLoop(instance.exports, control, part);
} catch (e) {
  reply(e instanceof Error ? e.message : String(e));
}
