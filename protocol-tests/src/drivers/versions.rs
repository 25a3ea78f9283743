//! The debuggers under test are pinned: stock gdb 13.x and stock lldb
//! 23.1.x. Every driver asserts the installed version before its first
//! run, so a test never passes against another debugger by accident.

use std::process::Command;
use std::sync::OnceLock;

/// gdb's required version prefix.
pub const GDB: &str = "13.";
/// lldb's required version prefix.
pub const LLDB: &str = "23.1.";

/// The version a `--version` first line reports (`GNU gdb (Debian 13.1-3)
/// 13.1` → `13.1`; `lldb version 23.1.0` → `23.1.0`).
pub fn parse(first_line: &str) -> Option<&str> {
    first_line.split_whitespace().last()
}

fn installed(program: &str) -> Result<String, String> {
    let out = Command::new(program)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {program} --version: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let first = text.lines().next().unwrap_or_default();
    parse(first)
        .map(str::to_string)
        .ok_or_else(|| format!("{program} --version printed no version: {text}"))
}

fn require(program: &str, prefix: &str, cell: &'static OnceLock<Result<String, String>>) {
    let r = cell.get_or_init(|| {
        let v = installed(program)?;
        if v.starts_with(prefix) {
            Ok(v)
        } else {
            Err(format!(
                "{program} {v} is installed; the tests need stock {program} {prefix}x"
            ))
        }
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// Panic unless gdb 13.x is installed.
pub fn require_gdb() {
    static CELL: OnceLock<Result<String, String>> = OnceLock::new();
    require("gdb", GDB, &CELL);
}

/// Panic unless lldb 23.1.x is installed.
pub fn require_lldb() {
    static CELL: OnceLock<Result<String, String>> = OnceLock::new();
    require("lldb", LLDB, &CELL);
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_first_lines() {
        assert_eq!(super::parse("GNU gdb (Debian 13.1-3) 13.1"), Some("13.1"));
        assert_eq!(super::parse("lldb version 23.1.0"), Some("23.1.0"));
    }
}
