//! `gdbmux` — command-line front end of the `stub` library. It takes
//! gdbserver's command line (see `cli`), so it runs wherever gdbserver is
//! started, the gdb testsuite included.
//!
//! ```text
//! gdbmux [OPTIONS] COMM PROG [ARGS…]  |  --attach COMM PID  |  --multi COMM
//! COMM: HOST:PORT | :PORT | [::1]:PORT | ::1:PORT | unix:PATH | -   (port 0 picks a free port)
//! ```

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use cli::Cli;
use cli::Parsed;
use stub::server::Lifetime;
use stub::server::ServerBuilder;
use stub::server::ServerError;

fn init_logging(cli: &Cli) -> Result<(), String> {
    use tracing_subscriber::EnvFilter;
    let mut filter = std::env::var("GDBMUX_LOG").unwrap_or_else(|_| "warn".to_string());
    // The channels log at trace level; with --log-channels (or gdbserver's
    // --debug/--remote-debug) they go to stderr or --log-file.
    for ch in &cli.log_channels {
        let ch = ch.trim();
        if !ch.is_empty() {
            filter.push_str(&format!(",{ch}=trace"));
        }
    }
    let base = filter.clone();
    let filter = EnvFilter::try_new(&filter).map_err(|e| format!("bad log filter: {e}"))?;
    stub::session::set_log_timestamps(cli.log_timestamps);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SwitchableTime);
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
    // `monitor set debug|remote-debug` (gdbserver's) adds channels to the
    // filter at run time.
    let control = move |extra: &str| format!("{base}{extra}");
    let r = if cli.log_format == "json" {
        let b = builder.json().with_writer(writer).with_filter_reloading();
        let h = b.reload_handle();
        stub::session::set_log_control(Box::new(move |extra: &str| {
            let f = EnvFilter::try_new(control(extra)).map_err(|e| e.to_string())?;
            h.reload(f).map_err(|e| e.to_string())
        }));
        b.try_init()
    } else {
        let b = builder
            .with_ansi(false)
            .with_writer(writer)
            .with_filter_reloading();
        let h = b.reload_handle();
        stub::session::set_log_control(Box::new(move |extra: &str| {
            let f = EnvFilter::try_new(control(extra)).map_err(|e| e.to_string())?;
            h.reload(f).map_err(|e| e.to_string())
        }));
        b.try_init()
    };
    r.map_err(|e| format!("logging: {e}"))
}

/// The log timer: the default timestamp, or none while `--debug-format
/// none` / `monitor set debug-format none` has them off.
struct SwitchableTime;
impl tracing_subscriber::fmt::time::FormatTime for SwitchableTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        if stub::session::log_timestamps() {
            tracing_subscriber::fmt::time::SystemTime.format_time(w)
        } else {
            Ok(())
        }
    }
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
    /// Exit after the first session.
    #[arg(long, conflicts_with = "multi")]
    once: bool,
    /// Keep serving sessions without a program (`target extended-remote`,
    /// `run`).
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
        // By default the demo serves one client after another, each with
        // the program freshly launched (gdb, then lldb, …): a person pastes
        // each banner line in turn and reaches the kernel every time.
        once: d.once,
        multi: d.multi,
        relaunch: !d.once && !d.multi,
        demo_recipe: gpu,
        comm: d.comm,
        program,
        ..Cli::default()
    })
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("doctor") {
        return ExitCode::from(stub::doctor::main(argv.into_iter().skip(2)));
    }
    let cli = if argv.get(1).map(String::as_str) == Some("demo") {
        match demo_cli(argv.into_iter().skip(1).collect()) {
            Ok(c) => c,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "gdbmux demo: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        match cli::parse(argv.into_iter().skip(1).collect()) {
            Ok(Parsed::Run(c)) => *c,
            Ok(Parsed::Help) => {
                let _ = write!(std::io::stdout(), "{}", cli::usage());
                return ExitCode::SUCCESS;
            }
            Ok(Parsed::Version) => {
                let _ = writeln!(
                    std::io::stdout(),
                    "gdbmux {}\nA GDB-remote server for stock gdb (in place of gdbserver) and lldb.",
                    env!("CARGO_PKG_VERSION")
                );
                return ExitCode::SUCCESS;
            }
            Ok(Parsed::ShowDisableable) => {
                let _ = writeln!(
                    std::io::stdout(),
                    "Disableable packets:\n  vCont       \tAll vCont packets\n  qC          \tQuerying the current thread\n  qfThreadInfo\tThread listing\n  Tthread     \tPassing the thread specifier in the T stop reply packet\n  threads     \tAll of the above\n  T           \tAll 'T' packets"
                );
                return ExitCode::SUCCESS;
            }
            Ok(Parsed::Selftest(filters)) => {
                let o = stub::selftest::run(
                    &stub::selftest::checks(),
                    &filters,
                    &mut std::io::stderr(),
                );
                return if o.failed == 0 {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                };
            }
            Ok(Parsed::SelftestFilterEmpty) => {
                let _ = writeln!(std::io::stderr(), "Error: selftest filter is empty.");
                return ExitCode::from(1);
            }
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "gdbmux: {e}\n\n{}", cli::usage());
                return ExitCode::from(1);
            }
        }
    };
    if let Err(e) = init_logging(&cli) {
        let _ = writeln!(std::io::stderr(), "gdbmux: {e}");
        return ExitCode::from(2);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // gdbserver's own wording (ends with "Exiting") goes out as is.
        Err(e) if e.ends_with("Exiting") => {
            let _ = writeln!(std::io::stderr(), "{e}");
            ExitCode::from(1)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "gdbmux: {e}");
            ExitCode::from(1)
        }
    }
}

