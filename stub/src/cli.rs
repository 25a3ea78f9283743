//! gdbmux's command line: gdbserver's (gdbserver/server.cc,
//! `captured_main`, gdb 13.1) plus gdbmux's own options.
//!
//! ```text
//! gdbmux [OPTIONS] COMM PROG [ARGS…]        gdbserver's form (also COMM -- PROG ARGS…)
//! gdbmux [OPTIONS] --attach COMM PID        (or gdbmux's --attach PID COMM)
//! gdbmux [OPTIONS] --multi COMM
//! ```
//!
//! As in gdbserver, options end at the first word that does not start
//! with `-` (COMM) or at `-` (stdio); everything after PROG belongs to the
//! program, options included. `--attach` may also follow COMM.

use std::path::PathBuf;

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// Serve.
    Run(Box<Cli>),
    /// `--help`: print [`usage`] on stdout, exit 0.
    Help,
    /// `--version`.
    Version,
    /// `--disable-packet` without a list: print the disableable packets.
    ShowDisableable,
    /// `--selftest[=FILTER]...`: run the built-in self-checks whose name
    /// contains one of the filters (all without one), then exit.
    Selftest(Vec<String>),
    /// `--selftest=` with nothing after `=`: gdbserver's "Error: selftest
    /// filter is empty." on stderr, exit 1.
    SelftestFilterEmpty,
}

/// Packets `--disable-packet=` can turn off (gdbserver's list).
pub const DISABLEABLE: &[&str] = &["vCont", "T", "Tthread", "qC", "qfThreadInfo", "threads"];

/// The parsed command line.
#[derive(Debug, Clone)]
pub struct Cli {
    pub once: bool,
    pub multi: bool,
    /// `gdbmux demo`: each client gets the program freshly launched
    /// (`Lifetime::Relaunch`); not a command-line option.
    pub relaunch: bool,
    /// `gdbmux demo` with the GPU sample: the banner adds what to type.
    pub demo_recipe: bool,
    pub attach: Option<u32>,
    pub attach_name: Option<String>,
    pub dbgapi: Option<PathBuf>,
    pub no_gpu: bool,
    pub gpu_hook: Option<String>,
    pub gpu_stops: String,
    pub advertise: Option<String>,
    /// gdbserver's default: on (`--no-disable-randomization` turns it off).
    pub disable_randomization: bool,
    /// gdbserver's default: on.
    pub startup_with_shell: bool,
    pub wrapper: Option<String>,
    pub disable_packets: Vec<String>,
    pub max_connections: usize,
    pub max_pending_output: usize,
    pub busy_poll_us: u64,
    /// Off with `--no-lldb-interrupt-echo`; on by default
    /// (`--lldb-interrupt-echo` says so again).
    pub lldb_interrupt_echo: bool,
    pub log_file: Option<PathBuf>,
    pub log_channels: Vec<String>,
    /// Timestamps on log lines (`--debug-format`; on by default).
    pub log_timestamps: bool,
    pub log_format: String,
    pub comm: String,
    pub program: Vec<String>,
}

impl Default for Cli {
    fn default() -> Self {
        Cli {
            once: false,
            multi: false,
            relaunch: false,
            demo_recipe: false,
            attach: None,
            attach_name: None,
            dbgapi: None,
            no_gpu: false,
            gpu_hook: None,
            gpu_stops: "report".into(),
            advertise: None,
            disable_randomization: true,
            startup_with_shell: true,
            wrapper: None,
            disable_packets: Vec::new(),
            max_connections: stub::server::MAX_CONNECTIONS,
            max_pending_output: stub::session::MAX_PENDING_OUTPUT,
            busy_poll_us: stub::server::busy::DEFAULT_BUSY_POLL.as_micros() as u64,
            lldb_interrupt_echo: true,
            log_file: None,
            log_channels: Vec::new(),
            log_timestamps: true,
            log_format: "text".into(),
            comm: String::new(),
            program: Vec::new(),
        }
    }
}

