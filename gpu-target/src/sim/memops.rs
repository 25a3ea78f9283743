//! The memory instructions, one row per opcode: the DS (LDS) operations in
//! [`DS_OPS`] and the FLAT/GLOBAL/SCRATCH and MUBUF loads and stores in
//! [`FLAT_OPS`] (the two encodings number them alike on gfx90a; their
//! atomics are the rows of `atomics::FLAT_ATOMICS`). A row gives the
//! opcode number, the LLVM mnemonic and what the instruction moves: bytes
//! per lane, sign or zero extension, the 16-bit half of a `_d16` register,
//! or the read-modify-write function of a DS atomic. The decoder
//! (`decode.rs`) takes the number and name from the row, the printer the
//! operand widths it implies, and the executors of `wave.rs` run every row
//! of a kind through one generic lane loop. Which register file the data
//! uses (VGPRs or, with the encoding's `acc` bit, AGPRs) is not a property
//! of the opcode: every row runs with either.
//!
//! GDS: gfx90a has none. LLVM 19's assembler refuses the `gds` modifier
//! for gfx90a ("not supported on this GPU") and ROCr allocates no GDS to
//! a dispatch, so the decoder keeps the `gds` bit only to print it as AMD's
//! disassembler does, and executing a DS instruction with it stops the wave
//! with an illegal-instruction exception that the debugger sees (rather
//! than a silent access to an LDS-like segment the hardware does not
//! give the kernel).
//!
//! Adding such an instruction is one row here (see docs/simulator.md,
//! "Adding an instruction").

use super::atomics::dec;
use super::atomics::inc;
use super::atomics::sx;
use super::memory::SHARED_APERTURE;
use super::wave::Step;
use super::wave::WaveRegs;

/// A sub-dword load into the low half of its register, the high half kept.
pub const D16_LO: u8 = 1;
/// A sub-dword load into the high half of its register, the low half kept.
pub const D16_HI: u8 = 2;

/// Read-modify-write: the new memory value from the old one, the data
/// operand and the compare operand, on `bits`-bit words (the inputs are
/// zero-extended, the result is truncated by the caller).
pub type Rmw = fn(old: u64, d: u64, cmp: u64, bits: u32) -> u64;

/// What a DS opcode does (fields as the variants' comments say).
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub enum DsKind {
    /// Load `bytes` at ADDR + offset into VDST (sub-dword: extended with
    /// `signed`, into the `d16` half of the register when not 0).
    Read { bytes: u8, signed: bool, d16: u8 },
    /// Store the low `bytes` of DATA0 (`hi`: of its high half) at
    /// ADDR + offset.
    Write { bytes: u8, hi: bool },
    /// Two loads of `dwords` dwords each at ADDR + offset0 * unit and
    /// ADDR + offset1 * unit (unit: the element size, or 64 elements for
    /// the `st64` forms) into VDST and the registers after the first.
    Read2 { dwords: u8, st64: bool },
    /// Two stores, DATA0 at ADDR + offset0 * unit, DATA1 at offset1.
    Write2 { dwords: u8, st64: bool },
    /// Atomic read-modify-write of `dwords` dwords with DATA0 (and DATA1 as
    /// the second operand with `two`: `cmpst` compares with DATA0 and
    /// stores DATA1); `rtn`: the old value to VDST.
    Atomic {
        dwords: u8,
        rtn: bool,
        two: bool,
        apply: Rmw,
    },
    /// `ds_wrxchg2(st64)_rtn`: two exchanges, DATA0 at ADDR + offset0 *
    /// unit and DATA1 at offset1 (unit as for `Read2`), the two old values
    /// to VDST and the registers after the first.
    Xchg2 { dwords: u8, st64: bool },
    /// `ds_condxchg32_rtn_b64`: two conditional 32-bit exchanges at the
    /// 8-byte-aligned ADDR + offset (masked to 16 bits) and 4 after it:
    /// dword `i` of DATA0 (bit 31 cleared) is stored where its bit 31 is
    /// set; the old dwords to VDST.
    CondXchg,
    /// `ds_append` / `ds_consume` (`sub`): once per wave, the dword at
    /// M0[15:0] + offset grows (shrinks) by the number of active lanes;
    /// every active lane gets the old value.
    Append { sub: bool },
    /// `ds_write_addtid_b32` / `ds_read_addtid_b32` (`load`): lane `l`
    /// accesses the dword at M0[15:0] + offset + 4 * l (no ADDR operand).
    AddTid { load: bool },
    /// `ds_swizzle_b32`: lanes exchange VGPR values by the offset pattern.
    Swizzle,
    /// `ds_permute_b32`: lane writes DATA0 to lane ADDR / 4.
    Permute,
    /// `ds_bpermute_b32`: lane reads DATA0 of lane ADDR / 4.
    Bpermute,
}