/// gdbserver's wording for a failure before any client connects (the gdb
/// testsuite matches "Can't bind address: Address already in use.").
fn startup_error(e: ServerError) -> String {
    match &e {
        ServerError::Io { what, source } if what.starts_with("binding") => {
            let why = source
                .raw_os_error()
                .map(|n| nix::errno::Errno::from_raw(n).desc().to_string())
                .unwrap_or_else(|| source.to_string());
            format!("Can't bind address: {why}.\nExiting")
        }
        // gdbserver (fork-inferior.c, startup_inferior).
        ServerError::Native(stub::native::NativeError::Vanished {
            how,
            during: "launch",
            ..
        }) => format!("During startup program {how}.\nExiting"),
        _ => format!("{e}\nExiting"),
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let lifetime = if cli.relaunch {
        Lifetime::Relaunch
    } else if cli.once {
        Lifetime::Once
    } else if cli.multi {
        Lifetime::Multi
    } else {
        Lifetime::Reopen
    };
    let mut b = ServerBuilder::new(&cli.comm)?
        .lifetime(lifetime)
        .announce(true)
        .disable_aslr(cli.disable_randomization)
        .startup_with_shell(cli.startup_with_shell)
        .wrapper(cli.wrapper.clone())
        .disable_packets(&cli.disable_packets)
        .advertise(cli.advertise.clone())
        .max_connections(cli.max_connections)
        .max_pending_output(cli.max_pending_output)
        .busy_poll(std::time::Duration::from_micros(cli.busy_poll_us))
        .lldb_interrupt_echo(cli.lldb_interrupt_echo);
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
    // gdbserver's program_path: a bare name found in the current
    // directory is that file.
    let program = cli.program.first().map(|p| stub::native::program_path(p));
    if let Some(pid) = attach {
        b = b.attach(pid);
    } else if let Some(prog) = &program {
        b = b.launch(prog, cli.program.get(1..).unwrap_or_default());
    }
    let server = b.build().map_err(startup_error)?;
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
    // The address first (scripts and gdbmux's tests read it), then
    // gdbserver's own line, "Listening on port N".
    if addr != "stdio" {
        let _ = writeln!(err, "Listening on {addr}");
    }
    if let Ok(a) = addr.parse::<std::net::SocketAddr>() {
        let _ = writeln!(err, "Listening on port {}", a.port());
    }
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
        if cli.demo_recipe {
            let _ = write!(err, "{}", demo_recipe());
        } else if !cli.no_gpu {
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

/// What `gdbmux demo` tells a person to type after connecting, one
/// command per line and nothing else on it, so that a pasted block runs
/// as is: `stub/tests/demo.rs` types exactly these lines (taken from the
/// banner) into gdb 13 and lldb 23.1, one client after the other.
fn demo_recipe() -> String {
    let gdb = [
        "monitor gpu break vector_add",
        "continue",
        "monitor gpu waves",
        "monitor gpu continue",
        "continue",
    ];
    let lldb = [
        "breakpoint set -o true -n vector_add",
        "process continue",
        "thread step-over",
        "register read pc exec v0",
        "process continue",
    ];
    let mut out = String::from(
        "Then type, in gdb: a pending GPU breakpoint on the kernel, a wave stopped there, the \
         waves, and on to the program's exit:\n",
    );
    for c in gdb {
        out.push_str(&format!("    {c}\n"));
    }
    out.push_str(
        "or in lldb: the same breakpoint, a wave stopped at the kernel's first line, one source \
         line on, registers, and on to the exit:\n",
    );
    for c in lldb {
        out.push_str(&format!("    {c}\n"));
    }
    out.push_str(
        "The demo serves one client after another, each with the program freshly launched: quit \
         one client, connect the other. Ctrl-C ends the demo.\n",
    );
    out
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
