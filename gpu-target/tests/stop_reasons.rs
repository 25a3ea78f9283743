//! The stop-reason table against AMD's real 0.77 header: every
//! `AMD_DBGAPI_WAVE_STOP_REASON_*` bit has a signal and a description, with
//! the header's value (a `SKIPPED` line without $GDBMUX_REAL_DBGAPI_DIR).

use gpu_target::dbgapi::testing;
use gpu_target::model::StopReasons;

#[test]
fn every_0_77_stop_reason_has_a_signal_and_a_description() {
    let header = testing::real_dir().join("0.77.0/include/amd-dbgapi.h");
    let Ok(text) = std::fs::read_to_string(&header) else {
        testing::skip(
            "gpu-target::stop_reasons::every_0_77_stop_reason_has_a_signal_and_a_description",
            &format!("{} not found (AMD's real amd-dbgapi)", header.display()),
        );
        return;
    };
    let mut bits = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        let Some(rest) = l.strip_prefix("AMD_DBGAPI_WAVE_STOP_REASON_") else {
            continue;
        };
        let Some((name, value)) = rest.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_end_matches(',');
        let Some(shift) = value
            .strip_prefix("(1 << ")
            .and_then(|v| v.strip_suffix(')'))
        else {
            continue;
        };
        bits.push((
            name.trim().to_string(),
            1u32 << shift.parse::<u32>().unwrap(),
        ));
    }
    assert_eq!(bits.len(), 18, "the 0.77 header's stop reasons: {bits:?}");
    for (name, bit) in &bits {
        let entry = StopReasons::TABLE
            .iter()
            .find(|(r, _, _)| r.0 == *bit)
            .unwrap_or_else(|| panic!("{name} ({bit:#x}) is not in the table"));
        assert!(entry.1 > 0 && !entry.2.is_empty(), "{name}");
    }
    assert_eq!(StopReasons::TABLE.len(), bits.len());
}

#[test]
fn signals_and_descriptions() {
    let s = |bits: StopReasons| (bits.signal(), bits.description());
    assert_eq!(
        s(StopReasons::INT_DIVIDE_BY_0),
        (libc::SIGFPE, "integer divide by zero".into())
    );
    assert_eq!(
        s(StopReasons::ADDRESS_ERROR),
        (libc::SIGSEGV, "address error".into())
    );
    assert_eq!(s(StopReasons::FP_OVERFLOW).0, libc::SIGFPE);
    assert_eq!(s(StopReasons::ECC_ERROR).0, libc::SIGBUS);
    assert_eq!(s(StopReasons::FATAL_HALT).0, libc::SIGABRT);
    assert_eq!(
        s(StopReasons::MEMORY_VIOLATION | StopReasons::SINGLE_STEP),
        (libc::SIGSEGV, "memory violation, single step".into())
    );
    assert_eq!(s(StopReasons::BREAKPOINT).0, libc::SIGTRAP);
    assert_eq!(
        s(StopReasons(1 << 20)),
        (libc::SIGTRAP, "stop reasons 0x100000".into())
    );
    assert_eq!(s(StopReasons::NONE).0, 0);
}
