//! x86-64 architecture code: the register table (gdb's amd64-linux layout),
//! the mapping from table entries to kernel register sets, and packing.
//!
//! All architecture-specific register knowledge lives here so that an
//! aarch64 module can follow with the same shape.
//!
//! Wire numbers follow the target description gdbserver sends for
//! amd64 GNU/Linux: `org.gnu.gdb.i386.core` (0–39), `org.gnu.gdb.i386.sse`
//! (40–56), `org.gnu.gdb.i386.linux` (`orig_rax` = 57, which gdb writes
//! with `P39=ffffffffffffffff` on `run`), `org.gnu.gdb.i386.segments`
//! (58–59), `org.gnu.gdb.i386.avx` (`ymm0h`… from 60), then, as the
//! CPU's XCR0 has them, `org.gnu.gdb.i386.avx512` (xmm16–31, ymm16h–31h,
//! k0–7, zmm0h–31h) and `org.gnu.gdb.i386.pkeys` (`pkru`): gdb 13's
//! `amd64_create_target_description` order (gdb/arch/amd64.c), which
//! gdbserver numbers from the XCR0 word of the thread's XSAVE area.
//! gdbmux's description does not describe MPX (`bnd0`…): no CPU since 2019 has it.

use std::mem::offset_of;

use nix::errno::Errno;

use super::ptrace;
use super::ptrace::RawTid;
use crate::target::ArchInfo;
use crate::target::RegisterInfo;

/// Where a register lives in the kernel's register sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    /// A 64-bit slot of `user_regs_struct` at this byte offset (32-bit
    /// registers use its low half).
    Gpr(usize),
    /// Bytes of the 512-byte FXSAVE area (`PTRACE_GETFPREGS`).
    Fx {
        /// Byte offset.
        off: usize,
        /// Bytes stored there (zero-extended to the register size).
        len: usize,
    },
    /// `fop`: 11 bits at FXSAVE offset 6.
    Fop,
    /// `ftag`: the full 16-bit tag word, rebuilt from the abridged one.
    Ftag,
    /// Bytes of an XSAVE state component (`NT_X86_XSTATE`, standard
    /// format), at this offset inside the component; as many bytes as
    /// the register has.
    Xstate {
        /// The state component.
        comp: XComp,
        /// Byte offset inside the component.
        off: usize,
    },
}

/// XSAVE state components gdbmux describes registers of; the value is the
/// component's bit in XCR0 and in the header's `XSTATE_BV`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XComp {
    /// Upper halves of ymm0–15 (`ymmNh`), 16 bytes each.
    Avx = 2,
    /// AVX-512 opmask registers k0–7, 8 bytes each.
    Opmask = 5,
    /// Upper 256 bits of zmm0–15 (`zmmNh`), 32 bytes each.
    ZmmHi256 = 6,
    /// zmm16–31 whole, 64 bytes each (xmm16–31, ymm16h–31h and
    /// zmm16h–31h are the three parts of each).
    Hi16Zmm = 7,
    /// The protection-key rights register `pkru` (4 bytes).
    Pkru = 9,
}

impl XComp {
    fn bit(self) -> u64 {
        1 << (self as u32)
    }

    /// (offset, size) of the component in the standard-format XSAVE area:
    /// CPUID leaf 0xD, sub-leaf = the component's number (EBX, EAX).
    /// AVX is architecturally at 576.
    fn layout(self) -> (usize, usize) {
        static LAYOUT: std::sync::OnceLock<[(usize, usize); 10]> = std::sync::OnceLock::new();
        let l = LAYOUT.get_or_init(|| {
            let mut l = [(0usize, 0usize); 10];
            for (i, slot) in l.iter_mut().enumerate().skip(2) {
                let r = cpuid(0xd, i as u32);
                *slot = (r.ebx as usize, r.eax as usize);
            }
            l
        });
        match self {
            XComp::Avx => (XSAVE_YMMH_OFFSET, 256),
            c => l[c as usize],
        }
    }
}

#[allow(unused_unsafe)]
fn cpuid(leaf: u32, sub: u32) -> std::arch::x86_64::CpuidResult {
    // SAFETY: CPUID exists on every x86-64 CPU and has no side effects; a
    // sub-leaf the CPU does not know answers zeros. (The intrinsic is safe
    // from Rust 1.87 on, hence the allow for the project's older minimum.)
    unsafe { std::arch::x86_64::__cpuid_count(leaf, sub) }
}

