//! `rsp-conform`: run the conformance scenarios (Rust ones and the
//! `scenarios/*.txt` transcripts) against any stub and print a table of
//! scenario × pass / fail / unsupported, with the first differing packet of
//! each failure.
//!
//! ```text
//! rsp-conform --stub 'gdbmux {addr} -- {prog}'
//! rsp-conform --stub 'gdbserver {addr} {prog}'
//! rsp-conform --stub 'lldb-server gdbserver --named-pipe {portpipe} {addr} -- {prog}'
//! rsp-conform --addr 127.0.0.1:1234          # a server that accepts repeated connections
//! rsp-conform --stub gdbmux --only handshake-gdb,stop-replay
//! rsp-conform --all --markdown protocol-tests/REPORT.md   # all three, combined table
//! ```
//!
//! Templates may use `{addr}`, `{port}`, `{prog}`, `{args}`, `{pid}` and
//! `{portpipe}`; a template without `{args}` gets the fixture arguments
//! appended after `{prog}`. The stub must print a line containing
//! `Listening on` once it listens, or write its port to the FIFO
//! `{portpipe}` (then `{addr}` is port 0; `lldb-server gdbserver` templates
//! get `--named-pipe {portpipe}` added when they lack it): see the
//! `protocol_tests` crate docs. The names `gdbmux`, `gdbserver` and `lldb-server` select the
//! built-in specs. The dialect (which expectations apply where servers may
//! legitimately differ) is taken from the command's first word unless
//! `--dialect` is given.
#![forbid(unsafe_code)]

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use protocol_tests::drivers::Dialect;
use protocol_tests::drivers::StubSpec;
use protocol_tests::scenarios;
use protocol_tests::scenarios::Outcome;
use protocol_tests::scenarios::Requirement;
use protocol_tests::scenarios::Scenario;

#[derive(Debug, Parser)]
#[command(about = "GDB remote protocol conformance runner")]
struct Args {
    /// `gdbmux`, `gdbserver`, `lldb-server`, or a template with {addr} (or {portpipe}) {prog} {args}.
    #[arg(long, conflicts_with_all = ["addr", "all"])]
    stub: Option<String>,
    /// Address of an already running server (must accept one connection per scenario).
    #[arg(long, conflicts_with = "all")]
    addr: Option<SocketAddr>,
    /// Run gdbmux, gdbserver and lldb-server and print a combined table.
    #[arg(long)]
    all: bool,
    /// Also write the table(s) as markdown to this file.
    #[arg(long)]
    markdown: Option<std::path::PathBuf>,
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

/// A user template: the dialect follows the program name, `{args}` is
/// appended after `{prog}` when missing, and a bare `gdbmux` word is the
/// located binary (with `--once`, so the scenario's stub ends with it).
fn spec_from(sel: &str) -> anyhow::Result<StubSpec> {
    if !sel.contains("{addr}") && !sel.contains("{port}") && !sel.contains("{portpipe}") {
        return Ok(StubSpec::from_name(sel)?);
    }
    let mut t = sel.to_string();
    if !t.contains("{args}") {
        t = t.replacen("{prog}", "{prog} {args}", 1);
    }
    let first = t.split_whitespace().next().unwrap_or("");
    let base = std::path::Path::new(first)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut spec = StubSpec::custom(&t);
    spec.dialect = match base.as_str() {
        "gdbmux" => Dialect::Gdbmux,
        "gdbserver" => Dialect::Gdbserver,
        "lldb-server" => Dialect::LldbServer,
        _ => Dialect::Custom,
    };
    if base == "gdbmux" && first == "gdbmux" {
        let bin = protocol_tests::drivers::stub::locate_gdbmux()?;
        let rest = t.split_once(' ').map(|(_, r)| r).unwrap_or("");
        spec.launch = format!("{} --once {rest}", bin.display());
        if let Ok(g) = StubSpec::gdbmux() {
            spec.multi = g.multi;
            spec.attach = g.attach;
        }
    }
    if base == "gdbserver" || base == "lldb-server" {
        let builtin = StubSpec::from_name(&base)?;
        spec.multi = builtin.multi;
        spec.attach = builtin.attach;
    }
    spec.name = base;
    Ok(spec)
}

/// One scenario's result for one stub.
struct Row {
    outcome: Outcome,
    requirement: Requirement,
}

fn label(o: &Outcome) -> &'static str {
    match o {
        Outcome::Pass(_) => "pass",
        Outcome::Unsupported(_) => "unsupported",
        Outcome::Fail(_) => "FAIL",
    }
}

