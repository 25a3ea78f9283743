//! `qXfer:*:read` objects. Documents are generated once (at offset 0) and
//! cached until the next resume, so a windowed read (gdb asks 0x1000 bytes
//! at a time) always sees one consistent document.

use std::fmt::Write as _;

use crate::packet::reply;
use crate::packet::XferRead;
use crate::session::Session;
use crate::session::SessionRole;
use crate::target::ArchInfo;
use crate::target::RegisterInfo;
use crate::target::TargetError;

/// Escape text for an XML attribute.
pub fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// target.xml generated from a register table. Features appear in table
/// order; gdb requires `i386:x86-64` (not lldb-server's `x86_64`, which gdb
/// rejects: research/client-traces.md §9).
pub fn target_xml(arch: &ArchInfo, regs: &[RegisterInfo]) -> String {
    let mut x = String::with_capacity(16 * 1024);
    x.push_str("<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n<target version=\"1.0\">\n");
    let _ = writeln!(
        x,
        "<architecture>{}</architecture>",
        xml_escape(&arch.gdb_arch)
    );
    if let Some(os) = &arch.osabi {
        let _ = writeln!(x, "<osabi>{}</osabi>", xml_escape(os));
    }
    // One block per feature, in order of first appearance (a feature may
    // not be split in two blocks).
    let mut features: Vec<&str> = Vec::new();
    for r in regs {
        if r.feature.starts_with("gdbmux.") {
            continue;
        }
        if !features.contains(&r.feature.as_str()) {
            features.push(r.feature.as_str());
        }
    }
    let defs = type_defs(&arch.xml_types);
    for f in features {
        let _ = writeln!(x, "<feature name=\"{}\">", xml_escape(f));
        // gdb looks a register's type up in its own feature (then the
        // predefined types), so each feature carries the shared types its
        // registers use, with the types those are built of (gdbserver's
        // features do the same). Every type in every feature would double
        // gdb's target.xml on x86-64 (34 KB against gdbserver's 14 KB with
        // AVX-512: nine 4 KiB reads instead of four, and more to parse).
        match &defs {
            Some(defs) => {
                let used = regs
                    .iter()
                    .filter(|r| r.feature == f)
                    .map(|r| r.reg_type.as_str());
                for d in types_needed(defs, used) {
                    x.push_str(d);
                    x.push('\n');
                }
            }
            None => x.push_str(&arch.xml_types),
        }
        for r in regs.iter().filter(|r| r.feature == f) {
            let _ = write!(
                x,
                "<reg name=\"{}\" bitsize=\"{}\" regnum=\"{}\" type=\"{}\"",
                xml_escape(&r.name),
                r.bitsize,
                r.regnum,
                xml_escape(&r.reg_type)
            );
            if let Some(g) = r.group {
                let _ = write!(x, " group=\"{g}\"");
            }
            // lldb-only attributes; gdb ignores unknown attributes.
            if let Some(d) = r.dwarf {
                let _ = write!(x, " dwarf_regnum=\"{d}\" ehframe_regnum=\"{d}\"");
            }
            if let Some(g) = r.generic {
                let _ = write!(x, " generic=\"{g}\"");
            }
            // lldb reads a `<vector>` type as raw bytes; its own attributes
            // make a 64-lane register show as 64 lanes (ProcessGDBRemote's
            // target.xml parser honours `encoding`/`format`).
            if r.encoding == "vector" {
                let _ = write!(x, " encoding=\"vector\" format=\"{}\"", r.format);
            }
            x.push_str("/>\n");
        }
        x.push_str("</feature>\n");
    }
    x.push_str("</target>\n");
    x
}

/// One type definition of an architecture's shared XML types: its `id`
/// and its whole element.
struct TypeDef<'a> {
    id: &'a str,
    xml: &'a str,
}