/// One DS opcode.
#[derive(Clone, Copy, Debug)]
pub struct DsRow {
    /// The 8-bit opcode number.
    pub code: u8,
    /// The LLVM mnemonic.
    pub name: &'static str,
    /// Its semantics.
    pub kind: DsKind,
}

impl DsKind {
    /// Dwords of each data operand and dwords returned.
    pub const fn data_ret_widths(self) -> (u8, u8) {
        match self {
            Self::Read { bytes, .. } => (0, bytes.div_ceil(4)),
            Self::Write { bytes, .. } => (bytes.div_ceil(4), 0),
            Self::Read2 { dwords, .. } => (0, 2 * dwords),
            Self::Write2 { dwords, .. } => (dwords, 0),
            Self::Atomic { dwords, rtn, .. } => (dwords, if rtn { dwords } else { 0 }),
            Self::Xchg2 { dwords, .. } => (dwords, 2 * dwords),
            Self::CondXchg => (2, 2),
            Self::Append { .. } => (0, 1),
            Self::AddTid { load } => (!load as u8, load as u8),
            Self::Swizzle => (0, 1),
            Self::Permute | Self::Bpermute => (1, 1),
        }
    }

    /// Whether the instruction has a DATA1 operand.
    pub const fn two_data(self) -> bool {
        matches!(
            self,
            Self::Write2 { .. } | Self::Xchg2 { .. } | Self::Atomic { two: true, .. }
        )
    }

    /// Whether the offset is two 8-bit element offsets.
    pub const fn two_offsets(self) -> bool {
        matches!(
            self,
            Self::Read2 { .. } | Self::Write2 { .. } | Self::Xchg2 { .. }
        )
    }

    /// Whether the instruction has no ADDR operand (its address is M0's).
    pub const fn no_addr(self) -> bool {
        matches!(self, Self::Append { .. } | Self::AddTid { .. })
    }
}

const fn rd(code: u8, name: &'static str, bytes: u8, signed: bool, d16: u8) -> DsRow {
    DsRow {
        code,
        name,
        kind: DsKind::Read { bytes, signed, d16 },
    }
}

const fn wr(code: u8, name: &'static str, bytes: u8, hi: bool) -> DsRow {
    DsRow {
        code,
        name,
        kind: DsKind::Write { bytes, hi },
    }
}

const fn rd2(code: u8, name: &'static str, dwords: u8, st64: bool) -> DsRow {
    DsRow {
        code,
        name,
        kind: DsKind::Read2 { dwords, st64 },
    }
}

const fn wr2(code: u8, name: &'static str, dwords: u8, st64: bool) -> DsRow {
    DsRow {
        code,
        name,
        kind: DsKind::Write2 { dwords, st64 },
    }
}

/// An atomic on `dwords` dwords, returning the old value with `rtn`; with
/// `two` it takes DATA1 as well (`apply(old, DATA1, DATA0)`), else
/// `apply(old, DATA0, 0)`.
const fn at(code: u8, name: &'static str, dwords: u8, rtn: bool, two: bool, apply: Rmw) -> DsRow {
    DsRow {
        code,
        name,
        kind: DsKind::Atomic {
            dwords,
            rtn,
            two,
            apply,
        },
    }
}

const fn xl(code: u8, name: &'static str, kind: DsKind) -> DsRow {
    DsRow { code, name, kind }
}

