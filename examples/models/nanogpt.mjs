// nanoGPT's model.py (GPT: token and position embeddings, pre-norm blocks of causal self-attention
// and a GELU MLP, an lm_head not tied to the token embedding, `generate`) in webtorch, as a PyTorch user ports it; the same module
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
    /** `[logits, loss]` as nanoGPT's: with targets every position's logits and the loss, without them the last position's and null. */
    forward(idx, targets = null) {
      const [, t] = idx.shape;
      if (t > cfg.blockSize) throw new RangeError(`Cannot forward sequence of length ${t}, block size is only ${cfg.blockSize}`);
      const pos = torch.arange(0, t, { dtype: 'int64', device: idx.device });
      const tr = this.transformer;
      let x = tr.drop(tr.wte(idx).add(tr.wpe(pos)));
      for (const block of tr.h) x = block(x);
      x = tr.ln_f(x);
      if (targets !== null) {
        const logits = this.lm_head(x);
        return [logits, F.crossEntropy(logits.view([-1, logits.shape[2]]), targets.view([-1]), { ignoreIndex: -1 })];
      }
      // inference: the lm_head on the last position only (x[:, [-1], :])
      return [this.lm_head(x.narrow(1, t - 1, 1)), null];
    }

    /** nanoGPT's `generate`: `maxNewTokens` samples, each from the softmax of the last logits / temperature, optionally among the top k. */
    generate(idx, maxNewTokens, temperature = 1.0, topK = null) {
      return torch.noGrad(() => {
        for (let i = 0; i < maxNewTokens; i++) {
          const next = torch.tidy(() => {
            const t = idx.shape[1];
            const idxCond = t <= cfg.blockSize ? idx : idx.narrow(1, t - cfg.blockSize, cfg.blockSize);
            const [out] = this.forward(idxCond);
            let logits = out.select(1, 0).div(temperature);
            if (topK !== null) {
              const v = torch.topk(logits, Math.min(topK, logits.shape[1])).values;
              logits = logits.maskedFill(logits.lt(v.narrow(1, v.shape[1] - 1, 1)), -Infinity);
            }
            const probs = F.softmax(logits, { dim: -1 });
            return torch.cat([idx, torch.multinomial(probs, 1)], 1);
          });
          if (i > 0) idx.dispose();
          idx = next;
        }
        return idx;
      });
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
