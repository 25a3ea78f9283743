//! gfx90a instruction decoder and the disassembly text LLVM prints for it.
//!
//! [`decode`] turns the bytes at a PC into an [`Inst`]; its `Display` impl
//! prints what `llvm-objdump-19 -d --mcpu=gfx90a` prints (checked by a test
//! over every instruction of the sample code objects). Encodings and opcode
//! numbers are the GFX9 ones (LLVM `SIInstrInfo` VI/GFX9 tables). Anything
//! not in the tables decodes to `None`, which the interpreter reports as an
//! illegal instruction.

use std::fmt;

pub use super::atomics::FLAT_ATOMICS;
use super::memops::ds_row;
use super::memops::flat_row;
pub use super::memops::DsKind;
pub use super::memops::DsRow;
pub use super::memops::Xfer;
pub use super::memops::D16_HI;
pub use super::memops::D16_LO;
pub use super::memops::DS_OPS;
pub use super::memops::FLAT_OPS;
use super::valu::flag;

/// Defines an opcode enum with its encoding number, LLVM mnemonic and the
/// operand widths in dwords (destination first).
macro_rules! opcodes {
    ($(#[$m:meta])* $ty:ident { $($num:literal => $var:ident $name:literal [$($w:literal),*],)* }) => {
        $(#[$m])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        #[allow(missing_docs)]
        pub enum $ty { $($var),* }
        impl $ty {
            /// The opcode for an encoding number.
            pub fn from_code(c: u32) -> Option<Self> {
                match c { $($num => Some(Self::$var),)* _ => None }
            }
            /// The LLVM mnemonic.
            pub fn name(self) -> &'static str {
                match self { $(Self::$var => $name),* }
            }
            /// Operand widths in dwords, destination first.
            pub const fn widths(self) -> &'static [u8] {
                match self { $(Self::$var => &[$($w),*]),* }
            }
            /// Every opcode, in table order (`ALL[op as usize] == op`).
            pub const ALL: &'static [Self] = &[$(Self::$var),*];
            /// Calls `k.run::<I>()` with `I = self as usize`, a constant per
            /// opcode: the executor gets one copy of its lane loop per
            /// opcode, with the per-lane `match` on the opcode folded away.
            #[inline(always)]
            pub fn dispatch<K: OpKernel>(self, k: &mut K) -> K::Out {
                match self { $(Self::$var => k.run::<{ $ty::$var as usize }>()),* }
            }
        }
    };
}

pub(crate) use opcodes;

/// An [`opcodes!`] table whose rows also say what each opcode does:
/// `CODE => Variant "llvm_name" [widths] => expression;`. The header
/// `fn NAME(args) -> Ret { prelude }` declares the method that runs a row's
/// expression (after the prelude, with the arguments in scope); an optional
/// `=> tail` after the rows is returned instead of the row's value.
macro_rules! opcodes_exec {
    (@ret $v:ident) => { $v };
    (@ret $v:ident, $t:expr) => {{
        let _ = $v;
        $t
    }};
    (
        $(#[$m:meta])* $ty:ident fn $f:ident($($arg:ident : $argty:ty),*) -> $ret:ty { $($prelude:tt)* }
        { $($num:literal => $var:ident $name:literal [$($w:literal),*] => $body:expr;)* }
        $(=> $tail:expr)?
    ) => {
        opcodes! { $(#[$m])* $ty { $($num => $var $name [$($w),*],)* } }
        impl $ty {
            /// Executes the opcode (its row's expression).
            #[inline(always)]
            #[allow(unused_variables, clippy::unnecessary_cast)]
            pub fn $f(self, $($arg: $argty),*) -> $ret {
                $($prelude)*
                #[allow(clippy::let_unit_value)]
                let v = match self { $(Self::$var => $body,)* };
                opcodes_exec!(@ret v $(, $tail)?)
            }
        }
    };
}
use super::salu::gpr_idx_text;
pub use super::salu::Sop1;
pub use super::salu::Sop2;
pub use super::salu::Sopc;
pub use super::salu::Sopk;
pub use super::salu::Sopp;
use super::salu::SoppImm;
pub use super::valu::VAlu;
pub use super::vop3p::Vop3pOp;
pub(crate) use opcodes_exec;

/// Code monomorphised per opcode by `dispatch` (see [`VAlu::dispatch`]).
pub trait OpKernel {
    /// What a run returns.
    type Out;
    /// Runs with the opcode `ALL[OP]`.
    fn run<const OP: usize>(&mut self) -> Self::Out;
}

opcodes! {
    /// SMEM loads, one row each: `[dwords loaded, SGPRs of the base]`; a
    /// base of 2 SGPRs is an address, one of 4 a buffer resource (base
    /// address in bits 0..47, size in bytes in word 2; dwords past it load
    /// as 0).
    Smem {
        0 => LoadDword "s_load_dword" [1, 2],
        1 => LoadDwordx2 "s_load_dwordx2" [2, 2],
        2 => LoadDwordx4 "s_load_dwordx4" [4, 2],
        3 => LoadDwordx8 "s_load_dwordx8" [8, 2],
        4 => LoadDwordx16 "s_load_dwordx16" [16, 2],
        8 => BufferLoadDword "s_buffer_load_dword" [1, 4],
        9 => BufferLoadDwordx2 "s_buffer_load_dwordx2" [2, 4],
        10 => BufferLoadDwordx4 "s_buffer_load_dwordx4" [4, 4],
        11 => BufferLoadDwordx8 "s_buffer_load_dwordx8" [8, 4],
        12 => BufferLoadDwordx16 "s_buffer_load_dwordx16" [16, 4],
    }
}

/// Integer type of a vector compare.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum CmpTy {
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// `v_cmp_class_f32`: src1 is a class mask.
    ClassF32,
    /// `v_cmp_class_f64`.
    ClassF64,
}

/// A vector compare (`v_cmp*` / `v_cmpx*`), VOPC or its VOP3 form.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct VCmp {
    /// Operand type.
    pub ty: CmpTy,
    /// Condition index within the type's group of 8 (ints) or 16 (f32).
    pub cond: u8,
    /// `v_cmpx`: also writes EXEC.
    pub x: bool,
}

impl VCmp {
    fn from_code(c: u32) -> Option<Self> {
        let (ty, cond, x) = match c {
            0x10 => (CmpTy::ClassF32, 0, false),
            0x11 => (CmpTy::ClassF32, 0, true),
            0x12 => (CmpTy::ClassF64, 0, false),
            0x13 => (CmpTy::ClassF64, 0, true),
            0x60..=0x6f => (CmpTy::F64, c - 0x60, false),
            0x70..=0x7f => (CmpTy::F64, c - 0x70, true),
            0x40..=0x4f => (CmpTy::F32, c - 0x40, false),
            0x50..=0x5f => (CmpTy::F32, c - 0x50, true),
            0xa0..=0xff => {
                let group = (c - 0xa0) / 8;
                let ty = [
                    CmpTy::I16,
                    CmpTy::U16,
                    CmpTy::I16,
                    CmpTy::U16,
                    CmpTy::I32,
                    CmpTy::U32,
                ]
                .get(group as usize % 6)
                .copied();
                let ty = match group {
                    0..=3 => ty?,
                    4 | 6 => CmpTy::I32,
                    5 | 7 => CmpTy::U32,
                    8 | 10 => CmpTy::I64,
                    _ => CmpTy::U64,
                };
                (ty, (c - 0xa0) % 8, matches!(group, 2 | 3 | 6 | 7 | 10 | 11))
            }
            _ => return None,
        };
        Some(Self {
            ty,
            cond: cond as u8,
            x,
        })
    }

    /// Dwords per source operand (src0, src1).
    pub fn src_widths(self) -> (u8, u8) {
        match self.ty {
            CmpTy::I64 | CmpTy::U64 | CmpTy::F64 => (2, 2),
            CmpTy::ClassF64 => (2, 1),
            _ => (1, 1),
        }
    }

    fn name(self) -> String {
        const INT: [&str; 8] = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"];
        const FLT: [&str; 16] = [
            "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq",
            "nlt", "tru",
        ];
        let cond = match self.ty {
            CmpTy::ClassF32 | CmpTy::ClassF64 => Some(&"class"),
            CmpTy::F32 | CmpTy::F64 => FLT.get(self.cond as usize),
            _ => INT.get(self.cond as usize),
        }
        .copied()
        .unwrap_or("?");
        let ty = match self.ty {
            CmpTy::I16 => "i16",
            CmpTy::U16 => "u16",
            CmpTy::I32 => "i32",
            CmpTy::U32 => "u32",
            CmpTy::I64 => "i64",
            CmpTy::U64 => "u64",
            CmpTy::F32 | CmpTy::ClassF32 => "f32",
            CmpTy::F64 | CmpTy::ClassF64 => "f64",
        };
        format!("v_cmp{}_{}_{}", if self.x { "x" } else { "" }, cond, ty)
    }
}

/// A VALU operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum VOp {
    /// Arithmetic, logic, moves.
    Alu(VAlu),
    /// Compares.
    Cmp(VCmp),
}

