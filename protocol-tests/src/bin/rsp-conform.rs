//! `rsp-conform`: run the raw-protocol scenarios against any stub and print a
//! table of scenario × pass / fail / unsupported.
//!
//! ```text
//! rsp-conform --stub gdbserver
//! rsp-conform --stub 'lldb-server gdbserver {addr} -- {prog} {args}' --dialect lldb-server
//! rsp-conform --addr 127.0.0.1:1234          # a server that accepts repeated connections
//! rsp-conform --stub gdbmux --only handshake-gdb,stop-replay
//! ```
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use protocol_tests::drivers::Dialect;
use protocol_tests::drivers::StubSpec;
use protocol_tests::scenarios;
use protocol_tests::scenarios::Outcome;
use protocol_tests::scenarios::Requirement;

#[derive(Debug, Parser)]
#[command(about = "GDB remote protocol conformance runner")]
struct Args {
    /// `gdbmux`, `gdbserver`, `lldb-server`, or a template with {addr} {prog} {args}.
    #[arg(long, conflicts_with = "addr")]
    stub: Option<String>,
    /// Address of an already running server (must accept one connection per scenario).
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// Expectations to apply: gdbmux, gdbserver, lldb-server (default: from --stub, else gdbmux).
    #[arg(long)]
    dialect: Option<String>,
    /// Comma-separated scenario names to run.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// List scenarios and exit.
    #[arg(long)]
    list: bool,
}

fn parse_dialect(s: &str) -> anyhow::Result<Dialect> {
    Ok(match s {
        "gdbmux" => Dialect::Gdbmux,
        "gdbserver" => Dialect::Gdbserver,
        "lldb-server" | "lldb" => Dialect::LldbServer,
        "custom" => Dialect::Custom,
        other => anyhow::bail!("unknown dialect {other:?}"),
    })
}

fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    if args.list {
        for s in scenarios::ALL {
            println!(
                "{:<24} {:<8} {}",
                s.name,
                req_label(s.requirement),
                s.description
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let spec = match (&args.stub, &args.addr) {
        (Some(s), _) => Some(StubSpec::from_name(s)?),
        (None, Some(_)) => None,
        (None, None) => Some(StubSpec::from_name("gdbmux")?),
    };
    let dialect = match (&args.dialect, &spec) {
        (Some(d), _) => parse_dialect(d)?,
        (None, Some(s)) => s.dialect,
        (None, None) => Dialect::Gdbmux,
    };
    let selected: Vec<_> = scenarios::ALL
        .iter()
        .filter(|s| args.only.is_empty() || args.only.iter().any(|o| o == s.name))
        .collect();
    if selected.is_empty() {
        anyhow::bail!("no scenario matches {:?}", args.only);
    }
    let target = spec
        .as_ref()
        .map(|s| s.name.clone())
        .or(args.addr.map(|a| a.to_string()));
    println!(
        "stub: {}   dialect: {dialect:?}",
        target.unwrap_or_default()
    );
    println!("{:<24} {:<8} {:<12} note", "scenario", "kind", "result");
    let mut failures = Vec::new();
    let mut unacceptable = 0;
    for s in selected {
        let outcome = match (&spec, args.addr) {
            (Some(spec), _) => {
                let mut spec = spec.clone();
                spec.dialect = dialect;
                scenarios::run_with_spec(&spec, s)
            }
            (None, Some(addr)) => scenarios::run_at(addr, dialect, s),
            (None, None) => unreachable!("a spec is always chosen without --addr"),
        };
        if !outcome.acceptable(s.requirement) {
            unacceptable += 1;
        }
        let (label, note) = match &outcome {
            Outcome::Pass(n) => ("pass", n.clone()),
            Outcome::Unsupported(n) => ("unsupported", n.clone()),
            Outcome::Fail(f) => {
                failures.push((s.name, f.clone()));
                ("FAIL", f.message.lines().next().unwrap_or("").to_string())
            }
        };
        println!(
            "{:<24} {:<8} {:<12} {}",
            s.name,
            req_label(s.requirement),
            label,
            note
        );
    }
    for (name, f) in &failures {
        println!("\n## {name}\n{f}");
    }
    println!(
        "\n{} scenario(s) not acceptable ({} failed)",
        unacceptable,
        failures.len()
    );
    Ok(if unacceptable == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn req_label(r: Requirement) -> &'static str {
    match r {
        Requirement::Required => "required",
        Requirement::ImplementationDefined => "impl-def",
    }
}
