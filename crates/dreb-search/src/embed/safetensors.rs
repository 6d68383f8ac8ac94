//! Reading `model.safetensors`: an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
//! shape and byte range, then the raw data. Only F32 tensors are read.

use std::collections::HashMap;
use std::path::Path;

use super::ModelError;

pub struct Tensors {
    path: std::path::PathBuf,
    data: Vec<u8>,
    /// name → (shape, byte range in `data` after the header)
    index: HashMap<String, (Vec<usize>, usize, usize)>,
    base: usize,
}

impl Tensors {
    pub fn open(path: &Path) -> Result<Tensors, ModelError> {
        let data = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
        let bad = |m: &str| ModelError::format(path, m.to_string());
        if data.len() < 8 {
            return Err(bad("truncated header"));
        }
        let n = u64::from_le_bytes(data[..8].try_into().unwrap()) as usize;
        let header = data.get(8..8 + n).ok_or_else(|| bad("truncated header"))?;
        let header: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(header).map_err(|e| bad(&e.to_string()))?;
        let mut index = HashMap::new();
        for (name, t) in header {
            if name == "__metadata__" || t["dtype"] != "F32" {
                continue;
            }
            let shape: Vec<usize> = t["shape"]
                .as_array()
                .ok_or_else(|| bad("tensor without shape"))?
                .iter()
                .filter_map(|d| d.as_u64().map(|d| d as usize))
                .collect();
            let offsets = t["data_offsets"]
                .as_array()
                .ok_or_else(|| bad("tensor without offsets"))?;
            let (a, b) = (
                offsets.first().and_then(|v| v.as_u64()).unwrap_or(0) as usize,
                offsets.get(1).and_then(|v| v.as_u64()).unwrap_or(0) as usize,
            );
            index.insert(name, (shape, a, b));
        }
        Ok(Tensors {
            path: path.to_path_buf(),
            data,
            index,
            base: 8 + n,
        })
    }

    /// The tensor called `name` (or `bert.<name>`), checked against `shape`.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let (found, (got_shape, a, b)) = [name.to_string(), format!("bert.{name}")]
            .into_iter()
            .find_map(|n| self.index.get(&n).map(|t| (n, t)))
            .ok_or_else(|| ModelError::format(&self.path, format!("missing tensor {name}")))?;
        if got_shape != shape {
            return Err(ModelError::format(
                &self.path,
                format!("tensor {found} has shape {got_shape:?}, expected {shape:?}"),
            ));
        }
        let bytes = self
            .data
            .get(self.base + a..self.base + b)
            .filter(|s| s.len() == shape.iter().product::<usize>() * 4)
            .ok_or_else(|| {
                ModelError::format(&self.path, format!("tensor {found} out of range"))
            })?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}
