//! The scalar ALU operations (SOP2, SOP1, SOPC, SOPK): for each one its
//! encoding number, LLVM mnemonic, operand widths and what it does, in one
//! row of an [`opcodes_exec!`] table.
//!
//! Adding a scalar instruction is one row here: the decoder (`decode.rs`)
//! takes the encoding, name and widths from the row, the interpreter
//! (`wave.rs`) calls the row's `exec`. See docs/simulator.md, "Adding an
//! instruction".

#![allow(clippy::unused_unit)]

use super::decode::opcodes;
use super::decode::opcodes_exec;
use super::decode::OpKernel;
use super::wave::bfe;
use super::wave::WaveRegs;

opcodes_exec! {
    /// SOP2 opcodes: `(result, SCC)` from the sources and SCC (`None`
    /// leaves SCC alone).
    Sop2 fn exec(a: u64, b: u64, scc: bool) -> (u64, Option<bool>) {
        let (a32, b32) = (a as u32, b as u32);
        let (ai, bi) = (a32 as i32, b32 as i32);
        let nz32 = |v: u32| (v as u64, Some(v != 0));
        let nz64 = |v: u64| (v, Some(v != 0));
        let lshl_add = |sh: u32| {
            let s = ((a32 as u64) << sh) + b32 as u64;
            (s as u32 as u64, Some(s >> 32 != 0))
        };
    } {
        0 => AddU32 "s_add_u32" [1,1,1] => { let (v, c) = a32.overflowing_add(b32); (v as u64, Some(c)) };
        1 => SubU32 "s_sub_u32" [1,1,1] => { let (v, c) = a32.overflowing_sub(b32); (v as u64, Some(c)) };
        2 => AddI32 "s_add_i32" [1,1,1] => { let (v, o) = ai.overflowing_add(bi); (v as u32 as u64, Some(o)) };
        3 => SubI32 "s_sub_i32" [1,1,1] => { let (v, o) = ai.overflowing_sub(bi); (v as u32 as u64, Some(o)) };
        4 => AddcU32 "s_addc_u32" [1,1,1] => { let s = a32 as u64 + b32 as u64 + scc as u64; (s as u32 as u64, Some(s >> 32 != 0)) };
        5 => SubbU32 "s_subb_u32" [1,1,1] => { let s = (a32 as u64).wrapping_sub(b32 as u64).wrapping_sub(scc as u64); (s as u32 as u64, Some((b32 as u64 + scc as u64) > a32 as u64)) };
        6 => MinI32 "s_min_i32" [1,1,1] => (ai.min(bi) as u32 as u64, Some(ai < bi));
        7 => MinU32 "s_min_u32" [1,1,1] => (a32.min(b32) as u64, Some(a32 < b32));
        8 => MaxI32 "s_max_i32" [1,1,1] => (ai.max(bi) as u32 as u64, Some(ai > bi));
        9 => MaxU32 "s_max_u32" [1,1,1] => (a32.max(b32) as u64, Some(a32 > b32));
        10 => CselectB32 "s_cselect_b32" [1,1,1] => (if scc { a } else { b }, None);
        11 => CselectB64 "s_cselect_b64" [2,2,2] => (if scc { a } else { b }, None);
        12 => AndB32 "s_and_b32" [1,1,1] => nz32(a32 & b32);
        13 => AndB64 "s_and_b64" [2,2,2] => nz64(a & b);
        14 => OrB32 "s_or_b32" [1,1,1] => nz32(a32 | b32);
        15 => OrB64 "s_or_b64" [2,2,2] => nz64(a | b);
        16 => XorB32 "s_xor_b32" [1,1,1] => nz32(a32 ^ b32);
        17 => XorB64 "s_xor_b64" [2,2,2] => nz64(a ^ b);
        18 => Andn2B32 "s_andn2_b32" [1,1,1] => nz32(a32 & !b32);
        19 => Andn2B64 "s_andn2_b64" [2,2,2] => nz64(a & !b);
        20 => Orn2B32 "s_orn2_b32" [1,1,1] => nz32(a32 | !b32);
        21 => Orn2B64 "s_orn2_b64" [2,2,2] => nz64(a | !b);
        22 => NandB32 "s_nand_b32" [1,1,1] => nz32(!(a32 & b32));
        23 => NandB64 "s_nand_b64" [2,2,2] => nz64(!(a & b));
        24 => NorB32 "s_nor_b32" [1,1,1] => nz32(!(a32 | b32));
        25 => NorB64 "s_nor_b64" [2,2,2] => nz64(!(a | b));
        26 => XnorB32 "s_xnor_b32" [1,1,1] => nz32(!(a32 ^ b32));
        27 => XnorB64 "s_xnor_b64" [2,2,2] => nz64(!(a ^ b));
        28 => LshlB32 "s_lshl_b32" [1,1,1] => nz32(a32 << (b32 & 31));
        29 => LshlB64 "s_lshl_b64" [2,2,1] => nz64(a << (b32 & 63));
        30 => LshrB32 "s_lshr_b32" [1,1,1] => nz32(a32 >> (b32 & 31));
        31 => LshrB64 "s_lshr_b64" [2,2,1] => nz64(a >> (b32 & 63));
        32 => AshrI32 "s_ashr_i32" [1,1,1] => nz32((ai >> (b32 & 31)) as u32);
        33 => AshrI64 "s_ashr_i64" [2,2,1] => nz64(((a as i64) >> (b32 & 63)) as u64);
        34 => BfmB32 "s_bfm_b32" [1,1,1] => ((((1u64 << (a32 & 31)) - 1) as u32).wrapping_shl(b32 & 31) as u64, None);
        35 => BfmB64 "s_bfm_b64" [2,1,1] => (((1u64 << (a32 & 63)).wrapping_sub(1)).wrapping_shl(b32 & 63), None);
        36 => MulI32 "s_mul_i32" [1,1,1] => (ai.wrapping_mul(bi) as u32 as u64, None);
        37 => BfeU32 "s_bfe_u32" [1,1,1] => nz32(bfe(a32 as u64, b32 & 31, (b32 >> 16) & 0x7f, false, 32) as u32);
        38 => BfeI32 "s_bfe_i32" [1,1,1] => nz32(bfe(a32 as u64, b32 & 31, (b32 >> 16) & 0x7f, true, 32) as u32);
        39 => BfeU64 "s_bfe_u64" [2,2,1] => nz64(bfe(a, b32 & 63, (b32 >> 16) & 0x7f, false, 64));
        40 => BfeI64 "s_bfe_i64" [2,2,1] => nz64(bfe(a, b32 & 63, (b32 >> 16) & 0x7f, true, 64));
        42 => AbsdiffI32 "s_absdiff_i32" [1,1,1] => nz32(ai.wrapping_sub(bi).unsigned_abs());
        44 => MulHiU32 "s_mul_hi_u32" [1,1,1] => ((a32 as u64 * b32 as u64) >> 32, None);
        45 => MulHiI32 "s_mul_hi_i32" [1,1,1] => (((ai as i64 * bi as i64) >> 32) as u32 as u64, None);
        46 => Lshl1AddU32 "s_lshl1_add_u32" [1,1,1] => lshl_add(1);
        47 => Lshl2AddU32 "s_lshl2_add_u32" [1,1,1] => lshl_add(2);
        48 => Lshl3AddU32 "s_lshl3_add_u32" [1,1,1] => lshl_add(3);
        49 => Lshl4AddU32 "s_lshl4_add_u32" [1,1,1] => lshl_add(4);
        50 => PackLlB32B16 "s_pack_ll_b32_b16" [1,1,1] => ((a32 & 0xffff | b32 << 16) as u64, None);
        51 => PackLhB32B16 "s_pack_lh_b32_b16" [1,1,1] => ((a32 & 0xffff | b32 & 0xffff_0000) as u64, None);
        52 => PackHhB32B16 "s_pack_hh_b32_b16" [1,1,1] => ((a32 >> 16 | b32 & 0xffff_0000) as u64, None);
    }
}