/// Which encoding a VALU instruction used.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum VEnc {
    /// 32-bit VOP1/VOP2/VOPC.
    E32,
    /// 64-bit VOP3.
    E64,
}

/// A DS (LDS) opcode: its number, a row of [`DS_OPS`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DsOp(pub u8);

impl DsOp {
    fn from_code(c: u32) -> Option<Self> {
        ds_row(c as u8).map(|_| Self(c as u8))
    }

    /// The opcode's row.
    pub fn row(self) -> &'static DsRow {
        // Only `from_code` makes a DsOp, so the row exists.
        ds_row(self.0).unwrap_or(&DS_OPS[0])
    }

    /// What the opcode does.
    pub fn kind(self) -> DsKind {
        self.row().kind
    }

    fn name(self) -> &'static str {
        self.row().name
    }

    /// Dwords of data written (per data operand) and dwords returned.
    pub fn data_ret_widths(self) -> (u8, u8) {
        self.kind().data_ret_widths()
    }
}

/// FLAT segment.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FlatSeg {
    /// `flat_*` (generic addresses).
    Flat,
    /// `scratch_*`.
    Scratch,
    /// `global_*`.
    Global,
}

/// FLAT/GLOBAL/SCRATCH and MUBUF memory operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FlatOp {
    /// A load or store: the opcode number (a row of [`FLAT_OPS`]) and what
    /// it moves.
    Mem(u8, Xfer),
    /// 32-bit atomic (index into [`FLAT_ATOMICS`]).
    Atomic(u8),
    /// 64-bit atomic (`_x2`, index into [`FLAT_ATOMICS`]).
    Atomic64(u8),
}

impl FlatOp {
    /// The FLAT/GLOBAL/SCRATCH and MUBUF operation of an opcode number
    /// (the two encodings number them alike on gfx90a).
    fn from_code(c: u32) -> Option<Self> {
        if let Some(row) = flat_row(c) {
            return Some(Self::Mem(row.code, row.xfer));
        }
        Some(match c {
            64..=81 => {
                let i = (c - 64) as u8;
                if FLAT_ATOMICS[i as usize].wide {
                    Self::Atomic64(i)
                } else {
                    Self::Atomic(i)
                }
            }
            96..=108 => Self::Atomic64((c - 96) as u8),
            _ => return None,
        })
    }

    /// Bytes per lane in memory.
    pub fn bytes(self) -> u8 {
        match self {
            Self::Mem(_, x) => x.bytes,
            Self::Atomic(_) => 4,
            Self::Atomic64(_) => 8,
        }
    }

    /// The load or store (`None` for atomics).
    pub fn xfer(self) -> Option<Xfer> {
        match self {
            Self::Mem(_, x) => Some(x),
            _ => None,
        }
    }

    /// Dwords of the data operand (atomics: with cmpswap's compare value).
    pub fn data_dwords(self) -> u8 {
        match self {
            Self::Mem(_, x) if x.hi => 1,
            Self::Mem(_, x) => x.bytes.div_ceil(4),
            Self::Atomic(1) => 2,
            Self::Atomic(_) => 1,
            Self::Atomic64(1) => 4,
            Self::Atomic64(_) => 2,
        }
    }

    fn name(self) -> String {
        match self {
            Self::Mem(code, _) => flat_row(code as u32).map_or("?", |r| r.name).to_owned(),
            Self::Atomic(i) => format!(
                "atomic_{}",
                FLAT_ATOMICS.get(i as usize).map_or("?", |a| a.name)
            ),
            Self::Atomic64(i) => match FLAT_ATOMICS.get(i as usize) {
                Some(a) if a.wide => format!("atomic_{}", a.name),
                a => format!("atomic_{}_x2", a.map_or("?", |a| a.name)),
            },
        }
    }
}

/// One decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inst {
    /// Size in bytes (4, 8 or 12 with a literal).
    pub size: u8,
    /// The 32-bit literal constant, when an operand is 255.
    pub literal: Option<u32>,
    /// Format and fields.
    pub kind: Kind,
}

/// Decoded fields per encoding family. Source operands are the raw 9-bit
/// codes (0..=255 scalar/constant, 256..=511 VGPR).
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Kind {
    Sop2 {
        op: Sop2,
        sdst: u8,
        src0: u16,
        src1: u16,
    },
    Sop1 {
        op: Sop1,
        sdst: u8,
        src0: u16,
    },
    Sopc {
        op: Sopc,
        src0: u16,
        src1: u16,
    },
    Sopk {
        op: Sopk,
        sdst: u8,
        simm16: u16,
    },
    Sopp {
        op: Sopp,
        simm16: u16,
    },
    Smem {
        op: Smem,
        sdata: u8,
        sbase: u8,
        offset: i32,
        glc: bool,
    },
    Valu {
        op: VOp,
        enc: VEnc,
        /// VGPR number (or SGPR for readfirstlane / VOPC-e64 sdst).
        dst: u8,
        /// Carry-out SGPR pair of VOP3b.
        sdst: u8,
        src: [u16; 3],
        abs: u8,
        neg: u8,
        clamp: bool,
        omod: u8,
        /// VOP3 `op_sel` (bits 0..2: source i's high half; bit 3: the
        /// result into the destination's high half), for the VOP3-only
        /// 16-bit opcodes ([`VAlu::has_op_sel`]).
        op_sel: u8,
    },
    Ds {
        op: DsOp,
        vdst: u8,
        addr: u8,
        data0: u8,
        data1: u8,
        offset0: u8,
        offset1: u8,
        gds: bool,
    },
    /// VOP3P: packed math, accumulation-register moves and MFMA.
    Vop3p(Vop3pFields),
    /// A VOP1/VOP2/VOPC operation in the SDWA form (sub-dword operand and
    /// result selection).
    Sdwa {
        op: VOp,
        /// VGPR destination (VOP1/VOP2).
        dst: u8,
        /// Compare destination: `Some(sgpr pair)` or `None` for VCC.
        sdst: Option<u8>,
        /// Operand codes (256+ VGPR, else SGPR).
        src: [u16; 2],
        sdwa: SdwaSel,
    },
    /// A VOP1/VOP2 operation in the DPP form (src0 read from another lane
    /// of the row or wave).
    Dpp {
        op: VAlu,
        dst: u8,
        /// VGPR numbers of src0 and src1.
        src: [u8; 2],
        ctrl: u16,
        bound_ctrl: bool,
        neg: [bool; 2],
        abs: [bool; 2],
        bank_mask: u8,
        row_mask: u8,
    },
    /// MUBUF (buffer) loads, stores and atomics: through a swizzled
    /// (ADD_TID_ENABLE) resource into the wave's private memory (scratch),
    /// through any other resource into global memory.
    Mubuf {
        op: FlatOp,
        vdata: u8,
        vaddr: u8,
        srsrc: u8,
        soffset: u8,
        /// The data registers are AGPRs.
        acc: bool,
        offset: u16,
        offen: bool,
        idxen: bool,
        glc: bool,
        slc: bool,
        /// gfx90a's system-coherence bit.
        scc: bool,
    },
    Flat {
        seg: FlatSeg,
        op: FlatOp,
        vdst: u8,
        addr: u8,
        data: u8,
        /// SGPR pair base, or `None` for `off` / FLAT.
        saddr: Option<u8>,
        offset: i32,
        glc: bool,
        slc: bool,
        /// Data and destination are accumulation registers.
        acc: bool,
    },
}

