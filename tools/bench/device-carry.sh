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
# With GDB=1 it also carries this machine's gdb 13 (bin/gdb, a wrapper that
# sets its libraries, its data directory and a zipped Python 3.11 standard
# library) for `--clients` there; the whole folder is then about 80 MiB, so
# carry it packed: `tar cJf target/devcarry.tar.xz -C target devcarry` and
# unpack it there first (`tar xJf target/devcarry.tar.xz -C target`).
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
if [ -n "${GDB:-}" ]; then
    G="$D/gdb"
    mkdir -p "$G/bin" "$G/lib/python3.11/lib-dynload" "$G/share"
    cp "$(command -v gdb)" "$G/bin/gdb.real"
    strip "$G/bin/gdb.real"
    # glibc and the C++ runtime are the machine's own (newer there).
    ldd "$G/bin/gdb.real" | awk '/=> \// { print $3 }' |
        grep -v -E '/(libc|libm|libpthread|libresolv|libdl|librt|libstdc\+\+|libgcc_s)\.so' |
        while read -r lib; do cp -L "$lib" "$G/lib/"; done
    cp -r /usr/share/gdb "$G/share/"
    cp /usr/lib/python3.11/lib-dynload/*.so "$G/lib/python3.11/lib-dynload/"
    # The standard library's sources, zipped (Python finds
    # PYTHONHOME/lib/python311.zip by itself); tests and GUIs left out.
    (cd /usr/lib/python3.11 && python3 - "$OLDPWD/$G/lib/python311.zip" <<'PY'
import os, sys, zipfile
skip = {"test", "idlelib", "tkinter", "ensurepip", "lib2to3", "turtledemo", "distutils",
        "pydoc_data", "__pycache__", "dist-packages", "site-packages", "venv",
        "config-3.11-x86_64-linux-gnu"}
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for root, dirs, files in os.walk("."):
        dirs[:] = [d for d in dirs if d not in skip]
        for f in files:
            if f.endswith(".py"):
                z.write(os.path.join(root, f), os.path.normpath(os.path.join(root, f)))
PY
    )
    cat > "$D/bin/gdb" <<'SH'
#!/bin/sh
# gdb 13 carried by device-carry.sh: its own libraries, data directory and
# Python standard library.
G=$(dirname "$(dirname "$(readlink -f "$0")")")/gdb
PYTHONHOME=$G LD_LIBRARY_PATH=$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    exec "$G/bin/gdb.real" -data-directory "$G/share/gdb" "$@"
SH
    chmod +x "$D/bin/gdb"
fi
du -sh "$D"
