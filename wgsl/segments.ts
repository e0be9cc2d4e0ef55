/**
 * What the multi-tensor kernels share (wgsl/amp.ts, wgsl/optim.ts, wgsl/foreach.ts): each
 * segment that holds one of their tensors is bound once (S0..S{k-1}, after the params at binding
 * 0), `ld`/`st` reach a tensor's element by its slot, and an invocation finds its entry in the
 * params' table by binary search over the entries' first work units.
 */

/** The bindings S0..S{slots-1} (read_write arrays of `type`) and the `ld(slot, i)` / `st(slot, i, v)` functions over them. */
export function segmentAccess(slots: number, type: 'f32' | 'u32'): string {
  let decl = '', ld = '', st = '';
  for (let k = 0; k < slots; k++) {
    decl += `@group(0) @binding(${k + 1}) var<storage, read_write> S${k}: array<${type}>;\n`;
    ld += `    case ${k}u: { return S${k}[i]; }\n`;
    st += `    case ${k}u: { S${k}[i] = v; }\n`;
  }
  return `${decl}
fn ld(s: u32, i: u32) -> ${type} {
  switch s {
${ld}    default: { return ${type === 'f32' ? '0.0' : '0u'}; }
  }
}
fn st(s: u32, i: u32, v: ${type}) {
  switch s {
${st}    default: {}
  }
}`;
}

/**
 * WGSL statements that leave in `lo` the index of the entry holding work unit `unit`: the table
 * starts at params word `header`, an entry is `words` long and its first unit is its word
 * `first`; `count` is the WGSL expression of the entry count.
 */
export function findEntry(unit: string, count: string, header: number, words: number, first = 0): string {
  return `var lo = 0u;
  var hi = ${count} - 1u;
  while (lo < hi) {
    let mid = (lo + hi + 1u) / 2u;
    if (P[${header}u + mid * ${words}u${first ? ` + ${first}u` : ''}] <= ${unit}) { lo = mid; } else { hi = mid - 1u; }
  }`;
}
