//! The chat template and special tokens of a GGUF model file, read from its metadata header
//! without loading the model (the tensors after the header are never touched).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// What inference needs from a model file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelTemplate {
    /// `tokenizer.chat_template`.
    pub source: String,
    pub bos_token: String,
    pub eos_token: String,
}

struct Reader<R> {
    inner: R,
}

impl<R: Read> Reader<R> {
    fn bytes<const N: usize>(&mut self) -> std::io::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.inner.read_exact(&mut b)?;
        Ok(b)
    }
    fn u32(&mut self) -> std::io::Result<u32> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }
    fn u64(&mut self) -> std::io::Result<u64> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }
    fn string(&mut self) -> std::io::Result<String> {
        let n = self.u64()?;
        if n > 64 << 20 {
            return Err(invalid(format!("a {n}-byte string in the header")));
        }
        let mut b = vec![0u8; n as usize];
        self.inner.read_exact(&mut b)?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }
    fn skip(&mut self, n: u64) -> std::io::Result<()> {
        std::io::copy(&mut (&mut self.inner).take(n), &mut std::io::sink())?;
        Ok(())
    }
}

fn invalid(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg)
}

/// A metadata value: the ones this reader keeps, else skipped.
enum Meta {
    Str(String),
    Int(u64),
    Strings(Vec<String>),
    Other,
}

/// Byte size of a fixed-size GGUF value type.
fn fixed_size(ty: u32) -> Option<u64> {
    match ty {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

fn value<R: Read>(r: &mut Reader<R>, ty: u32, keep_strings: bool) -> std::io::Result<Meta> {
    match ty {
        8 => Ok(Meta::Str(r.string()?)),
        4 | 5 => Ok(Meta::Int(u64::from(r.u32()?))),
        10 | 11 => Ok(Meta::Int(r.u64()?)),
        9 => {
            let item = r.u32()?;
            let n = r.u64()?;
            if let Some(size) = fixed_size(item) {
                r.skip(n * size)?;
                return Ok(Meta::Other);
            }
            let mut out = Vec::new();
            for _ in 0..n {
                match value(r, item, keep_strings)? {
                    Meta::Str(s) if keep_strings => out.push(s),
                    _ => {}
                }
            }
            Ok(if keep_strings {
                Meta::Strings(out)
            } else {
                Meta::Other
            })
        }
        t => match fixed_size(t) {
            Some(size) => {
                r.skip(size)?;
                Ok(Meta::Other)
            }
            None => Err(invalid(format!("unknown metadata value type {t}"))),
        },
    }
}

/// Reads the chat template and the BOS/EOS token texts of the GGUF file at `path`.
pub fn model_template(path: &Path) -> Result<ModelTemplate, String> {
    let at = |e: std::io::Error| format!("reading the GGUF header of {}: {e}", path.display());
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut r = Reader {
        inner: BufReader::new(file),
    };
    if &r.bytes::<4>().map_err(at)? != b"GGUF" {
        return Err(format!("{} is not a GGUF model file", path.display()));
    }
    let _version = r.u32().map_err(at)?;
    let _tensors = r.u64().map_err(at)?;
    let kvs = r.u64().map_err(at)?;
    let (mut source, mut tokens, mut bos, mut eos) = (None, Vec::new(), None, None);
    for _ in 0..kvs {
        let key = r.string().map_err(at)?;
        let ty = r.u32().map_err(at)?;
        let keep = key == "tokenizer.ggml.tokens";
        match (key.as_str(), value(&mut r, ty, keep).map_err(at)?) {
            ("tokenizer.chat_template", Meta::Str(s)) => source = Some(s),
            ("tokenizer.ggml.tokens", Meta::Strings(t)) => tokens = t,
            ("tokenizer.ggml.bos_token_id", Meta::Int(i)) => bos = Some(i as usize),
            ("tokenizer.ggml.eos_token_id", Meta::Int(i)) => eos = Some(i as usize),
            _ => {}
        }
    }
    let source =
        source.ok_or_else(|| format!("{} has no chat template in its metadata", path.display()))?;
    let token = |id: Option<usize>| id.and_then(|i| tokens.get(i).cloned()).unwrap_or_default();
    Ok(ModelTemplate {
        source,
        bos_token: token(bos),
        eos_token: token(eos),
    })
}
