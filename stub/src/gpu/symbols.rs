//! Kernel names and source lines for GPU addresses, from the code objects'
//! own ELF symbol tables and DWARF line tables (file:// URIs are read once
//! and cached), read with the `object` and `gimli` crates.

use std::collections::HashMap;

use gpu_target::model::CodeObject;
use object::Object as _;
use object::ObjectSymbol as _;

/// Cache of parsed code-object symbol tables, keyed by URI.
#[derive(Default)]
pub struct Symbolizer {
    cache: HashMap<String, Vec<(u64, u64, String)>>,
    lines: HashMap<String, Vec<LineRow>>,
}

/// One row of a DWARF line table: the code at `address` (relative to the
/// code object) comes from `file:line`; `end` rows close a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRow {
    /// Address in the code object.
    pub address: u64,
    /// Source file path as the line table names it.
    pub file: String,
    /// Source line (0: no line).
    pub line: u64,
    /// A recommended breakpoint location (`is_stmt`).
    pub is_stmt: bool,
    /// The end of a sequence (no code from here on).
    pub end: bool,
}

/// The image a `file://` URI names (path, offset, size).
fn read_image(uri: &str) -> Option<Vec<u8>> {
    let (path, offset, size) = parse_file_uri(uri)?;
    let bytes = std::fs::read(&path).ok()?;
    let start = offset as usize;
    let end = size
        .map(|s| start + s as usize)
        .unwrap_or(bytes.len())
        .min(bytes.len());
    bytes.get(start..end).map(<[u8]>::to_vec)
}

/// Every row of every line program of an ELF image's DWARF, sorted by
/// address; nothing when it has no (readable) line table.
fn line_rows(image: &[u8]) -> Vec<LineRow> {
    use object::ObjectSection as _;
    let Ok(file) = object::File::parse(image) else {
        return Vec::new();
    };
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<std::borrow::Cow<'_, [u8]>, gimli::Error> {
        Ok(file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or(std::borrow::Cow::Borrowed(&[])))
    };
    let Ok(sections) = gimli::DwarfSections::load(load) else {
        return Vec::new();
    };
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let mut rows = Vec::new();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let Some(program) = unit.line_program.clone() else {
            continue;
        };
        let mut r = program.rows();
        while let Ok(Some((header, row))) = r.next_row() {
            let file = row
                .file(header)
                .and_then(|f| {
                    let name = dwarf.attr_string(&unit, f.path_name()).ok()?;
                    let name = name.to_string_lossy().into_owned();
                    if name.starts_with('/') {
                        return Some(name);
                    }
                    let dir = f
                        .directory(header)
                        .and_then(|d| dwarf.attr_string(&unit, d).ok())
                        .map(|d| d.to_string_lossy().into_owned());
                    Some(match dir {
                        Some(d) if !d.is_empty() => format!("{d}/{name}"),
                        _ => name,
                    })
                })
                .unwrap_or_default();
            rows.push(LineRow {
                address: row.address(),
                file,
                line: row.line().map(|l| l.get()).unwrap_or(0),
                is_stmt: row.is_stmt(),
                end: row.end_sequence(),
            });
        }
    }
    rows.sort_by_key(|r| (r.address, !r.end));
    rows
}

/// Whether `file` (a line-table path) is what the user typed: the same
/// path, or the same trailing path components.
fn same_file(file: &str, typed: &str) -> bool {
    file == typed || file.ends_with(&format!("/{typed}"))
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

    fn lines(&mut self, uri: &str) -> &[LineRow] {
        self.lines
            .entry(uri.to_string())
            .or_insert_with(|| read_image(uri).map(|i| line_rows(&i)).unwrap_or_default())
            .as_slice()
    }

    /// `file:line` of a GPU address, from the DWARF line table of the code
    /// object that holds it.
    pub fn source_line(&mut self, code_objects: &[CodeObject], pc: u64) -> Option<(String, u64)> {
        for co in code_objects {
            let base = co.load_address as u64;
            let Some(off) = pc.checked_sub(base) else {
                continue;
            };
            let rows = self.lines(&co.uri);
            let i = rows.partition_point(|r| r.address <= off);
            if i == 0 {
                continue;
            }
            let r = &rows[i - 1];
            if !r.end && r.line != 0 {
                return Some((r.file.clone(), r.line));
            }
        }
        None
    }

    /// Address of the first statement of `file:line` (the lowest `is_stmt`
    /// address of that line) in any loaded code object.
    pub fn line_address(
        &mut self,
        code_objects: &[CodeObject],
        file: &str,
        line: u64,
    ) -> Option<u64> {
        for co in code_objects {
            let base = co.load_address as u64;
            let found = self
                .lines(&co.uri)
                .iter()
                .filter(|r| !r.end && r.is_stmt && r.line == line && same_file(&r.file, file))
                .map(|r| r.address)
                .min();
            if let Some(a) = found {
                return Some(base.wrapping_add(a));
            }
        }
        None
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
    fn vector_add_lines() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let image = std::fs::read(root.join("samples/kernels/vector_add.hsaco")).unwrap();
        let rows = line_rows(&image);
        assert!(rows
            .iter()
            .any(|r| r.file.ends_with("vector_add.cl") && r.line > 0));
        assert!(same_file(
            "/a/samples/kernels/vector_add.cl",
            "vector_add.cl"
        ));
        assert!(!same_file("/a/xvector_add.cl", "vector_add.cl"));
    }

    #[test]
    fn uri() {
        assert_eq!(
            parse_file_uri("file:///a/b.hsaco#offset=0&size=6488"),
            Some(("/a/b.hsaco".to_string(), 0, Some(6488)))
        );
        assert_eq!(parse_file_uri("memory://1#offset=2"), None);
    }
}
