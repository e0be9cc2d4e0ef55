// The sync point of TensorFlow.js, shared by the Node run (bench/lib/peers.mjs) and the browser
// page (bench/browser/page.mjs): no Node imports here.

/**
 * The sync point of TensorFlow.js on WebGPU without a readback: submit what it has batched, then
 * wait for the queue. (`await t.data()` would add a copy to the host.) On WASM, ops are synchronous.
 * @param {any} tf
 * @returns {Promise<void>}
 */
export async function tfSync(tf) {
  const b = tf.backend();
  if (b.device?.queue) {
    b.ensureCommandEncoderReady();
    b.endComputePassEncoder();
    b.submitQueue();
    await b.device.queue.onSubmittedWorkDone();
  }
}
