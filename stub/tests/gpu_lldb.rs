//! End to end: stock lldb 23.1 debugs a GPU kernel through gdbmux on the
//! simulated GPU (one listener, two targets). The debugger is driven by
//! its own Python API (`tests/gpu/lldb_gpu.py`), which asserts on what
//! lldb itself reports: the GPU target appears by itself exactly once, a
//! GPU breakpoint stops a wave, waves are threads, pc/exec/v0/s0 read
//! correctly, global memory matches the CPU's buffer, and the program
//! exits 0 with its result checked.

mod gpu_support;

use gpu_support::*;

#[test]
fn lldb_debugs_a_gpu_kernel_by_source_line() {
    let env = GpuEnv::get();
    let server = env.serve(&["vector_add"]);
    let hsaco = env.root.join("samples/kernels/vector_add.hsaco");
    let out = run_python(
        &env.root.join("stub/tests/gpu/lldb_gpu.py"),
        &[
            &server.port.to_string(),
            env.sample("vector_add").to_str().unwrap_or_default(),
            &format!("{:#x}", kernel_symbol(&hsaco, "vector_add")),
            "source",
            hsaco.to_str().unwrap_or_default(),
        ],
    );
    assert!(
        out.contains("ALL CHECKS PASSED"),
        "lldb GPU session failed:\n{out}\n--- gdbmux log ---\n{}",
        server.log()
    );
}

#[test]
fn lldb_debugs_a_gpu_kernel() {
    let env = GpuEnv::get();
    let server = env.serve(&["vector_add"]);
    let out = run_python(
        &env.root.join("stub/tests/gpu/lldb_gpu.py"),
        &[
            &server.port.to_string(),
            env.sample("vector_add").to_str().unwrap_or_default(),
            &format!(
                "{:#x}",
                kernel_symbol(
                    &env.root.join("samples/kernels/vector_add.hsaco"),
                    "vector_add"
                )
            ),
        ],
    );
    assert!(
        out.contains("ALL CHECKS PASSED"),
        "lldb GPU session failed:\n{out}\n--- gdbmux log ---\n{}",
        server.log()
    );
    assert_eq!(out.matches("CHECK FAILED").count(), 0, "{out}");
}

#[test]
fn lldb_sees_a_gpu_memory_fault_as_sigsegv() {
    let env = GpuEnv::get();
    let server = env.serve(&["fault"]);
    let out = run_python(
        &env.root.join("stub/tests/gpu/lldb_fault.py"),
        &[
            &server.port.to_string(),
            env.sample("fault").to_str().unwrap_or_default(),
        ],
    );
    assert!(
        out.contains("ALL CHECKS PASSED"),
        "lldb GPU fault session failed:\n{out}\n--- gdbmux log ---\n{}",
        server.log()
    );
}
