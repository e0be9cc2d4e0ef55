/**
 * The PyTorch names of test/habits/pytorch-names.json (the beginner tutorials, d2l, nanoGPT,
 * minGPT, torchvision's ResNet): every name in "present" resolves on the package, every name in
 * "missing" still does not (so the list moves when a name lands: the test fails until it is
 * moved), and every "notPorted" name has its reason and does not resolve (or, where webtorch
 * uses the name for something else, resolves to that). Namespaces are the file's "namespaces".
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';

type Section = Record<string, Record<string, string>>;
interface NameList {
  namespaces: Record<string, string>; sources: Record<string, string>; bySource: Record<string, string[]>;
  counts: { present: number; missing: number; notPorted: number };
  present: Section; missing: Section; notPorted: Section;
}
const list: NameList = JSON.parse(readFileSync(new URL('pytorch-names.json', import.meta.url), 'utf8'));

// The objects each namespace's names are looked up on (instances for methods and properties).
const made: torch.Tensor[] = [];
const keep = <T extends torch.Tensor>(t: T): T => (made.push(t), t);
const param = keep(torch.zeros([1]).requiresGrad_());
const optimizer = new torch.optim.SGD([param], { lr: 0.1 });
const roots: Record<string, unknown> = {
  torch, tensor: keep(torch.zeros([2, 2])), module: new torch.nn.Linear(2, 2), nn: torch.nn, F: torch.nn.functional,
  init: (torch.nn as Record<string, unknown>).init, nnUtils: (torch.nn as Record<string, unknown>).utils, nnParallel: torch.nn.parallel,
  optim: torch.optim, optimizer, lrScheduler: torch.optim.lrScheduler, scheduler: new torch.optim.lrScheduler.StepLR(optimizer, { stepSize: 1 }),
  data: torch.utils.data, autograd: torch.autograd, cuda: torch.cuda, amp: torch.amp, backends: torch.backends, distributed: torch.distributed,
  distributions: torch.distributions,
};
(roots.module as torch.nn.Module).parameters().forEach((p) => made.push(p));
afterAll(async () => {
  made.forEach((t) => t.dispose());
  await torch.shutdown();
});

/** Whether `name` (a dotted path) resolves on the namespace's object. */
function resolves(ns: string, name: string): boolean {
  let o: unknown = roots[ns];
  for (const part of name.split('.')) {
    if (o === null || o === undefined || (typeof o !== 'object' && typeof o !== 'function') || !(part in (o as object))) return false;
    o = (o as Record<string, unknown>)[part];
  }
  return o !== undefined;
}

const entries = (s: Section) => Object.entries(s).flatMap(([ns, names]) => Object.entries(names).map(([name, from]) => [`${ns}:${name}`, ns, name, from] as const));

describe('the PyTorch name list', () => {
  it('is well formed: known namespaces and sources, no name in two sections, counts as stated', () => {
    const all = [...entries(list.present), ...entries(list.missing), ...entries(list.notPorted)];
    expect(new Set(all.map(([k]) => k)).size, 'a name in two sections').toBe(all.length);
    for (const [key, ns, , from] of all) {
      expect(Object.keys(roots), key).toContain(ns);
      expect(Object.keys(list.namespaces), key).toContain(ns);
      const srcs = [...from.matchAll(/\b(pt:[\w-]+|d2l:\d+|nanogpt:\w+|mingpt|tv:resnet|issue31|parallel)\b/g)].map((m) => m[1]);
      expect(srcs.length, `${key}: names its sources`).toBeGreaterThan(0);
      for (const s of srcs) expect(Object.keys(list.sources), `${key}: source ${s}`).toContain(s);
    }
    // The sections' sources and "bySource" say the same thing.
    const fromSections = new Map(all.map(([key, , , from]) => [key, new Set(from.match(/(pt:[\w-]+|d2l:\d+|nanogpt:\w+|mingpt|tv:resnet|issue31|parallel)/g))]));
    expect(Object.keys(list.bySource).sort()).toEqual(Object.keys(list.sources).sort());
    for (const [src, keys] of Object.entries(list.bySource)) {
      for (const key of keys) expect(fromSections.get(key)?.has(src), `${key} is listed under ${src} but its section entry does not name ${src}`).toBe(true);
    }
    for (const [key, srcs] of fromSections) for (const s of srcs) expect(list.bySource[s], `${key} names ${s} but is not in bySource.${s}`).toContain(key);
    expect(list.counts).toEqual({ present: entries(list.present).length, missing: entries(list.missing).length, notPorted: entries(list.notPorted).length });
    expect(all.length, 'several hundred names').toBeGreaterThanOrEqual(300);
    console.log(`PyTorch names: ${list.counts.present} present, ${list.counts.missing} missing, ${list.counts.notPorted} not ported`);
  });

  it.each(Object.keys(list.present))('present: every %s name resolves', (ns) => {
    const absent = Object.keys(list.present[ns]).filter((n) => !resolves(ns, n));
    expect(absent, `listed as present but not on the package (move them to "missing")`).toEqual([]);
  });

  it.each(Object.keys(list.missing))('missing: no %s name resolves yet', (ns) => {
    const landed = Object.keys(list.missing[ns]).filter((n) => resolves(ns, n));
    expect(landed, 'listed as missing but now on the package (move them to "present")').toEqual([]);
  });

  it('notPorted: each has its reason, and does not resolve unless the reason says webtorch uses the name otherwise', () => {
    for (const [key, ns, name, why] of entries(list.notPorted)) {
      expect(why.length, key).toBeGreaterThan(20);
      expect(resolves(ns, name), `${key}: ${why}`).toBe(why.startsWith('same name, other meaning:'));
    }
  });
});
