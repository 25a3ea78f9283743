//! Links the cdylib with the amd-dbgapi symbol versions (exports.map, which
//! a test keeps equal to `gpu_target::dbgapi::abi::version_script()`).
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    println!("cargo:rerun-if-changed=exports.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/exports.map");
}