/// The fields of a VOP3P instruction ([`Kind::Vop3p`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Vop3pFields {
    pub op: Vop3pOp,
    pub dst: u8,
    pub src: [u16; 3],
    pub op_sel: u8,
    pub op_sel_hi: u8,
    pub neg_lo: u8,
    pub neg_hi: u8,
    pub clamp: bool,
    /// MFMA: C and D are accumulation registers.
    pub acc_cd: bool,
}

fn word(b: &[u8], i: usize) -> Option<u32> {
    b.get(i * 4..i * 4 + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
}

/// Decodes the instruction at the start of `bytes` (little-endian code).
/// Returns `None` for anything the simulator does not know.
pub fn decode(bytes: &[u8]) -> Option<Inst> {
    let w0 = word(bytes, 0)?;
    let mut size = 4u8;
    let kind = if w0 >> 30 == 0b10 && (w0 >> 28) != 0b1011 {
        Kind::Sop2 {
            op: Sop2::from_code((w0 >> 23) & 0x7f)?,
            sdst: ((w0 >> 16) & 0x7f) as u8,
            src0: (w0 & 0xff) as u16,
            src1: ((w0 >> 8) & 0xff) as u16,
        }
    } else if w0 >> 23 == 0x17d {
        let op = Sop1::from_code((w0 >> 8) & 0xff)?;
        if matches!(op, Sop1::SetpcB64 | Sop1::SwappcB64) && (w0 & 0xff) > 123 {
            return None; // the target is an SGPR pair
        }
        Kind::Sop1 {
            op,
            sdst: ((w0 >> 16) & 0x7f) as u8,
            src0: (w0 & 0xff) as u16,
        }
    } else if w0 >> 23 == 0x17e {
        Kind::Sopc {
            op: Sopc::from_code((w0 >> 16) & 0x7f)?,
            src0: (w0 & 0xff) as u16,
            src1: ((w0 >> 8) & 0xff) as u16,
        }
    } else if w0 >> 23 == 0x17f {
        Kind::Sopp {
            op: Sopp::from_code((w0 >> 16) & 0x7f)?,
            simm16: (w0 & 0xffff) as u16,
        }
    } else if w0 >> 28 == 0b1011 {
        Kind::Sopk {
            op: Sopk::from_code((w0 >> 23) & 0x1f)?,
            sdst: ((w0 >> 16) & 0x7f) as u8,
            simm16: (w0 & 0xffff) as u16,
        }
    } else if w0 >> 26 == 0b110000 {
        let w1 = word(bytes, 1)?;
        size = 8;
        if (w0 >> 17) & 1 == 0 || (w0 >> 14) & 1 != 0 {
            return None; // SGPR offsets are not emitted by our kernels
        }
        let raw = w1 & 0x1f_ffff;
        Kind::Smem {
            op: Smem::from_code((w0 >> 18) & 0xff)?,
            sdata: ((w0 >> 6) & 0x7f) as u8,
            sbase: ((w0 & 0x3f) << 1) as u8,
            offset: ((raw << 11) as i32) >> 11,
            glc: (w0 >> 16) & 1 != 0,
        }
    } else if w0 >> 31 == 0 && w0 & 0x1ff == 0xfa {
        let w1 = word(bytes, 1)?;
        size = 8;
        decode_dpp(w0, w1)?
    } else if w0 >> 31 == 0 && w0 & 0x1ff == 0xf9 {
        let w1 = word(bytes, 1)?;
        size = 8;
        decode_sdwa(w0, w1)?
    } else if w0 >> 31 == 0 {
        decode_vop_e32(w0)?
    } else if w0 >> 23 == 0x1a7 {
        let w1 = word(bytes, 1)?;
        size = 8;
        decode_vop3p(w0, w1)?
    } else if w0 >> 26 == 0b110100 {
        let w1 = word(bytes, 1)?;
        size = 8;
        decode_vop3(w0, w1)?
    } else if w0 >> 26 == 0b111000 {
        let w1 = word(bytes, 1)?;
        size = 8;
        let op = FlatOp::from_code((w0 >> 18) & 0x7f)?;
        if (w0 >> 16) & 1 != 0 {
            return None; // LDS-direct loads: not emitted
        }
        Kind::Mubuf {
            op,
            offset: (w0 & 0xfff) as u16,
            offen: (w0 >> 12) & 1 != 0,
            idxen: (w0 >> 13) & 1 != 0,
            glc: (w0 >> 14) & 1 != 0,
            slc: (w0 >> 17) & 1 != 0,
            scc: (w0 >> 15) & 1 != 0,
            vaddr: (w1 & 0xff) as u8,
            vdata: ((w1 >> 8) & 0xff) as u8,
            srsrc: (((w1 >> 16) & 0x1f) << 2) as u8,
            soffset: (w1 >> 24) as u8,
            acc: (w1 >> 23) & 1 != 0,
        }
    } else if w0 >> 26 == 0b110110 {
        let w1 = word(bytes, 1)?;
        size = 8;
        Kind::Ds {
            op: DsOp::from_code((w0 >> 17) & 0xff)?,
            // Printed as AMD's disassembler prints it; executing it is an
            // illegal instruction (gfx90a has no GDS: `memops` docs).
            gds: (w0 >> 16) & 1 != 0,
            offset1: ((w0 >> 8) & 0xff) as u8,
            offset0: (w0 & 0xff) as u8,
            vdst: (w1 >> 24) as u8,
            data1: ((w1 >> 16) & 0xff) as u8,
            data0: ((w1 >> 8) & 0xff) as u8,
            addr: (w1 & 0xff) as u8,
        }
    } else if w0 >> 26 == 0b110111 {
        let w1 = word(bytes, 1)?;
        size = 8;
        let seg = match (w0 >> 14) & 3 {
            0 => FlatSeg::Flat,
            1 => FlatSeg::Scratch,
            2 => FlatSeg::Global,
            _ => return None,
        };
        let saddr = ((w1 >> 16) & 0x7f) as u8;
        if seg == FlatSeg::Flat && saddr != 0 {
            return None; // FLAT has no saddr; the field must be 0
        }
        let offset = match seg {
            FlatSeg::Flat => (w0 & 0xfff) as i32,
            _ => (((w0 & 0x1fff) << 19) as i32) >> 19,
        };
        let op = FlatOp::from_code((w0 >> 18) & 0x7f)?;
        if seg == FlatSeg::Scratch && matches!(op, FlatOp::Atomic(_) | FlatOp::Atomic64(_)) {
            return None; // scratch has no atomics
        }
        Kind::Flat {
            seg,
            op,
            vdst: (w1 >> 24) as u8,
            addr: (w1 & 0xff) as u8,
            data: ((w1 >> 8) & 0xff) as u8,
            saddr: (seg != FlatSeg::Flat && saddr != 0x7f).then_some(saddr),
            offset,
            glc: (w0 >> 16) & 1 != 0,
            slc: (w0 >> 17) & 1 != 0,
            acc: (w1 >> 23) & 1 != 0,
        }
    } else {
        return None;
    };
    let mut inst = Inst {
        size,
        literal: None,
        kind,
    };
    if inst.uses_literal() {
        if size != 4 {
            return None; // gfx9 VOP3/SMEM have no literal
        }
        inst.literal = Some(word(bytes, 1)?);
        inst.size = 8;
    }
    Some(inst)
}

fn decode_vop_e32(w0: u32) -> Option<Kind> {
    let src0 = (w0 & 0x1ff) as u16;
    if src0 == 0xfa {
        return None; // DPP: decoded by decode_dpp
    }
    let (op, dst, src1) = match (w0 >> 25) & 0x7f {
        0x3f => {
            let op = VAlu::from_code(0x140 + ((w0 >> 9) & 0xff))?;
            if op == VAlu::Nop && (w0 & 0x1_fe01ff) != 0 {
                return None; // v_nop has no operands
            }
            let dst = (w0 >> 17) & 0xff;
            if op == VAlu::ReadfirstlaneB32 && (src0 < 256 || dst > 127 || dst == 125) {
                return None; // a VGPR source, a scalar register destination
            }
            if op == VAlu::SwapB32 && src0 < 256 {
                return None; // both operands are VGPRs
            }
            (VOp::Alu(op), ((w0 >> 17) & 0xff) as u8, 0)
        }
        0x3e => {
            let op = VCmp::from_code((w0 >> 17) & 0xff)?;
            (VOp::Cmp(op), 106, 256 + ((w0 >> 9) & 0xff) as u16)
        }
        n => {
            let op = VAlu::from_code(0x100 + (n & 0x3f))?;
            (
                VOp::Alu(op),
                ((w0 >> 17) & 0xff) as u8,
                256 + ((w0 >> 9) & 0xff) as u16,
            )
        }
    };
    if let VOp::Alu(a) = op {
        if a.only_vop3() {
            return None;
        }
    }
    Some(Kind::Valu {
        op,
        enc: VEnc::E32,
        dst,
        sdst: 106,
        src: [src0, src1, 106],
        abs: 0,
        neg: 0,
        clamp: false,
        omod: 0,
        op_sel: 0,
    })
}

fn decode_vop3(w0: u32, w1: u32) -> Option<Kind> {
    let code = (w0 >> 16) & 0x3ff;
    let op = match code {
        0..=0xff => VOp::Cmp(VCmp::from_code(code)?),
        _ => VOp::Alu(VAlu::from_code(code)?),
    };
    let vop3b = matches!(op, VOp::Alu(a) if a.has_carry_out());
    let op_sel = ((w0 >> 11) & 0xf) as u8;
    if !vop3b && op_sel != 0 && !matches!(op, VOp::Alu(a) if a.has_op_sel()) {
        return None; // op_sel: only the VOP3-only 16-bit opcodes have it
    }
    // The 16-bit integer opcodes with op_sel ignore abs and neg (LLVM does
    // not print them).
    let int_op_sel = matches!(op, VOp::Alu(a) if a.has_op_sel() && a.flags() & flag::INT16 != 0);
    Some(Kind::Valu {
        op,
        enc: VEnc::E64,
        dst: (w0 & 0xff) as u8,
        sdst: if vop3b { ((w0 >> 8) & 0x7f) as u8 } else { 0 },
        src: [
            (w1 & 0x1ff) as u16,
            ((w1 >> 9) & 0x1ff) as u16,
            ((w1 >> 18) & 0x1ff) as u16,
        ],
        abs: if vop3b || int_op_sel {
            0
        } else {
            ((w0 >> 8) & 7) as u8
        },
        neg: if int_op_sel { 0 } else { (w1 >> 29) as u8 },
        clamp: (w0 >> 15) & 1 != 0,
        omod: ((w1 >> 27) & 3) as u8,
        op_sel: if vop3b { 0 } else { op_sel },
    })
}

impl Inst {
    fn uses_literal(&self) -> bool {
        match &self.kind {
            Kind::Sop2 { src0, src1, .. } => *src0 == 255 || *src1 == 255,
            Kind::Sopc { src0, src1, op } => *src0 == 255 || (*src1 == 255 && op.widths()[1] != 0),
            Kind::Sop1 { src0, op, .. } => *src0 == 255 && op.widths().len() > 1,
            Kind::Valu {
                enc: VEnc::E32,
                src,
                op,
                ..
            } => src[0] == 255 || matches!(op, VOp::Alu(a) if a.has_k()),
            _ => false,
        }
    }

    /// The target of a PC-relative branch (`s_branch`, `s_cbranch_*`) at
    /// `pc`.
    pub fn branch_target(&self, pc: u64) -> Option<u64> {
        match self.kind {
            Kind::Sopp { op, simm16 } if op.is_branch() => Some(
                pc.wrapping_add(4)
                    .wrapping_add((simm16 as i16 as i64 * 4) as u64),
            ),
            _ => None,
        }
    }

    /// The text amd-dbgapi's disassemble-instruction call gives for
    /// this instruction at `pc`: LLVM's text, and for a branch two spaces,
    /// `# ` and the target (`symbol`, or the address in hex).
    pub fn dbgapi_text(&self, pc: u64, symbol: Option<&str>) -> String {
        match self.branch_target(pc) {
            Some(t) => match symbol {
                Some(sym) => format!("{self}  # {sym}"),
                None => format!("{self}  # {t:#x}"),
            },
            // LLVM 15 (comgr's, which the real library uses) prints
            // s_barrier and s_set_gpr_idx_off with a trailing space.
            None if matches!(
                self.kind,
                Kind::Sopp {
                    op: Sopp::Barrier,
                    simm16: 0
                } | Kind::Sopp {
                    op: Sopp::SetGprIdxOff,
                    ..
                }
            ) =>
            {
                format!("{self} ")
            }
            None => self.to_string(),
        }
    }

    /// Whether control never falls through to the next instruction.
    pub fn is_terminator(&self) -> bool {
        matches!(self.kind, Kind::Sopp { op, .. } if op.is_terminator())
    }
}

/// 16-bit source operands of a VALU operation: 0 none, 1 integer, 2 f16.
fn operand16(op: &VOp) -> u8 {
    match op {
        VOp::Cmp(c) if matches!(c.ty, CmpTy::I16 | CmpTy::U16) => 1,
        VOp::Alu(a) if a.flags() & flag::INT16 != 0 => 1,
        VOp::Alu(a) if a.flags() & flag::F16 != 0 => 2,
        _ => 0,
    }
}

/// Formats a source operand of `width` dwords the way LLVM prints it.
struct Src {
    code: u16,
    width: u8,
    literal: Option<u32>,
}

fn reg_range(f: &mut fmt::Formatter<'_>, prefix: &str, n: u16, width: u8) -> fmt::Result {
    // Scalar register tuples are aligned (the low bits of the number are
    // ignored): pairs to 2, wider ones to 4.
    let n = match (prefix, width) {
        ("s" | "ttmp", 2) => n & !1,
        ("s" | "ttmp", 3..) => n & !3,
        _ => n,
    };
    if width <= 1 {
        write!(f, "{prefix}{n}")
    } else {
        write!(f, "{prefix}[{}:{}]", n, n + width as u16 - 1)
    }
}

impl fmt::Display for Src {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.code;
        let w = self.width;
        let pair = w >= 2;
        match c {
            0..=101 => reg_range(f, "s", c, w),
            102 | 103 if pair => f.write_str("flat_scratch"),
            102 => f.write_str("flat_scratch_lo"),
            103 => f.write_str("flat_scratch_hi"),
            104 if pair => f.write_str("xnack_mask"),
            104 => f.write_str("xnack_mask_lo"),
            105 => f.write_str("xnack_mask_hi"),
            106 if pair => f.write_str("vcc"),
            106 => f.write_str("vcc_lo"),
            107 => f.write_str("vcc_hi"),
            108..=123 => reg_range(f, "ttmp", c - 108, w),
            124 => f.write_str("m0"),
            125 => f.write_str("null"),
            126 if pair => f.write_str("exec"),
            126 => f.write_str("exec_lo"),
            127 => f.write_str("exec_hi"),
            128..=192 => write!(f, "{}", c - 128),
            193..=208 => write!(f, "-{}", c - 192),
            235 => f.write_str("src_shared_base"),
            236 => f.write_str("src_shared_limit"),
            237 => f.write_str("src_private_base"),
            238 => f.write_str("src_private_limit"),
            239 => f.write_str("src_pops_exiting_wave_id"),
            240 => f.write_str("0.5"),
            241 => f.write_str("-0.5"),
            242 => f.write_str("1.0"),
            243 => f.write_str("-1.0"),
            244 => f.write_str("2.0"),
            245 => f.write_str("-2.0"),
            246 => f.write_str("4.0"),
            247 => f.write_str("-4.0"),
            248 if pair => f.write_str("0.15915494309189532"),
            248 => f.write_str("0.15915494"),
            251 => f.write_str("src_vccz"),
            252 => f.write_str("src_execz"),
            253 => f.write_str("src_scc"),
            254 => f.write_str("src_lds_direct"),
            // A literal that an inline constant could hold prints as one.
            255 => match self.literal.unwrap_or(0) {
                l @ 0..=64 => write!(f, "{l}"),
                l if (l as i32) < 0 && (l as i32) >= -16 => write!(f, "{}", l as i32),
                l => write!(f, "0x{l:x}"),
            },
            256..=511 => reg_range(f, "v", c - 256, w),
            _ => write!(f, "<invalid {c}>"),
        }
    }
}

