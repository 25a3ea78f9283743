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
//! Adding such an instruction is one row here (see docs/simulator.md,
//! "Adding an instruction").

use super::atomics::dec;
use super::atomics::inc;
use super::atomics::sx;

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
            Self::Swizzle => (0, 1),
            Self::Permute | Self::Bpermute => (1, 1),
        }
    }

    /// Whether the instruction has a DATA1 operand.
    pub const fn two_data(self) -> bool {
        matches!(self, Self::Write2 { .. } | Self::Atomic { two: true, .. })
    }

    /// Whether the offset is two 8-bit element offsets.
    pub const fn two_offsets(self) -> bool {
        matches!(self, Self::Read2 { .. } | Self::Write2 { .. })
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

/// An atomic without return (`rtn`: with) on `dwords` dwords.
const fn at(code: u8, name: &'static str, dwords: u8, rtn: bool, apply: Rmw) -> DsRow {
    DsRow {
        code,
        name,
        kind: DsKind::Atomic {
            dwords,
            rtn,
            two: false,
            apply,
        },
    }
}

/// `cmpst`: DATA1 stored where memory equals DATA0.
const fn cmpst(code: u8, name: &'static str, dwords: u8, rtn: bool) -> DsRow {
    DsRow {
        code,
        name,
        kind: DsKind::Atomic {
            dwords,
            rtn,
            two: true,
            apply: |o, d, c, _| if o == c { d } else { o },
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

/// The DS opcodes of gfx90a the simulator runs (numbers and names as
/// LLVM's gfx90a disassembler has them). The float adds round to nearest
/// even; float min/max return the non-NaN operand.
pub const DS_OPS: &[DsRow] = &[
    at(0, "ds_add_u32", 1, false, add),
    at(1, "ds_sub_u32", 1, false, sub),
    at(2, "ds_rsub_u32", 1, false, rsub),
    at(3, "ds_inc_u32", 1, false, inc),
    at(4, "ds_dec_u32", 1, false, dec),
    at(5, "ds_min_i32", 1, false, smin),
    at(6, "ds_max_i32", 1, false, smax),
    at(7, "ds_min_u32", 1, false, umin),
    at(8, "ds_max_u32", 1, false, umax),
    at(9, "ds_and_b32", 1, false, and),
    at(10, "ds_or_b32", 1, false, or),
    at(11, "ds_xor_b32", 1, false, xor),
    wr(13, "ds_write_b32", 4, false),
    wr2(14, "ds_write2_b32", 1, false),
    wr2(15, "ds_write2st64_b32", 1, true),
    cmpst(16, "ds_cmpst_b32", 1, false),
    at(18, "ds_min_f32", 1, false, fmin),
    at(19, "ds_max_f32", 1, false, fmax),
    at(21, "ds_add_f32", 1, false, fadd),
    wr(30, "ds_write_b8", 1, false),
    wr(31, "ds_write_b16", 2, false),
    at(32, "ds_add_rtn_u32", 1, true, add),
    at(33, "ds_sub_rtn_u32", 1, true, sub),
    at(34, "ds_rsub_rtn_u32", 1, true, rsub),
    at(35, "ds_inc_rtn_u32", 1, true, inc),
    at(36, "ds_dec_rtn_u32", 1, true, dec),
    at(37, "ds_min_rtn_i32", 1, true, smin),
    at(38, "ds_max_rtn_i32", 1, true, smax),
    at(39, "ds_min_rtn_u32", 1, true, umin),
    at(40, "ds_max_rtn_u32", 1, true, umax),
    at(41, "ds_and_rtn_b32", 1, true, and),
    at(42, "ds_or_rtn_b32", 1, true, or),
    at(43, "ds_xor_rtn_b32", 1, true, xor),
    at(45, "ds_wrxchg_rtn_b32", 1, true, xchg),
    cmpst(48, "ds_cmpst_rtn_b32", 1, true),
    at(50, "ds_min_rtn_f32", 1, true, fmin),
    at(51, "ds_max_rtn_f32", 1, true, fmax),
    at(53, "ds_add_rtn_f32", 1, true, fadd),
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
    at(64, "ds_add_u64", 2, false, add),
    at(65, "ds_sub_u64", 2, false, sub),
    at(66, "ds_rsub_u64", 2, false, rsub),
    at(67, "ds_inc_u64", 2, false, inc),
    at(68, "ds_dec_u64", 2, false, dec),
    at(69, "ds_min_i64", 2, false, smin),
    at(70, "ds_max_i64", 2, false, smax),
    at(71, "ds_min_u64", 2, false, umin),
    at(72, "ds_max_u64", 2, false, umax),
    at(73, "ds_and_b64", 2, false, and),
    at(74, "ds_or_b64", 2, false, or),
    at(75, "ds_xor_b64", 2, false, xor),
    wr(77, "ds_write_b64", 8, false),
    wr2(78, "ds_write2_b64", 2, false),
    wr2(79, "ds_write2st64_b64", 2, true),
    cmpst(80, "ds_cmpst_b64", 2, false),
    at(82, "ds_min_f64", 2, false, fmin),
    at(83, "ds_max_f64", 2, false, fmax),
    wr(84, "ds_write_b8_d16_hi", 1, true),
    wr(85, "ds_write_b16_d16_hi", 2, true),
    rd(86, "ds_read_u8_d16", 1, false, D16_LO),
    rd(87, "ds_read_u8_d16_hi", 1, false, D16_HI),
    rd(88, "ds_read_i8_d16", 1, true, D16_LO),
    rd(89, "ds_read_i8_d16_hi", 1, true, D16_HI),
    rd(90, "ds_read_u16_d16", 2, false, D16_LO),
    rd(91, "ds_read_u16_d16_hi", 2, false, D16_HI),
    at(92, "ds_add_f64", 2, false, fadd),
    at(96, "ds_add_rtn_u64", 2, true, add),
    at(97, "ds_sub_rtn_u64", 2, true, sub),
    at(98, "ds_rsub_rtn_u64", 2, true, rsub),
    at(99, "ds_inc_rtn_u64", 2, true, inc),
    at(100, "ds_dec_rtn_u64", 2, true, dec),
    at(101, "ds_min_rtn_i64", 2, true, smin),
    at(102, "ds_max_rtn_i64", 2, true, smax),
    at(103, "ds_min_rtn_u64", 2, true, umin),
    at(104, "ds_max_rtn_u64", 2, true, umax),
    at(105, "ds_and_rtn_b64", 2, true, and),
    at(106, "ds_or_rtn_b64", 2, true, or),
    at(107, "ds_xor_rtn_b64", 2, true, xor),
    at(109, "ds_wrxchg_rtn_b64", 2, true, xchg),
    cmpst(112, "ds_cmpst_rtn_b64", 2, true),
    at(114, "ds_min_rtn_f64", 2, true, fmin),
    at(115, "ds_max_rtn_f64", 2, true, fmax),
    rd(118, "ds_read_b64", 8, false, 0),
    rd2(119, "ds_read2_b64", 2, false),
    rd2(120, "ds_read2st64_b64", 2, true),
    at(124, "ds_add_rtn_f64", 2, true, fadd),
    wr(222, "ds_write_b96", 12, false),
    wr(223, "ds_write_b128", 16, false),
    rd(254, "ds_read_b96", 12, false, 0),
    rd(255, "ds_read_b128", 16, false, 0),
];

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