opcodes_exec! {
    /// SOP1 opcodes: write the destination `d` (and SCC, EXEC) from the
    /// source `a`; return the next PC (`next` unless a jump).
    Sop1 fn exec(r: &mut WaveRegs, d: u16, a: u64, next: u64) -> u64 {
        let mut next = next;
        let a32 = a as u32;
        let exec = r.exec;
        let saveexec = |r: &mut WaveRegs, new_exec: u64| {
            r.sset(d, 2, exec);
            r.exec = new_exec;
            r.scc = new_exec != 0;
        };
        let set_nz = |r: &mut WaveRegs, w: u8, v: u64| {
            r.sset(d, w, v);
            r.scc = v != 0;
        };
        let first_one = |x: u64, bits: u32| {
            let t = x.trailing_zeros();
            (if t >= bits { u32::MAX } else { t }) as u64
        };
    } {
        0 => MovB32 "s_mov_b32" [1,1] => r.sset(d, 1, a);
        1 => MovB64 "s_mov_b64" [2,2] => r.sset(d, 2, a);
        2 => CmovB32 "s_cmov_b32" [1,1] => if r.scc { r.sset(d, 1, a) };
        3 => CmovB64 "s_cmov_b64" [2,2] => if r.scc { r.sset(d, 2, a) };
        4 => NotB32 "s_not_b32" [1,1] => set_nz(r, 1, !a32 as u64);
        5 => NotB64 "s_not_b64" [2,2] => set_nz(r, 2, !a);
        8 => BrevB32 "s_brev_b32" [1,1] => r.sset(d, 1, a32.reverse_bits() as u64);
        9 => BrevB64 "s_brev_b64" [2,2] => r.sset(d, 2, a.reverse_bits());
        10 => Bcnt0I32B32 "s_bcnt0_i32_b32" [1,1] => set_nz(r, 1, a32.count_zeros() as u64);
        11 => Bcnt0I32B64 "s_bcnt0_i32_b64" [1,2] => set_nz(r, 1, a.count_zeros() as u64);
        12 => Bcnt1I32B32 "s_bcnt1_i32_b32" [1,1] => set_nz(r, 1, a32.count_ones() as u64);
        13 => Bcnt1I32B64 "s_bcnt1_i32_b64" [1,2] => set_nz(r, 1, a.count_ones() as u64);
        14 => Ff0I32B32 "s_ff0_i32_b32" [1,1] => r.sset(d, 1, first_one((!a32) as u64, 32));
        15 => Ff0I32B64 "s_ff0_i32_b64" [1,2] => r.sset(d, 1, first_one(!a, 64));
        16 => Ff1I32B32 "s_ff1_i32_b32" [1,1] => r.sset(d, 1, first_one(a32 as u64, 32));
        17 => Ff1I32B64 "s_ff1_i32_b64" [1,2] => r.sset(d, 1, first_one(a, 64));
        18 => FlbitI32B32 "s_flbit_i32_b32" [1,1] => r.sset(d, 1, if a32 != 0 { a32.leading_zeros() } else { u32::MAX } as u64);
        19 => FlbitI32B64 "s_flbit_i32_b64" [1,2] => r.sset(d, 1, if a != 0 { a.leading_zeros() } else { u32::MAX } as u64);
        22 => SextI32I8 "s_sext_i32_i8" [1,1] => r.sset(d, 1, a32 as i8 as i32 as u32 as u64);
        23 => SextI32I16 "s_sext_i32_i16" [1,1] => r.sset(d, 1, a32 as i16 as i32 as u32 as u64);
        24 => Bitset0B32 "s_bitset0_b32" [1,1] => { let v = r.sget(d, 1, None) & !(1u64 << (a32 & 31)); r.sset(d, 1, v) };
        25 => Bitset0B64 "s_bitset0_b64" [2,1] => { let v = r.sget(d, 2, None) & !(1u64 << (a32 & 63)); r.sset(d, 2, v) };
        26 => Bitset1B32 "s_bitset1_b32" [1,1] => { let v = r.sget(d, 1, None) | (1u64 << (a32 & 31)); r.sset(d, 1, v) };
        27 => Bitset1B64 "s_bitset1_b64" [2,1] => { let v = r.sget(d, 2, None) | (1u64 << (a32 & 63)); r.sset(d, 2, v) };
        28 => GetpcB64 "s_getpc_b64" [2] => r.sset(d, 2, next);
        29 => SetpcB64 "s_setpc_b64" [0,2] => next = a;
        30 => SwappcB64 "s_swappc_b64" [2,2] => { r.sset(d, 2, next); next = a; };
        32 => AndSaveexecB64 "s_and_saveexec_b64" [2,2] => saveexec(r, a & exec);
        33 => OrSaveexecB64 "s_or_saveexec_b64" [2,2] => saveexec(r, a | exec);
        34 => XorSaveexecB64 "s_xor_saveexec_b64" [2,2] => saveexec(r, a ^ exec);
        35 => Andn2SaveexecB64 "s_andn2_saveexec_b64" [2,2] => saveexec(r, a & !exec);
        36 => Orn2SaveexecB64 "s_orn2_saveexec_b64" [2,2] => saveexec(r, a | !exec);
        37 => NandSaveexecB64 "s_nand_saveexec_b64" [2,2] => saveexec(r, !(a & exec));
        38 => NorSaveexecB64 "s_nor_saveexec_b64" [2,2] => saveexec(r, !(a | exec));
        39 => XnorSaveexecB64 "s_xnor_saveexec_b64" [2,2] => saveexec(r, !(a ^ exec));
        48 => AbsI32 "s_abs_i32" [1,1] => set_nz(r, 1, (a32 as i32).unsigned_abs() as u64);
        51 => Andn1SaveexecB64 "s_andn1_saveexec_b64" [2,2] => saveexec(r, !a & exec);
        52 => Orn1SaveexecB64 "s_orn1_saveexec_b64" [2,2] => saveexec(r, !a | exec);
    } => next
}

