//! Registers of XSAVE state components beyond AVX, over the raw protocol
//! (no gdb needed): gdbmux describes them as gdbserver 13 does when the
//! kernel enables the component (target.xml features
//! `org.gnu.gdb.i386.avx512` and `org.gnu.gdb.i386.pkeys`), reads them
//! back as written with `P`, and the program sees the written values.
//!
//! The fixture (`fixtures/xregs.c`) stops at an `int3`; the test writes
//! the registers; the instructions right after the `int3` store them to
//! memory before any compiler-generated code runs; a second `int3` stops
//! for the test to read the copies.
//!
//! A test whose CPU lacks the component skips (recorded in
//! `$GDBMUX_SKIP_LOG`), after checking that gdbmux does not describe it.
//! The AVX-512 one runs on an AVX-512 machine with:
//! `cargo test -p stub --test xsave_regs -- --nocapture` (`XREGS_FIXTURE=PATH`: a
//! fixture built elsewhere, for a machine without gcc).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gpu_support;
mod harden_support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use gpu_target::dbgapi::testing;
use harden_support::*;

/// The fixture, built once per test binary.
fn xregs() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            // A machine without gcc (the AVX-512 one the lead borrows) runs
            // the fixture built elsewhere.
            if let Some(built) = std::env::var_os("XREGS_FIXTURE") {
                return PathBuf::from(built);
            }
            let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/xregs.c");
            let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("xsave-fixtures");
            std::fs::create_dir_all(&dir).expect("fixture dir");
            let tmp = dir.join(format!("xregs.{}.tmp", std::process::id()));
            let st = Command::new("gcc")
                .args(["-g", "-O0", "-no-pie", "-o"])
                .arg(&tmp)
                .arg(&src)
                .status()
                .expect("run gcc");
            assert!(st.success(), "gcc xregs.c failed");
            let out = dir.join("xregs");
            std::fs::rename(&tmp, &out).expect("rename fixture");
            out
        })
        .clone()
}

fn cpu_flag(flag: &str) -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == flag))
}

/// gdbmux on `xregs MODE`, connected, stopped at the first `int3`.
fn stopped_at_first_int3(mode: &str) -> (Gdbmux, RspClient, PathBuf) {
    let prog = xregs();
    let p = prog.display().to_string();
    let g = Gdbmux::start(&["--no-gpu", "127.0.0.1:0", "--", &p, mode]);
    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    let stop = c.request_str("vCont;c").unwrap();
    assert!(stop.starts_with("T05"), "not stopped at the int3: {stop}");
    (g, c, prog)
}

/// name → (regnum, bytes) from target.xml.
fn registers(c: &mut RspClient) -> HashMap<String, (u32, usize)> {
    let mut xml = String::new();
    loop {
        let r = c
            .request_str(&format!(
                "qXfer:features:read:target.xml:{:x},800",
                xml.len()
            ))
            .unwrap();
        let (kind, data) = r.split_at(1);
        xml.push_str(data);
        if kind == "l" {
            break;
        }
        assert_eq!(kind, "m", "target.xml read: {r}");
    }
    let attr = |tag: &str, name: &str| -> Option<String> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(tag[at..].split('"').next()?.to_string())
    };
    xml.split("<reg ")
        .skip(1)
        .map(|tag| {
            let tag = format!(" {}", tag.split('>').next().unwrap_or_default());
            let name = attr(&tag, "name").unwrap();
            let num = attr(&tag, "regnum").unwrap().parse().unwrap();
            let bits: usize = attr(&tag, "bitsize").unwrap().parse().unwrap();
            (name, (num, bits / 8))
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// A distinct byte pattern per register and part.
fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_mul(31).wrapping_add(i as u8 * 7 + 1))
        .collect()
}

/// `P` a register, then `p` it back.
fn write_and_read_back(
    c: &mut RspClient,
    regs: &HashMap<String, (u32, usize)>,
    name: &str,
    value: &[u8],
) {
    let (n, size) = regs[name];
    assert_eq!(size, value.len(), "{name} size");
    assert_eq!(
        c.request_str(&format!("P{n:x}={}", hex(value))).unwrap(),
        "OK",
        "P {name}"
    );
    assert_eq!(
        c.request_str(&format!("p{n:x}")).unwrap(),
        hex(value),
        "{name} read back"
    );
}

