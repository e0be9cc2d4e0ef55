#!/bin/bash
# A/B of the round trip (one add + read, bench/probe-roundtrip.mjs) between base/ (an earlier
# build, unpacked next to dist/) and this build, in interleaved processes, on cpu and gpu:0; and
# this build's GPU worker with the cpu device's polls turned on (WEBTORCH_POLL_MS: the worker's
# poll after an answer; WEBTORCH_GPU_SPIN_MS: the caller's poll of the reply slot).
# Run from the project root: ROUNDS=3 bash bench/ab-roundtrip.sh
set -u
for r in $(seq 1 "${ROUNDS:-3}"); do
  echo "== round $r"
  for dev in cpu gpu:0; do
    echo -n "base   "; node base/bench/probe-roundtrip.mjs $dev
    echo -n "new    "; node bench/probe-roundtrip.mjs $dev
  done
  echo -n "new, gpu polls 0.3 ms   "; WEBTORCH_POLL_MS=0.3 WEBTORCH_GPU_SPIN_MS=0.3 node bench/probe-roundtrip.mjs gpu:0
  echo -n "new, cpu without polls  "; WEBTORCH_POLL_MS=0 node bench/probe-roundtrip.mjs cpu
done
