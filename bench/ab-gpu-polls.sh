#!/bin/bash
# A/B of the GPU worker's and caller's polls (WEBTORCH_POLL_MS, WEBTORCH_GPU_SPIN_MS) in the
# suite's round-trip and step rows, alternating settings in separate processes:
# ROUNDS=3 bash bench/ab-gpu-polls.sh
set -u
for r in $(seq 1 "${ROUNDS:-3}"); do
  for polls in off on; do
    if [ $polls = on ]; then export WEBTORCH_POLL_MS=0.3 WEBTORCH_GPU_SPIN_MS=0.3; else unset WEBTORCH_POLL_MS WEBTORCH_GPU_SPIN_MS; fi
    echo "== round $r, gpu polls $polls"
    node bench/run.mjs --device gpu --cases roundtrip,mlp_train,cnn_train 2>&1 | grep "^\[gpu\]"
  done
done
