#!/bin/sh
# Builds target/devcarry/: what rsp-bench needs on a machine that has no
# Rust toolchain, gdbserver, lldb-server or strace (the quiet 16-core
# device machine). Run from the repository root after
# `cargo build --release -p stub -p bench`; carry `target/devcarry` and run
#   D=$PWD/target/devcarry; PATH=$D/bin:$PATH LD_LIBRARY_PATH=$D/lib \
#     $D/bin/rsp-bench --gdbmux $D/bin/gdbmux --prog $D/bench --rounds 5
# The peers are the same gdbserver and lldb-server binaries as here, with
# the shared libraries they and strace need beyond glibc.
set -eu
D=target/devcarry
rm -rf "$D"
mkdir -p "$D/bin" "$D/lib"
cp target/release/gdbmux target/release/rsp-bench "$D/bin/"
strip "$D/bin/gdbmux" "$D/bin/rsp-bench"
cp "$(command -v gdbserver)" "$(command -v strace)" "$D/bin/"
# lldb-server from PyPI's lldb-for-pwndbg is a Python launcher around a
# vendored binary: carry the binary.
python3 - "$D/bin/lldb-server" <<'PY'
import pathlib, shutil, sys, lldb_for_pwndbg
shutil.copy(pathlib.Path(lldb_for_pwndbg.__file__).parent / "_vendor/bin/lldb-server", sys.argv[1])
PY
for exe in "$D/bin/gdbserver" "$D/bin/strace"; do
    ldd "$exe" | awk '/=> \// { print $3 }' | grep -v -e '/libc\.so' -e '/libm\.so' |
        while read -r lib; do cp -L "$lib" "$D/lib/"; done
done
gcc -g -O0 -no-pie -o "$D/bench" tools/bench/fixtures/bench.c
du -sh "$D"
