//! Raw-protocol scenarios (see `protocol_tests::scenarios`), one test each,
//! against the stub chosen by `RSP_STUB` (default gdbmux).
//!
//! Required scenarios must pass; implementation-defined ones may report
//! "unsupported" but must not fail.

use protocol_tests::drivers::StubSpec;
use protocol_tests::scenarios;
use protocol_tests::scenarios::Outcome;

fn check(name: &str) {
    let Some(spec) = StubSpec::from_env_or_skip(name) else {
        return;
    };
    let s = scenarios::find(name).unwrap_or_else(|| panic!("no scenario {name}"));
    let outcome = scenarios::run_with_spec(&spec, s);
    match &outcome {
        Outcome::Pass(n) => eprintln!("{name} [{}]: pass {n}", spec.name),
        Outcome::Unsupported(n) => eprintln!("{name} [{}]: unsupported {n}", spec.name),
        Outcome::Fail(_) => {}
    }
    assert!(
        outcome.acceptable(s.requirement_for(spec.dialect)),
        "scenario {name} ({:?}) against {}: {}",
        s.requirement_for(spec.dialect),
        spec.name,
        match outcome {
            Outcome::Fail(f) => f.to_string(),
            Outcome::Unsupported(n) => format!("unsupported: {n}"),
            Outcome::Pass(_) => String::new(),
        }
    );
}

macro_rules! scenario_tests {
    ($($fn_name:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $fn_name() {
                check($name);
            }
        )*

        #[test]
        fn every_scenario_has_a_test() {
            let tested = [$($name),*];
            for s in scenarios::all() {
                assert!(tested.contains(&s.name), "scenario {} has no #[test]", s.name);
            }
        }
    };
}

scenario_tests! {
    handshake_gdb => "handshake-gdb",
    handshake_lldb => "handshake-lldb",
    stop_replay => "stop-replay",
    unknown_packet => "unknown-packet",
    framing_bad_checksum => "framing-bad-checksum",
    framing_nak_retransmit => "framing-nak-retransmit",
    framing_split => "framing-split",
    registers_g => "registers-g",
    memory_unmapped => "memory-unmapped",
    breakpoint_twice => "breakpoint-twice",
    malformed_input => "malformed-input",
    thread_list => "thread-list",
    vcont_step => "vcont-step",
    interrupt => "interrupt",
    kill => "kill",
    lldb_info => "lldb-info",
    jthreadsinfo => "jthreadsinfo",
    accelerator_initialize => "accelerator-initialize",
    threads_select_registers => "threads-select-registers",
    extended_mode => "extended-mode",
    connection_duplicate => "connection-duplicate",
    accelerator_exactly_once => "accelerator-exactly-once",
    // Transcripts (scenarios/*.txt).
    detach => "detach",
    framing_escapes => "framing-escapes",
    framing_oversize => "framing-oversize",
    framing_rle => "framing-rle",
    lldb_dialect => "lldb-dialect",
    memory_binary_read => "memory-binary-read",
    memory_write_read => "memory-write-read",
    negotiation_unknown_features => "negotiation-unknown-features",
    stop_breakpoint => "stop-breakpoint",
    stop_exit => "stop-exit",
    stop_signal => "stop-signal",
    stop_watchpoint => "stop-watchpoint",
    vcont_combinations => "vcont-combinations",
}
