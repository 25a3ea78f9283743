//! lldb's view of the x86-64 registers: lldb-server's names, numbers,
//! sets and sub-registers, over gdbmux's own (gdb-numbered) table.
//!
//! lldb shows what the server describes. lldb-server 23's x86-64 Linux
//! description (`RegisterInfos_x86_64.h`, as its target.xml serves it) is:
//! the 64-bit GPRs in the order rax rbx rcx rdx rdi rsi rbp rsp r8–r15 rip
//! `rflags` cs fs gs ss `fs_base` `gs_base` ds es (segment registers and
//! rflags 64 bits wide), then the 32/16/8-bit sub-registers (eax … r15l,
//! `value_regnums` of their 64-bit register), all in the set "General
//! Purpose Registers"; then "Floating Point Registers" (fctrl fstat ftag
//! fop fiseg fioff fip foseg fooff fdp mxcsr mxcsrmask st0–7 mm0–7
//! xmm0–15) and "Advanced Vector Extensions" (ymm0–15, 256 bits each).
//! gdb's numbering (target.xml for gdb) is unchanged; in an lldb session
//! the CPU target's registers go through this view: target.xml,
//! `qRegisterInfo`, `p`/`P`, `g`/`G`, expedited registers of stop replies
//! and `jThreadsInfo`.
//!
//! A primary register is the concatenation of gdbmux registers, cut or
//! zero-extended to its size (`rflags` = eflags zero-extended, `ymm0` =
//! xmm0 ++ ymm0h, `fip` = fioff ++ fiseg); a sub-register is bytes of a
//! primary (lldb reads the primary and takes them itself; `p` of one
//! answers the same bytes).

use std::fmt::Write as _;

use crate::target::RegisterInfo;
use crate::target::TargetError;
use crate::target::TargetResult;

const GPR: &str = "General Purpose Registers";
const FPR: &str = "Floating Point Registers";
const AVX: &str = "Advanced Vector Extensions";

/// Where an lldb register's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// gdbmux register numbers, concatenated, then cut or zero-extended.
    Parts(Vec<u32>),
    /// `bytes` bytes at `offset` of the lldb register `parent`.
    Sub {
        /// The lldb register holding it.
        parent: u32,
        /// Its first byte in the parent.
        offset: usize,
    },
}

/// One register as lldb sees it.
#[derive(Debug, Clone)]
pub struct LldbReg {
    /// lldb-server's name.
    pub name: String,
    /// Size in bits.
    pub bitsize: u32,
    /// lldb `encoding`.
    pub encoding: &'static str,
    /// lldb `format`.
    pub format: &'static str,
    /// Register set (target.xml `group`).
    pub set: &'static str,
    /// DWARF (and eh_frame) number.
    pub dwarf: Option<u32>,
    /// lldb generic role.
    pub generic: Option<&'static str>,
    /// Where its bytes come from.
    pub source: Source,
    /// Byte offset in lldb's register buffer (and the `g` block).
    pub offset: usize,
}

impl LldbReg {
    fn bytes(&self) -> usize {
        (self.bitsize / 8) as usize
    }
}

/// The view for one target's register table.
#[derive(Debug, Clone)]
pub struct LldbRegView {
    regs: Vec<LldbReg>,
}

/// (name, bitsize, dwarf, generic, gdbmux parts)
type Primary<'a> = (String, u32, Option<u32>, Option<&'static str>, Vec<&'a str>);