fn read_memory(c: &mut RspClient, addr: u64, len: usize) -> Vec<u8> {
    unhex(&c.request_str(&format!("m{addr:x},{len:x}")).unwrap())
}

/// k0–7 and zmm0–31 (each as xmmN, ymmNh, zmmNh) written with `P` reach
/// the program: the ZMM_Hi256, Hi16_ZMM and opmask components at their
/// CPUID offsets, and the FXSAVE/AVX parts below them.
#[test]
fn avx512_registers_written_with_p_reach_the_program() {
    let test = "xsave_regs::avx512_registers_written_with_p_reach_the_program";
    let (_g, mut c, prog) = stopped_at_first_int3("avx512");
    let regs = registers(&mut c);
    if !(cpu_flag("avx512f") && cpu_flag("avx512bw")) {
        for absent in ["k0", "zmm0h", "xmm16", "ymm31h"] {
            assert!(
                !regs.contains_key(absent),
                "{absent} described on a CPU without AVX-512"
            );
        }
        testing::skip(
            test,
            "this CPU has no AVX-512F/BW (no avx512f/avx512bw in /proc/cpuinfo)",
        );
        return;
    }
    for i in 0..8u8 {
        let v = pattern(200 + i, 8);
        write_and_read_back(&mut c, &regs, &format!("k{i}"), &v);
    }
    let mut expect = Vec::new();
    for i in 0..32u8 {
        let x = pattern(i, 16);
        let y = pattern(i + 64, 16);
        let z = pattern(i + 128, 32);
        write_and_read_back(&mut c, &regs, &format!("xmm{i}"), &x);
        write_and_read_back(&mut c, &regs, &format!("ymm{i}h"), &y);
        write_and_read_back(&mut c, &regs, &format!("zmm{i}h"), &z);
        expect.extend(x);
        expect.extend(y);
        expect.extend(z);
    }
    // Every part still reads back after all the writes (no write clobbered
    // another component).
    for i in 0..32u8 {
        let (n, _) = regs[&format!("xmm{i}")];
        assert_eq!(
            c.request_str(&format!("p{n:x}")).unwrap(),
            hex(&pattern(i, 16))
        );
    }
    let stop = c.request_str("vCont;c").unwrap();
    assert!(stop.starts_with("T05"), "not at the second int3: {stop}");
    let k = read_memory(&mut c, sym(&prog, "seen_k"), 64);
    for i in 0..8u8 {
        assert_eq!(
            &k[8 * i as usize..8 * i as usize + 8],
            &pattern(200 + i, 8)[..],
            "k{i} as the program saw it"
        );
    }
    let z = read_memory(&mut c, sym(&prog, "seen_zmm"), 32 * 64);
    for i in 0..32usize {
        assert_eq!(
            hex(&z[64 * i..64 * i + 64]),
            hex(&expect[64 * i..64 * i + 64]),
            "zmm{i} as the program saw it"
        );
    }
}

/// `pkru` (protection keys; gdbserver describes it whenever XCR0 has the
/// component) written with `P` is what the program's `rdpkru` reads.
#[test]
fn pkru_written_with_p_reaches_the_program() {
    let test = "xsave_regs::pkru_written_with_p_reaches_the_program";
    let (_g, mut c, prog) = stopped_at_first_int3("pkru");
    let regs = registers(&mut c);
    if !cpu_flag("ospke") {
        assert!(
            !regs.contains_key("pkru"),
            "pkru described without OS protection-key support"
        );
        testing::skip(
            test,
            "protection keys are not enabled (no ospke in /proc/cpuinfo)",
        );
        return;
    }
    // Key 0 (all ordinary memory) stays accessible; keys 1–15 lose access.
    let value = 0x5555_555c_u32.to_le_bytes();
    write_and_read_back(&mut c, &regs, "pkru", &value);
    let stop = c.request_str("vCont;c").unwrap();
    assert!(stop.starts_with("T05"), "not at the second int3: {stop}");
    assert_eq!(
        read_memory(&mut c, sym(&prog, "seen_pkru"), 4),
        value,
        "pkru as rdpkru saw it"
    );
}
