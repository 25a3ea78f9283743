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
    /// Most simultaneous connections (sessions and refused connections
    /// still being answered); one more is answered with an error and closed.
    #[arg(long, value_name = "N", default_value_t = stub::server::MAX_CONNECTIONS)]
    max_connections: usize,
    /// Most bytes of replies a client may leave unread before its session
    /// is closed (with --multi the process stays for the next client).
    #[arg(long, value_name = "BYTES", default_value_t = stub::session::MAX_PENDING_OUTPUT)]
    max_pending_output: usize,
    /// After a client's packet, keep polling up to this many microseconds
    /// before sleeping (adaptive: shrinks while the client is idle; off
    /// on a single CPU). Cuts round trips when client and server run on
    /// different CPUs; 0 turns it off. See docs/decisions.md §7.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = stub::server::busy::DEFAULT_BUSY_POLL.as_micros() as u64)]
    busy_poll_us: u64,
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

const DEMO_CPU_SOURCE: &str = include_str!("../demo/sample.c");
const DEMO_GPU_SOURCE: &str = include_str!("../../samples/vector_add.c");
const DEMO_GPU_COMMON: &str = include_str!("../../samples/common.h");
const DEMO_GPU_HEADER: &str = include_str!("../../samples/include/simgpu_rt.h");
const DEMO_GPU_KERNEL: &[u8] = include_bytes!("../../samples/kernels/vector_add.hsaco");

fn write(path: &std::path::Path, data: &[u8]) -> Result<(), String> {
    std::fs::write(path, data).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn cc(args: &[&std::ffi::OsStr]) -> Result<(), String> {
    let st = std::process::Command::new("cc")
        .args(args)
        .status()
        .map_err(|e| format!("running cc to build the demo program: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err("cc failed to build the demo program".into())
    }
}

/// Build the demo program: the vector-add GPU sample when the simulated
/// GPU runtime sits next to this executable, else a CPU-only sample.
fn build_demo(dir: &std::path::Path) -> Result<(std::path::PathBuf, Vec<String>, bool), String> {
    let bin_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        .unwrap_or_default();
    let rt = bin_dir.join("libsimgpu_rt.so");
    if rt.exists() && bin_dir.join("libsimgpu_dbgapi.so").exists() {
        write(&dir.join("vector_add.c"), DEMO_GPU_SOURCE.as_bytes())?;
        write(&dir.join("common.h"), DEMO_GPU_COMMON.as_bytes())?;
        write(&dir.join("simgpu_rt.h"), DEMO_GPU_HEADER.as_bytes())?;
        write(&dir.join("vector_add.hsaco"), DEMO_GPU_KERNEL)?;
        let bin = dir.join("vector_add");
        let kdir = format!("-DKERNEL_DIR=\"{}\"", dir.display());
        let inc = format!("-I{}", dir.display());
        let lib = format!("-L{}", bin_dir.display());
        let rpath = format!("-Wl,-rpath,{}", bin_dir.display());
        let src = dir.join("vector_add.c");
        cc(&[
            "-g".as_ref(),
            "-O1".as_ref(),
            inc.as_ref(),
            kdir.as_ref(),
            src.as_os_str(),
            "-o".as_ref(),
            bin.as_os_str(),
            lib.as_ref(),
            "-lsimgpu_rt".as_ref(),
            rpath.as_ref(),
        ])?;
        return Ok((bin, vec![], true));
    }
    let src = dir.join("sample.c");
    let bin = dir.join("sample");
    write(&src, DEMO_CPU_SOURCE.as_bytes())?;
    cc(&[
        "-g".as_ref(),
        "-O0".as_ref(),
        "-o".as_ref(),
        bin.as_os_str(),
        src.as_os_str(),
    ])?;
    Ok((bin, vec!["100000".into()], false))
}

fn demo_cli(args: Vec<String>) -> Result<Cli, String> {
    let d = DemoCli::parse_from(args);
    let dir = std::env::temp_dir().join(format!("gdbmux-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let (bin, args, gpu) = build_demo(&dir)?;
    if !gpu {
        let _ = writeln!(
            std::io::stderr(),
            "gdbmux demo: libsimgpu_rt.so / libsimgpu_dbgapi.so are not next to this executable \
             (build the whole workspace: cargo build --release); serving a CPU-only sample"
        );
    }
    let mut program = vec![bin.display().to_string()];
    program.extend(args);
    Ok(Cli {
        once: d.once,
        multi: d.multi,
        attach: None,
        attach_name: None,
        disable_randomization: false,
        max_connections: stub::server::MAX_CONNECTIONS,
        max_pending_output: stub::session::MAX_PENDING_OUTPUT,
        busy_poll_us: stub::server::busy::DEFAULT_BUSY_POLL.as_micros() as u64,
        dbgapi: None,
        no_gpu: false,
        gpu_hook: None,
        gpu_stops: "report".into(),
        advertise: None,
        log_file: None,
        log_channels: vec![],
        log_format: "text".into(),
        comm: d.comm,
        program,
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
        .advertise(cli.advertise.clone())
        .max_connections(cli.max_connections)
        .max_pending_output(cli.max_pending_output)
        .busy_poll(std::time::Duration::from_micros(cli.busy_poll_us));
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
        // With a GPU, lldb's line imports the helper gdbmux ships
        // (docs/gpu-lldb.md): GPU modules, pending breakpoints, all-stop.
        let lldb_prelude = match (cli.no_gpu, lldb_helper_path()) {
            (false, Some(p)) => format!("command script import {}", p.display()),
            _ => "settings set stop-disassembly-display never".to_string(),
        };
        let _ = writeln!(
            err,
            "Connect with:\n  gdb  -ex '{gdb_target}' {prog}\n  lldb -o '{lldb_prelude}' -o '{lldb_cmd}' {prog}"
        );
        if !cli.no_gpu {
            let _ = writeln!(
                err,
                "GPU (once the program's GPU runtime is up):\n  \
                 lldb: the GPU target appears by itself as a second target (waves are its threads); the \
                 imported helper loads GPU code objects as its modules, sets breakpoints typed before then \
                 (`breakpoint set -n KERNEL`, `-f FILE -l LINE`) in it, and keeps both targets stopped or \
                 running together\n  \
                 gdb:  monitor gpu | monitor gpu break KERNEL | monitor gpu waves | monitor gpu regs WAVE | \
                 monitor gpu mem global ADDR LEN | monitor gpu continue   (monitor help lists them all)"
            );
        }
    }
    drop(err);
    server.run().map_err(|e| e.to_string())
}

/// The lldb helper script gdbmux ships (`tools/lldb/gdbmux_lldb.py`):
/// next to the executable, in `../share/gdbmux/`, or in the source tree
/// the executable was built in (`target/<profile>/gdbmux`).
fn lldb_helper_path() -> Option<std::path::PathBuf> {
    const NAME: &str = "gdbmux_lldb.py";
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        dir.join(NAME),
        dir.join("../share/gdbmux").join(NAME),
        dir.join("../../tools/lldb").join(NAME),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .and_then(|p| p.canonicalize().ok())
}
