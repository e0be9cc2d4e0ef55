# bf16/f16 special-value sweeps on the NVIDIA adapter: the session's start (abold) against this tree.
(cd abold && timeout 200 node ../node_modules/vitest/vitest.mjs run test/backend/ops.test.ts -t "sweep-bfloat16|sweep-float16" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "Test Files|Tests |× " | head -12)
echo "=== new"
timeout 200 node node_modules/vitest/vitest.mjs run test/backend/ops.test.ts -t "sweep-bfloat16|sweep-float16" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "Test Files|Tests |× " | head -12
WEBTORCH_F16=storage timeout 100 node node_modules/vitest/vitest.mjs run test/device/streams.test.ts 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "Test Files|Tests |× " | head -12
