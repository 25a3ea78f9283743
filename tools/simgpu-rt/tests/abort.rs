//! An aborted launch leaves the runtime and the host untouched: once
//! `launch` has returned, no wave of the aborted dispatch writes to host
//! memory any more, and the next 100 launches run normally.

use simgpu_rt::runtime;
use simgpu_rt::Status;

fn kernel(name: &str) -> String {
    format!(
        "{}/../../samples/kernels/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn blob(parts: &[u64]) -> Vec<u8> {
    parts.iter().flat_map(|p| p.to_le_bytes()).collect()
}

#[test]
fn aborting_kernel_then_100_good_ones() {
    let bad = runtime::load(&kernel("abort_late")).expect("load abort_late");
    let good = runtime::load(&kernel("vector_add")).expect("load vector_add");
    let n = 64 * 1024usize;
    let mut out = vec![0u32; n];
    let args = blob(&[out.as_mut_ptr() as u64, n as u64]);
    let st = runtime::launch(&bad, "abort_late", [n as u32, 1, 1], [64, 1, 1], &args, 0);
    assert_eq!(st, Status::Aborted, "{}", runtime::last_error());
    let err = runtime::last_error();
    assert!(err.contains("pc 0x"), "error names the pc: {err}");
    // Whatever the other work-groups wrote before the abort stays as it is.
    let snapshot = out.clone();
    let m = 4096usize;
    for round in 0..100u32 {
        let a: Vec<i32> = (0..m as i32).map(|i| i * 3 + round as i32).collect();
        let b: Vec<i32> = (0..m as i32).map(|i| 7 - i).collect();
        let mut c = vec![0i32; m];
        let args = blob(&[
            a.as_ptr() as u64,
            b.as_ptr() as u64,
            c.as_mut_ptr() as u64,
            m as u64,
        ]);
        let st = runtime::launch(&good, "vector_add", [m as u32, 1, 1], [64, 1, 1], &args, 0);
        assert_eq!(st, Status::Success, "round {round}");
        assert!(
            (0..m).all(|i| c[i] == a[i] + b[i]),
            "round {round}: wrong sums"
        );
    }
    assert!(
        out == snapshot,
        "the aborted dispatch wrote after launch returned"
    );
    runtime::unload(good);
    runtime::unload(bad);
}
