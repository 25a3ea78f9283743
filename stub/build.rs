//! Puts the proc_service functions (stub/src/native/thread_db.rs) in the
//! dynamic symbol table of every executable that links the stub: a
//! `dlopen`ed libthread_db.so.1 binds to them (it imports `ps_pdread`,
//! `ps_lgetregs`, `ps_pglobal_lookup`, … from its client, as gdb's and
//! gdbserver's). Executables export nothing by default.
fn main() {
    const PROC_SERVICE: [&str; 10] = include!("src/native/proc_service_names.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        for s in PROC_SERVICE {
            println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol={s}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/native/proc_service_names.rs");
}