impl LldbRegView {
    /// The view of gdbmux's x86-64 table; `None` for any other target
    /// (a GPU's registers are shown as the target describes them).
    pub fn for_x86_64(regs: &[RegisterInfo]) -> Option<LldbRegView> {
        let num = |name: &str| regs.iter().find(|r| r.name == name).map(|r| r.regnum);
        for must in ["rax", "rip", "eflags", "fs_base", "xmm0", "st0"] {
            num(must)?;
        }
        let mut view = LldbRegView { regs: Vec::new() };
        let gprs: [(&str, u32, Option<&'static str>); 17] = [
            ("rax", 0, None),
            ("rbx", 3, None),
            ("rcx", 2, Some("arg4")),
            ("rdx", 1, Some("arg3")),
            ("rdi", 5, Some("arg1")),
            ("rsi", 4, Some("arg2")),
            ("rbp", 6, Some("fp")),
            ("rsp", 7, Some("sp")),
            ("r8", 8, Some("arg5")),
            ("r9", 9, Some("arg6")),
            ("r10", 10, None),
            ("r11", 11, None),
            ("r12", 12, None),
            ("r13", 13, None),
            ("r14", 14, None),
            ("r15", 15, None),
            ("rip", 16, Some("pc")),
        ];
        let mut prim: Vec<Primary> = gprs
            .iter()
            .map(|(n, d, g)| (n.to_string(), 64, Some(*d), *g, vec![*n]))
            .collect();
        prim.push(("rflags".into(), 64, Some(49), Some("flags"), vec!["eflags"]));
        for (n, d, g) in [
            ("cs", 51, None),
            ("fs", 54, None),
            ("gs", 55, None),
            ("ss", 52, None),
            ("fs_base", 58, Some("tp")),
            ("gs_base", 59, None),
            ("ds", 53, None),
            ("es", 50, None),
        ] {
            prim.push((n.to_string(), 64, Some(d), g, vec![n]));
        }
        view.add_primaries(&prim, GPR, "uint", "hex", &num)?;
        // Sub-registers of the first 16 GPRs, numbered after them.
        let names: [[&str; 4]; 16] = [
            ["eax", "ax", "ah", "al"],
            ["ebx", "bx", "bh", "bl"],
            ["ecx", "cx", "ch", "cl"],
            ["edx", "dx", "dh", "dl"],
            ["edi", "di", "", "dil"],
            ["esi", "si", "", "sil"],
            ["ebp", "bp", "", "bpl"],
            ["esp", "sp", "", "spl"],
            ["r8d", "r8w", "", "r8l"],
            ["r9d", "r9w", "", "r9l"],
            ["r10d", "r10w", "", "r10l"],
            ["r11d", "r11w", "", "r11l"],
            ["r12d", "r12w", "", "r12l"],
            ["r13d", "r13w", "", "r13l"],
            ["r14d", "r14w", "", "r14l"],
            ["r15d", "r15w", "", "r15l"],
        ];
        for (col, bits) in [(0usize, 32u32), (1, 16)] {
            for (parent, row) in names.iter().enumerate() {
                view.add_sub(row[col], bits, None, parent as u32, 0, GPR);
            }
        }
        for (parent, row) in names.iter().enumerate().take(4) {
            view.add_sub(row[2], 8, None, parent as u32, 1, GPR);
        }
        for (parent, row) in names.iter().enumerate() {
            view.add_sub(row[3], 8, None, parent as u32, 0, GPR);
        }
        // x87 control, in lldb-server's order; fip/fdp are 64-bit
        // primaries with fiseg/fioff and foseg/fooff inside them.
        let fctl: Vec<Primary> = vec![
            ("fctrl".into(), 16, Some(65), None, vec!["fctrl"]),
            ("fstat".into(), 16, Some(66), None, vec!["fstat"]),
            ("ftag".into(), 16, None, None, vec!["ftag"]),
            ("fop".into(), 16, None, None, vec!["fop"]),
        ];
        view.add_primaries(&fctl, FPR, "uint", "hex", &num)?;
        let fip = view.regs.len() as u32 + 2;
        view.add_sub("fiseg", 32, None, fip, 4, FPR);
        view.add_sub("fioff", 32, None, fip, 0, FPR);
        view.add_primaries(
            &[("fip".into(), 64, None, None, vec!["fioff", "fiseg"])],
            FPR,
            "uint",
            "hex",
            &num,
        )?;
        let fdp = view.regs.len() as u32 + 2;
        view.add_sub("foseg", 32, None, fdp, 4, FPR);
        view.add_sub("fooff", 32, None, fdp, 0, FPR);
        view.add_primaries(
            &[("fdp".into(), 64, None, None, vec!["fooff", "foseg"])],
            FPR,
            "uint",
            "hex",
            &num,
        )?;
        let mut mx: Vec<Primary> = vec![("mxcsr".into(), 32, Some(64), None, vec!["mxcsr"])];
        if num("mxcsrmask").is_some() {
            mx.push(("mxcsrmask".into(), 32, None, None, vec!["mxcsrmask"]));
        }
        view.add_primaries(&mx, FPR, "uint", "hex", &num)?;
        let st0 = view.regs.len() as u32;
        let st: Vec<Primary> = (0..8u32)
            .map(|i| (format!("st{i}"), 80, Some(33 + i), None, vec![]))
            .collect();
        let st_names: Vec<String> = (0..8).map(|i| format!("st{i}")).collect();
        let st: Vec<Primary> = st
            .into_iter()
            .zip(&st_names)
            .map(|((n, b, d, g, _), s)| (n, b, d, g, vec![s.as_str()]))
            .collect();
        view.add_primaries(&st, FPR, "vector", "vector-uint8", &num)?;
        for i in 0..8u32 {
            view.add_sub(&format!("mm{i}"), 64, Some(41 + i), st0 + i, 0, FPR);
        }
        let xmm_names: Vec<String> = (0..16).map(|i| format!("xmm{i}")).collect();
        let xmm: Vec<Primary> = xmm_names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), 128, Some(17 + i as u32), None, vec![n.as_str()]))
            .collect();
        view.add_primaries(&xmm, FPR, "vector", "vector-uint8", &num)?;
        if num("ymm0h").is_some() {
            let h: Vec<String> = (0..16).map(|i| format!("ymm{i}h")).collect();
            let ymm: Vec<Primary> = (0..16usize)
                .map(|i| {
                    (
                        format!("ymm{i}"),
                        256,
                        Some(67 + i as u32),
                        None,
                        vec![xmm_names[i].as_str(), h[i].as_str()],
                    )
                })
                .collect();
            view.add_primaries(&ymm, AVX, "vector", "vector-uint8", &num)?;
        }
        Some(view)
    }

    fn next_offset(&self) -> usize {
        self.regs
            .iter()
            .filter(|r| matches!(r.source, Source::Parts(_)))
            .map(|r| r.offset + r.bytes())
            .max()
            .unwrap_or(0)
    }

    fn add_primaries(
        &mut self,
        list: &[Primary],
        set: &'static str,
        encoding: &'static str,
        format: &'static str,
        num: &dyn Fn(&str) -> Option<u32>,
    ) -> Option<()> {
        for (name, bitsize, dwarf, generic, parts) in list {
            let parts: Option<Vec<u32>> = parts.iter().map(|p| num(p)).collect();
            let offset = self.next_offset();
            self.regs.push(LldbReg {
                name: name.clone(),
                bitsize: *bitsize,
                encoding,
                format,
                set,
                dwarf: *dwarf,
                generic: *generic,
                source: Source::Parts(parts?),
                offset,
            });
        }
        Some(())
    }

    fn add_sub(
        &mut self,
        name: &str,
        bitsize: u32,
        dwarf: Option<u32>,
        parent: u32,
        offset: usize,
        set: &'static str,
    ) {
        if name.is_empty() {
            return;
        }
        // A sub-register may be declared before its parent (fiseg before
        // fip, as lldb-server numbers them): its buffer offset is fixed
        // once the parent is added (see `finish_offsets`).
        self.regs.push(LldbReg {
            name: name.to_string(),
            bitsize,
            encoding: "uint",
            format: "hex",
            set,
            dwarf,
            generic: None,
            source: Source::Sub { parent, offset },
            offset: 0,
        });
    }

    fn sub_offset(&self, r: &LldbReg) -> usize {
        match r.source {
            Source::Sub { parent, offset } => self
                .regs
                .get(parent as usize)
                .map(|p| p.offset + offset)
                .unwrap_or(0),
            Source::Parts(_) => r.offset,
        }
    }

    /// The registers, by lldb number.
    pub fn regs(&self) -> &[LldbReg] {
        &self.regs
    }

    /// Primary GPRs: what lldb-server expedites in a stop reply.
    pub fn expedited(&self) -> impl Iterator<Item = u32> + '_ {
        self.regs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.set == GPR && matches!(r.source, Source::Parts(_)))
            .map(|(i, _)| i as u32)
    }

    fn invalidates(&self, n: u32) -> Vec<u32> {
        let root = match self.regs.get(n as usize).map(|r| &r.source) {
            Some(Source::Sub { parent, .. }) => *parent,
            _ => n,
        };
        let mut v = vec![root];
        for (i, r) in self.regs.iter().enumerate() {
            if matches!(r.source, Source::Sub { parent, .. } if parent == root) {
                v.push(i as u32);
            }
        }
        v
    }

    /// The `<reg>` attributes lldb-server gives (shared by target.xml and,
    /// as `key:value;`, qRegisterInfo).
    fn attrs(&self, n: u32) -> Option<Vec<(&'static str, String)>> {
        let r = self.regs.get(n as usize)?;
        let mut a = vec![
            ("name", r.name.clone()),
            ("bitsize", r.bitsize.to_string()),
            ("offset", self.sub_offset(r).to_string()),
            ("encoding", r.encoding.to_string()),
            ("format", r.format.to_string()),
            ("set", r.set.to_string()),
        ];
        if let Some(d) = r.dwarf {
            a.push(("ehframe", d.to_string()));
            a.push(("dwarf", d.to_string()));
        }
        if let Some(g) = r.generic {
            a.push(("generic", g.to_string()));
        }
        if let Source::Sub { parent, .. } = r.source {
            a.push(("container-regs", format!("{parent:x}")));
            let inv: Vec<String> = self
                .invalidates(n)
                .iter()
                .map(|i| format!("{i:x}"))
                .collect();
            a.push(("invalidate-regs", inv.join(",")));
        }
        Some(a)
    }

    /// `qRegisterInfoN`'s reply.
    pub fn register_info(&self, n: u32) -> Option<String> {
        let mut s = String::new();
        for (k, v) in self.attrs(n)? {
            let _ = write!(s, "{k}:{v};");
        }
        Some(s)
    }

    /// target.xml as lldb-server writes it (one feature, its attributes).
    pub fn target_xml(&self) -> String {
        let mut x = String::from(
            "<?xml version=\"1.0\"?>\n<target version=\"1.0\">\n  <architecture>x86_64</architecture>\n  <feature>\n",
        );
        for n in 0..self.regs.len() as u32 {
            let Some(attrs) = self.attrs(n) else { continue };
            let _ = write!(x, "    <reg regnum=\"{n}\"");
            for (k, v) in attrs {
                let key = match k {
                    "set" => "group",
                    "ehframe" => "ehframe_regnum",
                    "dwarf" => "dwarf_regnum",
                    // target.xml's lists are decimal.
                    "container-regs" | "invalidate-regs" => {
                        let dec: Vec<String> = v
                            .split(',')
                            .filter_map(|h| u32::from_str_radix(h, 16).ok())
                            .map(|d| d.to_string())
                            .collect();
                        let key = if k == "container-regs" {
                            "value_regnums"
                        } else {
                            "invalidate_regnums"
                        };
                        let _ = write!(x, " {key}=\"{}\"", dec.join(","));
                        continue;
                    }
                    k => k,
                };
                let _ = write!(x, " {key}=\"{v}\"");
            }
            x.push_str(" />\n");
        }
        x.push_str("  </feature>\n</target>\n");
        x
    }

    /// Read lldb register `n` through `read` (a gdbmux register read).
    pub fn read(
        &self,
        n: u32,
        read: &mut dyn FnMut(u32) -> TargetResult<Vec<u8>>,
    ) -> TargetResult<Vec<u8>> {
        let r = self.reg(n)?;
        match &r.source {
            Source::Parts(parts) => {
                let mut v = Vec::with_capacity(r.bytes());
                for p in parts {
                    v.extend_from_slice(&read(*p)?);
                }
                v.resize(r.bytes(), 0);
                Ok(v)
            }
            Source::Sub { parent, offset } => {
                let whole = self.read(*parent, read)?;
                Ok(whole
                    .get(*offset..offset + r.bytes())
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default())
            }
        }
    }

    /// Write lldb register `n`: `value` is split over its gdbmux registers
    /// (each written whole; `sizes` gives their byte sizes).
    pub fn write(
        &self,
        n: u32,
        value: &[u8],
        sizes: &dyn Fn(u32) -> usize,
        read: &mut dyn FnMut(u32) -> TargetResult<Vec<u8>>,
        write: &mut dyn FnMut(u32, &[u8]) -> TargetResult<()>,
    ) -> TargetResult<()> {
        let r = self.reg(n)?;
        if value.len() != r.bytes() {
            return Err(TargetError::Invalid(format!(
                "{} is {} bytes, not {}",
                r.name,
                r.bytes(),
                value.len()
            )));
        }
        match &r.source {
            Source::Parts(parts) => {
                let total: usize = parts.iter().map(|p| sizes(*p)).sum();
                let mut v = value.to_vec();
                v.resize(total, 0);
                let mut at = 0;
                for p in parts {
                    let len = sizes(*p);
                    write(*p, v.get(at..at + len).unwrap_or_default())?;
                    at += len;
                }
                Ok(())
            }
            Source::Sub { parent, offset } => {
                let mut whole = self.read(*parent, read)?;
                if let Some(dst) = whole.get_mut(*offset..offset + value.len()) {
                    dst.copy_from_slice(value);
                }
                self.write(*parent, &whole, sizes, read, write)
            }
        }
    }

    /// The `g` block: every primary register at its offset.
    pub fn read_all(
        &self,
        read: &mut dyn FnMut(u32) -> TargetResult<Vec<u8>>,
    ) -> TargetResult<Vec<u8>> {
        let mut out = vec![0u8; self.next_offset()];
        for (i, r) in self.regs.iter().enumerate() {
            if let Source::Parts(_) = r.source {
                let v = self.read(i as u32, read)?;
                if let Some(dst) = out.get_mut(r.offset..r.offset + v.len()) {
                    dst.copy_from_slice(&v);
                }
            }
        }
        Ok(out)
    }

    /// A `G` block split into (lldb register, bytes) of the primaries.
    pub fn split_all<'a>(&self, data: &'a [u8]) -> TargetResult<Vec<(u32, &'a [u8])>> {
        if data.len() != self.next_offset() {
            return Err(TargetError::Invalid(format!(
                "register block is {} bytes, not {}",
                data.len(),
                self.next_offset()
            )));
        }
        Ok(self
            .regs
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r.source, Source::Parts(_)))
            .filter_map(|(i, r)| Some((i as u32, data.get(r.offset..r.offset + r.bytes())?)))
            .collect())
    }

    fn reg(&self, n: u32) -> TargetResult<&LldbReg> {
        self.regs
            .get(n as usize)
            .ok_or_else(|| TargetError::Invalid(format!("no register {n}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> LldbRegView {
        let t = crate::native::x86_64_registers(true);
        LldbRegView::for_x86_64(&t).unwrap()
    }

    #[test]
    fn numbers_and_sets_are_lldb_servers() {
        let v = view();
        let name = |n: usize| v.regs()[n].name.as_str();
        assert_eq!(name(0), "rax");
        assert_eq!(name(4), "rdi");
        assert_eq!(name(17), "rflags");
        assert_eq!(name(22), "fs_base");
        assert_eq!(name(25), "es");
        assert_eq!(name(26), "eax");
        assert_eq!(name(58), "ah");
        assert_eq!(name(62), "al");
        assert_eq!(name(77), "r15l");
        assert_eq!(name(78), "fctrl");
        assert_eq!(name(82), "fiseg");
        assert_eq!(name(84), "fip");
        assert_eq!(name(87), "fdp");
        assert_eq!(name(89), "mxcsrmask");
        assert_eq!(name(90), "st0");
        assert_eq!(name(98), "mm0");
        assert_eq!(name(106), "xmm0");
        assert_eq!(name(122), "ymm0");
        assert_eq!(v.regs().len(), 138);
        assert_eq!(v.regs()[17].set, "General Purpose Registers");
        assert!(v.target_xml().contains("name=\"ah\" bitsize=\"8\""));
    }

    #[test]
    fn sub_registers_read_and_write_their_parent() {
        let v = view();
        let mut regs: std::collections::HashMap<u32, Vec<u8>> = Default::default();
        regs.insert(0, vec![1, 2, 3, 4, 5, 6, 7, 8]);
        let mut read = |n: u32| Ok(regs.get(&n).cloned().unwrap_or(vec![0; 4]));
        assert_eq!(v.read(58, &mut read).unwrap(), vec![2]);
        assert_eq!(v.read(26, &mut read).unwrap(), vec![1, 2, 3, 4]);
        let mut written = Vec::new();
        let mut read2 = |n: u32| {
            Ok(if n == 0 {
                vec![1, 2, 3, 4, 5, 6, 7, 8]
            } else {
                vec![0; 4]
            })
        };
        v.write(58, &[9], &|_| 8, &mut read2, &mut |n, b| {
            written.push((n, b.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(written, vec![(0, vec![1, 9, 3, 4, 5, 6, 7, 8])]);
    }

    #[test]
    fn g_block_round_trips() {
        let v = view();
        let mut read = |n: u32| Ok(vec![n as u8; 4]);
        let all = v.read_all(&mut read).unwrap();
        let parts = v.split_all(&all).unwrap();
        assert_eq!(parts[0].0, 0);
        assert!(v.split_all(&all[1..]).is_err());
    }
}
