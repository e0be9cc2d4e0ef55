#!/usr/bin/env bash
# One device call of DDP figures on a 2-GPU machine (issue 30), run from the devkit:
#   source .devkit/prelude.sh && bash bench/nvidia-ddp.sh      (results under $OUT)
# The host-side all-reduce alone (bench/probe-host-allreduce.mjs), the GPT on one GPU, and the GPT
# and ResNet-18 as DDP over 2 processes and 2 threads, builds named in BUILDS alternating ("new":
# this tree; another name: the build packed in the directory of that name, with its build/js for
# the probe), PyTorch DDP beside (TORCH=0 leaves it out). One DDP row of each model runs with
# WEBTORCH_TRACE_COLLECTIVES=1 (trace-*.jsonl). Every row's JSON line goes into ddp.jsonl.
# (The new build's probe also runs with WEBTORCH_SHM=0, sockets only, over threads, and as the
# two-rank swap, `--op swap`.)
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
log=$out/ddp.log; res=$out/ddp.jsonl
export WEBTORCH_GPU_MEMORY=${WEBTORCH_GPU_MEMORY:-64GiB} PYTHONUNBUFFERED=1
builds=${BUILDS:-new}
row() { # row SECONDS BUILD NAME CMD...
  local t=$1 b=$2 name=$3; shift 3
  echo "== $(date -u +%T) [$t s] $b $name: $*" >>"$log"
  echo "{\"build\":\"$b\",\"row\":\"$name\"}" >>"$res"
  local dir=.; [ "$b" = new ] || [ "$b" = torch ] || dir=$b
  (cd "$dir" && timeout "$t" "$@" 2>>"$log" | grep '^{' >>"$res"); echo "== rc=${PIPESTATUS[0]}" >>"$log"
}
watch() { nvidia-smi --query-gpu=timestamp,index,utilization.gpu --format=csv,noheader -lms 500 >"$out/smi-$1.csv" 2>&1 & echo $!; }
date -u >>"$log"; nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv >>"$log"
for r in 1 2; do
  for b in $builds; do row 40 $b host-allreduce-24MiB node bin/webtorch-run.mjs --nproc 2 bench/probe-host-allreduce.mjs --mib 24; done
  WEBTORCH_SHM=0 row 40 new host-allreduce-24MiB-sockets node bin/webtorch-run.mjs --nproc 2 bench/probe-host-allreduce.mjs --mib 24
  row 40 new host-allreduce-24MiB-threads node bin/webtorch-run.mjs --nproc 2 --threads bench/probe-host-allreduce.mjs --mib 24
  row 40 new host-swap-24MiB node bin/webtorch-run.mjs --nproc 2 bench/probe-host-allreduce.mjs --mib 24 --op swap
  WEBTORCH_SHM=0 row 40 new host-swap-24MiB-sockets node bin/webtorch-run.mjs --nproc 2 bench/probe-host-allreduce.mjs --mib 24 --op swap
  row 40 new host-swap-24MiB-threads node bin/webtorch-run.mjs --nproc 2 --threads bench/probe-host-allreduce.mjs --mib 24 --op swap
done
G='--model gpt --steps 20 --warmup 5'; R='--model resnet18 --steps 15 --warmup 3'
row 60 new gpt-1gpu node bench/models.mjs $G
WEBTORCH_TRACE_COLLECTIVES=1 row 90 new gpt-ddp2-procs-traced bash -c "node bin/webtorch-run.mjs --nproc 2 bench/models.mjs $G 2>$out/trace-gpt-procs.jsonl"
WEBTORCH_TRACE_COLLECTIVES=1 row 90 new gpt-ddp2-threads-traced bash -c "node bin/webtorch-run.mjs --nproc 2 --threads bench/models.mjs $G 2>$out/trace-gpt-threads.jsonl"
for b in $builds; do p=$(watch "gpt-procs-$b"); row 90 $b gpt-ddp2-procs node bin/webtorch-run.mjs --nproc 2 bench/models.mjs $G; kill $p; done
for b in $builds; do row 90 $b gpt-ddp2-threads node bin/webtorch-run.mjs --nproc 2 --threads bench/models.mjs $G; done
[ "${TORCH:-1}" = 0 ] || row 90 torch gpt-ddp2 python3 -m torch.distributed.run --standalone --nproc_per_node 2 bench/models_torch.py $G
row 60 new resnet-1gpu node bench/models.mjs $R
for b in $builds; do row 100 $b resnet-ddp2-procs node bin/webtorch-run.mjs --nproc 2 bench/models.mjs $R; done
for b in $builds; do row 100 $b resnet-ddp2-threads node bin/webtorch-run.mjs --nproc 2 --threads bench/models.mjs $R; done
[ "${TORCH:-1}" = 0 ] || row 90 torch resnet-ddp2 python3 -m torch.distributed.run --standalone --nproc_per_node 2 bench/models_torch.py $R
grep -v '^Warning: maxDynamic' "$log" >"$log.tmp" && mv "$log.tmp" "$log"