fn waitcnt(f: &mut fmt::Formatter<'_>, imm: u16) -> fmt::Result {
    let vm = (imm & 0xf) | ((imm >> 14) & 3) << 4;
    let exp = (imm >> 4) & 7;
    let lgkm = (imm >> 8) & 0xf;
    let all = vm == 63 && exp == 7 && lgkm == 15;
    let mut parts = Vec::new();
    if all || vm != 63 {
        parts.push(format!("vmcnt({vm})"));
    }
    if all || exp != 7 {
        parts.push(format!("expcnt({exp})"));
    }
    if all || lgkm != 15 {
        parts.push(format!("lgkmcnt({lgkm})"));
    }
    write!(f, " {}", parts.join(" "))
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lit = self.literal;
        let src = |code: u16, width: u8| Src {
            code,
            width,
            literal: lit,
        };
        match &self.kind {
            Kind::Sop2 {
                op,
                sdst,
                src0,
                src1,
            } => {
                let w = op.widths();
                write!(
                    f,
                    "{} {}, {}, {}",
                    op.name(),
                    src(*sdst as u16, w[0]),
                    src(*src0, w[1]),
                    src(*src1, w[2])
                )
            }
            Kind::Sop1 { op, sdst, src0 } => {
                let w = op.widths();
                f.write_str(op.name())?;
                match w {
                    [d] => write!(f, " {}", src(*sdst as u16, *d)),
                    [0, s] => write!(f, " {}", src(*src0, *s)),
                    [d, s, ..] => write!(f, " {}, {}", src(*sdst as u16, *d), src(*src0, *s)),
                    _ => Ok(()),
                }
            }
            Kind::Sopc { op, src0, src1 } if op.widths()[1] == 0 => {
                let w = op.widths();
                write!(
                    f,
                    "{} {}, {}",
                    op.name(),
                    src(*src0, w[0]),
                    gpr_idx_text(*src1)
                )
            }
            Kind::Sopc { op, src0, src1 } => {
                let w = op.widths();
                write!(
                    f,
                    "{} {}, {}",
                    op.name(),
                    src(*src0, w[0]),
                    src(*src1, w[1])
                )
            }
            Kind::Sopk { op, sdst, simm16 } => {
                write!(f, "{} {}, 0x{:x}", op.name(), src(*sdst as u16, 1), simm16)
            }
            Kind::Sopp { op, simm16 } => {
                f.write_str(op.name())?;
                match op.imm() {
                    SoppImm::OmitZero if *simm16 == 0 => Ok(()),
                    SoppImm::HexAbove64 if *simm16 > 64 => write!(f, " 0x{simm16:x}"),
                    SoppImm::Waitcnt => waitcnt(f, *simm16),
                    SoppImm::GprIdx => write!(f, " {}", gpr_idx_text(*simm16)),
                    SoppImm::Never => Ok(()),
                    _ => write!(f, " {simm16}"),
                }
            }
            Kind::Smem {
                op,
                sdata,
                sbase,
                offset,
                glc,
            } => {
                write!(
                    f,
                    "{} {}, {}, ",
                    op.name(),
                    src(*sdata as u16, op.widths()[0]),
                    src(*sbase as u16, op.widths()[1])
                )?;
                if *offset < 0 {
                    write!(f, "-0x{:x}", offset.unsigned_abs())?;
                } else {
                    write!(f, "0x{offset:x}")?;
                }
                if *glc {
                    f.write_str(" glc")?;
                }
                Ok(())
            }
            Kind::Valu { .. } => self.fmt_valu(f),
            Kind::Ds { .. } => self.fmt_ds(f),
            Kind::Flat { .. } => self.fmt_flat(f),
            Kind::Vop3p(_) => self.fmt_vop3p(f),
            Kind::Mubuf { .. } => self.fmt_mubuf(f),
            Kind::Sdwa { .. } => self.fmt_sdwa(f),
            Kind::Dpp { .. } => self.fmt_dpp(f),
        }
    }
}

