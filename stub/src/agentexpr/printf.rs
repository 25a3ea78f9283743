//! The agent's `printf` (opcode 0x34, gdb's agent-style `dprintf`): a C
//! format string and its integer arguments, rendered as gdbserver's
//! `ax_printf` renders them. The conversions it prints are `%s` (a
//! NUL-terminated string read from the inferior; address 0 prints
//! `(null)`) and the integer ones `d i u o x X c` with the `hh h l ll z`
//! length modifiers, flags `-+ #0`, a width and a precision; any other
//! (`%p`, floating point, wide characters, `*` widths) is an error, as it
//! is in gdbserver. The argument count must match the conversions.
//!
//! I/O-free: memory comes through [`AgentContext`]; every string read and
//! the text of one call are bounded ([`STRING_LIMIT`], [`OUTPUT_LIMIT`]).

use super::AgentContext;
use super::AgentError;

/// Longest `%s` argument read from the inferior (bytes before its NUL);
/// a longer string is cut there.
pub const STRING_LIMIT: usize = 4096;
/// Most text one `printf` adds to its output; the rest is dropped.
pub const OUTPUT_LIMIT: usize = 64 * 1024;

/// One conversion's flags, width and precision.
#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

fn bad(why: impl Into<String>) -> AgentError {
    AgentError::Format(why.into())
}

