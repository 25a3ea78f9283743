//! Large binary `x` replies go out in pieces while the rest is still read
//! (`session/handlers/memory.rs`, `Session::start_memory_stream`). Checked
//! against a live gdbmux and a real process: the bytes equal what `m`
//! (one-piece hex replies) returns, breakpoints stay hidden in every
//! piece, a read that runs off the end of the readable memory is its
//! readable prefix, a packet the client sends while the reply streams is
//! answered after it, and ack mode (no streaming) gives the same bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gpu_support;
mod harden_support;

use harden_support::*;
use protocol_tests::framing;

/// One streamed piece (`session::handlers::memory::STREAM_PIECE`).
const PIECE: u64 = 256 << 10;

/// Longer than one streamed piece several times over (and not a whole
/// number of them), within one `x` reply (`PacketSize`, 1 MiB).
const LEN: u64 = 3 * PIECE + (100 << 10) + 5;

/// The mappings of `pid`: `(start, end, perms)`.
fn mappings(pid: i32) -> Vec<(u64, u64, String)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    maps.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (a, b) = f.next()?.split_once('-')?;
            let perms = f.next()?.to_string();
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
                perms,
            ))
        })
        .collect()
}

/// Adjacent readable mappings merged: `(start, end, exec_start)`, where
/// `exec_start` is the start of the run's first executable mapping.
fn readable_runs(maps: &[(u64, u64, String)]) -> Vec<(u64, u64, Option<u64>)> {
    let mut runs: Vec<(u64, u64, Option<u64>)> = Vec::new();
    for (a, b, perms) in maps {
        if !perms.starts_with('r') {
            continue;
        }
        let exec = perms.as_bytes().get(2) == Some(&b'x');
        match runs.last_mut() {
            Some(r) if r.1 == *a => {
                r.1 = *b;
                if exec && r.2.is_none() {
                    r.2 = Some(*a);
                }
            }
            _ => runs.push((*a, *b, exec.then_some(*a))),
        }
    }
    runs
}

fn x_read(c: &mut RspClient, addr: u64, len: u64) -> Vec<u8> {
    let raw = c.request(format!("x{addr:x},{len:x}").as_bytes()).unwrap();
    framing::unescape(&raw).unwrap()
}

/// The same range through `m`, in 64 KiB requests (never streamed).
fn m_read(c: &mut RspClient, addr: u64, len: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < len {
        let n = (len - off).min(0x10000);
        let r = c.request_str(&format!("m{:x},{n:x}", addr + off)).unwrap();
        assert!(!r.starts_with('E') || out.is_empty(), "{r}");
        if r.starts_with('E') {
            break;
        }
        let got: Vec<u8> = (0..r.len() / 2)
            .map(|i| u8::from_str_radix(&r[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let short = (got.len() as u64) < n;
        off += got.len() as u64;
        out.extend(got);
        if short {
            break;
        }
    }
    out
}

#[test]
fn streamed_x_replies_match_m_hide_breakpoints_and_stop_at_the_unreadable() {
    let (g, prog) = spin_server(&[]);
    let mut c = g.connect();
    c.send_ack().unwrap();
    c.request_str(protocol_tests::GDB_QSUPPORTED).unwrap();
    let pid = inferior_pid(&g);
    // Run to `tick`: libc is mapped by then.
    let tick = sym(&prog, "tick");
    assert_eq!(c.request_str(&format!("Z0,{tick:x},1")).unwrap(), "OK");
    let (stop, _) = c.stop_reply("c").unwrap();
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");
    assert_eq!(c.request_str(&format!("z0,{tick:x},1")).unwrap(), "OK");
    let maps = mappings(pid);
    let runs = readable_runs(&maps);
    let &(start, end, exec) = runs
        .iter()
        .filter(|r| r.2.is_some())
        .max_by_key(|r| r.1 - r.0)
        .expect("an executable readable run");
    assert!(end - start >= LEN, "no run of {LEN} bytes: {runs:x?}");

    // Ack mode: one-piece replies.
    let expected = m_read(&mut c, start, LEN);
    assert_eq!(expected.len() as u64, LEN);
    assert_eq!(x_read(&mut c, start, LEN), expected, "ack-mode x");

    c.start_no_ack().unwrap();
    assert_eq!(x_read(&mut c, start, LEN), expected, "streamed x");

    // A breakpoint in a later piece stays hidden.
    let exec = exec.unwrap();
    let bp = (start + (300 << 10) + 5).max(exec + 5);
    assert!(bp < start + LEN, "{bp:x} {start:x}");
    assert_eq!(c.request_str(&format!("Z0,{bp:x},1")).unwrap(), "OK");
    assert_eq!(x_read(&mut c, start, LEN), expected, "with a breakpoint");
    assert_eq!(c.request_str(&format!("z0,{bp:x},1")).unwrap(), "OK");

    // A packet sent while the reply streams is answered after it.
    let mut both = framing::encode_packet(format!("x{start:x},{LEN:x}").as_bytes());
    both.extend(framing::encode_packet(b"qC"));
    c.send_raw(&both).unwrap();
    let first = framing::unescape(&c.recv_packet().unwrap()).unwrap();
    assert_eq!(first, expected, "x sent with a qC behind it");
    let qc = String::from_utf8(c.recv_packet().unwrap()).unwrap();
    assert!(qc.starts_with("QC"), "{qc}");

    // Off the end of a run that nothing is mapped after: the readable
    // prefix, more than one piece and not a whole number of them.
    let &(run_start, end, _) = runs
        .iter()
        .filter(|r| !maps.iter().any(|m| m.0 == r.1) && r.1 - r.0 > PIECE + 1)
        .max_by_key(|r| r.1 - r.0)
        .expect("a readable run with nothing mapped after it");
    let from = run_start.max(end - PIECE - (72 << 10) - 3);
    let tail = x_read(&mut c, from, LEN);
    assert_eq!(tail.len() as u64, end - from, "prefix length");
    assert_eq!(tail, m_read(&mut c, from, end - from), "prefix bytes");

    // Nothing readable: an error, as before.
    let r = c.request_str(&format!("x{end:x},{LEN:x}")).unwrap();
    assert!(r.starts_with('E'), "{r}");
}
