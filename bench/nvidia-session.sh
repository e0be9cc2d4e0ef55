#!/usr/bin/env bash
# One device call's worth of NVIDIA figures, for a machine of one or two GPUs, run from the devkit:
#   source .devkit/prelude.sh && bash bench/nvidia-session.sh     (results under $OUT)
# Device time is scarce, so every step has a time limit of its own and writes as it goes: a step
# that runs long loses its own figures, not the others'. The order is what the open issues need
# most: graphs and the training steps, the parallel rows, AMP, then random/transfer/overlap rows,
# then the 16-bit and AMP test files on this adapter (which has no shader-f16).
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
log=$out/session.log
step() { local t=$1; shift; echo "== $(date -u +%T) [$t s] $*" | tee -a "$log"; timeout "$t" "$@" >>"$log" 2>&1; echo "== rc=$?" | tee -a "$log"; }
nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total --format=csv >>"$log" 2>&1
step 150 node bench/run.mjs --device gpu --cases mlp_train,cnn_train,launch,roundtrip,graphs --json "$out/graphs.json"
step 100 node bench/run.mjs --device gpu --cases parallel --json "$out/parallel.json"
step 40 node bench/probe-physical.mjs
step 75 node bench/amp.mjs --devices gpu:0 --torch python3
step 80 node bench/run.mjs --device gpu --cases random,transfer,overlap --json "$out/rest.json"
step 75 node node_modules/vitest/vitest.mjs run test/backend/f16-paths.test.ts test/device/amp.test.ts test/device/amp-unscale.test.ts test/device/amp-f16-storage.test.ts test/habits/amp.test.ts test/device/rng.test.ts
grep -v '^Warning: maxDynamic' "$log" > "$log.tmp" && mv "$log.tmp" "$log"