fn f32_of(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

fn f64_of(x: u64) -> f64 {
    f64::from_bits(x)
}

fn fadd(o: u64, d: u64, _: u64, bits: u32) -> u64 {
    if bits == 64 {
        (f64_of(o) + f64_of(d)).to_bits()
    } else {
        (f32_of(o) + f32_of(d)).to_bits() as u64
    }
}

/// Float min/max of LDS: the non-NaN operand wins (IEEE minNum/maxNum).
fn fmin(o: u64, d: u64, _: u64, bits: u32) -> u64 {
    if bits == 64 {
        f64_of(o).min(f64_of(d)).to_bits()
    } else {
        f32_of(o).min(f32_of(d)).to_bits() as u64
    }
}

fn fmax(o: u64, d: u64, _: u64, bits: u32) -> u64 {
    if bits == 64 {
        f64_of(o).max(f64_of(d)).to_bits()
    } else {
        f32_of(o).max(f32_of(d)).to_bits() as u64
    }
}

fn add(o: u64, d: u64, _: u64, _: u32) -> u64 {
    o.wrapping_add(d)
}
fn sub(o: u64, d: u64, _: u64, _: u32) -> u64 {
    o.wrapping_sub(d)
}
fn rsub(o: u64, d: u64, _: u64, _: u32) -> u64 {
    d.wrapping_sub(o)
}
fn smin(o: u64, d: u64, _: u64, b: u32) -> u64 {
    sx(o, b).min(sx(d, b)) as u64
}
fn smax(o: u64, d: u64, _: u64, b: u32) -> u64 {
    sx(o, b).max(sx(d, b)) as u64
}
fn umin(o: u64, d: u64, _: u64, _: u32) -> u64 {
    o.min(d)
}
fn umax(o: u64, d: u64, _: u64, _: u32) -> u64 {
    o.max(d)
}
fn and(o: u64, d: u64, _: u64, _: u32) -> u64 {
    o & d
}
fn or(o: u64, d: u64, _: u64, _: u32) -> u64 {
    o | d
}
fn xor(o: u64, d: u64, _: u64, _: u32) -> u64 {
    o ^ d
}
fn xchg(_: u64, d: u64, _: u64, _: u32) -> u64 {
    d
}
/// `cmpst`: DATA1 stored where memory equals DATA0.
fn cmpst(o: u64, d: u64, c: u64, _: u32) -> u64 {
    if o == c {
        d
    } else {
        o
    }
}
/// `cmpst_f32/f64`: as `cmpst`, compared as floats (-0 equals +0, a NaN
/// equals nothing).
fn fcmpst(o: u64, d: u64, c: u64, bits: u32) -> u64 {
    let eq = if bits == 64 {
        f64_of(o) == f64_of(c)
    } else {
        f32_of(o) == f32_of(c)
    };
    if eq {
        d
    } else {
        o
    }
}
/// `mskor`: the bits of DATA0 cleared, those of DATA1 set.
fn mskor(o: u64, d: u64, c: u64, _: u32) -> u64 {
    (o & !c) | d
}
/// `wrap`: DATA0 subtracted where that does not go below 0, else DATA1
/// added (ring-buffer indices).
fn wrap(o: u64, d: u64, c: u64, _: u32) -> u64 {
    if o >= c {
        o - c
    } else {
        o.wrapping_add(d)
    }
}

/// The DS table: `atomics` rows make the four forms of an atomic that
/// gfx90a has in 32 and 64 bits, with and without return (opcode n, n + 32
/// `_rtn`, n + 64 the 64-bit form, n + 96 its `_rtn`; `two`: it takes
/// DATA1), `pairs` one width with and without return (n, n + 32), and
/// `rows` the other rows as they are.
macro_rules! ds_table {
    (
        atomics: [$($q:literal $qn:literal $q32:literal $q64:literal $qtwo:literal $qf:expr;)*]
        pairs: [$($p:literal $pn:literal $pty:literal $pdw:literal $pf:expr;)*]
        rows: [$($row:expr,)*]
    ) => {
        &[
            $(
                at($q, concat!($qn, $q32), 1, false, $qtwo, $qf),
                at($q + 32, concat!($qn, "_rtn", $q32), 1, true, $qtwo, $qf),
                at($q + 64, concat!($qn, $q64), 2, false, $qtwo, $qf),
                at($q + 96, concat!($qn, "_rtn", $q64), 2, true, $qtwo, $qf),
            )*
            $(
                at($p, concat!($pn, $pty), $pdw, false, false, $pf),
                at($p + 32, concat!($pn, "_rtn", $pty), $pdw, true, false, $pf),
            )*
            $($row,)*
        ]
    };
}

/// The DS opcodes of gfx90a the simulator runs (numbers and names as
/// LLVM's gfx90a disassembler has them). The float adds round to nearest
/// even; float min/max return the non-NaN operand.
pub const DS_OPS: &[DsRow] = ds_table! {
    atomics: [
        0 "ds_add" "_u32" "_u64" false add;
        1 "ds_sub" "_u32" "_u64" false sub;
        2 "ds_rsub" "_u32" "_u64" false rsub;
        3 "ds_inc" "_u32" "_u64" false inc;
        4 "ds_dec" "_u32" "_u64" false dec;
        5 "ds_min" "_i32" "_i64" false smin;
        6 "ds_max" "_i32" "_i64" false smax;
        7 "ds_min" "_u32" "_u64" false umin;
        8 "ds_max" "_u32" "_u64" false umax;
        9 "ds_and" "_b32" "_b64" false and;
        10 "ds_or" "_b32" "_b64" false or;
        11 "ds_xor" "_b32" "_b64" false xor;
        12 "ds_mskor" "_b32" "_b64" true mskor;
        16 "ds_cmpst" "_b32" "_b64" true cmpst;
        17 "ds_cmpst" "_f32" "_f64" true fcmpst;
        18 "ds_min" "_f32" "_f64" false fmin;
        19 "ds_max" "_f32" "_f64" false fmax;
    ]
    pairs: [
        21 "ds_add" "_f32" 1 fadd;
        92 "ds_add" "_f64" 2 fadd;
    ]
    rows: [
        at(45, "ds_wrxchg_rtn_b32", 1, true, false, xchg),
        at(109, "ds_wrxchg_rtn_b64", 2, true, false, xchg),
        at(52, "ds_wrap_rtn_b32", 1, true, true, wrap),
        xl(46, "ds_wrxchg2_rtn_b32", DsKind::Xchg2 { dwords: 1, st64: false }),
        xl(47, "ds_wrxchg2st64_rtn_b32", DsKind::Xchg2 { dwords: 1, st64: true }),
        xl(110, "ds_wrxchg2_rtn_b64", DsKind::Xchg2 { dwords: 2, st64: false }),
        xl(111, "ds_wrxchg2st64_rtn_b64", DsKind::Xchg2 { dwords: 2, st64: true }),
        xl(126, "ds_condxchg32_rtn_b64", DsKind::CondXchg),
        xl(189, "ds_consume", DsKind::Append { sub: true }),
        xl(190, "ds_append", DsKind::Append { sub: false }),
        xl(29, "ds_write_addtid_b32", DsKind::AddTid { load: false }),
        xl(182, "ds_read_addtid_b32", DsKind::AddTid { load: true }),
        wr(13, "ds_write_b32", 4, false),
        wr2(14, "ds_write2_b32", 1, false),
        wr2(15, "ds_write2st64_b32", 1, true),
        wr(30, "ds_write_b8", 1, false),
        wr(31, "ds_write_b16", 2, false),
        rd(54, "ds_read_b32", 4, false, 0),
        rd2(55, "ds_read2_b32", 1, false),
        rd2(56, "ds_read2st64_b32", 1, true),
        rd(57, "ds_read_i8", 1, true, 0),
        rd(58, "ds_read_u8", 1, false, 0),
        rd(59, "ds_read_i16", 2, true, 0),
        rd(60, "ds_read_u16", 2, false, 0),
        xl(61, "ds_swizzle_b32", DsKind::Swizzle),
        xl(62, "ds_permute_b32", DsKind::Permute),
        xl(63, "ds_bpermute_b32", DsKind::Bpermute),
        wr(77, "ds_write_b64", 8, false),
        wr2(78, "ds_write2_b64", 2, false),
        wr2(79, "ds_write2st64_b64", 2, true),
        wr(84, "ds_write_b8_d16_hi", 1, true),
        wr(85, "ds_write_b16_d16_hi", 2, true),
        rd(86, "ds_read_u8_d16", 1, false, D16_LO),
        rd(87, "ds_read_u8_d16_hi", 1, false, D16_HI),
        rd(88, "ds_read_i8_d16", 1, true, D16_LO),
        rd(89, "ds_read_i8_d16_hi", 1, true, D16_HI),
        rd(90, "ds_read_u16_d16", 2, false, D16_LO),
        rd(91, "ds_read_u16_d16_hi", 2, false, D16_HI),
        rd(118, "ds_read_b64", 8, false, 0),
        rd2(119, "ds_read2_b64", 2, false),
        rd2(120, "ds_read2st64_b64", 2, true),
        wr(222, "ds_write_b96", 12, false),
        wr(223, "ds_write_b128", 16, false),
        rd(254, "ds_read_b96", 12, false, 0),
        rd(255, "ds_read_b128", 16, false, 0),
    ]
};

/// `DS_INDEX[code]`: 1 + the row of `code` in [`DS_OPS`], 0 for none.
const DS_INDEX: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < DS_OPS.len() {
        t[DS_OPS[i].code as usize] = i as u8 + 1;
        i += 1;
    }
    t
};