fn note(o: &Outcome) -> String {
    match o {
        Outcome::Pass(n) | Outcome::Unsupported(n) => n.clone(),
        Outcome::Fail(f) => f.message.lines().next().unwrap_or("").to_string(),
    }
}

/// The first differing packet of a failure, on one line.
fn first_difference(o: &Outcome) -> String {
    let Outcome::Fail(f) = o else {
        return String::new();
    };
    let short = |s: &str| {
        let s = s.replace('\n', " ");
        if s.chars().count() > 120 {
            format!("{}…", s.chars().take(120).collect::<String>())
        } else {
            s
        }
    };
    match (&f.request, &f.expected, &f.got) {
        (Some(r), e, g) => format!(
            "`{}` → expected {}, got `{}`",
            short(r),
            short(e.as_deref().unwrap_or("?")),
            short(g.as_deref().unwrap_or("?"))
        ),
        _ => short(f.message.lines().next().unwrap_or("")),
    }
}

fn req_label(r: Requirement) -> &'static str {
    match r {
        Requirement::Required => "required",
        Requirement::ImplementationDefined => "impl-def",
    }
}

enum Target<'a> {
    Spec(&'a StubSpec),
    Addr(SocketAddr, Dialect),
}

fn run_one(target: &Target<'_>, s: &Scenario) -> Row {
    let (outcome, dialect) = match target {
        Target::Spec(spec) => (scenarios::run_with_spec(spec, s), spec.dialect),
        Target::Addr(a, d) => (scenarios::run_at(*a, *d, s), *d),
    };
    Row {
        outcome,
        requirement: s.requirement_for(dialect),
    }
}

/// Print the per-stub table and failures; returns (rows, unacceptable).
fn run_stub(
    name: &str,
    dialect: Dialect,
    target: &Target<'_>,
    selected: &[&Scenario],
) -> (Vec<Row>, usize) {
    println!("stub: {name}   dialect: {dialect:?}");
    println!("{:<30} {:<8} {:<12} note", "scenario", "kind", "result");
    let mut rows = Vec::new();
    let mut bad = 0;
    for s in selected {
        let row = run_one(target, s);
        if !row.outcome.acceptable(row.requirement) {
            bad += 1;
        }
        println!(
            "{:<30} {:<8} {:<12} {}",
            s.name,
            req_label(row.requirement),
            label(&row.outcome),
            note(&row.outcome)
        );
        rows.push(row);
    }
    for (s, row) in selected.iter().zip(&rows) {
        if let Outcome::Fail(f) = &row.outcome {
            println!(
                "\n## {}\nfirst difference: {}\n{f}",
                s.name,
                first_difference(&row.outcome)
            );
        }
    }
    println!("\n{name}: {bad} scenario(s) not acceptable\n");
    (rows, bad)
}