impl Inst {
    fn fmt_valu(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Kind::Valu {
            op,
            enc,
            dst,
            sdst,
            src,
            abs,
            neg,
            clamp,
            omod,
            op_sel,
        } = &self.kind
        else {
            return Ok(());
        };
        let lit = self.literal;
        let s = |code: u16, width: u8| Src {
            code,
            width,
            literal: lit,
        };
        let e64 = *enc == VEnc::E64;
        match op {
            VOp::Cmp(c) => {
                let suffix = if e64 { "_e64" } else { "_e32" };
                let (w0, w1) = c.src_widths();
                let d = if e64 { *dst as u16 } else { 106 };
                write!(f, "{}{} {}, ", c.name(), suffix, s(d, 2))?;
                self.fmt_mod_src(f, 0, s(src[0], w0), *abs, *neg)?;
                f.write_str(", ")?;
                self.fmt_mod_src(f, 1, s(src[1], w1), *abs, *neg)?;
            }
            VOp::Alu(a) => {
                let w = a.widths();
                let suffix = if a.no_suffix() || a.sgpr_dst() {
                    ""
                } else if e64 {
                    "_e64"
                } else {
                    "_e32"
                };
                f.write_str(a.name())?;
                f.write_str(suffix)?;
                if w.is_empty() {
                    return Ok(());
                }
                let dst = if a.sgpr_dst() {
                    *dst as u16
                } else {
                    256 + *dst as u16
                };
                write!(f, " {}", s(dst, w[0]))?;
                if a.has_carry_out() {
                    let c = if e64 { *sdst as u16 } else { 106 };
                    write!(f, ", {}", s(c, 2))?;
                }
                if a.has_k() && !e64 {
                    let k = lit.unwrap_or(0);
                    let (x, y) = (s(src[0], 1), s(src[1], 1));
                    return match a {
                        VAlu::MadmkF32 => write!(f, ", {x}, 0x{k:x}, {y}"),
                        _ => write!(f, ", {x}, {y}, 0x{k:x}"),
                    };
                }
                for (i, &width) in w.iter().enumerate().skip(1) {
                    f.write_str(", ")?;
                    let i = i - 1;
                    let code = src.get(i).copied().unwrap_or(0);
                    if a.has_mask_in() && i == 2 {
                        let c = if e64 { code } else { 106 };
                        write!(f, "{}", s(c, 2))?;
                    } else {
                        self.fmt_mod_src(f, i, s(code, width), *abs, *neg)?;
                    }
                }
            }
        }
        if *op_sel != 0 {
            // One entry per source, then the destination.
            let n = match op {
                VOp::Alu(a) => a.widths().len() - 1,
                VOp::Cmp(_) => 2,
            };
            let bits: Vec<String> = (0..n)
                .chain([3])
                .map(|i| ((op_sel >> i) & 1).to_string())
                .collect();
            write!(f, " op_sel:[{}]", bits.join(","))?;
        }
        if *clamp {
            f.write_str(" clamp")?;
        }
        match omod {
            1 => f.write_str(" mul:2"),
            2 => f.write_str(" mul:4"),
            3 => f.write_str(" div:2"),
            _ => Ok(()),
        }
    }

