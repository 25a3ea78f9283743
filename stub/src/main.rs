//! `gdbmux` — command-line front end of the `stub` library.
//!
//! ```text
//! gdbmux [--once|--multi] [--attach PID | --attach-name NAME] COMM [-- PROG ARGS…]
//! COMM: HOST:PORT | :PORT | [::1]:PORT | unix:PATH | -   (port 0 picks a free port)
//! ```

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use stub::server::ServerBuilder;

#[derive(Debug, Parser)]
#[command(
    name = "gdbmux",
    version,
    about = "GDB-remote debug server for Linux processes (and their GPUs), for stock gdb and lldb",
    after_help = "Examples:\n  gdbmux 127.0.0.1:0 -- ./prog arg1      launch prog, serve one session\n  gdbmux --multi :2345                   extended-remote server (gdb: run/attach)\n  gdbmux --attach 1234 :2345             attach to a running process"
)]
struct Cli {
    /// Exit after the first session ends (the default).
    #[arg(long, conflicts_with = "multi")]
    once: bool,
    /// Keep serving sessions (extended-remote; `run`/`attach` from the client).
    #[arg(long)]
    multi: bool,
    /// Attach to this process id.
    #[arg(long, value_name = "PID", conflicts_with = "attach_name")]
    attach: Option<u32>,
    /// Attach to the single process with this name.
    #[arg(long, value_name = "NAME")]
    attach_name: Option<String>,
    /// amd-dbgapi library to load (default: the simulated GPU library next
    /// to this executable, or $GDBMUX_DBGAPI; the real one is
    /// librocm-dbgapi.so.0).
    #[arg(long, value_name = "PATH")]
    dbgapi: Option<std::path::PathBuf>,
    /// Do not load any GPU library (CPU debugging only).
    #[arg(long, conflicts_with = "dbgapi")]
    no_gpu: bool,
    /// Symbol of the GPU runtime's debugger hook (default: the simulated
    /// runtime's, or ROCr's rocr::_loader_debug_state for the real library).
    #[arg(long, value_name = "SYMBOL")]
    gpu_hook: Option<String>,
    /// What to do when a GPU wave stops while gdb waits on the CPU process:
    /// report it (a stop with a console line naming the wave) or only log.
    #[arg(long, default_value = "report", value_parser = ["report", "log"])]
    gpu_stops: String,
    /// HOST:PORT to put in GPU connection offers (when the client reaches
    /// gdbmux through a forwarded port).
    #[arg(long, value_name = "HOST:PORT")]
    advertise: Option<String>,
    /// Disable address-space randomization for launched programs.
    #[arg(long)]
    disable_randomization: bool,
    /// Write logs to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    log_file: Option<std::path::PathBuf>,
    /// Log channels to enable at trace level: packets,ptrace,mux,dbgapi,session.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    log_channels: Vec<String>,
    /// Log format.
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// Where to listen: HOST:PORT, :PORT, unix:PATH, or - for stdio.
    comm: String,
    /// Program to launch and its arguments (after --).
    #[arg(last = true)]
    program: Vec<String>,
}

fn init_logging(cli: &Cli) -> Result<(), String> {
    use tracing_subscriber::EnvFilter;
    let mut filter = std::env::var("GDBMUX_LOG").unwrap_or_else(|_| "warn".to_string());
    for ch in &cli.log_channels {
        let ch = ch.trim();
        if !ch.is_empty() {
            filter.push_str(&format!(",{ch}=trace"));
        }
    }
    let filter = EnvFilter::try_new(&filter).map_err(|e| format!("bad log filter: {e}"))?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let writer: Box<dyn Fn() -> Box<dyn Write + Send> + Send + Sync> = match &cli.log_file {
        Some(p) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("cannot open log file {}: {e}", p.display()))?;
            let f = std::sync::Arc::new(std::sync::Mutex::new(f));
            Box::new(move || -> Box<dyn Write + Send> { Box::new(SharedFile(f.clone())) })
        }
        None => Box::new(|| -> Box<dyn Write + Send> { Box::new(std::io::stderr()) }),
    };
    let r = if cli.log_format == "json" {
        builder.json().with_writer(writer).try_init()
    } else {
        builder.with_ansi(false).with_writer(writer).try_init()
    };
    r.map_err(|e| format!("logging: {e}"))
}