opcodes_exec! {
    /// SOPC opcodes: the new SCC.
    /// A src1 width of 0: the field is an immediate, not an operand.
    Sopc fn exec(r: &mut WaveRegs, a: u64, b: u64) -> bool {
        let (a32, b32) = (a as u32, b as u32);
        let (ai, bi) = (a32 as i32, b32 as i32);
    } {
        0 => CmpEqI32 "s_cmp_eq_i32" [1,1] => a32 == b32;
        1 => CmpLgI32 "s_cmp_lg_i32" [1,1] => a32 != b32;
        2 => CmpGtI32 "s_cmp_gt_i32" [1,1] => ai > bi;
        3 => CmpGeI32 "s_cmp_ge_i32" [1,1] => ai >= bi;
        4 => CmpLtI32 "s_cmp_lt_i32" [1,1] => ai < bi;
        5 => CmpLeI32 "s_cmp_le_i32" [1,1] => ai <= bi;
        6 => CmpEqU32 "s_cmp_eq_u32" [1,1] => a32 == b32;
        7 => CmpLgU32 "s_cmp_lg_u32" [1,1] => a32 != b32;
        8 => CmpGtU32 "s_cmp_gt_u32" [1,1] => a32 > b32;
        9 => CmpGeU32 "s_cmp_ge_u32" [1,1] => a32 >= b32;
        10 => CmpLtU32 "s_cmp_lt_u32" [1,1] => a32 < b32;
        11 => CmpLeU32 "s_cmp_le_u32" [1,1] => a32 <= b32;
        12 => Bitcmp0B32 "s_bitcmp0_b32" [1,1] => (a32 >> (b32 & 31)) & 1 == 0;
        13 => Bitcmp1B32 "s_bitcmp1_b32" [1,1] => (a32 >> (b32 & 31)) & 1 == 1;
        14 => Bitcmp0B64 "s_bitcmp0_b64" [2,1] => (a >> (b32 & 63)) & 1 == 0;
        15 => Bitcmp1B64 "s_bitcmp1_b64" [2,1] => (a >> (b32 & 63)) & 1 == 1;
        // VGPR indexing on: M0[7:0] = the index, M0[15:12] = which VALU
        // operands it offsets (the immediate: SRC0, SRC1, SRC2, DST).
        17 => SetGprIdxOn "s_set_gpr_idx_on" [1,0] => {
            r.m0 = (r.m0 & !0xf0ff) | (a32 & 0xff) | (b32 & 0xf) << 12;
            r.mode |= MODE_GPR_IDX_EN;
            r.scc
        };
        18 => CmpEqU64 "s_cmp_eq_u64" [2,2] => a == b;
        19 => CmpLgU64 "s_cmp_lg_u64" [2,2] => a != b;
    }
}

