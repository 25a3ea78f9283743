//! `qXfer:libraries-svr4:read`: find `r_debug` through the executable's
//! `PT_DYNAMIC` `DT_DEBUG` entry and walk the loader's `link_map` list.

const AT_PHDR: u64 = 3;
const AT_PHNUM: u64 = 5;
const AT_PHENT: u64 = 4;
const PT_DYNAMIC: u32 = 2;
const PT_PHDR: u32 = 6;
const DT_NULL: u64 = 0;
const DT_DEBUG: u64 = 21;
/// Guard against a corrupt or cyclic list.
const MAX_LIBRARIES: usize = 4096;

/// Reads inferior memory; `None` when unreadable.
pub type ReadMem<'a> = dyn FnMut(u64, usize) -> Option<Vec<u8>> + 'a;

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn auxv_get(auxv: &[u8], key: u64) -> Option<u64> {
    auxv.chunks_exact(16)
        .find(|c| u64_at(c, 0) == Some(key))
        .and_then(|c| u64_at(c, 8))
}

fn read_u64(read: &mut ReadMem<'_>, addr: u64) -> Option<u64> {
    let b = read(addr, 8)?;
    u64_at(&b, 0)
}

/// Address of `r_debug` (0 before the loader filled `DT_DEBUG` in); `None`
/// when the program the kernel started has no `DT_DEBUG` to find, as for a
/// program run as `ld.so ./prog` (the kernel's auxv describes ld.so, which has
/// no `PT_PHDR`), a static executable, or unreadable headers.
pub fn r_debug_addr(read: &mut ReadMem<'_>, auxv: &[u8]) -> Option<u64> {
    let phdr = auxv_get(auxv, AT_PHDR)?;
    let phnum = auxv_get(auxv, AT_PHNUM)? as usize;
    let phent = auxv_get(auxv, AT_PHENT).unwrap_or(56) as usize;
    if phent < 56 || phnum == 0 || phnum > 256 {
        return None;
    }
    let table = read(phdr, phent * phnum)?;
    let mut bias = None;
    let mut dynamic = None;
    for i in 0..phnum {
        let p = table.get(i * phent..i * phent + 56)?;
        let p_type = u32_at(p, 0)?;
        let p_vaddr = u64_at(p, 16)?;
        match p_type {
            PT_PHDR => bias = Some(phdr.wrapping_sub(p_vaddr)),
            PT_DYNAMIC => dynamic = Some(p_vaddr),
            _ => {}
        }
    }
    // Without PT_PHDR the load bias is unknown: gdbserver 13 then gives up
    // (linux-low.cc `get_dynamic`: "if there exists DT_DEBUG there is always
    // also PT_PHDR"), and so do we.
    let dyn_addr = dynamic?.wrapping_add(bias?);
    for i in 0..4096u64 {
        let e = read(dyn_addr + 16 * i, 16)?;
        let tag = u64_at(&e, 0)?;
        if tag == DT_NULL {
            return None;
        }
        if tag == DT_DEBUG {
            return u64_at(&e, 8);
        }
    }
    None
}