    fn fmt_mod_src(
        &self,
        f: &mut fmt::Formatter<'_>,
        i: usize,
        src: Src,
        abs: u8,
        neg: u8,
    ) -> fmt::Result {
        let n = (neg >> i) & 1 != 0;
        let a = (abs >> i) & 1 != 0;
        let k16 = match &self.kind {
            // v_mad_u32_u16 / v_mad_i32_i16: the addend is 32 bits.
            Kind::Valu {
                op: VOp::Alu(VAlu::MadU32U16 | VAlu::MadI32I16),
                ..
            } if i == 2 => 0,
            Kind::Valu { op, .. } => operand16(op),
            _ => 0,
        };
        let code = src.code;
        let text = match (k16, code) {
            // 16-bit operands: a literal is 16 bits; an integer operation
            // shows a float inline constant as its f16 bit pattern.
            (1 | 2, 255) => format!("0x{:x}", src.literal.unwrap_or(0) & 0xffff),
            (1, 240..=248) => {
                const F16: [u16; 9] = [
                    0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118,
                ];
                format!("0x{:x}", F16[(code - 240) as usize])
            }
            _ => src.to_string(),
        };
        // LLVM writes neg() around a negated constant (without abs).
        let constant = matches!(code, 128..=208 | 240..=248 | 255);
        match (n, a) {
            (false, false) => write!(f, "{text}"),
            (true, false) if constant => write!(f, "neg({text})"),
            (true, false) => write!(f, "-{text}"),
            (false, true) => write!(f, "|{text}|"),
            (true, true) => write!(f, "-|{text}|"),
        }
    }

    fn fmt_ds(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Kind::Ds {
            op,
            vdst,
            addr,
            data0,
            data1,
            offset0,
            offset1,
            gds,
        } = &self.kind
        else {
            return Ok(());
        };
        let v = |n: u8, w: u8| Src {
            code: 256 + n as u16,
            width: w,
            literal: None,
        };
        let kind = op.kind();
        let (dw, rw) = kind.data_ret_widths();
        f.write_str(op.name())?;
        let two = kind.two_data();
        let two_off = kind.two_offsets();
        if kind.no_addr() {
            // ds_append/consume, the addtid forms: M0 is the address.
            let reg = if rw > 0 { v(*vdst, rw) } else { v(*data0, dw) };
            write!(f, " {reg}")?;
        } else if rw > 0 {
            write!(f, " {}, {}", v(*vdst, rw), v(*addr, 1))?;
        } else {
            write!(f, " {}", v(*addr, 1))?;
        }
        if dw > 0 && !kind.no_addr() {
            write!(f, ", {}", v(*data0, dw))?;
            if two {
                write!(f, ", {}", v(*data1, dw))?;
            }
        }
        if matches!(kind, DsKind::Swizzle) {
            let off = (*offset1 as u16) << 8 | *offset0 as u16;
            return write!(f, " offset:{}", swizzle_text(off));
        }
        if two_off {
            if *offset0 != 0 {
                write!(f, " offset0:{offset0}")?;
            }
            if *offset1 != 0 {
                write!(f, " offset1:{offset1}")?;
            }
        } else {
            let off = (*offset1 as u16) << 8 | *offset0 as u16;
            if off != 0 {
                write!(f, " offset:{off}")?;
            }
        }
        if *gds {
            f.write_str(" gds")?;
        }
        Ok(())
    }

    fn fmt_flat(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Kind::Flat {
            seg,
            op,
            vdst,
            addr,
            data,
            saddr,
            offset,
            glc,
            slc,
            acc,
        } = &self.kind
        else {
            return Ok(());
        };
        let vreg = |n: u8, w: u8| Src {
            code: 256 + n as u16,
            width: w,
            literal: None,
        };
        // Data registers: VGPRs, or AGPRs with `acc`.
        let v = |n: u8, w: u8| {
            let t = vreg(n, w).to_string();
            if *acc {
                t.replacen('v', "a", 1)
            } else {
                t
            }
        };
        let prefix = match seg {
            FlatSeg::Flat => "flat",
            FlatSeg::Scratch => "scratch",
            FlatSeg::Global => "global",
        };
        write!(f, "{prefix}_{}", op.name())?;
        let addr_w = if saddr.is_some() { 1 } else { 2 };
        // The address operand: scratch takes one VGPR, or `off` with an SGPR.
        let addr_text = match (seg, saddr) {
            (FlatSeg::Scratch, Some(_)) => "off".to_string(),
            (FlatSeg::Scratch, None) => vreg(*addr, 1).to_string(),
            _ => vreg(*addr, addr_w).to_string(),
        };
        let w = op.bytes().div_ceil(4);
        match op {
            FlatOp::Mem(_, x) if x.load => write!(f, " {}, {addr_text}", v(*vdst, w))?,
            FlatOp::Mem(..) => write!(f, " {addr_text}, {}", v(*data, w))?,
            FlatOp::Atomic(i) | FlatOp::Atomic64(i) => {
                let dw = if *i == 1 { 2 * w } else { w };
                if *glc {
                    write!(f, " {},", v(*vdst, w))?;
                }
                write!(f, " {addr_text}, {}", v(*data, dw))?;
            }
        }
        if *seg != FlatSeg::Flat {
            match saddr {
                Some(s) => write!(
                    f,
                    ", {}",
                    Src {
                        code: *s as u16,
                        width: if *seg == FlatSeg::Scratch { 1 } else { 2 },
                        literal: None
                    }
                )?,
                None => f.write_str(", off")?,
            }
        }
        if *offset != 0 {
            write!(f, " offset:{offset}")?;
        }
        if *glc {
            f.write_str(" glc")?;
        }
        if *slc {
            f.write_str(" slc")?;
        }
        Ok(())
    }
}

fn decode_vop3p(w0: u32, w1: u32) -> Option<Kind> {
    let op = Vop3pOp::from_code((w0 >> 16) & 0x7f)?;
    Some(Kind::Vop3p(Vop3pFields {
        op,
        dst: (w0 & 0xff) as u8,
        src: [
            (w1 & 0x1ff) as u16,
            ((w1 >> 9) & 0x1ff) as u16,
            ((w1 >> 18) & 0x1ff) as u16,
        ],
        op_sel: ((w0 >> 11) & 7) as u8,
        op_sel_hi: (((w1 >> 27) & 3) | ((w0 >> 14) & 1) << 2) as u8,
        neg_lo: (w1 >> 29) as u8,
        neg_hi: ((w0 >> 8) & 7) as u8,
        clamp: (w0 >> 15) & 1 != 0 && op.mfma().is_none(),
        acc_cd: (w0 >> 15) & 1 != 0 && op.mfma().is_some(),
    }))
}

/// The `ds_swizzle_b32` offset as LLVM prints it.
fn swizzle_text(off: u16) -> String {
    if off & 0x8000 != 0 {
        let p: Vec<String> = (0..4).map(|i| ((off >> (2 * i)) & 3).to_string()).collect();
        return format!("swizzle(QUAD_PERM,{})", p.join(","));
    }
    let and = off & 0x1f;
    let or = (off >> 5) & 0x1f;
    let xor = (off >> 10) & 0x1f;
    if and == 0x1f && or == 0 && xor.is_power_of_two() {
        return format!("swizzle(SWAP,{xor})");
    }
    if and == 0x1f && or == 0 && (xor + 1).is_power_of_two() && xor != 0 {
        return format!("swizzle(REVERSE,{})", xor + 1);
    }
    if xor == 0 && (0x20 - and).is_power_of_two() && or & and == 0 {
        return format!("swizzle(BROADCAST,{},{or})", 0x20 - and);
    }
    let mask: String = (0..5)
        .rev()
        .map(|b| match ((and >> b) & 1, (or >> b) & 1, (xor >> b) & 1) {
            (0, 0, _) => '0',
            (0, 1, _) => '1',
            (1, _, 0) => 'p',
            _ => 'i',
        })
        .collect();
    format!("swizzle(BITMASK_PERM,\"{mask}\")")
}

impl Inst {
    /// `v_fma_mix*` as LLVM prints them: neg_lo and neg_hi as `-` and `|..|`
    /// on the operands, op_sel and op_sel_hi (default 0) after them.
    fn fmt_mix(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Kind::Vop3p(fields) = &self.kind else {
            return Ok(());
        };
        let p = *fields;
        write!(f, "{} v{}", p.op.name(), p.dst)?;
        for (i, &code) in p.src.iter().enumerate() {
            f.write_str(", ")?;
            let s = Src {
                code,
                width: 1,
                literal: None,
            };
            self.fmt_mod_src(f, i, s, p.neg_hi, p.neg_lo)?;
        }
        let list = |bits: u8| format!("[{},{},{}]", bits & 1, (bits >> 1) & 1, (bits >> 2) & 1);
        if p.op_sel & 7 != 0 {
            write!(f, " op_sel:{}", list(p.op_sel))?;
        }
        if p.op_sel_hi & 7 != 0 {
            write!(f, " op_sel_hi:{}", list(p.op_sel_hi))?;
        }
        if p.clamp {
            f.write_str(" clamp")?;
        }
        Ok(())
    }

