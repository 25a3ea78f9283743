//! `qXfer:object:read:annex:offset,length`.
//!
//! Reply chunks are `m<data>` (more follows) or `l<data>` (last), data
//! binary (escaped by the encoder). The session owns the windowing: gdb
//! asks 0x1000 at a time, lldb 131071.

use super::hex_u64;
use super::split2;
use super::Command;
use super::ParseError;
use super::XferRead;

/// After `qXfer:`.
pub fn parse_xfer(rest: &[u8]) -> Result<Command, ParseError> {
    let mut it = rest.splitn(4, |b| *b == b':');
    let object = it.next().ok_or(ParseError::new("bad qXfer"))?;
    let op = it.next().ok_or(ParseError::new("bad qXfer"))?;
    let annex = it.next().ok_or(ParseError::new("bad qXfer"))?;
    let range = it.next().ok_or(ParseError::new("bad qXfer"))?;
    if op == b"write" {
        let (o, data) = split2(range, b':').ok_or(ParseError::new("bad qXfer write"))?;
        return Ok(Command::XferWrite {
            object: String::from_utf8_lossy(object).into_owned(),
            annex: String::from_utf8_lossy(annex).into_owned(),
            offset: hex_u64(o, "bad offset")?,
            data: data.to_vec(),
        });
    }
    if op != b"read" {
        let mut p = b"qXfer:".to_vec();
        p.extend_from_slice(rest);
        return Ok(Command::Unknown(p));
    }
    let (o, l) = split2(range, b',').ok_or(ParseError::new("bad qXfer range"))?;
    Ok(Command::XferRead(XferRead {
        object: String::from_utf8_lossy(object).into_owned(),
        annex: String::from_utf8_lossy(annex).into_owned(),
        offset: hex_u64(o, "bad offset")?,
        length: hex_u64(l, "bad length")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            parse(b"qXfer:features:read:target.xml:0,1000").unwrap(),
            Command::XferRead(XferRead {
                object: "features".into(),
                annex: "target.xml".into(),
                offset: 0,
                length: 0x1000
            })
        );
        assert_eq!(
            parse(b"qXfer:auxv:read::0,1ffff").unwrap(),
            Command::XferRead(XferRead {
                object: "auxv".into(),
                annex: "".into(),
                offset: 0,
                length: 0x1ffff
            })
        );
        assert_eq!(
            parse(b"qXfer:siginfo:write::8:a:c").unwrap(),
            Command::XferWrite {
                object: "siginfo".into(),
                annex: "".into(),
                offset: 8,
                data: b"a:c".to_vec()
            }
        );
        assert!(parse(b"qXfer:features:read:target.xml").is_err());
        assert!(parse(b"qXfer:").is_err());
    }
}