/// The XSAVE state components of the CPU that gdbmux describes registers
/// of (XCR0's bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct XFeatures {
    /// AVX: `ymm0h`–`ymm15h`.
    pub avx: bool,
    /// AVX-512 (opmask, ZMM_Hi256 and Hi16_ZMM all enabled).
    pub avx512: bool,
    /// Protection keys: `pkru`.
    pub pkru: bool,
}

impl XFeatures {
    /// From an XCR0 value.
    pub fn from_xcr0(xcr0: u64) -> XFeatures {
        let avx512 = XComp::Opmask.bit() | XComp::ZmmHi256.bit() | XComp::Hi16Zmm.bit();
        XFeatures {
            avx: xcr0 & XComp::Avx.bit() != 0,
            avx512: xcr0 & avx512 == avx512,
            pkru: xcr0 & XComp::Pkru.bit() != 0,
        }
    }

    /// What the kernel enables for a stopped thread: the XCR0 word it
    /// stores in the software-reserved bytes of the `NT_X86_XSTATE` regset
    /// (offset 464, as gdbserver's `x86_linux_read_description` reads it).
    /// Without that regset: AVX as the CPU reports it.
    pub fn of_thread(tid: RawTid) -> XFeatures {
        let mut buf = vec![0u8; XSAVE_BUF];
        match ptrace::get_regset(tid, ptrace::NT_X86_XSTATE, &mut buf) {
            Ok(n) if n >= XSAVE_XCR0_OFFSET + 8 => {
                let mut w = [0u8; 8];
                w.copy_from_slice(&buf[XSAVE_XCR0_OFFSET..XSAVE_XCR0_OFFSET + 8]);
                XFeatures::from_xcr0(u64::from_le_bytes(w))
            }
            _ => XFeatures {
                avx: has_avx(),
                ..XFeatures::default()
            },
        }
    }
}

/// Offset of `ymm0h` in the standard-format XSAVE area.
const XSAVE_YMMH_OFFSET: usize = 576;
/// Offset of `XSTATE_BV` in the XSAVE header.
const XSAVE_XSTATE_BV_OFFSET: usize = 512;
/// Offset of the XCR0 word Linux stores in the FXSAVE area's
/// software-reserved bytes of `NT_X86_XSTATE` (gdb's
/// `I386_LINUX_XSAVE_XCR0_OFFSET`).
const XSAVE_XCR0_OFFSET: usize = 464;
/// Buffer size for `NT_X86_XSTATE` (large enough for AVX-512 + AMX tiles
/// headers; the kernel truncates to what it has).
const XSAVE_BUF: usize = 16384;

/// Byte offset of `u_debugreg` in `struct user` (for PEEKUSER/POKEUSER).
pub const DEBUGREG_OFFSET: usize = offset_of!(libc::user, u_debugreg);

macro_rules! gpr {
    ($f:ident) => {
        Loc::Gpr(offset_of!(libc::user_regs_struct, $f))
    };
}

/// The register table and the location of each entry, index-aligned.
pub struct RegTable {
    /// Client-visible descriptions.
    pub infos: Vec<RegisterInfo>,
    /// Location of each entry.
    pub locs: Vec<Loc>,
}

#[allow(clippy::too_many_arguments)]
fn push(
    t: &mut RegTable,
    name: &str,
    bitsize: u32,
    dwarf: Option<u32>,
    generic: Option<&'static str>,
    reg_type: &str,
    feature: &str,
    group: Option<&'static str>,
    encoding: &'static str,
    format: &'static str,
    loc: Loc,
) {
    let regnum = t.infos.len() as u32;
    t.infos.push(RegisterInfo {
        name: name.to_string(),
        bitsize,
        regnum,
        dwarf,
        generic,
        reg_type: reg_type.to_string(),
        feature: feature.to_string(),
        group,
        in_g_packet: true,
        encoding,
        format,
    });
    t.locs.push(loc);
}

const CORE: &str = "org.gnu.gdb.i386.core";
const SSE: &str = "org.gnu.gdb.i386.sse";
const LINUX: &str = "org.gnu.gdb.i386.linux";
const SEGMENTS: &str = "org.gnu.gdb.i386.segments";
const AVX: &str = "org.gnu.gdb.i386.avx";
const AVX512: &str = "org.gnu.gdb.i386.avx512";
const PKEYS: &str = "org.gnu.gdb.i386.pkeys";
/// Feature of registers only lldb's register view shows (left out of
/// gdb's target.xml).
pub const LLDB_ONLY_FEATURE: &str = "gdbmux.lldb-only";

