//! Kernel names for GPU addresses, from the code objects' own ELF symbol
//! tables (file:// URIs are read once and cached), read with the `object`
//! crate.

use std::collections::HashMap;

use gpu_target::model::CodeObject;
use object::Object as _;
use object::ObjectSymbol as _;

/// Cache of parsed code-object symbol tables, keyed by URI.
#[derive(Default)]
pub struct Symbolizer {
    cache: HashMap<String, Vec<(u64, u64, String)>>,
}

/// `file:///path#offset=N&size=M` → (path, offset, size).
fn parse_file_uri(uri: &str) -> Option<(String, u64, Option<u64>)> {
    let rest = uri.strip_prefix("file://")?;
    let (path, frag) = rest.split_once('#').unwrap_or((rest, ""));
    let mut offset = 0;
    let mut size = None;
    for kv in frag.split('&') {
        match kv.split_once('=') {
            Some(("offset", v)) => offset = v.parse().ok()?,
            Some(("size", v)) => size = v.parse().ok(),
            _ => {}
        }
    }
    Some((path.to_string(), offset, size))
}

/// `(value, size, name)` of every sized function symbol (`STT_FUNC`) of an
/// ELF image; nothing for an image that does not parse.
fn function_symbols(image: &[u8]) -> Vec<(u64, u64, String)> {
    let Ok(file) = object::File::parse(image) else {
        return Vec::new();
    };
    file.symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .collect()
}

impl Symbolizer {
    fn symbols(&mut self, uri: &str) -> &[(u64, u64, String)] {
        self.cache
            .entry(uri.to_string())
            .or_insert_with(|| {
                let Some((path, offset, size)) = parse_file_uri(uri) else {
                    return Vec::new();
                };
                let Ok(bytes) = std::fs::read(&path) else {
                    return Vec::new();
                };
                let start = offset as usize;
                let end = size
                    .map(|s| start + s as usize)
                    .unwrap_or(bytes.len())
                    .min(bytes.len());
                let Some(image) = bytes.get(start..end) else {
                    return Vec::new();
                };
                function_symbols(image)
            })
            .as_slice()
    }

    /// Address of a kernel (function symbol) by name, in any loaded code
    /// object.
    pub fn lookup(&mut self, code_objects: &[CodeObject], name: &str) -> Option<u64> {
        for co in code_objects {
            let base = co.load_address as u64;
            if let Some((value, _, _)) = self.symbols(&co.uri).iter().find(|(_, _, n)| n == name) {
                return Some(base.wrapping_add(*value));
            }
        }
        None
    }

    /// Every function symbol with its address, for listings.
    pub fn all(&mut self, code_objects: &[CodeObject]) -> Vec<(String, u64)> {
        let mut v = Vec::new();
        for co in code_objects {
            let base = co.load_address as u64;
            for (value, _, name) in self.symbols(&co.uri).to_vec() {
                v.push((name, base.wrapping_add(value)));
            }
        }
        v
    }

    /// `kernel+offset` for a GPU address, if a loaded code object has it.
    pub fn describe(&mut self, code_objects: &[CodeObject], pc: u64) -> Option<String> {
        for co in code_objects {
            let base = co.load_address as u64;
            let syms = self.symbols(&co.uri).to_vec();
            for (value, size, name) in syms {
                let start = base.wrapping_add(value);
                if pc >= start && pc < start + size {
                    return Some(if pc == start {
                        name
                    } else {
                        format!("{name}+{:#x}", pc - start)
                    });
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri() {
        assert_eq!(
            parse_file_uri("file:///a/b.hsaco#offset=0&size=6488"),
            Some(("/a/b.hsaco".to_string(), 0, Some(6488)))
        );
        assert_eq!(parse_file_uri("memory://1#offset=2"), None);
    }
}