opcodes_exec! {
    /// SOPK opcodes: on the destination `d` and the 16-bit immediate.
    Sopk fn exec(r: &mut WaveRegs, d: u16, simm16: u16) -> () {
        let k = simm16 as i16 as i32;
        let s = r.sget(d, 1, None) as u32;
        let (si, ku) = (s as i32, simm16 as u32);
    } {
        0 => MovkI32 "s_movk_i32" [1] => r.sset(d, 1, k as u32 as u64);
        1 => CmovkI32 "s_cmovk_i32" [1] => if r.scc { r.sset(d, 1, k as u32 as u64) };
        2 => CmpkEqI32 "s_cmpk_eq_i32" [1] => r.scc = si == k;
        3 => CmpkLgI32 "s_cmpk_lg_i32" [1] => r.scc = si != k;
        4 => CmpkGtI32 "s_cmpk_gt_i32" [1] => r.scc = si > k;
        5 => CmpkGeI32 "s_cmpk_ge_i32" [1] => r.scc = si >= k;
        6 => CmpkLtI32 "s_cmpk_lt_i32" [1] => r.scc = si < k;
        7 => CmpkLeI32 "s_cmpk_le_i32" [1] => r.scc = si <= k;
        8 => CmpkEqU32 "s_cmpk_eq_u32" [1] => r.scc = s == ku;
        9 => CmpkLgU32 "s_cmpk_lg_u32" [1] => r.scc = s != ku;
        10 => CmpkGtU32 "s_cmpk_gt_u32" [1] => r.scc = s > ku;
        11 => CmpkGeU32 "s_cmpk_ge_u32" [1] => r.scc = s >= ku;
        12 => CmpkLtU32 "s_cmpk_lt_u32" [1] => r.scc = s < ku;
        13 => CmpkLeU32 "s_cmpk_le_u32" [1] => r.scc = s <= ku;
        14 => AddkI32 "s_addk_i32" [1] => { let (v, o) = si.overflowing_add(k); r.sset(d, 1, v as u32 as u64); r.scc = o; };
        15 => MulkI32 "s_mulk_i32" [1] => r.sset(d, 1, si.wrapping_mul(k) as u32 as u64);
    }
}

