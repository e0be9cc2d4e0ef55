// The case list, in table order. `--cases` selects by a case's name or group.
import alloc from './alloc.mjs';
import cnn from './cnn.mjs';
import elementwise from './elementwise.mjs';
import graphs from './graphs.mjs';
import launch from './launch.mjs';
import matmul from './matmul.mjs';
import nn from './nn.mjs';
import parallel from './parallel.mjs';
import random from './random.mjs';
import reduce from './reduce.mjs';
import streams from './streams.mjs';
import train from './train.mjs';
import transfer from './transfer.mjs';

/** Cases listed as pending (no code yet). */
export { default as PENDING } from './pending.mjs';

/** Every case, in table order. @type {import('./common.mjs').Case[]} */
export const CASES = [...matmul, ...elementwise, ...random, ...reduce, ...nn, ...train, ...cnn, ...launch, ...graphs, ...transfer, ...streams, ...alloc, ...parallel];
