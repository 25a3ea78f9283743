#!/bin/sh
# Builds target/devcarry/: what rsp-bench needs on a machine that has no
# Rust toolchain, gdbserver, lldb-server or strace (the quiet 16-core
# device machine). Run from the repository root after
# `cargo build --release -p stub -p bench -p simgpu-dbgapi -p simgpu-rt`; carry `target/devcarry` and run
#   D=$PWD/target/devcarry; PATH=$D/bin:$PATH LD_LIBRARY_PATH=$D/lib \
#     $D/bin/rsp-bench --gdbmux $D/bin/gdbmux --prog $D/bench --rounds 5
# With BASELINE=PATH (an earlier gdbmux build) it is carried as
# bin/gdbmux-baseline, for an A/B in one run: add
#   --baseline $D/bin/gdbmux-baseline
# The peers are the same gdbserver and lldb-server binaries as here, with
# the shared libraries they and strace need beyond glibc. The GPU scale mode
# (it needs no peer, gdb, lldb or clang there):
#   $D/bin/rsp-bench --gpu-scale --gdbmux $D/bin/gdbmux \
#     --gpu-prog $D/gpu_spin --gpu-hsaco $D/gpu_spin.hsaco --rounds 3
# (with BASELINE, add `--baseline $D/base/gdbmux` for the GPU A/B).
set -eu
D=target/devcarry
rm -rf "$D"
mkdir -p "$D/bin" "$D/lib"
cp target/release/gdbmux target/release/rsp-bench "$D/bin/"
strip "$D/bin/gdbmux" "$D/bin/rsp-bench"
if [ -n "${BASELINE:-}" ]; then
    cp "$BASELINE" "$D/bin/gdbmux-baseline"
    strip "$D/bin/gdbmux-baseline"
    # gdbmux loads the simulated GPU library found next to it: the GPU
    # A/B needs the baseline's own, so base/ holds both
    # (`--gpu-scale --baseline $D/base/gdbmux`).
    B=$(dirname "$BASELINE")
    if [ -f "$B/libsimgpu_dbgapi.so" ]; then
        mkdir -p "$D/base"
        cp "$BASELINE" "$B/libsimgpu_dbgapi.so" "$D/base/"
        strip "$D/base/gdbmux"
        strip --strip-debug "$D/base/libsimgpu_dbgapi.so"
    fi
fi
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
# The simulated GPU (found next to gdbmux) and the GPU scale fixture.
cp target/release/libsimgpu_dbgapi.so target/release/libsimgpu_rt.so "$D/bin/"
# Their debug info would take most of the carry's 64 MiB.
strip --strip-debug "$D/bin/libsimgpu_dbgapi.so" "$D/bin/libsimgpu_rt.so"
clang-19 -target amdgcn-amd-amdhsa -mcpu=gfx90a -O1 -g -nogpulib -cl-std=CL2.0 \
    -x cl -I samples/kernels tools/bench/fixtures/gpu_spin.cl -o "$D/gpu_spin.hsaco"
gcc -g -O1 -no-pie -I samples/include tools/bench/fixtures/gpu_spin.c -o "$D/gpu_spin" \
    -L target/release -lsimgpu_rt -Wl,-rpath,'$ORIGIN/bin'
gcc -g -O0 -no-pie -pthread -o "$D/threads" tools/bench/fixtures/threads.c
du -sh "$D"