/// What a SOPP instruction does to control flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Falls through.
    Next,
    /// A PC-relative branch (simm16 dwords after the next instruction),
    /// taken or not.
    Branch(bool),
    /// Ends the wave.
    End,
    /// Waits at the work-group barrier.
    Barrier,
    /// Traps with the immediate as trap id.
    Trap,
}

/// MODE.GPR_IDX_EN: VGPR indexing (`s_set_gpr_idx_on`) is on.
pub const MODE_GPR_IDX_EN: u32 = 1 << 27;

/// How LLVM prints a SOPP instruction's immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoppImm {
    /// A branch's target: the signed dword offset from the next
    /// instruction, in decimal (the row's flow is `Flow::Branch`).
    Target,
    /// Decimal, in hex above 64.
    HexAbove64,
    /// Nothing when 0, else decimal.
    OmitZero,
    /// The `vmcnt(..) expcnt(..) lgkmcnt(..)` fields.
    Waitcnt,
    /// A VGPR indexing mode, `gpr_idx(SRC0,...)`.
    GprIdx,
    /// Never printed (the instruction has no operand).
    Never,
}

macro_rules! sopp_ops {
    (
        flow($r:ident, $imm16:ident) { $($prelude:tt)* }
        $( $num:literal => $var:ident $name:literal $imm:ident $(, $term:ident)? => $flow:expr; )*
    ) => {
        opcodes! {
            /// SOPP opcodes.
            Sopp { $($num => $var $name [],)* }
        }
        impl Sopp {
            /// The control flow of this instruction (immediate `simm16`) in
            /// a wave with registers `r` (which it may change).
            #[inline(always)]
            #[allow(unused_variables)]
            pub fn flow(self, $r: &mut WaveRegs, $imm16: u16) -> Flow {
                $($prelude)*
                match self { $(Self::$var => $flow,)* }
            }
            /// How the immediate prints.
            pub fn imm(self) -> SoppImm {
                match self { $(Self::$var => SoppImm::$imm,)* }
            }
            /// Control never falls through (`terminator` rows).
            pub fn is_terminator(self) -> bool {
                match self { $(Self::$var => sopp_ops!(@term $($term)?),)* }
            }
        }
    };
    (@term) => { false };
    (@term terminator) => { true };
}