/// Build the amd64-linux register table for the XSAVE components `x`.
pub fn register_table(x: XFeatures) -> RegTable {
    let mut t = RegTable {
        infos: Vec::new(),
        locs: Vec::new(),
    };
    // (name, dwarf, generic, type, loc)
    let gprs: [(&str, u32, Option<&'static str>, &str, Loc); 17] = [
        ("rax", 0, None, "int64", gpr!(rax)),
        ("rbx", 3, None, "int64", gpr!(rbx)),
        ("rcx", 2, Some("arg4"), "int64", gpr!(rcx)),
        ("rdx", 1, Some("arg3"), "int64", gpr!(rdx)),
        ("rsi", 4, Some("arg2"), "int64", gpr!(rsi)),
        ("rdi", 5, Some("arg1"), "int64", gpr!(rdi)),
        ("rbp", 6, Some("fp"), "data_ptr", gpr!(rbp)),
        ("rsp", 7, Some("sp"), "data_ptr", gpr!(rsp)),
        ("r8", 8, Some("arg5"), "int64", gpr!(r8)),
        ("r9", 9, Some("arg6"), "int64", gpr!(r9)),
        ("r10", 10, None, "int64", gpr!(r10)),
        ("r11", 11, None, "int64", gpr!(r11)),
        ("r12", 12, None, "int64", gpr!(r12)),
        ("r13", 13, None, "int64", gpr!(r13)),
        ("r14", 14, None, "int64", gpr!(r14)),
        ("r15", 15, None, "int64", gpr!(r15)),
        ("rip", 16, Some("pc"), "code_ptr", gpr!(rip)),
    ];
    for (name, dwarf, generic, ty, loc) in gprs {
        push(
            &mut t,
            name,
            64,
            Some(dwarf),
            generic,
            ty,
            CORE,
            Some("general"),
            "uint",
            "hex",
            loc,
        );
    }
    push(
        &mut t,
        "eflags",
        32,
        Some(49),
        Some("flags"),
        "i386_eflags",
        CORE,
        Some("general"),
        "uint",
        "hex",
        gpr!(eflags),
    );
    let segs: [(&str, u32, Loc); 6] = [
        ("cs", 51, gpr!(cs)),
        ("ss", 52, gpr!(ss)),
        ("ds", 53, gpr!(ds)),
        ("es", 50, gpr!(es)),
        ("fs", 54, gpr!(fs)),
        ("gs", 55, gpr!(gs)),
    ];
    for (name, dwarf, loc) in segs {
        push(
            &mut t,
            name,
            32,
            Some(dwarf),
            None,
            "int32",
            CORE,
            Some("general"),
            "uint",
            "hex",
            loc,
        );
    }
    for i in 0..8u32 {
        let loc = Loc::Fx {
            off: 32 + 16 * i as usize,
            len: 10,
        };
        push(
            &mut t,
            &format!("st{i}"),
            80,
            Some(33 + i),
            None,
            "i387_ext",
            CORE,
            Some("float"),
            "vector",
            "vector-uint8",
            loc,
        );
    }
    let fpctl: [(&str, Option<u32>, Loc); 8] = [
        ("fctrl", Some(65), Loc::Fx { off: 0, len: 2 }),
        ("fstat", Some(66), Loc::Fx { off: 2, len: 2 }),
        ("ftag", None, Loc::Ftag),
        ("fiseg", None, Loc::Fx { off: 12, len: 2 }),
        ("fioff", None, Loc::Fx { off: 8, len: 4 }),
        ("foseg", None, Loc::Fx { off: 20, len: 2 }),
        ("fooff", None, Loc::Fx { off: 16, len: 4 }),
        ("fop", None, Loc::Fop),
    ];
    for (name, dwarf, loc) in fpctl {
        push(
            &mut t,
            name,
            32,
            dwarf,
            None,
            "int",
            CORE,
            Some("float"),
            "uint",
            "hex",
            loc,
        );
    }
    for i in 0..16u32 {
        let loc = Loc::Fx {
            off: 160 + 16 * i as usize,
            len: 16,
        };
        push(
            &mut t,
            &format!("xmm{i}"),
            128,
            Some(17 + i),
            None,
            "vec128",
            SSE,
            Some("vector"),
            "vector",
            "vector-uint8",
            loc,
        );
    }
    push(
        &mut t,
        "mxcsr",
        32,
        Some(64),
        None,
        "i386_mxcsr",
        SSE,
        Some("vector"),
        "uint",
        "hex",
        Loc::Fx { off: 24, len: 4 },
    );
    push(
        &mut t,
        "orig_rax",
        64,
        None,
        None,
        "int",
        LINUX,
        Some("system"),
        "sint",
        "hex",
        gpr!(orig_rax),
    );
    push(
        &mut t,
        "fs_base",
        64,
        Some(58),
        None,
        "int",
        SEGMENTS,
        Some("system"),
        "uint",
        "hex",
        gpr!(fs_base),
    );
    push(
        &mut t,
        "gs_base",
        64,
        Some(59),
        None,
        "int",
        SEGMENTS,
        Some("system"),
        "uint",
        "hex",
        gpr!(gs_base),
    );
    if x.avx {
        for i in 0..16 {
            push(
                &mut t,
                &format!("ymm{i}h"),
                128,
                None,
                None,
                "uint128",
                AVX,
                Some("vector"),
                "vector",
                "vector-uint8",
                Loc::Xstate {
                    comp: XComp::Avx,
                    off: 16 * i,
                },
            );
        }
    }
    if x.avx512 {
        push_avx512(&mut t);
    }
    if x.pkru {
        push(
            &mut t,
            "pkru",
            32,
            None,
            None,
            "uint32",
            PKEYS,
            None,
            "uint",
            "hex",
            Loc::Xstate {
                comp: XComp::Pkru,
                off: 0,
            },
        );
    }
    // lldb-server's `mxcsrmask` (FXSAVE bytes 28..32): only in lldb's
    // register view (session::lldb_regs). gdb's target.xml has no such
    // register: it is last (gdb's numbers are unchanged), out of the `g`
    // packet and out of gdb's target.xml.
    push(
        &mut t,
        "mxcsrmask",
        32,
        None,
        None,
        "int",
        LLDB_ONLY_FEATURE,
        None,
        "uint",
        "hex",
        Loc::Fx { off: 28, len: 4 },
    );
    if let Some(last) = t.infos.last_mut() {
        last.in_g_packet = false;
    }
    t
}

/// gdb 13's `org.gnu.gdb.i386.avx512` registers (features/i386/64bit-avx512.xml
/// order): xmm16–31, ymm16h–31h, k0–7, zmm0h–31h.
fn push_avx512(t: &mut RegTable) {
    let hi16 = |i: usize, part: usize| Loc::Xstate {
        comp: XComp::Hi16Zmm,
        off: 64 * (i - 16) + part,
    };
    for i in 16..32 {
        push(
            t,
            &format!("xmm{i}"),
            128,
            // SysV x86-64 psABI DWARF numbers: xmm16–31 are 67–82.
            Some(67 + i as u32 - 16),
            None,
            "vec128",
            AVX512,
            Some("vector"),
            "vector",
            "vector-uint8",
            hi16(i, 0),
        );
    }
    for i in 16..32 {
        push(
            t,
            &format!("ymm{i}h"),
            128,
            None,
            None,
            "uint128",
            AVX512,
            Some("vector"),
            "vector",
            "vector-uint8",
            hi16(i, 16),
        );
    }
    for i in 0..8 {
        push(
            t,
            &format!("k{i}"),
            64,
            Some(118 + i as u32),
            None,
            "uint64",
            AVX512,
            Some("vector"),
            "uint",
            "hex",
            Loc::Xstate {
                comp: XComp::Opmask,
                off: 8 * i,
            },
        );
    }
    for i in 0..32 {
        let loc = if i < 16 {
            Loc::Xstate {
                comp: XComp::ZmmHi256,
                off: 32 * i,
            }
        } else {
            hi16(i, 32)
        };
        push(
            t,
            &format!("zmm{i}h"),
            256,
            None,
            None,
            "v2ui128",
            AVX512,
            Some("vector"),
            "vector",
            "vector-uint8",
            loc,
        );
    }
}

/// Whether the CPU has AVX state (and therefore `ymmNh` registers).
pub fn has_avx() -> bool {
    std::arch::is_x86_feature_detected!("avx")
}

/// XML types the i386 features reference (`vec128`, `i386_eflags`,
/// `i386_mxcsr`, `v2ui128`). gdb looks types up per feature, so target.xml
/// puts into each `<feature>` the ones its registers use, with their parts
/// (`session::handlers::xfer::target_xml`).
pub const XML_TYPES: &str = concat!(
    r#"<vector id="v8bf16" type="bfloat16" count="8"/>"#,
    r#"<vector id="v8h" type="ieee_half" count="8"/>"#,
    r#"<vector id="v4f" type="ieee_single" count="4"/>"#,
    r#"<vector id="v2d" type="ieee_double" count="2"/>"#,
    r#"<vector id="v16i8" type="int8" count="16"/>"#,
    r#"<vector id="v8i16" type="int16" count="8"/>"#,
    r#"<vector id="v4i32" type="int32" count="4"/>"#,
    r#"<vector id="v2i64" type="int64" count="2"/>"#,
    r#"<union id="vec128"><field name="v8_bfloat16" type="v8bf16"/><field name="v8_half" type="v8h"/><field name="v4_float" type="v4f"/>"#,
    r#"<field name="v2_double" type="v2d"/><field name="v16_int8" type="v16i8"/>"#,
    r#"<field name="v8_int16" type="v8i16"/><field name="v4_int32" type="v4i32"/>"#,
    r#"<field name="v2_int64" type="v2i64"/><field name="uint128" type="uint128"/></union>"#,
    r#"<vector id="v2ui128" type="uint128" count="2"/>"#,
    r#"<flags id="i386_eflags" size="4"><field name="CF" start="0" end="0"/><field name="" start="1" end="1"/>"#,
    r#"<field name="PF" start="2" end="2"/><field name="AF" start="4" end="4"/><field name="ZF" start="6" end="6"/>"#,
    r#"<field name="SF" start="7" end="7"/><field name="TF" start="8" end="8"/><field name="IF" start="9" end="9"/>"#,
    r#"<field name="DF" start="10" end="10"/><field name="OF" start="11" end="11"/><field name="NT" start="14" end="14"/>"#,
    r#"<field name="RF" start="16" end="16"/><field name="VM" start="17" end="17"/><field name="AC" start="18" end="18"/>"#,
    r#"<field name="VIF" start="19" end="19"/><field name="VIP" start="20" end="20"/><field name="ID" start="21" end="21"/></flags>"#,
    r#"<flags id="i386_mxcsr" size="4"><field name="IE" start="0" end="0"/><field name="DE" start="1" end="1"/>"#,
    r#"<field name="ZE" start="2" end="2"/><field name="OE" start="3" end="3"/><field name="UE" start="4" end="4"/>"#,
    r#"<field name="PE" start="5" end="5"/><field name="DAZ" start="6" end="6"/><field name="IM" start="7" end="7"/>"#,
    r#"<field name="DM" start="8" end="8"/><field name="ZM" start="9" end="9"/><field name="OM" start="10" end="10"/>"#,
    r#"<field name="UM" start="11" end="11"/><field name="PM" start="12" end="12"/><field name="FZ" start="15" end="15"/></flags>"#,
);

/// Architecture facts for x86-64 Linux.
pub fn arch_info() -> ArchInfo {
    ArchInfo {
        triple: "x86_64-pc-linux-gnu".to_string(),
        gdb_arch: "i386:x86-64".to_string(),
        osabi: Some("GNU/Linux".to_string()),
        ptr_size: 8,
        xml_types: XML_TYPES.to_string(),
    }
}

/// Per-thread cache of the kernel register sets, valid while the thread
/// stays stopped. Each set is fetched at most once; writes go through.
#[derive(Default)]
pub struct RegCache {
    gpr: Option<libc::user_regs_struct>,
    fp: Option<[u8; 512]>,
    xstate: Option<Vec<u8>>,
}

fn gpr_bytes(r: &libc::user_regs_struct) -> &[u8] {
    // SAFETY: user_regs_struct is a repr(C) struct of u64s without padding;
    // viewing it as bytes is sound for its whole size.
    unsafe {
        std::slice::from_raw_parts(
            r as *const _ as *const u8,
            std::mem::size_of::<libc::user_regs_struct>(),
        )
    }
}

fn gpr_bytes_mut(r: &mut libc::user_regs_struct) -> &mut [u8] {
    // SAFETY: as in `gpr_bytes`; any byte pattern is a valid u64.
    unsafe {
        std::slice::from_raw_parts_mut(
            r as *mut _ as *mut u8,
            std::mem::size_of::<libc::user_regs_struct>(),
        )
    }
}

/// Full 16-bit x87 tag word from the FXSAVE abridged tag (gdb's
/// `i387_supply_fxsave` rule): 0 valid, 1 zero, 2 special, 3 empty.
fn full_tag(fx: &[u8; 512]) -> u16 {
    let fstat = u16::from_le_bytes([fx[2], fx[3]]);
    let abridged = fx[4];
    let top = ((fstat >> 11) & 7) as usize;
    let mut tag = 0u16;
    for phys in 0..8usize {
        let val = if abridged & (1 << phys) != 0 {
            let st = (phys + 8 - top) & 7;
            let raw = &fx[32 + 16 * st..32 + 16 * st + 10];
            let exponent = (u16::from(raw[9] & 0x7f) << 8) | u16::from(raw[8]);
            let integer = raw[7] & 0x80 != 0;
            let fraction_zero = raw[..7].iter().all(|b| *b == 0) && raw[7] & 0x7f == 0;
            if exponent == 0x7fff {
                2
            } else if exponent == 0 {
                if fraction_zero && !integer {
                    1
                } else {
                    2
                }
            } else if integer {
                0
            } else {
                2
            }
        } else {
            3
        };
        tag |= val << (2 * phys);
    }
    tag
}

/// Abridged tag from a full tag word: a register is valid unless tagged 3.
fn abridged_tag(full: u16) -> u8 {
    let mut ab = 0u8;
    for phys in 0..8 {
        if (full >> (2 * phys)) & 3 != 3 {
            ab |= 1 << phys;
        }
    }
    ab
}

/// The header's `XSTATE_BV`: which components hold non-initial state.
fn xstate_bv(xs: &[u8]) -> u64 {
    xs.get(XSAVE_XSTATE_BV_OFFSET..XSAVE_XSTATE_BV_OFFSET + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .unwrap_or(0)
}

impl RegCache {
    /// Forget everything (the thread is about to run).
    pub fn invalidate(&mut self) {
        *self = RegCache::default();
    }

    /// General-purpose registers.
    pub fn gpr(&mut self, tid: RawTid) -> Result<&mut libc::user_regs_struct, Errno> {
        if self.gpr.is_none() {
            self.gpr = Some(ptrace::get_regs(tid)?);
        }
        self.gpr.as_mut().ok_or(Errno::EIO)
    }

    fn fp(&mut self, tid: RawTid) -> Result<&mut [u8; 512], Errno> {
        if self.fp.is_none() {
            self.fp = Some(ptrace::get_fpregs(tid)?);
        }
        self.fp.as_mut().ok_or(Errno::EIO)
    }

    fn xstate(&mut self, tid: RawTid) -> Result<&mut Vec<u8>, Errno> {
        if self.xstate.is_none() {
            let mut buf = vec![0u8; XSAVE_BUF];
            let n = ptrace::get_regset(tid, ptrace::NT_X86_XSTATE, &mut buf)?;
            buf.truncate(n);
            self.xstate = Some(buf);
        }
        self.xstate.as_mut().ok_or(Errno::EIO)
    }

    /// Program counter.
    pub fn pc(&mut self, tid: RawTid) -> Result<u64, Errno> {
        Ok(self.gpr(tid)?.rip)
    }

    /// Set the program counter (written through).
    pub fn set_pc(&mut self, tid: RawTid, pc: u64) -> Result<(), Errno> {
        let regs = self.gpr(tid)?;
        regs.rip = pc;
        let copy = *regs;
        ptrace::set_regs(tid, &copy)
    }

    /// Read one register as `size` little-endian bytes into `out`.
    pub fn read(
        &mut self,
        tid: RawTid,
        loc: Loc,
        size: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), Errno> {
        let start = out.len();
        match loc {
            Loc::Gpr(off) => {
                let regs = self.gpr(tid)?;
                let bytes = gpr_bytes(regs);
                out.extend_from_slice(&bytes[off..off + size.min(8)]);
            }
            Loc::Fx { off, len } => {
                let fx = self.fp(tid)?;
                out.extend_from_slice(&fx[off..off + len.min(size)]);
            }
            Loc::Fop => {
                let fx = self.fp(tid)?;
                let v = u16::from_le_bytes([fx[6], fx[7]]) & 0x7ff;
                out.extend_from_slice(&v.to_le_bytes());
            }
            Loc::Ftag => {
                let fx = self.fp(tid)?;
                out.extend_from_slice(&full_tag(fx).to_le_bytes());
            }
            Loc::Xstate { comp, off } => {
                let xs = self.xstate(tid)?;
                let at = comp.layout().0 + off;
                // A component whose XSTATE_BV bit is clear is in its
                // initial state: zeros, whatever the buffer holds there.
                match xs.get(at..at + size) {
                    Some(b) if xstate_bv(xs) & comp.bit() != 0 => out.extend_from_slice(b),
                    _ => out.extend_from_slice(&vec![0u8; size]),
                }
            }
        }
        out.resize(start + size, 0);
        Ok(())
    }

    /// Write one register (read-modify-write of its register set).
    pub fn write(&mut self, tid: RawTid, loc: Loc, value: &[u8]) -> Result<(), Errno> {
        match loc {
            Loc::Gpr(off) => {
                let regs = self.gpr(tid)?;
                let mut slot = [0u8; 8];
                let n = value.len().min(8);
                slot[..n].copy_from_slice(&value[..n]);
                gpr_bytes_mut(regs)[off..off + 8].copy_from_slice(&slot);
                let copy = *regs;
                ptrace::set_regs(tid, &copy)
            }
            Loc::Fx { off, len } => {
                let fx = self.fp(tid)?;
                let n = value.len().min(len);
                fx[off..off + len].fill(0);
                fx[off..off + n].copy_from_slice(&value[..n]);
                let copy = *fx;
                self.xstate = None;
                ptrace::set_fpregs(tid, &copy)
            }
            Loc::Fop => {
                let fx = self.fp(tid)?;
                let v = u16::from_le_bytes([
                    value.first().copied().unwrap_or(0),
                    value.get(1).copied().unwrap_or(0),
                ]) & 0x7ff;
                fx[6..8].copy_from_slice(&v.to_le_bytes());
                let copy = *fx;
                self.xstate = None;
                ptrace::set_fpregs(tid, &copy)
            }
            Loc::Ftag => {
                let fx = self.fp(tid)?;
                let v = u16::from_le_bytes([
                    value.first().copied().unwrap_or(0),
                    value.get(1).copied().unwrap_or(0),
                ]);
                fx[4] = abridged_tag(v);
                let copy = *fx;
                self.xstate = None;
                ptrace::set_fpregs(tid, &copy)
            }
            Loc::Xstate { comp, off } => {
                let xs = self.xstate(tid)?;
                let (base, comp_size) = comp.layout();
                let size = value.len();
                if comp_size == 0 || xs.len() < base + comp_size || off + size > comp_size {
                    return Err(Errno::EIO);
                }
                let bv = xstate_bv(xs);
                if bv & comp.bit() == 0 {
                    // The component was in its init state: make it explicit
                    // so its other registers read back as zero, not stale
                    // buffer bytes.
                    xs[base..base + comp_size].fill(0);
                }
                xs[XSAVE_XSTATE_BV_OFFSET..XSAVE_XSTATE_BV_OFFSET + 8]
                    .copy_from_slice(&(bv | comp.bit()).to_le_bytes());
                xs[base + off..base + off + size].copy_from_slice(value);
                let r = ptrace::set_regset(tid, ptrace::NT_X86_XSTATE, xs);
                self.fp = None;
                r
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn table_layout_matches_gdb_amd64_linux() {
        let all = XFeatures {
            avx: true,
            avx512: true,
            pkru: true,
        };
        let t = register_table(all);
        assert_eq!(t.infos.len(), t.locs.len());
        let names: Vec<&str> = t.infos.iter().map(|r| r.name.as_str()).collect();
        for (i, r) in t.infos.iter().enumerate() {
            assert_eq!(r.regnum as usize, i, "regnums are dense and in order");
        }
        let find = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert_eq!(find("rax"), 0);
        assert_eq!(find("rip"), 16);
        assert_eq!(find("eflags"), 17);
        assert_eq!(find("cs"), 18);
        assert_eq!(find("gs"), 23);
        assert_eq!(find("st0"), 24);
        assert_eq!(find("fctrl"), 32);
        assert_eq!(find("fop"), 39);
        assert_eq!(find("xmm0"), 40);
        assert_eq!(find("mxcsr"), 56);
        assert_eq!(find("orig_rax"), 57);
        assert_eq!(find("fs_base"), 58);
        assert_eq!(find("gs_base"), 59);
        assert_eq!(find("ymm0h"), 60);
        assert_eq!(find("ymm15h"), 75);
        let uniq: HashSet<&str> = names.iter().copied().collect();
        assert_eq!(uniq.len(), names.len());
        let dwarfs: Vec<u32> = t.infos.iter().filter_map(|r| r.dwarf).collect();
        let uniq_dwarf: HashSet<u32> = dwarfs.iter().copied().collect();
        assert_eq!(uniq_dwarf.len(), dwarfs.len());
        assert_eq!(t.infos[find("rdx")].dwarf, Some(1));
        assert_eq!(t.infos[find("xmm0")].dwarf, Some(17));
        assert_eq!(t.infos[find("st0")].dwarf, Some(33));
        // Features appear in one contiguous run each, in gdbserver's order.
        let mut order: Vec<&str> = Vec::new();
        for r in &t.infos {
            if order.last() != Some(&r.feature.as_str()) {
                order.push(&r.feature);
            }
        }
        assert_eq!(
            order,
            [
                CORE,
                SSE,
                LINUX,
                SEGMENTS,
                AVX,
                AVX512,
                PKEYS,
                LLDB_ONLY_FEATURE
            ]
        );
        // gdbserver 13.1's numbers on an AVX-512 CPU with protection keys
        // (amd64-avx-avx512-pku-linux, no MPX).
        assert_eq!(find("xmm16"), 76);
        assert_eq!(find("xmm31"), 91);
        assert_eq!(find("ymm16h"), 92);
        assert_eq!(find("k0"), 108);
        assert_eq!(find("k7"), 115);
        assert_eq!(find("zmm0h"), 116);
        assert_eq!(find("zmm31h"), 147);
        assert_eq!(find("pkru"), 148);
        assert_eq!(t.infos[find("zmm0h")].bitsize, 256);
        assert_eq!(
            t.locs[find("zmm16h")],
            Loc::Xstate {
                comp: XComp::Hi16Zmm,
                off: 32
            }
        );
        assert_eq!(
            t.locs[find("ymm17h")],
            Loc::Xstate {
                comp: XComp::Hi16Zmm,
                off: 64 + 16
            }
        );
        for (r, l) in t.infos.iter().zip(&t.locs) {
            assert_eq!(r.bitsize % 8, 0);
            match l {
                Loc::Gpr(off) => assert!(off + 8 <= std::mem::size_of::<libc::user_regs_struct>()),
                Loc::Fx { off, len } => assert!(off + len <= 512 && *len as u32 * 8 <= r.bitsize),
                _ => {}
            }
        }
        for g in ["pc", "sp", "fp", "flags", "arg1", "arg6"] {
            assert_eq!(
                t.infos.iter().filter(|r| r.generic == Some(g)).count(),
                1,
                "{g}"
            );
        }
        // 60 for gdb, and lldb's mxcsrmask.
        let plain = XFeatures::default();
        assert_eq!(register_table(plain).infos.len(), 61);
        let avx_only = XFeatures { avx: true, ..plain };
        assert_eq!(register_table(avx_only).infos.len(), 77);
        // XCR0 of an AVX2 CPU with protection keys, and of an AVX-512 one.
        assert_eq!(
            XFeatures::from_xcr0(0x207),
            XFeatures {
                avx: true,
                avx512: false,
                pkru: true
            }
        );
        assert_eq!(XFeatures::from_xcr0(0x2e7), all);
        assert!(
            !XFeatures::from_xcr0(0x27).avx512,
            "AVX-512 needs all three components"
        );
        assert_eq!(DEBUGREG_OFFSET, 848);
    }

    #[test]
    fn tag_word_round_trip() {
        let mut fx = [0u8; 512];
        // Empty stack: abridged 0 -> all empty.
        assert_eq!(full_tag(&fx), 0xffff);
        // st0 = 1.0 (exponent 0x3fff, integer bit), top = 7 -> physical 7.
        fx[2..4].copy_from_slice(&(7u16 << 11).to_le_bytes());
        fx[4] = 1 << 7;
        fx[32 + 7] = 0x80;
        fx[32 + 8] = 0xff;
        fx[32 + 9] = 0x3f;
        let tag = full_tag(&fx);
        assert_eq!(tag, 0x3fff);
        assert_eq!(abridged_tag(tag), 1 << 7);
    }
}
