#!/bin/bash
# A/B of the round trip (one add + read) between base/ (an earlier build) and this build, in
# interleaved processes: cpu and gpu:0, with the worker's linger and the caller's poll per setting.
# Run from the project root of a devkit tree (base/ next to dist/).
set -u
R=${ROUNDS:-3}
for r in $(seq 1 $R); do
  echo "== round $r"
  for dev in cpu gpu:0; do
    echo -n "base      "; node base/bench/probe-roundtrip.mjs $dev
    echo -n "new       "; node bench/probe-roundtrip.mjs $dev
  done
  echo -n "new gpu linger .3       "; WEBTORCH_LINGER_MS=0.3 node bench/probe-roundtrip.mjs gpu:0
  echo -n "new gpu spin .3         "; WEBTORCH_GPU_SPIN_MS=0.3 node bench/probe-roundtrip.mjs gpu:0
  echo -n "new gpu linger+spin .3  "; WEBTORCH_LINGER_MS=0.3 WEBTORCH_GPU_SPIN_MS=0.3 node bench/probe-roundtrip.mjs gpu:0
  echo -n "new cpu no linger       "; WEBTORCH_LINGER_MS=0 node bench/probe-roundtrip.mjs cpu
done