    fn fmt_vop3p(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Kind::Vop3p(fields) = &self.kind else {
            return Ok(());
        };
        let p = *fields;
        if p.op.is_mix() {
            return self.fmt_mix(f);
        }
        let reg = |prefix: &str, n: u16, w: u8| {
            if w <= 1 {
                format!("{prefix}{n}")
            } else {
                format!("{prefix}[{}:{}]", n, n + w as u16 - 1)
            }
        };
        let w = p.op.widths();
        let nsrc = w.len() - 1;
        let plain = |code: u16, width: u8| {
            Src {
                code,
                width,
                literal: None,
            }
            .to_string()
        };
        let (d, srcs): (String, Vec<String>) = match p.op {
            Vop3pOp::AccvgprReadB32 => (
                reg("v", p.dst as u16, 1),
                vec![reg("a", p.src[0].saturating_sub(256), 1)],
            ),
            Vop3pOp::AccvgprWriteB32 => (reg("a", p.dst as u16, 1), vec![plain(p.src[0], 1)]),
            _ if p.op.mfma().is_some() => {
                // op_sel_hi bits 0/1 make A/B accumulation registers.
                let ab = |i: usize| {
                    if (p.op_sel_hi >> i) & 1 != 0 && p.src[i] >= 256 {
                        reg("a", p.src[i] - 256, w[i + 1])
                    } else if p.src[i] >= 256 {
                        reg("v", p.src[i] - 256, w[i + 1])
                    } else {
                        plain(p.src[i], w[i + 1])
                    }
                };
                let cd = |n: u16| {
                    if p.acc_cd {
                        reg("a", n, w[0])
                    } else {
                        reg("v", n, w[0])
                    }
                };
                (
                    cd(p.dst as u16),
                    vec![
                        ab(0),
                        ab(1),
                        if p.src[2] >= 256 {
                            cd(p.src[2] - 256)
                        } else {
                            plain(p.src[2], w[3])
                        },
                    ],
                )
            }
            _ => (
                reg("v", p.dst as u16, w[0]),
                (0..nsrc).map(|i| plain(p.src[i], w[i + 1])).collect(),
            ),
        };
        write!(f, "{} {d}", p.op.name())?;
        for x in &srcs {
            write!(f, ", {x}")?;
        }
        if p.op.mfma().is_some() {
            let cbsz = p.neg_hi;
            let abid = p.op_sel | (p.op_sel_hi & 4) << 1;
            if cbsz != 0 {
                write!(f, " cbsz:{cbsz}")?;
            }
            if abid != 0 {
                write!(f, " abid:{abid}")?;
            }
            if p.neg_lo != 0 {
                write!(f, " blgp:{}", p.neg_lo)?;
            }
            return Ok(());
        }
        if matches!(p.op, Vop3pOp::AccvgprReadB32 | Vop3pOp::AccvgprWriteB32) {
            return Ok(());
        }
        let list = |bits: u8| {
            let v: Vec<String> = (0..nsrc).map(|i| ((bits >> i) & 1).to_string()).collect();
            format!("[{}]", v.join(","))
        };
        let all = (1u8 << nsrc) - 1;
        if p.op_sel & all != 0 {
            write!(f, " op_sel:{}", list(p.op_sel))?;
        }
        if p.op_sel_hi & all != all {
            write!(f, " op_sel_hi:{}", list(p.op_sel_hi))?;
        }
        if p.neg_lo & all != 0 {
            write!(f, " neg_lo:{}", list(p.neg_lo))?;
        }
        if p.neg_hi & all != 0 {
            write!(f, " neg_hi:{}", list(p.neg_hi))?;
        }
        if p.clamp {
            f.write_str(" clamp")?;
        }
        Ok(())
    }

    fn fmt_mubuf(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Kind::Mubuf {
            op,
            vdata,
            vaddr,
            srsrc,
            soffset,
            offset,
            offen,
            idxen,
            glc,
            slc,
            scc,
            acc,
        } = &self.kind
        else {
            return Ok(());
        };
        let v = |n: u8, w: u8| Src {
            code: 256 + n as u16,
            width: w,
            literal: None,
        };
        // Data registers: VGPRs, or AGPRs with `acc`.
        let data = v(*vdata, op.data_dwords()).to_string();
        let data = if *acc {
            data.replacen('v', "a", 1)
        } else {
            data
        };
        write!(f, "buffer_{} {data}, ", op.name())?;
        match (offen, idxen) {
            (true, true) => write!(f, "{}", v(*vaddr, 2))?,
            (false, false) => f.write_str("off")?,
            _ => write!(f, "{}", v(*vaddr, 1))?,
        }
        let sc = |code: u16, width: u8| Src {
            code,
            width,
            literal: None,
        };
        write!(f, ", {}, {}", sc(*srsrc as u16, 4), sc(*soffset as u16, 1))?;
        if *idxen {
            f.write_str(" idxen")?;
        }
        if *offen {
            f.write_str(" offen")?;
        }
        if *offset != 0 {
            write!(f, " offset:{offset}")?;
        }
        if *glc {
            f.write_str(" glc")?;
        }
        if *slc {
            f.write_str(" slc")?;
        }
        if *scc {
            f.write_str(" scc")?;
        }
        Ok(())
    }
}

/// SDWA operand and result selection (second dword of the SDWA form).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SdwaSel {
    /// 0..=3 BYTE_n, 4 WORD_0, 5 WORD_1, 6 DWORD.
    pub dst_sel: u8,
    /// 0 UNUSED_PAD, 1 UNUSED_SEXT, 2 UNUSED_PRESERVE.
    pub dst_unused: u8,
    /// Per source: selection, sign extension, neg, abs.
    pub src_sel: [u8; 2],
    #[allow(missing_docs)]
    pub sext: [bool; 2],
    #[allow(missing_docs)]
    pub neg: [bool; 2],
    #[allow(missing_docs)]
    pub abs: [bool; 2],
    #[allow(missing_docs)]
    pub clamp: bool,
    #[allow(missing_docs)]
    pub omod: u8,
}

fn decode_sdwa(w0: u32, w1: u32) -> Option<Kind> {
    let vsrc1 = ((w0 >> 9) & 0xff) as u16;
    let (op, dst, is_cmp) = match (w0 >> 25) & 0x7f {
        0x3f => (
            VOp::Alu(VAlu::from_code(0x140 + ((w0 >> 9) & 0xff))?),
            ((w0 >> 17) & 0xff) as u8,
            false,
        ),
        0x3e => (VOp::Cmp(VCmp::from_code((w0 >> 17) & 0xff)?), 0, true),
        n => (
            VOp::Alu(VAlu::from_code(0x100 + (n & 0x3f))?),
            ((w0 >> 17) & 0xff) as u8,
            false,
        ),
    };
    if let VOp::Alu(a) = op {
        if a.only_vop3()
            || a.has_k()
            || a.has_mask_in()
            || a.has_carry_out()
            || a.flags() & flag::NO_SDWA != 0
            || a.widths().iter().any(|&w| w > 1)
        {
            return None;
        }
    }
    if let VOp::Cmp(c) = op {
        if c.src_widths() != (1, 1) {
            return None;
        }
    }
    let vop1 = (w0 >> 25) & 0x7f == 0x3f;
    let src0_code = (w1 & 0xff) as u16 + if (w1 >> 23) & 1 != 0 { 0 } else { 256 };
    let src1_code = vsrc1 + if (w1 >> 31) & 1 != 0 { 0 } else { 256 };
    let sel = SdwaSel {
        dst_sel: if is_cmp { 6 } else { ((w1 >> 8) & 7) as u8 },
        dst_unused: if is_cmp { 0 } else { ((w1 >> 11) & 3) as u8 },
        src_sel: [((w1 >> 16) & 7) as u8, ((w1 >> 24) & 7) as u8],
        sext: [(w1 >> 19) & 1 != 0, (w1 >> 27) & 1 != 0],
        neg: [(w1 >> 20) & 1 != 0, (w1 >> 28) & 1 != 0],
        abs: [(w1 >> 21) & 1 != 0, (w1 >> 29) & 1 != 0],
        clamp: !is_cmp && (w1 >> 13) & 1 != 0,
        omod: if is_cmp { 0 } else { ((w1 >> 14) & 3) as u8 },
    };
    if sel.src_sel.iter().any(|&s| s > 6) || sel.dst_sel > 6 || sel.dst_unused > 2 {
        return None;
    }
    // Float sources take neg/abs, integer ones sext (LLVM rejects the rest).
    let float_src = match op {
        VOp::Alu(a) => a
            .name()
            .rsplit('_')
            .next()
            .is_some_and(|t| t.starts_with('f')),
        VOp::Cmp(c) => matches!(
            c.ty,
            CmpTy::F32 | CmpTy::F64 | CmpTy::ClassF32 | CmpTy::ClassF64
        ),
    };
    if sel.clamp && sel.dst_unused == 2 {
        return None; // LLVM rejects clamp with UNUSED_PRESERVE
    }
    if float_src && sel.sext.iter().any(|&x| x) {
        return None;
    }
    if !float_src && (sel.neg.iter().chain(&sel.abs).any(|&x| x)) {
        return None;
    }
    Some(Kind::Sdwa {
        op,
        dst,
        sdst: (is_cmp && (w1 >> 15) & 1 != 0).then_some(((w1 >> 8) & 0x7f) as u8),
        src: [src0_code, if vop1 { 0 } else { src1_code }],
        sdwa: sel,
    })
}

