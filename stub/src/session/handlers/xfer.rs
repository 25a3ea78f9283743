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
    for f in features {
        let _ = writeln!(x, "<feature name=\"{}\">", xml_escape(f));
        // gdb looks a register's type up in its own feature (then the
        // predefined types), so the shared types go in every feature.
        x.push_str(&arch.xml_types);
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
    }
}
