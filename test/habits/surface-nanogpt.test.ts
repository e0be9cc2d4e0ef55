/**
 * nanoGPT's model and training step, line by line in webtorch (issue 31 names it as what the
 * attention surface is for): `F.scaledDotProductAttention(q, k, v, {dropoutP, isCausal: true})`,
 * `nn.init.normal_`/`zeros_` in `_initWeights`, AdamW with decay and no-decay groups,
 * `clipGradNorm_`, and a `LambdaLR` warmup; a few steps on one repeated batch must bring the loss
 * well down, on cpu and gpu:0.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { nn, F } = torch;
logicalGpuSuite(1, 'surface-nanogpt');

const cfg = { blockSize: 8, vocabSize: 11, nLayer: 2, nHead: 2, nEmbd: 16, dropout: 0.0, bias: true };

class CausalSelfAttention extends nn.Module {
  c_attn = new nn.Linear(cfg.nEmbd, 3 * cfg.nEmbd, { bias: cfg.bias });
  c_proj = new nn.Linear(cfg.nEmbd, cfg.nEmbd, { bias: cfg.bias });
  resid_dropout = new nn.Dropout(cfg.dropout);

  forward(x: torch.Tensor): torch.Tensor {
    return torch.tidy(() => {
      const [B, T, C] = x.shape;
      const [q, k, v] = this.c_attn(x).split(cfg.nEmbd, 2).map((t: torch.Tensor) => t.view([B, T, cfg.nHead, C / cfg.nHead]).transpose(1, 2));
      const y = F.scaledDotProductAttention(q, k, v, { attnMask: null, dropoutP: this.training ? cfg.dropout : 0, isCausal: true });
      return this.resid_dropout(this.c_proj(y.transpose(1, 2).contiguous().view([B, T, C])));
    });
  }
}

class MLP extends nn.Module {
  c_fc = new nn.Linear(cfg.nEmbd, 4 * cfg.nEmbd, { bias: cfg.bias });
  gelu = new nn.GELU();
  c_proj = new nn.Linear(4 * cfg.nEmbd, cfg.nEmbd, { bias: cfg.bias });

  forward(x: torch.Tensor): torch.Tensor {
    return torch.tidy(() => this.c_proj(this.gelu(this.c_fc(x))));
  }
}

class Block extends nn.Module {
  ln_1 = new nn.LayerNorm(cfg.nEmbd);
  attn = new CausalSelfAttention();
  ln_2 = new nn.LayerNorm(cfg.nEmbd);
  mlp = new MLP();

  forward(x: torch.Tensor): torch.Tensor {
    return torch.tidy(() => {
      const h = x.add(this.attn(this.ln_1(x)));
      return h.add(this.mlp(this.ln_2(h)));
    });
  }
}

class GPT extends nn.Module {
  wte = new nn.Embedding(cfg.vocabSize, cfg.nEmbd);
  wpe = new nn.Embedding(cfg.blockSize, cfg.nEmbd);
  h = new nn.ModuleList(Array.from({ length: cfg.nLayer }, () => new Block()));
  ln_f = new nn.LayerNorm(cfg.nEmbd);
  lm_head = new nn.Linear(cfg.nEmbd, cfg.vocabSize, { bias: false });

  constructor() {
    super();
    this.apply((m) => this.initWeights(m));
    for (const [pn, p] of this.namedParameters()) if (pn.endsWith('c_proj.weight')) nn.init.normal_(p, { mean: 0, std: 0.02 / Math.sqrt(2 * cfg.nLayer) });
  }

  initWeights(module: torch.nn.Module): void {
    if (module instanceof nn.Linear) {
      nn.init.normal_(module.weight, { mean: 0, std: 0.02 });
      if (module.bias) nn.init.zeros_(module.bias);
    } else if (module instanceof nn.Embedding) nn.init.normal_(module.weight, { mean: 0, std: 0.02 });
  }

  forward(idx: torch.Tensor, targets: torch.Tensor): torch.Tensor {
    return torch.tidy(() => {
      const [, t] = idx.shape;
      const pos = torch.arange(0, t, { dtype: 'int64', device: idx.device });
      let x = this.wte(idx).add(this.wpe(pos));
      for (const block of this.h) x = block(x);
      const logits = this.lm_head(this.ln_f(x));
      return F.crossEntropy(logits.view([-1, logits.shape[2]]), targets.view([-1]), { ignoreIndex: -1 });
    });
  }
}

describe.each(['cpu', 'gpu:0'])('nanoGPT on %s', (device) => {
  it('trains: the loss on one batch falls', async () => {
    torch.manualSeed(1337);
    const model = new GPT().to(device);
    const params = [...model.namedParameters()];
    const decay = params.filter(([, p]) => p.ndim >= 2).map(([, p]) => p), noDecay = params.filter(([, p]) => p.ndim < 2).map(([, p]) => p);
    const opt = new torch.optim.AdamW([{ params: decay, weightDecay: 0.1 }, { params: noDecay, weightDecay: 0 }], { lr: 3e-2, betas: [0.9, 0.95] });
    const sched = new torch.optim.lrScheduler.LambdaLR(opt, (it: number) => Math.min(1, (it + 1) / 5));
    const data = Array.from({ length: 2 * 9 }, (_, i) => (i * 7) % cfg.vocabSize);
    const X = torch.tensor([data.slice(0, 8), data.slice(9, 17)], { dtype: 'int64', device });
    const Y = torch.tensor([data.slice(1, 9), data.slice(10, 18)], { dtype: 'int64', device });
    const losses: number[] = [];
    const norms: number[] = [];
    for (let step = 0; step < 25; step++) {
      const loss = model(X, Y);
      loss.backward();
      const norm = nn.utils.clipGradNorm_(model.parameters(), 1.0) as torch.Tensor;
      opt.step();
      sched.step();
      opt.zeroGrad();
      losses.push((await loss.item()) as number);
      norms.push((await norm.item()) as number);
      [loss, norm].forEach((t) => t.dispose());
    }
    expect(losses[0]).toBeCloseTo(Math.log(cfg.vocabSize), 0);
    expect(losses[24]).toBeLessThan(0.5 * losses[0]);
    expect(norms.every((n) => Number.isFinite(n) && n > 0)).toBe(true);
    expect(opt.paramGroups[0].lr).toBeCloseTo(3e-2, 12);
    for (const s of opt.state.values()) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
    [X, Y, ...model.parameters()].forEach((t) => t.dispose());
  });
});
