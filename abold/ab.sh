# A/B: the session's start (abold/, 779c349) against the working tree's build, interleaved.
set +e
for i in 1 2; do
  for side in abold .; do
    echo "=== $side run $i"
    WEBTORCH_BENCH_PYTHON=off node $side/bench/run.mjs --device gpu --cases matmul,mlp_train,launch,roundtrip --quick 2>&1 | grep -E "^matmul|^MLP|^launch|^round" 
    timeout 100 node $side/bench/amp.mjs --devices gpu:0 --iters 20 --sizes 2048 2>&1 | grep -E "^\| (MLP|matmul)"
  done
done