sopp_ops! {
    // `CODE => Variant "llvm_name" IMM(, terminator) => flow;` (IMM: how
    // the immediate prints, `Target` for the branches).
    flow(r, simm16) {}
    0 => Nop "s_nop" HexAbove64 => Flow::Next;
    1 => Endpgm "s_endpgm" OmitZero, terminator => Flow::End;
    2 => Branch "s_branch" Target, terminator => Flow::Branch(true);
    4 => CbranchScc0 "s_cbranch_scc0" Target => Flow::Branch(!r.scc);
    5 => CbranchScc1 "s_cbranch_scc1" Target => Flow::Branch(r.scc);
    6 => CbranchVccz "s_cbranch_vccz" Target => Flow::Branch(r.vcc == 0);
    7 => CbranchVccnz "s_cbranch_vccnz" Target => Flow::Branch(r.vcc != 0);
    8 => CbranchExecz "s_cbranch_execz" Target => Flow::Branch(r.exec == 0);
    9 => CbranchExecnz "s_cbranch_execnz" Target => Flow::Branch(r.exec != 0);
    10 => Barrier "s_barrier" OmitZero => Flow::Barrier;
    12 => Waitcnt "s_waitcnt" Waitcnt => Flow::Next;
    14 => Sleep "s_sleep" HexAbove64 => Flow::Next;
    15 => Setprio "s_setprio" HexAbove64 => Flow::Next;
    18 => Trap "s_trap" HexAbove64 => Flow::Trap;
    19 => IcacheInv "s_icache_inv" OmitZero => Flow::Next;
    28 => SetGprIdxOff "s_set_gpr_idx_off" Never => {
        r.mode &= !MODE_GPR_IDX_EN;
        Flow::Next
    };
    29 => SetGprIdxMode "s_set_gpr_idx_mode" GprIdx => {
        r.m0 = (r.m0 & !0xf000) | (simm16 as u32 & 0xf) << 12;
        Flow::Next
    };
}

/// A VGPR indexing mode as LLVM prints it: `gpr_idx(SRC0,SRC1,SRC2,DST)`
/// with the enabled ones, or hex when bits beyond the four are set.
pub fn gpr_idx_text(mode: u16) -> String {
    if mode & !0xf != 0 {
        return format!("0x{mode:x}");
    }
    let names: Vec<&str> = ["SRC0", "SRC1", "SRC2", "DST"]
        .into_iter()
        .enumerate()
        .filter(|(i, _)| (mode >> i) & 1 != 0)
        .map(|(_, n)| n)
        .collect();
    format!("gpr_idx({})", names.join(","))
}

impl Sopp {
    /// A PC-relative branch (`Target` rows).
    pub fn is_branch(self) -> bool {
        self.imm() == SoppImm::Target
    }
}