/// The row of DS opcode `code`.
pub fn ds_row(code: u8) -> Option<&'static DsRow> {
    match DS_INDEX[code as usize] {
        0 => None,
        i => Some(&DS_OPS[i as usize - 1]),
    }
}

/// A FLAT/GLOBAL/SCRATCH or MUBUF load or store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Xfer {
    /// Bytes per lane.
    pub bytes: u8,
    /// A load (else a store).
    pub load: bool,
    /// A sub-dword load sign-extends.
    pub signed: bool,
    /// A sub-dword load's half of its register ([`D16_LO`], [`D16_HI`]),
    /// 0 for the whole register.
    pub d16: u8,
    /// A store takes the data register's high half (`_d16_hi` stores).
    pub hi: bool,
}

/// One FLAT/MUBUF load or store opcode: the number, and the mnemonic
/// without the segment prefix (`flat_`, `global_`, `scratch_`, `buffer_`).
#[derive(Clone, Copy, Debug)]
pub struct FlatRow {
    /// The 7-bit opcode number (FLAT and MUBUF alike).
    pub code: u8,
    /// The mnemonic after the segment prefix.
    pub name: &'static str,
    /// What moves.
    pub xfer: Xfer,
}

const fn ld(code: u8, name: &'static str, bytes: u8, signed: bool, d16: u8) -> FlatRow {
    FlatRow {
        code,
        name,
        xfer: Xfer {
            bytes,
            load: true,
            signed,
            d16,
            hi: false,
        },
    }
}

