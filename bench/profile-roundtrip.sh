#!/bin/bash
# CPU profiles (node --cpu-prof) of the caller and the device worker during bench/probe-roundtrip.mjs
# on one device, summarized by self time per function: bash bench/profile-roundtrip.sh gpu:0 [outdir]
set -eu
dev=${1:-gpu:0}; out=${2:-/tmp/rt-prof}
rm -rf "$out" && mkdir -p "$out"
(cd "$out" && node --cpu-prof --cpu-prof-interval=25 "$OLDPWD/bench/probe-roundtrip.mjs" "$dev")
node -e '
const fs = require("fs"), dir = process.argv[1];
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))) {
  const p = JSON.parse(fs.readFileSync(`${dir}/${f}`)), byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map();
  for (const s of p.samples) {
    const c = byId.get(s).callFrame, k = `${c.functionName || "(anonymous)"} ${c.url.split("/").pop()}:${c.lineNumber}`;
    self.set(k, (self.get(k) ?? 0) + 1);
  }
  if (p.samples.length < 1000) continue;
  console.log(`${f}: ${p.samples.length} samples`);
  for (const [k, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 28)) console.log(`  ${(100 * n / p.samples.length).toFixed(1).padStart(5)}%  ${k}`);
}' "$out"