struct SharedFile(std::sync::Arc<std::sync::Mutex<std::fs::File>>);
impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.lock() {
            Ok(mut f) => f.write(buf),
            Err(_) => Ok(buf.len()),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `gdbmux demo`: serve the bundled sample program.
#[derive(Debug, Parser)]
#[command(
    name = "gdbmux demo",
    about = "Serve the bundled sample program (built on the fly with cc)"
)]
struct DemoCli {
    /// Exit after the first session (default).
    #[arg(long, conflicts_with = "multi")]
    once: bool,
    /// Keep serving sessions.
    #[arg(long)]
    multi: bool,
    /// Where to listen.
    #[arg(default_value = "127.0.0.1:0")]
    comm: String,
}

const DEMO_SOURCE: &str = include_str!("../demo/sample.c");

fn demo_cli(args: Vec<String>) -> Result<Cli, String> {
    let d = DemoCli::parse_from(args);
    let dir = std::env::temp_dir().join(format!("gdbmux-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let src = dir.join("sample.c");
    let bin = dir.join("sample");
    std::fs::write(&src, DEMO_SOURCE).map_err(|e| format!("writing {}: {e}", src.display()))?;
    let st = std::process::Command::new("cc")
        .args(["-g", "-O0", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .map_err(|e| format!("running cc to build the demo program: {e}"))?;
    if !st.success() {
        return Err("cc failed to build the demo program".into());
    }
    Ok(Cli {
        once: d.once,
        multi: d.multi,
        attach: None,
        attach_name: None,
        disable_randomization: false,
        dbgapi: None,
        no_gpu: false,
        gpu_hook: None,
        gpu_stops: "report".into(),
        advertise: None,
        log_file: None,
        log_channels: vec![],
        log_format: "text".into(),
        comm: d.comm,
        program: vec![bin.display().to_string(), "100000".into()],
    })
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli = if argv.get(1).map(String::as_str) == Some("demo") {
        match demo_cli(argv.into_iter().skip(1).collect()) {
            Ok(c) => c,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "gdbmux demo: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        Cli::parse()
    };
    if let Err(e) = init_logging(&cli) {
        let _ = writeln!(std::io::stderr(), "gdbmux: {e}");
        return ExitCode::from(2);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "gdbmux: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let mut b = ServerBuilder::new(&cli.comm)?
        .multi(cli.multi)
        .disable_aslr(cli.disable_randomization)
        .advertise(cli.advertise.clone());
    if !cli.no_gpu {
        b = b
            .gpu(cli.dbgapi.clone())
            .gpu_hook(cli.gpu_hook.clone())
            .gpu_report_stops(cli.gpu_stops == "report");
    }
    let attach = match (&cli.attach, &cli.attach_name) {
        (Some(pid), _) => Some(*pid),
        (None, Some(name)) => Some(stub::native::pid_by_name(name).map_err(|e| e.to_string())?),
        (None, None) => None,
    };
    let program = cli.program.first().cloned();
    if let Some(pid) = attach {
        b = b.attach(pid);
    } else if let Some(prog) = &program {
        b = b.launch(prog, cli.program.get(1..).unwrap_or_default());
    } else if !cli.multi {
        return Err(
            "nothing to debug: give a program after --, --attach PID, or use --multi".into(),
        );
    }
    let server = b.build().map_err(|e| e.to_string())?;
    let addr = server.local_address();
    let mut err = std::io::stderr().lock();
    if let Some(pid) = server.initial_pid() {
        if attach.is_some() {
            let _ = writeln!(err, "Attached; pid = {pid}");
        } else {
            let _ = writeln!(
                err,
                "Process {} created; pid = {pid}",
                program.clone().unwrap_or_default()
            );
        }
    }
    let _ = writeln!(err, "Listening on {addr}");
    if addr != "stdio" {
        let prog = program.clone().unwrap_or_default();
        let (gdb_target, lldb_cmd) = if let Some(path) = addr.strip_prefix("unix:") {
            (
                format!(
                    "target {} {path}",
                    if cli.multi {
                        "extended-remote"
                    } else {
                        "remote"
                    }
                ),
                format!("process connect unix-connect://{path}"),
            )
        } else {
            (
                format!(
                    "target {} {addr}",
                    if cli.multi {
                        "extended-remote"
                    } else {
                        "remote"
                    }
                ),
                format!("gdb-remote {addr}"),
            )
        };
        let _ = writeln!(
            err,
            "Connect with:\n  gdb  -ex '{gdb_target}' {prog}\n  lldb -o '{lldb_cmd}' {prog}"
        );
    }
    drop(err);
    server.run().map_err(|e| e.to_string())
}
