// Cases of issue 6 that have no code yet. They are listed, never timed. (Cases that have code but
// need an op a build of webtorch lacks declare `requires` and are listed the same way.)

/**
 * A case waiting for code or ops.
 * @typedef {object} Pending
 * @property {string} label
 * @property {string} size
 * @property {string} needs  what is missing
 * @property {(torch: any) => boolean} present  whether this build has the ops it needs
 */

/** @type {Pending[]} */
export default [{
  label: 'small CNN train step',
  size: 'conv-pool-conv-pool-linear, b64',
  needs: 'autograd + conv2d + max_pool2d',
  present: (t) => typeof t.Tensor?.prototype?.backward === 'function' && typeof (t.F ?? t.nn?.functional)?.conv2d === 'function',
}];
