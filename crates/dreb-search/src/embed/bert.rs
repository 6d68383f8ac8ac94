//! A BERT encoder's forward pass on the CPU (f32, one sequence at a time): embeddings, self-attention layers,
//! mean pooling over the tokens, L2 normalisation. Enough for sentence-transformers models such as
//! all-MiniLM-L6-v2 (the reference's model). Matrix products go through `matrixmultiply`.

use std::path::Path;

use super::ModelError;
use super::safetensors::Tensors;

#[derive(Debug, Clone, serde::Deserialize)]
pub struct BertConfig {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub vocab_size: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
    #[serde(default)]
    pub hidden_act: Option<String>,
}

fn default_type_vocab() -> usize {
    2
}

fn default_eps() -> f32 {
    1e-12
}

/// A weight matrix `[out, in]` with its bias, applied as `x · Wᵀ + b`.
struct Linear {
    w: Vec<f32>,
    b: Vec<f32>,
    out: usize,
    inp: usize,
}

impl Linear {
    fn load(t: &Tensors, name: &str, out: usize, inp: usize) -> Result<Linear, ModelError> {
        Ok(Linear {
            w: t.get(&format!("{name}.weight"), &[out, inp])?,
            b: t.get(&format!("{name}.bias"), &[out])?,
            out,
            inp,
        })
    }

    /// `x`: `[rows, inp]` → `[rows, out]`.
    fn apply(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let mut y: Vec<f32> = Vec::with_capacity(rows * self.out);
        for _ in 0..rows {
            y.extend_from_slice(&self.b);
        }
        // SAFETY: the pointers cover `rows×inp`, `inp×out` (Wᵀ through strides) and `rows×out` elements.
        unsafe {
            matrixmultiply::sgemm(
                rows,
                self.inp,
                self.out,
                1.0,
                x.as_ptr(),
                self.inp as isize,
                1,
                self.w.as_ptr(),
                1,
                self.inp as isize,
                1.0,
                y.as_mut_ptr(),
                self.out as isize,
                1,
            );
        }
        y
    }
}

struct LayerNorm {
    g: Vec<f32>,
    b: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    fn load(t: &Tensors, name: &str, n: usize, eps: f32) -> Result<LayerNorm, ModelError> {
        Ok(LayerNorm {
            g: t.get(&format!("{name}.weight"), &[n])?,
            b: t.get(&format!("{name}.bias"), &[n])?,
            eps,
        })
    }

    fn apply(&self, x: &mut [f32]) {
        let n = self.g.len();
        for row in x.chunks_exact_mut(n) {
            let mean = row.iter().sum::<f32>() / n as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
            let inv = 1.0 / (var + self.eps).sqrt();
            for (i, v) in row.iter_mut().enumerate() {
                *v = (*v - mean) * inv * self.g[i] + self.b[i];
            }
        }
    }
}

struct Layer {
    q: Linear,
    k: Linear,
    v: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    inter: Linear,
    out: Linear,
    out_norm: LayerNorm,
}

pub struct Bert {
    cfg: BertConfig,
    word: Vec<f32>,
    pos: Vec<f32>,
    token_type: Vec<f32>,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
}

/// erf, Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7).
fn erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152_1) * t) + 1.421_413_8) * t - 0.284_496_74) * t
            + 0.254_829_6)
            * t
            * (-x * x).exp();
    y.copysign(x)
}

fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

impl Bert {
    pub fn load(dir: &Path) -> Result<Bert, ModelError> {
        let cfg_path = dir.join("config.json");
        let text = std::fs::read_to_string(&cfg_path).map_err(|e| ModelError::io(&cfg_path, e))?;
        let cfg: BertConfig = serde_json::from_str(&text)
            .map_err(|e| ModelError::format(&cfg_path, e.to_string()))?;
        if let Some(act) = cfg.hidden_act.as_deref().filter(|a| *a != "gelu") {
            return Err(ModelError::format(
                &cfg_path,
                format!("unsupported activation {act}"),
            ));
        }
        if cfg.num_attention_heads == 0 || !cfg.hidden_size.is_multiple_of(cfg.num_attention_heads)
        {
            return Err(ModelError::format(
                &cfg_path,
                "hidden size not divisible by heads".into(),
            ));
        }
        let t = Tensors::open(&dir.join("model.safetensors"))?;
        let h = cfg.hidden_size;
        let eps = cfg.layer_norm_eps;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for i in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            layers.push(Layer {
                q: Linear::load(&t, &format!("{p}.attention.self.query"), h, h)?,
                k: Linear::load(&t, &format!("{p}.attention.self.key"), h, h)?,
                v: Linear::load(&t, &format!("{p}.attention.self.value"), h, h)?,
                attn_out: Linear::load(&t, &format!("{p}.attention.output.dense"), h, h)?,
                attn_norm: LayerNorm::load(&t, &format!("{p}.attention.output.LayerNorm"), h, eps)?,
                inter: Linear::load(
                    &t,
                    &format!("{p}.intermediate.dense"),
                    cfg.intermediate_size,
                    h,
                )?,
                out: Linear::load(&t, &format!("{p}.output.dense"), h, cfg.intermediate_size)?,
                out_norm: LayerNorm::load(&t, &format!("{p}.output.LayerNorm"), h, eps)?,
            });
        }
        Ok(Bert {
            word: t.get("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?,
            pos: t.get(
                "embeddings.position_embeddings.weight",
                &[cfg.max_position_embeddings, h],
            )?,
            token_type: t.get(
                "embeddings.token_type_embeddings.weight",
                &[cfg.type_vocab_size, h],
            )?,
            emb_norm: LayerNorm::load(&t, "embeddings.LayerNorm", h, eps)?,
            layers,
            cfg,
        })
    }