/// The usage text (`--help`); errors print it on stderr.
pub fn usage() -> String {
    "Usage:\tgdbmux [OPTIONS] COMM PROG [ARGS ...]\n\
     \tgdbmux [OPTIONS] COMM -- PROG [ARGS ...]\n\
     \tgdbmux [OPTIONS] --attach COMM PID\n\
     \tgdbmux [OPTIONS] --multi COMM\n\
     \tgdbmux demo [--once|--multi] [COMM]\n\
     \n\
     COMM: HOST:PORT, :PORT (127.0.0.1), [::1]:PORT or ::1:PORT, unix:PATH,\n\
     or '-' / 'stdio' for stdin/stdout. Port 0 picks a free port.\n\
     \n\
     gdbserver's options:\n\
     \x20 --attach              Attach to running process PID.\n\
     \x20 --multi               Serve without a specific program; only quit when told to.\n\
     \x20 --once                Exit after the first connection has closed.\n\
     \x20 --help, --version\n\
     \x20 --wrapper WRAPPER --  Run WRAPPER to start new programs.\n\
     \x20 --[no-]disable-randomization   launch programs with ASLR off (the default) or on.\n\
     \x20 --[no-]startup-with-shell      Start PROG through $SHELL (default).\n\
     \x20 --debug, --remote-debug, --event-loop-debug, --debug-format=LIST, --debug-file=FILE\n\
     \x20 --disable-packet=vCont,T,Tthread,qC,qfThreadInfo,threads\n\
     \x20 --selftest[=FILTER]   Run gdbmux's built-in self-checks (those named with FILTER) and exit.\n\
     \n\
     gdbmux's options (VALUE may also be given as --opt=VALUE):\n\
     \x20 --attach PID COMM     (gdbmux's form) attach to PID\n\
     \x20 --attach-name NAME    attach to the single process with this name\n\
     \x20 --dbgapi PATH | --no-gpu   amd-dbgapi library (default: the simulated GPU)\n\
     \x20 --gpu-hook SYMBOL     the GPU runtime's debugger hook\n\
     \x20 --gpu-stops report|log\n\
     \x20 --advertise HOST:PORT address put in GPU connection offers\n\
     \x20 --max-connections N  --max-pending-output BYTES  --busy-poll-us MICROSECONDS\n\
     \x20 --no-lldb-interrupt-echo  send the stop reply to an lldb client's interrupt once, as\n\
     \x20                        lldb-server does (default: twice, as debugserver does; lldb\n\
     \x20                        waits 100 ms for the second; --lldb-interrupt-echo: the default)\n\
     \x20 --log-file FILE  --log-channels packets,ptrace,mux,dbgapi,session  --log-format text|json\n"
        .to_string()
}

fn value(
    name: &str,
    inline: Option<&str>,
    it: &mut std::iter::Peekable<std::vec::IntoIter<String>>,
) -> Result<String, String> {
    match inline {
        Some(v) => Ok(v.to_string()),
        None => it.next().ok_or_else(|| format!("{name} needs a value")),
    }
}

fn number<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{name}: '{v}' is not a valid number"))
}

/// gdbserver parses the pid with `strtoul(…, 0)`: decimal, 0x hex or 0 octal.
fn parse_pid(s: &str) -> Option<u32> {
    let n = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        u32::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse().ok()?
    };
    (n != 0).then_some(n)
}