fn read_c_string(read: &mut ReadMem<'_>, addr: u64) -> String {
    let mut out = Vec::new();
    let mut a = addr;
    while out.len() < 4096 {
        // Read in small chunks that do not cross a page boundary.
        let chunk = (0x1000 - (a & 0xfff)).min(256) as usize;
        let Some(b) = read(a, chunk) else { break };
        if let Some(nul) = b.iter().position(|c| *c == 0) {
            out.extend_from_slice(&b[..nul]);
            return String::from_utf8_lossy(&out).into_owned();
        }
        if b.is_empty() {
            break;
        }
        out.extend_from_slice(&b);
        a += b.len() as u64;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Escape text for an XML attribute.
pub fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// Build gdb's `<library-list-svr4>` document; `None` when there is no
/// `DT_DEBUG` to find ([`r_debug_addr`]). gdbserver 13 answers that case with
/// `E01` (linux-low.cc `qxfer_libraries_svr4`), and gdb then walks the
/// loader's list itself through memory reads (solib-svr4.c
/// `svr4_current_sos_direct`), which finds the program that ld.so loaded.
pub fn library_list(read: &mut ReadMem<'_>, auxv: &[u8]) -> Option<String> {
    let r_debug = r_debug_addr(read, auxv)?;
    // struct r_debug { int r_version; struct link_map *r_map; ... }
    let r_map = if r_debug == 0 {
        0
    } else {
        read_u64(read, r_debug + 8).unwrap_or(0)
    };
    if r_map == 0 {
        return Some("<library-list-svr4 version=\"1.0\"/>".to_string());
    }
    let mut doc = format!("<library-list-svr4 version=\"1.0\" main-lm=\"{r_map:#x}\">");
    // struct link_map { l_addr; l_name; l_ld; l_next; l_prev; }
    let mut lm = r_map;
    let mut first = true;
    for _ in 0..MAX_LIBRARIES {
        if lm == 0 {
            break;
        }
        let Some(b) = read(lm, 40) else { break };
        let (Some(l_addr), Some(l_name), Some(l_ld), Some(l_next)) =
            (u64_at(&b, 0), u64_at(&b, 8), u64_at(&b, 16), u64_at(&b, 24))
        else {
            break;
        };
        if !first {
            let name = if l_name == 0 {
                String::new()
            } else {
                read_c_string(read, l_name)
            };
            if !name.is_empty() {
                doc.push_str(&format!(
                    "<library name=\"{}\" lm=\"{lm:#x}\" l_addr=\"{l_addr:#x}\" l_ld=\"{l_ld:#x}\" lmid=\"0x0\"/>",
                    xml_escape(&name)
                ));
            }
        }
        first = false;
        lm = l_next;
    }
    doc.push_str("</library-list-svr4>");
    Some(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape() {
        assert_eq!(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
    }

    #[test]
    fn no_auxv_is_none() {
        let mut read = |_a: u64, _n: usize| -> Option<Vec<u8>> { None };
        assert_eq!(library_list(&mut read, &[]), None);
    }

    /// An auxv naming a program header table at 0x1000 (bias 0x1000 when
    /// `with_phdr`) whose `PT_DYNAMIC` at vaddr 0x100 holds `DT_DEBUG`=0.
    fn image(with_phdr: bool) -> (Vec<u8>, impl FnMut(u64, usize) -> Option<Vec<u8>>) {
        let mut auxv = Vec::new();
        for (k, v) in [(AT_PHDR, 0x1000u64), (AT_PHNUM, 2), (AT_PHENT, 56), (0, 0)] {
            auxv.extend_from_slice(&k.to_le_bytes());
            auxv.extend_from_slice(&v.to_le_bytes());
        }
        let mut mem = vec![0u8; 0x2000];
        let mut phdr = |i: usize, ty: u32, vaddr: u64| {
            let o = 0x1000 + i * 56;
            mem[o..o + 4].copy_from_slice(&ty.to_le_bytes());
            mem[o + 16..o + 24].copy_from_slice(&vaddr.to_le_bytes());
        };
        phdr(0, if with_phdr { PT_PHDR } else { 1 }, 0);
        phdr(1, PT_DYNAMIC, 0x100);
        // Dynamic section at 0x1100: DT_DEBUG 0, DT_NULL.
        mem[0x1100..0x1108].copy_from_slice(&DT_DEBUG.to_le_bytes());
        let read = move |a: u64, n: usize| {
            let a = usize::try_from(a).ok()?;
            mem.get(a..a.checked_add(n)?).map(<[u8]>::to_vec)
        };
        (auxv, read)
    }

    #[test]
    fn empty_before_loader() {
        let (auxv, mut read) = image(true);
        assert_eq!(
            library_list(&mut read, &auxv).as_deref(),
            Some("<library-list-svr4 version=\"1.0\"/>")
        );
    }

    #[test]
    fn no_pt_phdr_is_none_as_gdbserver() {
        let (auxv, mut read) = image(false);
        assert_eq!(library_list(&mut read, &auxv), None);
    }
}