/// The top-level elements of `types` (`<vector id=…/>`, `<union id=…>…
/// </union>`, `<flags …>`, `<struct …>`, `<enum …>`), in order; `None` if
/// the text is not a plain sequence of such elements (then every feature
/// gets all of it).
fn type_defs(types: &str) -> Option<Vec<TypeDef<'_>>> {
    let mut out = Vec::new();
    let mut rest = types;
    loop {
        let start = rest.len() - rest.trim_start().len();
        rest = &rest[start..];
        if rest.is_empty() {
            return Some(out);
        }
        let tag_end = rest.find(|c: char| c.is_whitespace() || c == '>' || c == '/')?;
        let tag = rest.get(1..tag_end).filter(|_| rest.starts_with('<'))?;
        let open_end = rest.find('>')? + 1;
        let len = if rest[..open_end].ends_with("/>") {
            open_end
        } else {
            let close = format!("</{tag}>");
            rest.find(&close)? + close.len()
        };
        let xml = &rest[..len];
        let id_at = xml[..open_end].find(" id=\"")? + 5;
        let id_len = xml[id_at..].find('"')?;
        out.push(TypeDef {
            id: &xml[id_at..id_at + id_len],
            xml,
        });
        rest = &rest[len..];
    }
}

/// The definitions `used` type names need, with the types they are built
/// of (`type="…"` inside them), in definition order (a type's parts are
/// defined before it).
fn types_needed<'a, 'b>(defs: &[TypeDef<'a>], used: impl Iterator<Item = &'b str>) -> Vec<&'a str> {
    let mut want = vec![false; defs.len()];
    let mut todo: Vec<String> = used.map(str::to_string).collect();
    while let Some(name) = todo.pop() {
        let Some(i) = defs.iter().position(|d| d.id == name) else {
            continue;
        };
        if want[i] {
            continue;
        }
        want[i] = true;
        let mut parts = defs[i].xml;
        while let Some(at) = parts.find(" type=\"") {
            parts = &parts[at + 7..];
            if let Some(end) = parts.find('"') {
                todo.push(parts[..end].to_string());
            }
        }
    }
    defs.iter()
        .zip(want)
        .filter(|(_, w)| *w)
        .map(|(d, _)| d.xml)
        .collect()
}

/// lldb 23.1 takes `main-lm` for the rendezvous address when
/// `qShlibInfoAddr` is not answered (ProcessGDBRemote::GetImageInfoAddress)
/// and then never sees the link map change. lldb-server sends no `main-lm`
/// and answers an error before the dynamic loader has set up `r_debug`;
/// lldb then finds `r_debug` through DT_DEBUG itself. Do the same.
fn lldb_svr4(doc: &str) -> Result<String, TargetError> {
    if !doc.contains("<library ") {
        return Err(TargetError::Invalid(
            "invalid r_debug address (the dynamic loader has not run yet)".into(),
        ));
    }
    let Some(start) = doc.find(" main-lm=\"") else {
        return Ok(doc.to_string());
    };
    let rest = &doc[start + " main-lm=\"".len()..];
    let end = rest
        .find('"')
        .map(|e| start + " main-lm=\"".len() + e + 1)
        .unwrap_or(start);
    Ok(format!("{}{}", &doc[..start], &doc[end..]))
}

impl<R: SessionRole> Session<R> {
    pub(super) fn handle_xfer(&mut self, x: &XferRead) {
        let key = format!("{}:{}", x.object, x.annex);
        if x.offset == 0 || self.xfer_cache.get(&key).is_none() {
            match self.xfer_document(x) {
                Ok(Some(doc)) => {
                    self.xfer_cache.insert(key.clone(), doc);
                }
                Ok(None) => {
                    self.send(&reply::empty());
                    return;
                }
                Err(e) => {
                    self.send_target_error(&e);
                    return;
                }
            }
        }
        let chunk = self
            .xfer_cache
            .get(&key)
            .map(|doc| {
                reply::xfer_chunk(
                    doc,
                    x.offset,
                    x.length.min(crate::session::MAX_PACKET as u64 - 16),
                )
            })
            .unwrap_or_default();
        self.send(&chunk);
    }