fn markdown(stubs: &[(String, Vec<Row>)], selected: &[&Scenario]) -> String {
    let mut md = String::new();
    let _ = write!(md, "| scenario | kind | source |");
    for (n, _) in stubs {
        let _ = write!(md, " {n} |");
    }
    md.push_str("\n|---|---|---|");
    for _ in stubs {
        md.push_str("---|");
    }
    md.push('\n');
    for (i, s) in selected.iter().enumerate() {
        let _ = write!(
            md,
            "| `{}` | {} | {} |",
            s.name,
            req_label(s.requirement),
            s.source()
        );
        for (_, rows) in stubs {
            let row = &rows[i];
            let cell = match &row.outcome {
                Outcome::Pass(_) => "pass".to_string(),
                Outcome::Unsupported(_) => "unsupported".to_string(),
                Outcome::Fail(_) if row.requirement == Requirement::ImplementationDefined => {
                    "**fail** (impl-def)".to_string()
                }
                Outcome::Fail(_) => "**FAIL**".to_string(),
            };
            let _ = write!(md, " {cell} |");
        }
        md.push('\n');
    }
    md.push_str("\n### Notes and first differences\n\n");
    for (i, s) in selected.iter().enumerate() {
        for (n, rows) in stubs {
            let o = &rows[i].outcome;
            let text = match o {
                Outcome::Fail(_) => first_difference(o),
                _ => note(o),
            };
            if text.is_empty() {
                continue;
            }
            let text = text.replace('|', "\\|");
            let text = if text.chars().count() > 200 {
                format!("{}…", text.chars().take(200).collect::<String>())
            } else {
                text
            };
            let _ = writeln!(md, "- `{}` / {n} ({}): {text}", s.name, label(o));
        }
    }
    md
}

fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let all = scenarios::all();
    if args.list {
        for s in all {
            println!(
                "{:<30} {:<8} {:<28} {}",
                s.name,
                req_label(s.requirement),
                s.source(),
                s.description
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let selected: Vec<&Scenario> = all
        .iter()
        .filter(|s| args.only.is_empty() || args.only.iter().any(|o| o == s.name))
        .collect();
    if selected.is_empty() {
        anyhow::bail!("no scenario matches {:?}", args.only);
    }
    let mut tables = Vec::new();
    let mut gate = 0;
    if args.all {
        for name in ["gdbmux", "gdbserver", "lldb-server"] {
            let spec = StubSpec::from_name(name)?;
            let (rows, bad) = run_stub(name, spec.dialect, &Target::Spec(&spec), &selected);
            // Only gdbmux gates the exit status; the others are reported.
            if name == "gdbmux" {
                gate = bad;
            }
            tables.push((name.to_string(), rows));
        }
    } else if let (None, Some(addr)) = (&args.stub, args.addr) {
        let dialect = args
            .dialect
            .as_deref()
            .map(parse_dialect)
            .transpose()?
            .unwrap_or(Dialect::Gdbmux);
        let (rows, bad) = run_stub(
            &addr.to_string(),
            dialect,
            &Target::Addr(addr, dialect),
            &selected,
        );
        gate = bad;
        tables.push((addr.to_string(), rows));
    } else {
        let mut spec = spec_from(args.stub.as_deref().unwrap_or("gdbmux"))?;
        if let Some(d) = &args.dialect {
            spec.dialect = parse_dialect(d)?;
        }
        let (rows, bad) = run_stub(
            &spec.name.clone(),
            spec.dialect,
            &Target::Spec(&spec),
            &selected,
        );
        gate = bad;
        tables.push((spec.name.clone(), rows));
    }
    if let Some(path) = &args.markdown {
        let md = markdown(&tables, &selected);
        let mut text = String::new();
        if args.all {
            text.push_str(REPORT_HEADER);
        }
        text.push_str(&md);
        std::fs::write(path, text)?;
        println!("wrote {}", path.display());
    }
    if args.all {
        println!("{}", markdown(&tables, &selected));
    }
    Ok(if gate == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

const REPORT_HEADER: &str = "# protocol-tests: conformance report

Regenerate (from the workspace root; needs gdbserver and lldb-server on PATH):

```sh
cargo build -p stub --bin gdbmux
cargo run -p protocol-tests --bin rsp-conform -- --all --markdown protocol-tests/REPORT.md
```

Stubs: `gdbmux` (this repository), GNU `gdbserver` 13, `lldb-server` 23.1
(`gdbserver` mode). **required** scenarios must pass for gdbmux (CI gates on
them); gdbserver and lldb-server are reported only. `impl-def` scenarios
allow several answers: *unsupported* is acceptable there. A required
scenario may be relaxed to impl-def for one reference server where that
server lacks the packet and clients fall back (see the transcript's
`relaxed-for:`). Each failure lists the first packet whose reply differed.
Scenario sources: `rust` = `src/scenarios.rs`, `*.txt` = `scenarios/`.

";