const fn st(code: u8, name: &'static str, bytes: u8, hi: bool) -> FlatRow {
    FlatRow {
        code,
        name,
        xfer: Xfer {
            bytes,
            load: false,
            signed: false,
            d16: 0,
            hi,
        },
    }
}

/// The FLAT/GLOBAL/SCRATCH and MUBUF loads and stores.
pub const FLAT_OPS: &[FlatRow] = &[
    ld(16, "load_ubyte", 1, false, 0),
    ld(17, "load_sbyte", 1, true, 0),
    ld(18, "load_ushort", 2, false, 0),
    ld(19, "load_sshort", 2, true, 0),
    ld(20, "load_dword", 4, false, 0),
    ld(21, "load_dwordx2", 8, false, 0),
    ld(22, "load_dwordx3", 12, false, 0),
    ld(23, "load_dwordx4", 16, false, 0),
    st(24, "store_byte", 1, false),
    st(25, "store_byte_d16_hi", 1, true),
    st(26, "store_short", 2, false),
    st(27, "store_short_d16_hi", 2, true),
    st(28, "store_dword", 4, false),
    st(29, "store_dwordx2", 8, false),
    st(30, "store_dwordx3", 12, false),
    st(31, "store_dwordx4", 16, false),
    ld(32, "load_ubyte_d16", 1, false, D16_LO),
    ld(33, "load_ubyte_d16_hi", 1, false, D16_HI),
    ld(34, "load_sbyte_d16", 1, true, D16_LO),
    ld(35, "load_sbyte_d16_hi", 1, true, D16_HI),
    ld(36, "load_short_d16", 2, false, D16_LO),
    ld(37, "load_short_d16_hi", 2, false, D16_HI),
];

/// The load/store row of FLAT/MUBUF opcode `code`.
pub fn flat_row(code: u32) -> Option<&'static FlatRow> {
    FLAT_OPS.iter().find(|r| r.code as u32 == code)
}

/// One lane's access of `buf.len()` bytes at `at` of a byte memory (LDS,
/// private memory): a load fills `buf`, a store copies it; out of range is
/// `Err(fault)`, the address the memory violation reports. The DS, FLAT
/// aperture and MUBUF scratch executors of `wave.rs` all move their bytes
/// through it.
#[inline]
pub(super) fn mem_xfer(
    mem: &mut [u8],
    at: usize,
    buf: &mut [u8],
    load: bool,
    fault: u64,
) -> Result<(), u64> {
    let end = at.checked_add(buf.len()).ok_or(fault)?;
    let mem = mem.get_mut(at..end).ok_or(fault)?;
    if load {
        super::wave::copy_small(buf, mem);
    } else {
        super::wave::copy_small(mem, buf);
    }
    Ok(())
}