    fn xfer_document(&mut self, x: &XferRead) -> Result<Option<Vec<u8>>, TargetError> {
        Ok(Some(match (x.object.as_str(), x.annex.as_str()) {
            ("features", "target.xml") => {
                if let Some(v) = self.current.and_then(|pid| self.lldb_view(pid)) {
                    return Ok(Some(v.target_xml().into_bytes()));
                }
                let t = self.current_target()?;
                target_xml(t.arch(), t.registers()).into_bytes()
            }
            ("features", _) => return Err(TargetError::Invalid(format!("no annex {}", x.annex))),
            ("auxv", _) => self
                .current_target()?
                .support_auxv()
                .ok_or(TargetError::Unsupported("auxv"))?
                .auxv()?,
            ("libraries-svr4", _) => {
                let doc = self
                    .current_target()?
                    .support_libraries_svr4()
                    .ok_or(TargetError::Unsupported("libraries-svr4"))?
                    .libraries_svr4_xml()?;
                if self.features.dialect == crate::session::Dialect::Lldb {
                    lldb_svr4(&doc)?.into_bytes()
                } else {
                    doc.into_bytes()
                }
            }
            ("exec-file", annex) => {
                let pid = if annex.is_empty() {
                    self.current
                        .ok_or(TargetError::Invalid("no process".into()))?
                } else {
                    crate::wire::hex::parse_u64(annex.as_bytes())
                        .and_then(|p| u32::try_from(p).ok())
                        .ok_or(TargetError::Invalid("bad pid".into()))?
                };
                self.target_mut(pid)?
                    .exec_file()
                    .ok_or(TargetError::Unsupported("exec-file"))?
                    .into_bytes()
            }
            ("threads", _) => self.threads_xml().into_bytes(),
            ("osdata", annex) => match crate::native::osdata::document(annex) {
                Some(doc) => doc.into_bytes(),
                None => return Err(TargetError::Invalid(format!("no osdata table {annex}"))),
            },
            ("siginfo", _) => {
                let (pid, tid) = self
                    .g_thread
                    .or_else(|| {
                        self.resolve_thread(Some(crate::packet::ThreadId {
                            pid: None,
                            tid: crate::packet::IdSel::Any,
                        }))
                    })
                    .ok_or(TargetError::Invalid("no thread".into()))?;
                self.target_mut(pid)?
                    .support_siginfo()
                    .ok_or(TargetError::Unsupported("siginfo"))?
                    .siginfo(tid)?
            }
            _ => return Ok(None),
        }))
    }

    fn threads_xml(&self) -> String {
        let mut x = String::from("<?xml version=\"1.0\"?>\n<threads>\n");
        for (pid, t) in &self.procs {
            for tid in t.threads() {
                let mut id = Vec::new();
                crate::packet::stop_reply::thread_id(
                    &mut id,
                    *pid,
                    tid,
                    self.features.multiprocess,
                );
                let _ = write!(x, "<thread id=\"{}\"", String::from_utf8_lossy(&id));
                if let Some(c) = t.thread_core(tid) {
                    let _ = write!(x, " core=\"{c}\"");
                }
                if let Some(n) = t.thread_name(tid) {
                    let _ = write!(x, " name=\"{}\"", xml_escape(&n));
                }
                x.push_str("/>\n");
            }
        }
        x.push_str("</threads>\n");
        x
    }
}

/// `qXfer:*:write`.
impl<R: SessionRole> Session<R> {
    /// Only `siginfo` is writable; other objects answer empty (gdbserver).
    pub(in crate::session) fn handle_xfer_write(&mut self, object: &str, offset: u64, data: &[u8]) {
        if object == "siginfo" {
            self.handle_siginfo_write(offset, data);
        } else {
            self.send(&reply::empty());
        }
    }

