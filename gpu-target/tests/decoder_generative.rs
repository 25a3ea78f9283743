//! Generative decoder check: for every opcode of every encoding class the
//! decoder supports, random operand fields, compared with what
//! `llvm-mc-19 --disassemble` prints for the same bytes. Every encoding the
//! decoder accepts must print as LLVM prints it; every class and opcode must
//! get samples. Without llvm-mc the test fails.

#![allow(clippy::precedence)] // encodings are written as `field % n << shift | ...`

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Command;
use std::process::Stdio;

use gpu_target::sim::decode::decode;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
    /// A scalar source code LLVM and gfx90a know (SGPRs, VCC, TTMPs, M0,
    /// EXEC, inline constants, the literal).
    fn ssrc(&mut self) -> u32 {
        const SPECIAL: &[u32] = &[
            106, 107, 124, 126, 127, 255, 240, 242, 248, 128, 129, 192, 193, 208,
        ];
        match self.next() % 4 {
            0 => self.next() % 102,
            1 => 108 + self.next() % 16,
            _ => SPECIAL[(self.next() as usize) % SPECIAL.len()],
        }
    }
    fn src9(&mut self) -> u32 {
        if self.next().is_multiple_of(2) {
            256 + self.next() % 256
        } else {
            self.ssrc()
        }
    }
}

/// (class, word 0, word 1 or None) samples for `op` of a class.
fn samples(class: &str, op: u32, r: &mut Rng) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    // SDWA/DPP: VOP2 opcodes 0..0x3f, VOP1 opcodes as 0x100 + n.
    if matches!(class, "sdwa" | "dpp") && (0x40..0x100).contains(&op) {
        return out;
    }
    for _ in 0..6 {
        let lit = r.next();
        let v = match class {
            "sop2" => vec![
                0x8000_0000 | op << 23 | (r.next() % 102) << 16 | r.ssrc() << 8 | r.ssrc(),
                lit,
            ],
            "sop1" => vec![
                0xBE80_0000 | (r.next() % 102) << 16 | op << 8 | r.ssrc(),
                lit,
            ],
            "sopc" => vec![0xBF00_0000 | op << 16 | r.ssrc() << 8 | r.ssrc(), lit],
            "sopk" => vec![0xB000_0000 | op << 23 | (r.next() % 102) << 16 | (r.next() & 0xffff)],
            "sopp" => vec![0xBF80_0000 | op << 16 | (r.next() & 0xff)],
            "smem" => vec![
                0xC002_0000 | op << 18 | (r.next() % 100) << 6 | (r.next() % 50),
                r.next() & 0xfffff,
            ],
            "vop1" => vec![
                0x7E00_0000 | (r.next() % 256) << 17 | op << 9 | r.src9(),
                lit,
            ],
            "vop2" => vec![
                op << 25 | (r.next() % 256) << 17 | (r.next() % 256) << 9 | r.src9(),
                lit,
            ],
            "vopc" => vec![
                0x7C00_0000 | op << 17 | (r.next() % 256) << 9 | r.src9(),
                lit,
            ],
            "vop3" => vec![
                0xD000_0000
                    | op << 16
                    | (r.next() & 0x8000)
                    | (r.next() % 8) << 8
                    // op_sel, for the VOP3-only 16-bit opcodes of gfx9.
                    | if (0x1f1..=0x207).contains(&op) || op == 0x2a0 {
                        r.next() & 0x7800
                    } else {
                        0
                    }
                    | (r.next() % 256),
                (r.next() % 8) << 29
                    | (r.next() % 4) << 27
                    | r.src9() << 18
                    | r.src9() << 9
                    | r.src9(),
            ],
            "vop3p" => vec![
                0xD380_0000 | op << 16 | (r.next() & 0x7f00) | (r.next() % 256),
                r.next() & 0xf800_0000
                    | (256 + r.next() % 256) << 18
                    | (256 + r.next() % 256) << 9
                    | (256 + r.next() % 256),
            ],
            "ds" => vec![
                0xD800_0000 | op << 17 | (r.next() & 0xffff),
                r.next() % 256 << 24 | r.next() % 256 << 16 | r.next() % 256 << 8 | r.next() % 256,
            ],
            "global" => vec![
                0xDC00_8000 | op << 18 | (r.next() & 0x3_1fff),
                (r.next() % 256) << 24
                    | [0x7f, r.next() % 100 & !1][r.next() as usize % 2] << 16
                    | (r.next() % 256) << 8
                    | r.next() % 256,
            ],
            "scratch" => vec![
                0xDC00_4000 | op << 18 | (r.next() & 0x3_1fff),
                (r.next() % 256) << 24
                    | [0x7f, r.next() % 102][r.next() as usize % 2] << 16
                    | (r.next() % 256) << 8
                    | r.next() % 256,
            ],
            "flat" => vec![
                0xDC00_0000 | op << 18 | (r.next() & 0x3_0fff),
                (r.next() % 256) << 24 | (r.next() % 256) << 8 | r.next() % 256,
            ],
            "mubuf" => vec![
                0xE000_0000 | op << 18 | (r.next() & 0x2_7fff),
                r.next() % 102 << 24
                    | (r.next() % 25) << 16
                    | (r.next() % 256) << 8
                    | r.next() % 256,
            ],
            "sdwa" => vec![
                (if op >= 0x100 {
                    0x7E00_0000 | (op - 0x100) << 9
                } else {
                    op << 25 | (r.next() % 256) << 9
                }) | (r.next() % 256) << 17
                    | 0xF9,
                (r.next() & 0x3f_3fff & !0x20_0000)
                    | [0, 4, 5, 6][r.next() as usize % 4] << 24
                    | (r.next() % 256),
            ],
            "dpp" => vec![
                (if op >= 0x100 {
                    0x7E00_0000 | (op - 0x100) << 9
                } else {
                    op << 25 | (r.next() % 256) << 9
                }) | (r.next() % 256) << 17
                    | 0xFA,
                (r.next() & 0xff08_0000)
                    | [
                        0x1b, 0xe4, 0x111, 0x118, 0x101, 0x121, 0x130, 0x138, 0x140, 0x141, 0x142,
                        0x143,
                    ][r.next() as usize % 12]
                        << 8
                    | (r.next() % 256),
            ],
            _ => unreachable!(),
        };
        out.push(v);
    }
    out
}

