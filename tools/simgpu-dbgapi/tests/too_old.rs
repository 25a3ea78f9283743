//! A library that reports an ABI older than 0.76 is refused, clearly.

mod common;

use gpu_target::dbgapi::sys::DbgApi;
use gpu_target::dbgapi::sys::DbgApiError;

#[test]
fn refuses_abi_older_than_0_76() {
    std::env::set_var("SIMGPU_DBGAPI_VERSION", "0.71.0");
    let err = DbgApi::load(Some(&common::library())).expect_err("0.71 must be refused");
    assert!(
        matches!(err, DbgApiError::TooOld { ref found, .. } if found == "0.71.0"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("0.71.0") && text.contains("0.76"), "{text}");
}