    /// `qXfer:siginfo:write` on the general thread (as the read).
    pub(in crate::session) fn handle_siginfo_write(&mut self, offset: u64, data: &[u8]) {
        let Some((pid, tid)) = self.g_thread.or_else(|| {
            self.resolve_thread(Some(crate::packet::ThreadId {
                pid: None,
                tid: crate::packet::IdSel::Any,
            }))
        }) else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no thread");
            return;
        };
        self.xfer_cache.clear();
        let r = match self.procs.get_mut(&pid) {
            Some(t) => match t.support_siginfo() {
                Some(s) => s.write_siginfo(tid, offset, data),
                None => Err(TargetError::Unsupported("siginfo write")),
            },
            None => Err(TargetError::Invalid("no such process".into())),
        };
        match r {
            Ok(n) => self.send(format!("{n:x}").as_bytes()),
            Err(e) => self.send_target_error(&e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lldb_svr4_form() {
        assert!(lldb_svr4("<library-list-svr4 version=\"1.0\"/>").is_err());
        let d = lldb_svr4("<library-list-svr4 version=\"1.0\" main-lm=\"0x10\"><library name=\"a\"/></library-list-svr4>").unwrap();
        assert_eq!(
            d,
            "<library-list-svr4 version=\"1.0\"><library name=\"a\"/></library-list-svr4>"
        );
    }

    #[test]
    fn xml_shape() {
        let arch = ArchInfo {
            triple: "x86_64-pc-linux-gnu".into(),
            gdb_arch: "i386:x86-64".into(),
            osabi: Some("GNU/Linux".into()),
            ptr_size: 8,
            xml_types: "<vector id=\"v4f\" type=\"ieee_single\" count=\"4\"/>\n".into(),
        };
        let reg = |n: &str, num, f: &str| RegisterInfo {
            name: n.into(),
            bitsize: 64,
            regnum: num,
            dwarf: Some(num),
            generic: None,
            reg_type: "int64".into(),
            feature: f.into(),
            group: Some("general"),
            in_g_packet: true,
            encoding: "uint",
            format: "hex",
        };
        let x = target_xml(
            &arch,
            &[
                reg("rax", 0, "a.core"),
                reg("rbx", 1, "a.core"),
                reg("xmm0", 2, "a.sse"),
            ],
        );
        assert!(x.contains("<architecture>i386:x86-64</architecture>"));
        assert_eq!(x.matches("<feature").count(), 2);
        assert_eq!(x.matches("</feature>").count(), 2);
        assert!(x.contains("<reg name=\"rbx\" bitsize=\"64\" regnum=\"1\""));
        assert_eq!(xml_escape("a<&>\""), "a&lt;&amp;&gt;&quot;");
        // The only shared type is used by no register: no feature has it.
        assert!(!x.contains("v4f"));
    }

    #[test]
    fn features_carry_the_types_they_use() {
        let arch = crate::native::x86_64_arch_info();
        let defs = type_defs(&arch.xml_types).expect("x86-64 types parse");
        assert_eq!(defs.len(), 12);
        assert_eq!(
            defs.iter().map(|d| d.xml).collect::<String>(),
            arch.xml_types
        );
        let need = |t: &[&str]| types_needed(&defs, t.iter().copied()).concat();
        let sse = need(&["vec128", "i386_mxcsr"]);
        assert!(sse.starts_with("<vector id=\"v8bf16\""));
        assert!(sse.contains("<union id=\"vec128\">") && sse.contains("i386_mxcsr"));
        assert!(!sse.contains("i386_eflags") && !sse.contains("v2ui128"));
        assert_eq!(need(&["i386_eflags", "int64"]).matches("<flags").count(), 1);
        assert!(need(&["uint128", "int64"]).is_empty());
        // A form the scanner does not know: every feature gets it all.
        assert!(type_defs("<vector id=\"a\" type=\"int8\" count=\"2\"/> text").is_none());
        let gpu = type_defs(crate::gpu::regs::XML_TYPES).expect("gfx90a types parse");
        assert_eq!(gpu.len(), 6);
        // Every table: each register's shared type is defined in its own
        // feature, and the AVX-512 description is about gdbserver's size.
        for (label, regs) in crate::native::x86_64_register_tables() {
            let x = target_xml(&arch, &regs);
            for feature in x.split("<feature ").skip(1) {
                for r in feature.split("<reg ").skip(1) {
                    let ty = r.split(" type=\"").nth(1).and_then(|t| t.split('"').next());
                    let ty = ty.expect("a type");
                    if defs.iter().any(|d| d.id == ty) {
                        let def = format!(" id=\"{ty}\"");
                        assert!(feature.contains(&def), "{label}: {ty} not in its feature");
                    }
                }
            }
            if label == "avx512" {
                assert!(x.len() < 24 * 1024, "{label}: {} bytes", x.len());
            }
        }
    }
}
