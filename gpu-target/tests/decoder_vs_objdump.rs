//! Every instruction of the sample code objects and of the corpus
//! (samples/corpus/bin, every kernel at -O0 to -O3) decodes to the text that
//! `llvm-objdump-19 -d --mcpu=gfx90a` prints. Without llvm-objdump the test
//! fails: a decoder that was not compared is not known to be right.

use std::path::PathBuf;
use std::process::Command;

use gpu_target::sim::decode::decode;

fn code_objects() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples");
    let mut v = Vec::new();
    for dir in ["kernels", "corpus/bin"] {
        v.extend(
            std::fs::read_dir(root.join(dir))
                .unwrap_or_else(|e| panic!("samples/{dir}: {e}"))
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "hsaco")),
        );
    }
    v.sort();
    v
}

#[test]
fn decoder_matches_llvm_objdump() {
    let objdump = std::env::var("LLVM_OBJDUMP").unwrap_or_else(|_| "llvm-objdump-19".into());
    let mut checked = 0;
    let mut mismatches = Vec::new();
    let entries = code_objects();
    assert!(entries.len() > 160, "the corpus code objects are missing");
    for path in entries {
        let out = match Command::new(&objdump)
            .args(["-d", "--mcpu=gfx90a"])
            .arg(&path)
            .output()
        {
            Ok(o) if o.status.success() => o,
            Ok(o) => panic!(
                "{objdump} failed on {}: {}",
                path.display(),
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => panic!(
                "{objdump} cannot be run ({e}): install llvm-19; the decoder must be \
                 checked against LLVM"
            ),
        };
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines() {
            let Some((asm, rest)) = line.split_once("//") else {
                continue;
            };
            let Some((_addr, hex)) = rest.split_once(':') else {
                continue;
            };
            let words: Vec<u32> = hex
                .split_whitespace()
                .take_while(|w| !w.starts_with('<'))
                .filter_map(|w| u32::from_str_radix(w, 16).ok())
                .collect();
            if words.is_empty() {
                continue;
            }
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let expected = asm.trim();
            match decode(&bytes) {
                Some(inst) if inst.to_string() == expected && inst.size as usize == bytes.len() => {
                }
                other => mismatches.push(format!(
                    "{}: {:08x?}: llvm `{}` vs ours `{}`",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    words,
                    expected,
                    other
                        .map(|i| format!("{i} ({} bytes)", i.size))
                        .unwrap_or("<none>".into())
                )),
            }
            checked += 1;
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {checked} instructions differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(checked > 100, "only {checked} instructions checked");
    eprintln!("decoder agrees with llvm-objdump on {checked} instructions");
}