const CLASSES: &[(&str, std::ops::RangeInclusive<u32>)] = &[
    ("sop2", 0..=52),
    ("sop1", 0..=55),
    ("sopc", 0..=19),
    ("sopk", 0..=21),
    ("sopp", 0..=30),
    ("smem", 0..=12),
    ("vop1", 0..=0x5f),
    ("vop2", 0..=0x3e),
    ("vopc", 0..=0xff),
    ("vop3", 0..=0x2ff),
    ("vop3p", 0..=0x7f),
    ("ds", 0..=0xff),
    ("global", 0..=0x7f),
    ("flat", 0..=0x7f),
    ("scratch", 0..=0x7f),
    ("mubuf", 0..=0x6f),
    ("sdwa", 0..=0x13f),
    ("dpp", 0..=0x13f),
];

#[test]
fn every_opcode_class_matches_llvm_mc() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    // (class, bytes, our text)
    let mut cases: Vec<(&str, Vec<u8>, String)> = Vec::new();
    let mut ops_per_class: BTreeMap<&str, usize> = BTreeMap::new();
    for (class, range) in CLASSES {
        for op in range.clone() {
            let mut any = false;
            for words in samples(class, op, &mut r) {
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                if let Some(i) = decode(&bytes) {
                    cases.push((class, bytes[..i.size as usize].to_vec(), i.to_string()));
                    any = true;
                }
            }
            *ops_per_class.entry(class).or_default() += any as usize;
        }
    }
    for (class, _) in CLASSES {
        assert!(
            ops_per_class.get(class).copied().unwrap_or(0) > 0,
            "no {class} encoding decoded"
        );
    }
    // One instruction per line, each followed by a numbered marker
    // (`s_nop 0x8000 + index`): what LLVM prints before marker k is its
    // text for case k. (llvm-mc reads one byte stream: an encoding LLVM
    // takes as longer than ours swallows the marker, which shows as a
    // mismatch of that case.)
    assert!(cases.len() < 0x8000);
    let mut input = String::new();
    for (k, (_, b, _)) in cases.iter().enumerate() {
        let hex: Vec<String> = b.iter().map(|x| format!("0x{x:02x}")).collect();
        input.push_str(&hex.join(","));
        let m = 0x8000 + k as u32;
        input.push_str(&format!(
            "\n0x{:02x},0x{:02x},0x80,0xbf\n",
            m & 0xff,
            m >> 8
        ));
    }
    let mut child = Command::new("llvm-mc-19")
        .args(["--disassemble", "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx90a"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("llvm-mc-19 runs (install llvm-19)");
    let mut stdin = child.stdin.take().expect("stdin");
    let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("llvm-mc output");
    feeder.join().expect("feeder").expect("write to llvm-mc");
    let text = String::from_utf8_lossy(&out.stdout);
    // Cases whose bytes LLVM calls an invalid encoding (line 2k+1).
    let mut invalid = vec![false; cases.len()];
    for l in String::from_utf8_lossy(&out.stderr).lines() {
        if !l.contains("invalid instruction encoding") {
            continue;
        }
        let line = l.split(':').nth(1).and_then(|n| n.parse::<usize>().ok());
        if let Some(k) = line.filter(|n| n % 2 == 1).map(|n| n / 2) {
            if let Some(x) = invalid.get_mut(k) {
                *x = true;
            }
        }
    }
    let mut segments: Vec<Option<Vec<String>>> = vec![None; cases.len()];
    let mut cur: Vec<String> = Vec::new();
    for l in text.lines() {
        let l = l.split("//").next().unwrap_or("").trim();
        if l.is_empty() || l.starts_with('.') {
            continue;
        }
        let marker = l
            .strip_prefix("s_nop 0x")
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .filter(|v| *v >= 0x8000);
        match marker {
            Some(v) => {
                if let Some(s) = segments.get_mut((v - 0x8000) as usize) {
                    *s = Some(std::mem::take(&mut cur));
                }
                cur.clear();
            }
            None => cur.push(l.to_owned()),
        }
    }
    let mut mismatches = Vec::new();
    let mut per_class: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rejected = 0usize;
    let mut prev_bad = false;
    for (((class, bytes, ours), seg), bad) in cases.iter().zip(&segments).zip(&invalid) {
        let seg = seg.as_deref().unwrap_or(&[]);
        let after_bad = std::mem::replace(&mut prev_bad, *bad);
        if *bad {
            rejected += 1;
            continue;
        }
        match seg {
            [llvm] if llvm == ours => *per_class.entry(class).or_default() += 1,
            // LLVM skipped one dword of the invalid case before and read
            // the rest (and maybe its marker) as other instructions: this
            // case's own text comes last.
            [.., llvm] if after_bad && llvm == ours => *per_class.entry(class).or_default() += 1,
            // LLVM rejects a field combination the decoder accepts (an
            // operand that cannot be there): counted, not compared.
            [] => rejected += 1,
            other => mismatches.push(format!(
                "{class} {bytes:02x?}: llvm {other:?}, ours `{ours}`"
            )),
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} generated encodings differ:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
    for (class, _) in CLASSES {
        assert!(
            per_class.get(class).copied().unwrap_or(0) > 0,
            "no {class} encoding was compared with LLVM"
        );
    }
    eprintln!(
        "{} generated encodings agree with llvm-mc ({rejected} that LLVM rejects not \
         compared): {per_class:?}",
        cases.len() - rejected
    );
}
