//! The version script and the `.symver` list match the shared ABI table.

#[test]
fn exports_map_matches_abi() {
    let map = include_str!("../exports.map");
    assert_eq!(map, gpu_target::dbgapi::abi::version_script());
}

#[test]
fn symver_list_matches_abi() {
    let src = include_str!("../src/symver.rs");
    let listed: Vec<(String, String)> = src
        .lines()
        .filter_map(|l| l.strip_prefix("export!("))
        .filter_map(|l| l.strip_suffix(");"))
        .filter_map(|l| {
            let (f, v) = l.split_once(", ")?;
            Some((f.to_owned(), v.trim_matches('"').to_owned()))
        })
        .collect();
    let want: Vec<(String, String)> = gpu_target::dbgapi::abi::SYMBOL_VERSIONS
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect();
    assert_eq!(listed, want);
}
