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
export default [];
