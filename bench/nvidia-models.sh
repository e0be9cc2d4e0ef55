#!/usr/bin/env bash
# One device call of real-model figures (issues 29 and 30), run from the devkit:
#   source .devkit/prelude.sh && bash bench/nvidia-models.sh [STEPS...]   (results under $OUT)
# STEPS (default: all) picks among: eager graph amp attention resnet ddp suite (run in this order). Builds named in
# BUILDS (default "new", the kit's dist/; "old" is old/, another build packed beside it) alternate in
# separate processes for each webtorch row, with PyTorch on the same weights after them (TORCH=0
# leaves PyTorch's rows out). Every row is one JSON line in models.jsonl, preceded by a
# {"build", "row"} line; the log has the stderr.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
log=$out/models.log; res=$out/models.jsonl
export WEBTORCH_GPU_MEMORY=${WEBTORCH_GPU_MEMORY:-64GiB} PYTHONUNBUFFERED=1
builds=${BUILDS:-new}
steps=${*:-eager graph amp attention resnet ddp suite}
has() { [[ " $steps " == *" $1 "* ]]; }
row() { # row SECONDS BUILD NAME CMD...: one row, its JSON line into models.jsonl
  local t=$1 b=$2 name=$3; shift 3
  echo "== $(date -u +%T) [$t s] $b $name: $*" >>"$log"
  echo "{\"build\":\"$b\",\"row\":\"$name\"}" >>"$res"
  local dir=.; [ "$b" = new ] || [ "$b" = torch ] || dir=$b
  (cd "$dir" && timeout "$t" "$@" 2>>"$log" | grep '^{' >>"$res"); echo "== rc=${PIPESTATUS[0]}" >>"$log"
}
wt() { local t=$1 name=$2; shift 2; for b in $builds; do row "$t" "$b" "$name" node bench/models.mjs "$@"; done; }
pt() { [ "${TORCH:-1}" = 0 ] && return; local t=$1 name=$2; shift 2; row "$t" torch "$name" python3 bench/models_torch.py "$@"; }
gpus=$(nvidia-smi -L | wc -l)
watch() { nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader -lms 500 >"$out/smi-$1.csv" 2>&1 & echo $!; }
date -u >>"$log"; nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv >>"$log"
G='--model gpt --steps 20 --warmup 5'
if has eager; then for r in 1 2; do wt 90 gpt-eager $G; done; pt 90 gpt-eager $G; row 90 new gpt-eager-profile node bench/models.mjs $G --profile; fi
if has graph; then builds=new wt 90 gpt-graph $G --graph; pt 90 gpt-graph $G --graph; fi
if has amp; then wt 90 gpt-amp $G --amp; pt 90 gpt-amp $G --amp; row 90 new gpt-amp-profile node bench/models.mjs $G --amp --profile; fi
if has attention; then row 90 new attention node bench/attention.mjs --torch python3; fi
R='--model resnet18 --steps 15 --warmup 3'
if has resnet; then wt 90 resnet-eager $R; pt 90 resnet-eager $R; fi
if has ddp && [ "$gpus" -ge 2 ]; then
  for m in gpt resnet18; do
    [ $m = gpt ] && A="$G" || A="$R"
    for b in $builds; do p=$(watch "$m-procs-$b"); row 150 $b "$m-ddp2-procs" node bin/webtorch-run.mjs --nproc 2 bench/models.mjs $A; kill $p; done
    for b in $builds; do p=$(watch "$m-threads-$b"); row 150 $b "$m-ddp2-threads" node bin/webtorch-run.mjs --nproc 2 --threads bench/models.mjs $A; kill $p; done
    [ "${TORCH:-1}" = 0 ] || { p=$(watch "$m-torch"); row 120 torch "$m-ddp2" python3 -m torch.distributed.run --standalone --nproc_per_node 2 bench/models_torch.py $A; kill $p; }
  done
fi
if has suite; then row 200 new suite node bench/run.mjs --device gpu --cases matmul,layer_norm,softmax,launch --json "$out/suite.json"; fi
grep -v '^Warning: maxDynamic' "$log" >"$log.tmp" && mv "$log.tmp" "$log"
