#!/bin/bash
# A/B of the cpu device's training steps and round trip on two pinned cores (taskset), between
# base/ (an earlier build, unpacked next to dist/) and this build under environment variants, in
# interleaved processes, PyTorch CPU in each run. Run from the project root:
#   CORES=2,3 ROUNDS=3 CASES=cnn_train,roundtrip bash bench/ab-cpu-step.sh "" "VAR=1" ...
# Each argument is one variant of this build ("" = as built); base runs once per round first.
set -u
cores=${CORES:-0,1}
for r in $(seq 1 "${ROUNDS:-3}"); do
  echo "== round $r (cores $cores)"
  for v in base "$@"; do
    if [ "$v" = base ]; then dir=base; envs=(A=1); else dir=.; read -r -a envs <<< "A=1 $v"; fi
    echo "-- ${dir} ${v}"
    env "${envs[@]}" taskset -c "$cores" node "$dir/bench/run.mjs" --quick --device cpu --cases "${CASES:-cnn_train,roundtrip}" 2>&1 \
      | grep -E '^(small CNN|MLP train|round trip|conv2d|softmax)' | sed -E 's/ {2,}/  /g'
  done
done
