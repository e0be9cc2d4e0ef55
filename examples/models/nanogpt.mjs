// nanoGPT's model.py (GPT: token and position embeddings, pre-norm blocks of causal self-attention
// and a GELU MLP, a tied-free lm_head) in webtorch, as a PyTorch user ports it; the same module
// names as nanoGPT's, so a state dict saved here loads into bench/models_torch.py's copy of it.
export function makeGpt(torch, cfg) {
  const { nn, F } = torch;
  class CausalSelfAttention extends nn.Module {
    constructor() {
      super();
      this.c_attn = new nn.Linear(cfg.nEmbd, 3 * cfg.nEmbd, { bias: cfg.bias });
      this.c_proj = new nn.Linear(cfg.nEmbd, cfg.nEmbd, { bias: cfg.bias });
      this.attn_dropout = new nn.Dropout(cfg.dropout);
      this.resid_dropout = new nn.Dropout(cfg.dropout);
    }
    forward(x) {
      const [B, T, C] = x.shape;
      const [q, k, v] = this.c_attn(x).split(cfg.nEmbd, 2).map((t) => t.view([B, T, cfg.nHead, C / cfg.nHead]).transpose(1, 2));
      const y = F.scaledDotProductAttention(q, k, v, { attnMask: null, dropoutP: this.training ? cfg.dropout : 0, isCausal: true });
      return this.resid_dropout(this.c_proj(y.transpose(1, 2).contiguous().view([B, T, C])));
    }
  }
  class MLP extends nn.Module {
    constructor() {
      super();
      this.c_fc = new nn.Linear(cfg.nEmbd, 4 * cfg.nEmbd, { bias: cfg.bias });
      this.gelu = new nn.GELU();
      this.c_proj = new nn.Linear(4 * cfg.nEmbd, cfg.nEmbd, { bias: cfg.bias });
      this.dropout = new nn.Dropout(cfg.dropout);
    }
    forward(x) {
      return this.dropout(this.c_proj(this.gelu(this.c_fc(x))));
    }
  }
  class Block extends nn.Module {
    constructor() {
      super();
      this.ln_1 = new nn.LayerNorm(cfg.nEmbd, { bias: cfg.bias });
      this.attn = new CausalSelfAttention();
      this.ln_2 = new nn.LayerNorm(cfg.nEmbd, { bias: cfg.bias });
      this.mlp = new MLP();
    }
    forward(x) {
      x = x.add(this.attn(this.ln_1(x)));
      return x.add(this.mlp(this.ln_2(x)));
    }
  }
  class GPT extends nn.Module {
    constructor() {
      super();
      this.transformer = new nn.ModuleDict({
        wte: new nn.Embedding(cfg.vocabSize, cfg.nEmbd),
        wpe: new nn.Embedding(cfg.blockSize, cfg.nEmbd),
        drop: new nn.Dropout(cfg.dropout),
        h: new nn.ModuleList(Array.from({ length: cfg.nLayer }, () => new Block())),
        ln_f: new nn.LayerNorm(cfg.nEmbd, { bias: cfg.bias }),
      });
      this.lm_head = new nn.Linear(cfg.nEmbd, cfg.vocabSize, { bias: false });
      this.apply((m) => {
        if (m instanceof nn.Linear) {
          nn.init.normal_(m.weight, { mean: 0, std: 0.02 });
          if (m.bias) nn.init.zeros_(m.bias);
        } else if (m instanceof nn.Embedding) nn.init.normal_(m.weight, { mean: 0, std: 0.02 });
      });
      for (const [pn, p] of this.namedParameters()) if (pn.endsWith('c_proj.weight')) nn.init.normal_(p, { mean: 0, std: 0.02 / Math.sqrt(2 * cfg.nLayer) });
    }
    forward(idx, targets) {
      const [, t] = idx.shape;
      const pos = torch.arange(0, t, { dtype: 'int64', device: idx.device });
      const tr = this.transformer;
      let x = tr.drop(tr.wte(idx).add(tr.wpe(pos)));
      for (const block of tr.h) x = block(x);
      const logits = this.lm_head(tr.ln_f(x));
      return F.crossEntropy(logits.view([-1, logits.shape[2]]), targets.view([-1]), { ignoreIndex: -1 });
    }
  }
  return new GPT();
}

/** nanoGPT's AdamW groups: weight decay on the 2-D parameters (matmuls, embeddings) only. */
export function gptOptimizer(torch, model, { lr, weightDecay, betas, capturable = false }) {
  const params = [...model.namedParameters()].map(([, p]) => p);
  return new torch.optim.AdamW([
    { params: params.filter((p) => p.ndim >= 2), weightDecay },
    { params: params.filter((p) => p.ndim < 2), weightDecay: 0 },
  ], { lr, betas, capturable });
}