fn sel_name(s: u8) -> &'static str {
    [
        "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD",
    ]
    .get(s as usize)
    .copied()
    .unwrap_or("?")
}

impl Inst {
    fn fmt_sdwa(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Kind::Sdwa {
            op,
            dst,
            sdst,
            src,
            sdwa,
        } = &self.kind
        else {
            return Ok(());
        };
        let operand = |i: usize| {
            let s = Src {
                code: src[i],
                width: 1,
                literal: None,
            }
            .to_string();
            let s = if sdwa.sext[i] {
                format!("sext({s})")
            } else {
                s
            };
            let s = if sdwa.abs[i] { format!("|{s}|") } else { s };
            if sdwa.neg[i] {
                format!("-{s}")
            } else {
                s
            }
        };
        match op {
            VOp::Cmp(c) => {
                let d = match sdst {
                    Some(n) => Src {
                        code: *n as u16,
                        width: 2,
                        literal: None,
                    }
                    .to_string(),
                    None => "vcc".into(),
                };
                write!(
                    f,
                    "{}_sdwa {d}, {}, {} src0_sel:{} src1_sel:{}",
                    c.name(),
                    operand(0),
                    operand(1),
                    sel_name(sdwa.src_sel[0]),
                    sel_name(sdwa.src_sel[1])
                )
            }
            VOp::Alu(a) => {
                let nsrc = a.widths().len().saturating_sub(1);
                write!(f, "{}_sdwa v{dst}", a.name())?;
                for i in 0..nsrc {
                    write!(f, ", {}", operand(i))?;
                }
                if sdwa.clamp {
                    f.write_str(" clamp")?;
                }
                match sdwa.omod {
                    1 => f.write_str(" mul:2")?,
                    2 => f.write_str(" mul:4")?,
                    3 => f.write_str(" div:2")?,
                    _ => {}
                }
                let unused =
                    ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE"][sdwa.dst_unused as usize];
                write!(
                    f,
                    " dst_sel:{} dst_unused:{unused} src0_sel:{}",
                    sel_name(sdwa.dst_sel),
                    sel_name(sdwa.src_sel[0])
                )?;
                if nsrc > 1 {
                    write!(f, " src1_sel:{}", sel_name(sdwa.src_sel[1]))?;
                }
                Ok(())
            }
        }
    }
}

fn decode_dpp(w0: u32, w1: u32) -> Option<Kind> {
    let op = match (w0 >> 25) & 0x7f {
        0x3f => VAlu::from_code(0x140 + ((w0 >> 9) & 0xff))?,
        0x3e => return None, // VOPC DPP: not emitted by the corpus
        n => VAlu::from_code(0x100 + (n & 0x3f))?,
    };
    if op.only_vop3()
        || op.has_k()
        || op.has_mask_in()
        || op.has_carry_out()
        || op.flags() & flag::NO_DPP != 0
        || op.widths().iter().any(|&w| w > 1)
    {
        return None;
    }
    let ctrl = ((w1 >> 8) & 0x1ff) as u16;
    super::dpp::dpp_ctrl(ctrl)?;
    Some(Kind::Dpp {
        op,
        dst: ((w0 >> 17) & 0xff) as u8,
        src: [(w1 & 0xff) as u8, ((w0 >> 9) & 0xff) as u8],
        ctrl,
        bound_ctrl: (w1 >> 19) & 1 != 0,
        neg: [(w1 >> 20) & 1 != 0, (w1 >> 22) & 1 != 0],
        abs: [(w1 >> 21) & 1 != 0, (w1 >> 23) & 1 != 0],
        bank_mask: ((w1 >> 24) & 0xf) as u8,
        row_mask: (w1 >> 28) as u8,
    })
}

/// The DPP control as LLVM prints it.
pub fn dpp_ctrl_text(ctrl: u16) -> String {
    super::dpp::dpp_ctrl(ctrl).map_or_else(|| format!("dpp_ctrl:{ctrl:#x}"), |r| (r.text)(ctrl))
}

impl Inst {
    fn fmt_dpp(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Kind::Dpp {
            op,
            dst,
            src,
            ctrl,
            bound_ctrl,
            neg,
            abs,
            bank_mask,
            row_mask,
        } = &self.kind
        else {
            return Ok(());
        };
        let operand = |i: usize| {
            let s = format!("v{}", src[i]);
            let s = if abs[i] { format!("|{s}|") } else { s };
            if neg[i] {
                format!("-{s}")
            } else {
                s
            }
        };
        write!(f, "{}_dpp v{dst}", op.name())?;
        for i in 0..op.widths().len().saturating_sub(1) {
            write!(f, ", {}", operand(i))?;
        }
        write!(
            f,
            " {} row_mask:0x{row_mask:x} bank_mask:0x{bank_mask:x}",
            dpp_ctrl_text(*ctrl)
        )?;
        if *bound_ctrl {
            f.write_str(" bound_ctrl:1")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dis(words: &[u32]) -> String {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        decode(&bytes).map(|i| i.to_string()).unwrap_or_default()
    }

    #[test]
    fn known_encodings() {
        assert_eq!(dis(&[0xBF920001]), "s_trap 1");
        assert_eq!(dis(&[0xC0020082, 4]), "s_load_dword s2, s[4:5], 0x4");
        assert_eq!(dis(&[0x8602FF02, 0xffff]), "s_and_b32 s2, s2, 0xffff");
        assert_eq!(
            dis(&[0xD1E80200, 0x04020402]),
            "v_mad_u64_u32 v[0:1], s[2:3], s2, v2, v[0:1]"
        );
        assert_eq!(dis(&[0x7DD80000]), "v_cmp_gt_u64_e32 vcc, s[0:1], v[0:1]");
        assert_eq!(dis(&[0x38060303]), "v_addc_co_u32_e32 v3, vcc, v3, v1, vcc");
        assert_eq!(
            dis(&[0xDC508000, 0x047F0002]),
            "global_load_dword v4, v[2:3], off"
        );
        assert_eq!(dis(&[0xBF8CC07F]), "s_waitcnt lgkmcnt(0)");
        assert_eq!(dis(&[0xD81A0000, 0x00000402]), "ds_write_b32 v2, v4");
        assert_eq!(dis(&[0x00000000_u32.wrapping_add(0xFFFF_FFFF)]), "");
    }

    #[test]
    fn never_panics_on_garbage() {
        let mut x: u64 = 0x1234_5678_9abc_def0;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let b = x.to_le_bytes();
            let _ = decode(&b).map(|i| i.to_string());
            let _ = decode(&b[..4]).map(|i| i.to_string());
        }
    }
}
