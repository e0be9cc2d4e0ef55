// Runs bench/torch_peer.py (PyTorch, CUDA or CPU) as a child process with the jobs of this run,
// after the JavaScript cases, so that it never competes with them for the cores.
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../torch_peer.py', import.meta.url));

/**
 * Whether this PyTorch sees CUDA (then its figures sit in the gpu rows, else in the cpu rows).
 * @param {string} python
 * @returns {boolean}
 */
export function torchHasCuda(python) {
  if (process.env.WEBTORCH_BENCH_TORCH_DEVICE === 'cpu') return false;
  const r = spawnSync(python, ['-c', 'import torch; print(torch.cuda.is_available())'], { encoding: 'utf8', timeout: 120_000 });
  return r.status === 0 && r.stdout.trim() === 'True';
}

/**
 * Runs the jobs; resolves with the helper's JSON (`{torch, device, deviceName, threads, results}`).
 * @param {string} python
 * @param {{key: string, op: string}[]} jobs
 * @param {import('./harness.mjs').Budget} budget
 * @returns {Promise<any>}
 */
export function runTorchPeer(python, jobs, budget) {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [SCRIPT], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve(JSON.parse(out));
      } catch {
        reject(new Error(`torch_peer.py exited with ${code}${out ? `: ${out.slice(0, 200)}` : ''}`));
      }
    });
    child.stdin.end(JSON.stringify({ budget, jobs }));
  });
}