/// The LDS dword at `at`, replaced by `new(old)` where that gives a value:
/// the old value, or the memory violation at its shared-aperture address.
fn lds_dword(lds: &mut [u8], at: u32, new: impl FnOnce(u32) -> Option<u32>) -> Result<u32, Step> {
    let fault = SHARED_APERTURE + at as u64;
    let violation = |addr| Step::MemoryViolation { addr };
    let mut b = [0u8; 4];
    mem_xfer(lds, at as usize, &mut b, true, fault).map_err(violation)?;
    let old = u32::from_le_bytes(b);
    if let Some(v) = new(old) {
        mem_xfer(lds, at as usize, &mut v.to_le_bytes(), false, fault).map_err(violation)?;
    }
    Ok(old)
}

/// The DS kinds of one-off shape (`Xchg2`, `CondXchg`, `Append`, `AddTid`)
/// on the work-group's LDS `lds` (the other kinds run in `wave.rs::ds`).
/// Out of range is a memory violation at the shared-aperture address.
#[allow(clippy::too_many_arguments)] // the DS fields, as decoded
pub(super) fn ds_one_off(
    r: &mut WaveRegs,
    lds: &mut [u8],
    kind: DsKind,
    vdst: u8,
    addr: u8,
    data: [u8; 2],
    offset0: u8,
    offset1: u8,
) -> Step {
    let exec = r.exec;
    let single_off = (offset1 as u32) << 8 | offset0 as u32;
    let base = |r: &WaveRegs, lane: usize| r.vgpr.get(addr as usize).map_or(0, |v| v[lane]);
    let reg = |r: &WaveRegs, n: usize, lane: usize| r.vgpr.get(n).map_or(0, |v| v[lane]);
    let m0_base = r.m0 & 0xffff;
    let mut lanes = exec;
    while lanes != 0 {
        let lane = lanes.trailing_zeros() as usize;
        lanes &= lanes - 1;
        // (LDS byte address, new dword or None to keep, VGPR for the old
        // dword or None) for each dword this lane moves.
        let mut moves: [(u32, Option<u32>, Option<usize>); 4] = [(0, None, None); 4];
        let n = match kind {
            DsKind::Xchg2 { dwords, st64 } => {
                let unit = 4 * dwords as u32 * if st64 { 64 } else { 1 };
                let d = dwords as usize;
                for (e, off) in [offset0, offset1].into_iter().enumerate() {
                    let at = base(r, lane).wrapping_add(off as u32 * unit);
                    for k in 0..d {
                        let new = reg(r, data[e] as usize + k, lane);
                        moves[e * d + k] = (
                            at + 4 * k as u32,
                            Some(new),
                            Some(vdst as usize + e * d + k),
                        );
                    }
                }
                2 * d
            }
            DsKind::CondXchg => {
                let at = base(r, lane).wrapping_add(single_off) & 0xfff8;
                for (k, m) in moves[..2].iter_mut().enumerate() {
                    let v = reg(r, data[0] as usize + k, lane);
                    let new = (v >> 31 != 0).then_some(v & 0x7fff_ffff);
                    *m = (at + 4 * k as u32, new, Some(vdst as usize + k));
                }
                2
            }
            DsKind::AddTid { load } => {
                let at = m0_base + single_off + 4 * lane as u32;
                moves[0] = if load {
                    (at, None, Some(vdst as usize))
                } else {
                    (at, Some(reg(r, data[0] as usize, lane)), None)
                };
                1
            }
            DsKind::Append { sub } => {
                // Once for the wave: every active lane gets the old value.
                let at = m0_base + single_off;
                let count = exec.count_ones();
                let step = lds_dword(lds, at, |old| {
                    Some(if sub {
                        old.wrapping_sub(count)
                    } else {
                        old.wrapping_add(count)
                    })
                });
                let old = match step {
                    Ok(old) => old,
                    Err(step) => return step,
                };
                if let Some(row) = r.vgpr.get_mut(vdst as usize) {
                    for (l, v) in row.iter_mut().enumerate() {
                        if exec >> l & 1 != 0 {
                            *v = old;
                        }
                    }
                }
                return Step::Continue;
            }
            _ => return Step::IllegalInstruction,
        };
        for &(at, new, ret) in &moves[..n] {
            let old = match lds_dword(lds, at, |_| new) {
                Ok(old) => old,
                Err(step) => return step,
            };
            if let Some(row) = ret.and_then(|n| r.vgpr.get_mut(n)) {
                row[lane] = old;
            }
        }
    }
    Step::Continue
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::row_tests::run_with_lds as run;
    use crate::sim::wave::LANES;

    fn dword(lds: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(lds[at..at + 4].try_into().unwrap())
    }

    fn put(lds: &mut [u8], at: usize, v: u32) {
        lds[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// The rarer DS rows, encodings from `llvm-mc-19 -mcpu=gfx90a
    /// -show-encoding`, one wave with lane 5 inactive; every value checked
    /// bit for bit.
    #[test]
    fn rare_ds_rows_mskor_cmpst_f_wrap_wrxchg2_condxchg_append_addtid() {
        let mut r = WaveRegs::new(32);
        r.exec = !(1u64 << 5);
        r.m0 = 0x900;
        let mut lds = vec![0u8; 0x1100];
        for lane in 0..LANES {
            let b = 0x100 + 32 * lane;
            put(&mut lds, b, 0xf0f0_f0f0);
            put(&mut lds, b + 4, 0x8000_0000); // -0.0
            put(&mut lds, b + 8, 0x3333_4444);
            put(&mut lds, b + 12, 0x1111_2222);
            put(&mut lds, b + 16, 0); // f64 NaN 0x7ff8_0000_0000_0000
            put(&mut lds, b + 20, 0x7ff8_0000);
            put(&mut lds, b + 24, 10);
            put(&mut lds, 0x910 + 4 * lane, 0xeeee_eeee);
            for k in 0..2 {
                let a = 0xc80 + 0x200 * k + 8 * lane;
                put(&mut lds, a, a as u32);
                put(&mut lds, a + 4, a as u32 + 4);
            }
            let set = |r: &mut WaveRegs, n: usize, x: u32| r.vgpr[n][lane] = x;
            set(&mut r, 0, b as u32);
            set(&mut r, 1, 0x0000_ffff);
            set(&mut r, 2, 0x0000_1234);
            set(&mut r, 3, 0x0000_0001);
            set(&mut r, 4, 0xaaaa_0000);
            set(&mut r, 5, 0x5555_0000);
            set(&mut r, 6, 0); // +0.0
            set(&mut r, 7, 0x3f80_0000); // 1.0
            set(&mut r, 8, 0);
            set(&mut r, 9, 0x7ff8_0000);
            set(&mut r, 18, 0x8000_0007);
            set(&mut r, 19, 0x0000_0009);
            set(&mut r, 22, 0x5a5a);
            set(&mut r, 23, 0xa80 + 8 * lane as u32);
            set(&mut r, 28, lane as u32 % 20);
            set(&mut r, 29, 100);
            set(&mut r, 30, 0xc000_0000 | lane as u32);
        }
        put(&mut lds, 0x904, 100);
        put(&mut lds, 0x908, 1000);
        let code = [
            // ds_mskor_rtn_b32 v10, v0, v1, v2
            [0x00, 0x00, 0x58, 0xd8, 0x00, 0x01, 0x02, 0x0a],
            // ds_mskor_b64 v0, v[2:3], v[4:5] offset:8
            [0x08, 0x00, 0x98, 0xd8, 0x00, 0x02, 0x04, 0x00],
            // ds_cmpst_rtn_f32 v11, v0, v6, v7 offset:4
            [0x04, 0x00, 0x62, 0xd8, 0x00, 0x06, 0x07, 0x0b],
            // ds_cmpst_f64 v0, v[8:9], v[2:3] offset:16
            [0x10, 0x00, 0xa2, 0xd8, 0x00, 0x08, 0x02, 0x00],
            // ds_wrap_rtn_b32 v12, v0, v28, v29 offset:24
            [0x18, 0x00, 0x68, 0xd8, 0x00, 0x1c, 0x1d, 0x0c],
            // ds_wrxchg2_rtn_b32 v[14:15], v0, v6, v7 offset0:1 offset1:3
            [0x01, 0x03, 0x5c, 0xd8, 0x00, 0x06, 0x07, 0x0e],
            // ds_condxchg32_rtn_b64 v[16:17], v0, v[18:19] offset:9
            [0x09, 0x00, 0xfc, 0xd8, 0x00, 0x12, 0x00, 0x10],
            // ds_append v20 offset:4
            [0x04, 0x00, 0x7c, 0xd9, 0x00, 0x00, 0x00, 0x14],
            // ds_consume v21 offset:8
            [0x08, 0x00, 0x7a, 0xd9, 0x00, 0x00, 0x00, 0x15],
            // ds_write_addtid_b32 v30 offset:16
            [0x10, 0x00, 0x3a, 0xd8, 0x00, 0x1e, 0x00, 0x00],
            // ds_read_addtid_b32 v22 offset:16
            [0x10, 0x00, 0x6c, 0xd9, 0x00, 0x00, 0x00, 0x16],
            // ds_wrxchg2st64_rtn_b64 v[24:27], v23, v[2:3], v[4:5] offset0:1 offset1:2
            [0x01, 0x02, 0xde, 0xd8, 0x17, 0x02, 0x04, 0x18],
        ];
        assert_eq!(run(&code, &mut r, &mut lds), Step::End);
        // Once per wave: 63 active lanes.
        assert_eq!(dword(&lds, 0x904), 163, "append");
        assert_eq!(dword(&lds, 0x908), 937, "consume");
        for lane in 0..LANES {
            let b = 0x100 + 32 * lane;
            let v = |n: usize| r.vgpr[n][lane];
            if lane == 5 {
                assert_eq!(dword(&lds, b), 0xf0f0_f0f0, "inactive lane");
                assert_eq!(dword(&lds, 0x910 + 4 * lane), 0xeeee_eeee);
                assert_eq!((v(10), v(20), v(22)), (0, 0, 0x5a5a));
                continue;
            }
            assert_eq!(
                (v(10), dword(&lds, b)),
                (0xf0f0_f0f0, 0xf0f0_1234),
                "mskor_rtn_b32"
            );
            // mskor_b64 0x1111_2222_3333_4444 -> 0x5555_2222_bbbb_4440, then
            // condxchg32 stores 7 in its low dword; wrxchg2 1.0 in the high.
            assert_eq!(v(11), 0x8000_0000, "cmpst_rtn_f32: -0 == +0, old");
            assert_eq!((v(14), v(15)), (0x3f80_0000, 0x5555_2222), "wrxchg2 old");
            assert_eq!(dword(&lds, b + 4), 0, "wrxchg2 data0 over cmpst's 1.0");
            assert_eq!((v(16), v(17)), (0xbbbb_4440, 0x3f80_0000), "condxchg32 old");
            assert_eq!(dword(&lds, b + 8), 7, "condxchg32: bit 31 set, stored");
            assert_eq!(dword(&lds, b + 12), 0x3f80_0000, "condxchg32: clear, kept");
            assert_eq!(
                (dword(&lds, b + 16), dword(&lds, b + 20)),
                (0, 0x7ff8_0000),
                "cmpst_f64: NaN equals nothing"
            );
            let wrapped = if lane % 20 <= 10 {
                10 - lane as u32 % 20
            } else {
                110
            };
            assert_eq!((v(12), dword(&lds, b + 24)), (10, wrapped), "wrap_rtn");
            assert_eq!((v(20), v(21)), (100, 1000), "append/consume old value");
            assert_eq!(dword(&lds, 0x910 + 4 * lane), 0xc000_0000 | lane as u32);
            assert_eq!(v(22), 0xc000_0000 | lane as u32, "read_addtid");
            let (a0, a1) = (0xc80 + 8 * lane as u32, 0xe80 + 8 * lane as u32);
            assert_eq!(
                [v(24), v(25), v(26), v(27)],
                [a0, a0 + 4, a1, a1 + 4],
                "wrxchg2st64_rtn_b64 old"
            );
            assert_eq!(
                [
                    dword(&lds, a0 as usize),
                    dword(&lds, a0 as usize + 4),
                    dword(&lds, a1 as usize),
                    dword(&lds, a1 as usize + 4)
                ],
                [0x1234, 1, 0xaaaa_0000, 0x5555_0000],
                "wrxchg2st64_rtn_b64 new"
            );
        }
    }

    /// gfx90a has no GDS: a DS instruction with the `gds` bit is an illegal
    /// instruction (pc left at it), and prints with ` gds` as AMD's
    /// disassembler prints it.
    #[test]
    fn gds_is_an_illegal_instruction() {
        let mut r = WaveRegs::new(4);
        r.exec = u64::MAX;
        let mut lds = vec![0u8; 256];
        // ds_add_u32 v1, v2 offset:4 gds
        let gds = [0x04, 0x00, 0x01, 0xd8, 0x01, 0x02, 0x00, 0x00];
        let inst = crate::sim::decode::decode(&gds).expect("decodes");
        assert_eq!(inst.to_string(), "ds_add_u32 v1, v2 offset:4 gds");
        assert_eq!(run(&[gds], &mut r, &mut lds), Step::IllegalInstruction);
        assert_eq!(r.pc, 0x1000);
        assert!(lds.iter().all(|&b| b == 0));
    }
}
