// The cases the browser column runs: every case of the suite but the multi-GPU ones (they need
// several logical devices and set that up through the environment, which a page has not).
import alloc from '../cases/alloc.mjs';
import cnn from '../cases/cnn.mjs';
import elementwise from '../cases/elementwise.mjs';
import launch from '../cases/launch.mjs';
import matmul from '../cases/matmul.mjs';
import nn from '../cases/nn.mjs';
import random from '../cases/random.mjs';
import reduce from '../cases/reduce.mjs';
import streams from '../cases/streams.mjs';
import train from '../cases/train.mjs';
import transfer from '../cases/transfer.mjs';

/** In table order (bench/cases/index.mjs's, without `parallel`). */
export const BROWSER_CASES = [...matmul, ...elementwise, ...random, ...reduce, ...nn, ...train, ...cnn, ...launch, ...transfer, ...streams, ...alloc];