/// Parse `argv` (without argv[0]). Errors are one-line messages; the
/// caller prints them with [`usage`] and exits 1, as gdbserver does.
pub fn parse(argv: Vec<String>) -> Result<Parsed, String> {
    let mut cli = Cli::default();
    let mut attach_flag = false;
    let mut it = argv.into_iter().peekable();
    let mut comm: Option<String> = None;
    let mut selftest: Option<Vec<String>> = None;
    while let Some(arg) = it.peek().cloned() {
        if !arg.starts_with('-') {
            break;
        }
        it.next();
        if arg == "-" {
            comm = Some("-".into());
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let inline = inline.as_deref();
        match name.as_str() {
            "--help" | "-h" => return Ok(Parsed::Help),
            "--version" | "-V" => return Ok(Parsed::Version),
            "--once" => cli.once = true,
            // gdbserver: `--selftest`, `--selftest=FILTER` (repeatable).
            "--selftest" => {
                let filters = selftest.get_or_insert_with(Vec::new);
                match inline {
                    None => {}
                    Some("") => return Ok(Parsed::SelftestFilterEmpty),
                    Some(f) => filters.push(f.to_string()),
                }
            }
            "--multi" => cli.multi = true,
            "--attach" => {
                // gdbmux's `--attach PID COMM` when a pid follows; else
                // gdbserver's flag (`--attach COMM PID`).
                match it.peek().and_then(|n| n.parse::<u32>().ok()) {
                    Some(pid) if inline.is_none() => {
                        it.next();
                        cli.attach = Some(pid);
                    }
                    _ => match inline {
                        Some(v) => cli.attach = Some(number("--attach", v)?),
                        None => attach_flag = true,
                    },
                }
            }
            "--wrapper" => {
                let mut words = Vec::new();
                let mut closed = false;
                for w in it.by_ref() {
                    if w == "--" {
                        closed = true;
                        break;
                    }
                    words.push(w);
                }
                if words.is_empty() || !closed {
                    return Err("--wrapper needs WRAPPER words ended by --".into());
                }
                cli.wrapper = Some(words.join(" "));
            }
            "--debug" => cli
                .log_channels
                .extend(["ptrace", "session", "native"].map(String::from)),
            "--remote-debug" => cli.log_channels.push("packets".into()),
            "--event-loop-debug" => cli.log_channels.push("mux".into()),
            "--debug-format" => {
                let v = value(&name, inline, &mut it)?;
                let (on, _) =
                    stub::session::parse_debug_format(&v).map_err(|e| e.trim_end().to_string())?;
                cli.log_timestamps = on;
            }
            "--debug-file" | "--log-file" => {
                cli.log_file = Some(value(&name, inline, &mut it)?.into())
            }
            "--disable-packet" => match inline {
                None => return Ok(Parsed::ShowDisableable),
                Some(list) => {
                    for tok in list.split(',').filter(|t| !t.is_empty()) {
                        if !DISABLEABLE.contains(&tok) {
                            return Err(format!("Don't know how to disable \"{tok}\"."));
                        }
                        cli.disable_packets.push(tok.to_string());
                    }
                }
            },
            "--disable-randomization" => cli.disable_randomization = true,
            "--no-disable-randomization" => cli.disable_randomization = false,
            "--startup-with-shell" => cli.startup_with_shell = true,
            "--no-startup-with-shell" => cli.startup_with_shell = false,
            "--attach-name" => cli.attach_name = Some(value(&name, inline, &mut it)?),
            "--dbgapi" => cli.dbgapi = Some(value(&name, inline, &mut it)?.into()),
            "--no-gpu" => cli.no_gpu = true,
            "--gpu-hook" => cli.gpu_hook = Some(value(&name, inline, &mut it)?),
            "--gpu-stops" => {
                let v = value(&name, inline, &mut it)?;
                if v != "report" && v != "log" {
                    return Err(format!("--gpu-stops: '{v}' is not report or log"));
                }
                cli.gpu_stops = v;
            }
            "--advertise" => cli.advertise = Some(value(&name, inline, &mut it)?),
            "--max-connections" => {
                cli.max_connections = number(&name, &value(&name, inline, &mut it)?)?
            }
            "--max-pending-output" => {
                cli.max_pending_output = number(&name, &value(&name, inline, &mut it)?)?
            }
            "--lldb-interrupt-echo" => cli.lldb_interrupt_echo = true,
            "--no-lldb-interrupt-echo" => cli.lldb_interrupt_echo = false,
            "--busy-poll-us" => cli.busy_poll_us = number(&name, &value(&name, inline, &mut it)?)?,
            "--log-channels" => cli.log_channels.extend(
                value(&name, inline, &mut it)?
                    .split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(String::from),
            ),
            "--log-format" => {
                let v = value(&name, inline, &mut it)?;
                if v != "text" && v != "json" {
                    return Err(format!("--log-format: '{v}' is not text or json"));
                }
                cli.log_format = v;
            }
            _ => return Err(format!("Unknown argument: {arg}")),
        }
    }
    if let Some(filters) = selftest {
        return Ok(Parsed::Selftest(filters));
    }
    let comm = match comm.or_else(|| it.next()) {
        Some(c) => c,
        None => return Err("missing COMM (where to listen)".into()),
    };
    cli.comm = comm;
    // gdbserver: "--attach used to come after PORT, so allow it there".
    if it.peek().map(String::as_str) == Some("--attach") {
        it.next();
        attach_flag = true;
    }
    let rest: Vec<String> = it.collect();
    if attach_flag {
        if cli.attach.is_some() {
            return Err("--attach given twice".into());
        }
        match rest.as_slice() {
            [pid] => {
                cli.attach =
                    Some(parse_pid(pid).ok_or_else(|| format!("--attach: bad pid '{pid}'"))?)
            }
            _ => return Err("--attach needs exactly one PID after COMM".into()),
        }
        return Ok(Parsed::Run(Box::new(cli)));
    }
    // gdbmux's own separator, kept: `COMM -- PROG ARGS`.
    let rest = match rest.split_first() {
        Some((first, tail)) if first == "--" => tail.to_vec(),
        _ => rest,
    };
    if (cli.attach.is_some() || cli.attach_name.is_some()) && !rest.is_empty() {
        return Err("a program to launch and --attach exclude each other".into());
    }
    cli.program = rest;
    if cli.program.is_empty() && cli.attach.is_none() && cli.attach_name.is_none() && !cli.multi {
        return Err("nothing to debug: give PROG, --attach COMM PID, or use --multi".into());
    }
    Ok(Parsed::Run(Box::new(cli)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Cli {
        match parse(args.iter().map(|s| s.to_string()).collect()) {
            Ok(Parsed::Run(c)) => *c,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn err(args: &[&str]) -> String {
        match parse(args.iter().map(|s| s.to_string()).collect()) {
            Err(e) => e,
            other => panic!("{args:?} should fail: {other:?}"),
        }
    }

    #[test]
    fn gdbserver_forms() {
        let c = run(&["--once", ":2345", "prog", "-x", "--once", ""]);
        assert!(c.once && !c.multi);
        assert_eq!(c.comm, ":2345");
        assert_eq!(c.program, ["prog", "-x", "--once", ""]);
        assert!(c.disable_randomization && c.startup_with_shell);

        let c = run(&["--once", "--multi", "localhost:1"]);
        assert!(c.once && c.multi && c.program.is_empty());

        let c = run(&["--once", "--attach", "localhost:2", "4242"]);
        assert_eq!((c.attach, c.comm.as_str()), (Some(4242), "localhost:2"));
        let c = run(&[":2", "--attach", "0x10"]);
        assert_eq!(c.attach, Some(16));

        let c = run(&["--wrapper", "env", "FOO=1", "--", ":3", "p"]);
        assert_eq!(c.wrapper.as_deref(), Some("env FOO=1"));
        assert_eq!(c.program, ["p"]);

        let c = run(&[
            "--disable-packet=T,qC",
            "--no-disable-randomization",
            "-",
            "p",
        ]);
        assert_eq!(c.disable_packets, ["T", "qC"]);
        assert!(!c.disable_randomization);
        assert_eq!(c.comm, "-");

        let c = run(&[
            "--debug",
            "--remote-debug",
            "--no-startup-with-shell",
            "::1:9",
            "p",
        ]);
        assert!(c.log_channels.contains(&"packets".to_string()));
        assert!(!c.startup_with_shell);
        assert_eq!(c.comm, "::1:9");
    }

    #[test]
    fn gdbmux_forms_kept() {
        let c = run(&["--attach", "77", ":2"]);
        assert_eq!(c.attach, Some(77));
        let c = run(&["127.0.0.1:0", "--", "./prog", "a", "--", "b"]);
        assert_eq!(c.program, ["./prog", "a", "--", "b"]);
        let c = run(&[
            "--log-channels=packets,mux",
            "--max-connections",
            "3",
            "--multi",
            ":0",
        ]);
        assert_eq!(c.log_channels, ["packets", "mux"]);
        assert_eq!(c.max_connections, 3);
    }

    #[test]
    fn selftest_forms() {
        let p = |a: &[&str]| parse(a.iter().map(|s| s.to_string()).collect());
        assert!(matches!(p(&["--selftest"]), Ok(Parsed::Selftest(f)) if f.is_empty()));
        assert!(matches!(
            p(&["--selftest=wire", "--selftest=agent"]),
            Ok(Parsed::Selftest(f)) if f == ["wire", "agent"]
        ));
        assert!(matches!(
            p(&["--selftest="]),
            Ok(Parsed::SelftestFilterEmpty)
        ));
    }

    #[test]
    fn refusals() {
        assert!(err(&[":1"]).contains("nothing to debug"));
        assert!(err(&["--attach", ":1"]).contains("PID"));
        assert!(err(&["--attach", ":1", "12", "13"]).contains("PID"));
        assert!(err(&["--bogus", ":1", "p"]).starts_with("Unknown argument"));
        assert!(err(&["--disable-packet=zz", ":1", "p"]).contains("Don't know how to disable"));
        assert!(err(&["--wrapper", "env", ":1", "p"]).contains("--wrapper"));
        assert!(matches!(
            parse(vec!["--disable-packet".into()]),
            Ok(Parsed::ShowDisableable)
        ));
    }
}