    pub fn max_positions(&self) -> usize {
        self.cfg.max_position_embeddings
    }

    pub fn dimension(&self) -> usize {
        self.cfg.hidden_size
    }

    /// The mean-pooled, L2-normalised embedding of `ids` (special tokens included by the caller).
    pub fn embed(&self, ids: &[u32]) -> Vec<f32> {
        self.embed_batch(&[ids])
            .pop()
            .expect("one sequence in, one vector out")
    }

    /// Several sequences at once: their tokens are stacked into one matrix for the dense layers (larger, faster
    /// matrix products; no padding), and attend only within their own sequence.
    pub fn embed_batch(&self, seqs: &[&[u32]]) -> Vec<Vec<f32>> {
        let h = self.cfg.hidden_size;
        let mut spans = Vec::with_capacity(seqs.len());
        let mut rows = 0;
        for ids in seqs {
            let n = ids.len().min(self.cfg.max_position_embeddings);
            spans.push((rows, n));
            rows += n;
        }
        let mut x = vec![0f32; rows * h];
        for (ids, &(start, n)) in seqs.iter().zip(&spans) {
            for (i, &id) in ids.iter().take(n).enumerate() {
                let id = (id as usize).min(self.cfg.vocab_size - 1);
                let row = &mut x[(start + i) * h..(start + i + 1) * h];
                for (j, v) in row.iter_mut().enumerate() {
                    *v = self.word[id * h + j] + self.pos[i * h + j] + self.token_type[j];
                }
            }
        }
        self.emb_norm.apply(&mut x);
        for layer in &self.layers {
            self.layer(layer, &mut x, rows, &spans);
        }
        spans
            .iter()
            .map(|&(start, n)| {
                let mut pooled = vec![0f32; h];
                for row in x[start * h..(start + n) * h].chunks_exact(h) {
                    for (p, v) in pooled.iter_mut().zip(row) {
                        *p += v;
                    }
                }
                let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                pooled.iter_mut().for_each(|v| *v /= norm);
                pooled
            })
            .collect()
    }

    /// One encoder layer over `n` stacked rows; `spans` are the sequences' `(first row, length)`.
    fn layer(&self, l: &Layer, x: &mut [f32], n: usize, spans: &[(usize, usize)]) {
        let h = self.cfg.hidden_size;
        let heads = self.cfg.num_attention_heads;
        let d = h / heads;
        let (q, k, v) = (l.q.apply(x, n), l.k.apply(x, n), l.v.apply(x, n));
        let scale = 1.0 / (d as f32).sqrt();
        let mut ctx = vec![0f32; n * h];
        let longest = spans.iter().map(|s| s.1).max().unwrap_or(0);
        let mut scores_buf = vec![0f32; longest];
        for &(first, len) in spans {
            let scores = &mut scores_buf[..len];
            for head in 0..heads {
                let off = head * d;
                for i in first..first + len {
                    let qi = &q[i * h + off..i * h + off + d];
                    let mut max = f32::MIN;
                    for (jj, s) in scores.iter_mut().enumerate() {
                        let j = first + jj;
                        let kj = &k[j * h + off..j * h + off + d];
                        *s = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>() * scale;
                        max = max.max(*s);
                    }
                    let mut sum = 0.0;
                    for s in scores.iter_mut() {
                        *s = (*s - max).exp();
                        sum += *s;
                    }
                    let out = &mut ctx[i * h + off..i * h + off + d];
                    for (jj, s) in scores.iter().enumerate() {
                        let j = first + jj;
                        let w = s / sum;
                        let vj = &v[j * h + off..j * h + off + d];
                        for (o, vv) in out.iter_mut().zip(vj) {
                            *o += w * vv;
                        }
                    }
                }
            }
        }
        let attn = l.attn_out.apply(&ctx, n);
        for (a, b) in x.iter_mut().zip(&attn) {
            *a += b;
        }
        l.attn_norm.apply(x);
        let mut inter = l.inter.apply(x, n);
        inter.iter_mut().for_each(|v| *v = gelu(*v));
        let out = l.out.apply(&inter, n);
        for (a, b) in x.iter_mut().zip(&out) {
            *a += b;
        }
        l.out_norm.apply(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
        ] {
            assert!((erf(x) - want).abs() < 1e-6, "erf({x})");
        }
    }
}