/// Render `format` (with its trailing NUL) with `args` (the first
/// argument first) onto `out`.
pub fn format(
    format: &[u8],
    args: &[u64],
    ctx: &mut dyn AgentContext,
    out: &mut String,
) -> Result<(), AgentError> {
    let Some((0, format)) = format.split_last().map(|(l, f)| (*l, f)) else {
        return Err(bad("unterminated format string"));
    };
    let format = &unescape(format)?;
    let mut text = String::new();
    let total = args.len();
    let mut args = args.iter();
    let mut wanted = 0usize;
    let mut i = 0;
    while i < format.len() {
        let b = format[i];
        i += 1;
        if b != b'%' {
            let start = i - 1;
            let end = format[start..]
                .iter()
                .position(|c| *c == b'%')
                .map_or(format.len(), |p| start + p);
            text.push_str(&String::from_utf8_lossy(&format[start..end]));
            i = end;
            continue;
        }
        if format.get(i) == Some(&b'%') {
            text.push('%');
            i += 1;
            continue;
        }
        let mut spec = Spec::default();
        while let Some(f) = format.get(i) {
            match f {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            i += 1;
        }
        spec.width = digits(format, &mut i);
        if format.get(i) == Some(&b'.') {
            i += 1;
            spec.precision = Some(digits(format, &mut i));
        }
        let mut bits = 32u32;
        let mut length = 0;
        while let Some(l) = format.get(i) {
            match (l, length) {
                (b'h', 0) => bits = 16,
                (b'h', _) => bits = 8,
                (b'l' | b'z', _) => bits = 64,
                _ => break,
            }
            length += 1;
            i += 1;
        }
        let conv = *format
            .get(i)
            .ok_or_else(|| bad("format ends inside a conversion"))?;
        i += 1;
        wanted += 1;
        let Some(&arg) = args.next() else {
            continue;
        };
        let piece = match conv {
            b's' if length == 0 => {
                let s = if arg == 0 {
                    "(null)".to_string()
                } else {
                    read_string(ctx, arg)?
                };
                let s: String = match spec.precision {
                    Some(p) => s.chars().take(p).collect(),
                    None => s,
                };
                pad(&spec, "", s, false)
            }
            b'c' if length == 0 => pad(&spec, "", char::from(arg as u8).to_string(), false),
            b'd' | b'i' => {
                let v = sign_extend(arg, bits);
                let sign = if v < 0 {
                    "-"
                } else if spec.plus {
                    "+"
                } else if spec.space {
                    " "
                } else {
                    ""
                };
                integer(&spec, sign, v.unsigned_abs().to_string())
            }
            b'u' => integer(&spec, "", truncate(arg, bits).to_string()),
            b'o' => {
                let mut d = format!("{:o}", truncate(arg, bits));
                if spec.alt && !d.starts_with('0') {
                    d.insert(0, '0');
                }
                integer(&spec, "", d)
            }
            b'x' | b'X' => {
                let v = truncate(arg, bits);
                let d = if conv == b'x' {
                    format!("{v:x}")
                } else {
                    format!("{v:X}")
                };
                let prefix = match (spec.alt && v != 0, conv) {
                    (false, _) => "",
                    (true, b'x') => "0x",
                    (true, _) => "0X",
                };
                integer(&spec, prefix, d)
            }
            other => {
                return Err(bad(format!(
                    "conversion '{}' is not supported in agent printf",
                    char::from(other)
                )))
            }
        };
        text.push_str(&piece);
    }
    if wanted != total {
        return Err(bad(format!(
            "{total} arguments for a format string of {wanted} conversions"
        )));
    }
    let mut cut = text.len().min(OUTPUT_LIMIT);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    out.push_str(&text[..cut]);
    Ok(())
}

/// gdb sends the format as the user typed it, backslash escapes
/// included; the agent translates them (gdb's `format_pieces`: `\\ \a \b
/// \e \f \n \r \t \v \"`, any other is an error) and, as there, an
/// unescaped `"` ends the format.
fn unescape(format: &[u8]) -> Result<Vec<u8>, AgentError> {
    let mut v = Vec::with_capacity(format.len());
    let mut it = format.iter();
    while let Some(&b) = it.next() {
        match b {
            b'"' => break,
            b'\\' => {
                let e = it
                    .next()
                    .ok_or_else(|| bad("format ends with a backslash"))?;
                v.push(match e {
                    b'\\' => b'\\',
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'e' => 0x1b,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 0x0b,
                    b'"' => b'"',
                    other => {
                        return Err(bad(format!(
                            "unrecognized escape character \\{} in the format",
                            char::from(*other)
                        )))
                    }
                });
            }
            b => v.push(b),
        }
    }
    Ok(v)
}

fn digits(format: &[u8], i: &mut usize) -> usize {
    let mut n = 0usize;
    while let Some(d) = format.get(*i).filter(|d| d.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(usize::from(d - b'0'));
        *i += 1;
    }
    n.min(OUTPUT_LIMIT)
}

fn truncate(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits.min(64);
    ((v << shift) as i64) >> shift
}

/// Digits with C's precision (minimum digits; precision 0 prints no
/// digit for 0) and zero padding, then the width.
fn integer(spec: &Spec, prefix: &str, mut d: String) -> String {
    if let Some(p) = spec.precision {
        if p == 0 && d == "0" {
            d.clear();
        }
        while d.len() < p {
            d.insert(0, '0');
        }
    }
    pad(
        spec,
        prefix,
        d,
        spec.zero && !spec.left && spec.precision.is_none(),
    )
}

/// `prefix` (sign, `0x`) and `body`, padded to the width: on the right
/// with `-`, with zeros after the prefix when `zeros`, else spaces before.
fn pad(spec: &Spec, prefix: &str, body: String, zeros: bool) -> String {
    let len = prefix.len() + body.chars().count();
    let fill = spec.width.saturating_sub(len);
    if spec.left {
        format!("{prefix}{body}{}", " ".repeat(fill))
    } else if zeros {
        format!("{prefix}{}{body}", "0".repeat(fill))
    } else {
        format!("{}{prefix}{body}", " ".repeat(fill))
    }
}

/// The NUL-terminated string at `addr`, at most [`STRING_LIMIT`] bytes.
fn read_string(ctx: &mut dyn AgentContext, addr: u64) -> Result<String, AgentError> {
    let mut bytes = Vec::new();
    const CHUNK: usize = 64;
    while bytes.len() < STRING_LIMIT {
        let at = addr.wrapping_add(bytes.len() as u64);
        // Read up to the end of the page first, so a string that ends
        // just before an unmapped page is still read.
        let to_page = 4096 - (at % 4096) as usize;
        let n = CHUNK.min(to_page).min(STRING_LIMIT - bytes.len());
        let chunk = ctx.memory(at, n).ok_or(AgentError::Memory(at))?;
        match chunk.iter().position(|b| *b == 0) {
            Some(z) => {
                bytes.extend_from_slice(&chunk[..z]);
                return Ok(String::from_utf8_lossy(&bytes).into_owned());
            }
            None => bytes.extend_from_slice(&chunk),
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Mem;
    impl AgentContext for Mem {
        fn register(&mut self, _regnum: u32) -> Option<Vec<u8>> {
            None
        }
        fn memory(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
            let s = b"world\0";
            let at = addr.checked_sub(0x1000)? as usize;
            Some(
                s.get(at..)?
                    .iter()
                    .copied()
                    .chain(std::iter::repeat(0))
                    .take(len)
                    .collect(),
            )
        }
    }

    fn fmt(f: &str, args: &[u64]) -> Result<String, AgentError> {
        let mut z = f.as_bytes().to_vec();
        z.push(0);
        let mut out = String::new();
        format(&z, args, &mut Mem, &mut out).map(|()| out)
    }

    #[test]
    fn c_conversions_as_gdbserver_prints_them() {
        assert_eq!(
            fmt(r"arg=%d g=%5d %s|%-4d|%%\n", &[7, 12, 0x1000, 3]).unwrap(),
            "arg=7 g=   12 world|3   |%\n"
        );
        assert_eq!(
            fmt("%d %u", &[u64::MAX, u64::MAX]).unwrap(),
            "-1 4294967295"
        );
        assert_eq!(
            fmt("%ld %lu", &[u64::MAX, u64::MAX]).unwrap(),
            "-1 18446744073709551615"
        );
        assert_eq!(fmt("%hhd %hu", &[0x1ff, 0x1ffff]).unwrap(), "-1 65535");
        assert_eq!(
            fmt("%#x %#o %X %08.3x", &[255, 8, 255, 5]).unwrap(),
            "0xff 010 FF      005"
        );
        assert_eq!(
            fmt(
                "%+d % d %05d %-5d|",
                &[3, 3, (-3i64) as u64, (-3i64) as u64]
            )
            .unwrap(),
            "+3  3 -0003 -3   |"
        );
        assert_eq!(
            fmt("%.0d|%c|%.3s|%s", &[0, 65, 0x1000, 0]).unwrap(),
            "|A|wor|(null)"
        );
    }

    #[test]
    fn what_gdbserver_refuses() {
        assert!(fmt("%p", &[1]).is_err());
        assert!(fmt("%f", &[1]).is_err());
        assert!(fmt("%d %d", &[1]).is_err());
        assert!(fmt("%d", &[1, 2]).is_err());
        assert!(fmt(r"\q", &[]).is_err());
        assert!(fmt("%s", &[0x2000]).is_err());
        let mut out = String::new();
        assert!(format(b"no nul", &[], &mut Mem, &mut out).is_err());
    }
}
