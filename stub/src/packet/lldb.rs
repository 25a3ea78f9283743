//! lldb-specific packets (see lldb's `docs/resources/lldbgdbremote.md`,
//! <https://lldb.llvm.org/resources/lldbgdbremote.html>).
//!
//! ```text
//! qThreadStopInfo<tid>    qMemoryRegionInfo:<addr>    qEcho:<text>
//! qRegisterInfo<n>        QSetDetachOnError:0|1
//! jAcceleratorPluginBreakpointHit:<json>
//! ```

use super::hex_u64;
use super::Command;
use super::ParseError;

/// `qThreadStopInfo<tid>`
pub fn parse_thread_stop_info(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::ThreadStopInfo(hex_u64(rest, "bad thread id")?))
}

/// `qMemoryRegionInfo:<addr>`
pub fn parse_memory_region_info(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::MemoryRegionInfo(hex_u64(rest, "bad address")?))
}

/// `qEcho:<text>`
pub fn parse_echo(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::Echo(rest.to_vec()))
}

/// `qRegisterInfo<n>`
pub fn parse_register_info(rest: &[u8]) -> Result<Command, ParseError> {
    let n = hex_u64(rest, "bad register number")?;
    u32::try_from(n)
        .map(Command::RegisterInfo)
        .map_err(|_| ParseError::new("register number out of range"))
}

/// `QSetDetachOnError:0|1`
pub fn parse_detach_on_error(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::SetDetachOnError(rest == b"1"))
}

/// `jAcceleratorPluginBreakpointHit:<json>`
pub fn parse_accel_hit(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::AcceleratorBreakpointHit(rest.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            parse(b"qThreadStopInfo4c43").unwrap(),
            Command::ThreadStopInfo(0x4c43)
        );
        assert_eq!(
            parse(b"qMemoryRegionInfo:7fff0000").unwrap(),
            Command::MemoryRegionInfo(0x7fff0000)
        );
        assert_eq!(
            parse(b"qRegisterInfo1a").unwrap(),
            Command::RegisterInfo(0x1a)
        );
        assert_eq!(parse(b"qEcho:hi").unwrap(), Command::Echo(b"hi".to_vec()));
        assert!(parse(b"qThreadStopInfo").is_err());
        assert!(parse(b"qRegisterInfozz").is_err());
    }
}
