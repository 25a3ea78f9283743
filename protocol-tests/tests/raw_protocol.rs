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
        outcome.acceptable(s.requirement),
        "scenario {name} ({:?}) against {}: {}",
        s.requirement,
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
            for s in scenarios::ALL {
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
}
