#!/usr/bin/env bash
# README's test command: everything CI checks, in order of cost.
# Installs missing debugger/toolchain packages when it can (apt/pip).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v gdbserver >/dev/null || need+=(gdbserver)
command -v gdb >/dev/null || need+=(gdb)
command -v clang-19 >/dev/null || need+=(clang-19 lld-19 llvm-19)
command -v socat >/dev/null || need+=(socat)
# The runtime dependency of AMD's real amd-dbgapi libraries (../shared/real-amd-dbgapi).
ldconfig -p 2>/dev/null | grep -q 'libamd_comgr\.so\.2' || need+=(libamd-comgr2)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v lldb >/dev/null || python3 -m pip install -q lldb-for-pwndbg

# On CI every build is from scratch: incremental caches only cost disk there.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
echo "== fmt"; cargo fmt --all -- --check
echo "== clippy"; cargo clippy --workspace --all-targets -- -D warnings
echo "== build"; cargo build --workspace --all-targets
if [ -x samples/build-kernels.sh ]; then
  echo "== GPU code objects match their sources"; samples/build-kernels.sh --check
fi
if [ -x samples/corpus/build.sh ]; then
  echo "== corpus code objects match their sources"; samples/corpus/build.sh --check
fi
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
export GDBMUX_BIN="$target_dir/debug/gdbmux" RSP_REQUIRE_STUB=1
# Tests whose inputs are missing (e.g. AMD's real amd-dbgapi in ../shared) say
# so and return: cargo reports them "ok", so each also appends a line to the
# skip log (GDBMUX_SKIP_LOG: gpu-target/stub, RSP_SKIP_LOG: protocol-tests),
# and the skips are counted and named here, never as passes.
# AMD's real amd-dbgapi builds (0.76.0/, 0.77.0/): the project keeps a copy beside
# the checkout; GDBMUX_REAL_DBGAPI_DIR names it for the tests.
if [ -z "${GDBMUX_REAL_DBGAPI_DIR:-}" ] && [ -d ../shared/real-amd-dbgapi ]; then
  export GDBMUX_REAL_DBGAPI_DIR="$(cd ../shared/real-amd-dbgapi && pwd)"
fi
skips="$target_dir/skips.log"; : >"$skips"
export GDBMUX_SKIP_LOG="$skips" RSP_SKIP_LOG="$skips"
echo "== tests"; cargo test --workspace -- --test-threads=2
# gdb 13.1's own testsuite, a gating subset (docs/gdb-testsuite/gate-remote.txt):
# gdbmux must have every result gdbserver has (runner: tools/gdb-testsuite).
# Records a skip when the machine cannot run it (no root, no unshare -n).
echo "== gdb testsuite gate (gdbserver, then gdbmux)"
tools/gdb-testsuite-gate.sh "$GDBMUX_BIN" "$target_dir/gdb-testsuite-gate"
workspace_skipped=$(wc -l <"$skips")
workspace_skips=$(cat "$skips")
echo "skipped in the workspace tests (not passed; cargo's 'passed' count includes them): $workspace_skipped"
sed 's/^/  skipped: /' "$skips"
echo "== loom model check of the GPU event hand-off"
CARGO_TARGET_DIR="$target_dir/loom" RUSTFLAGS="--cfg loom" cargo test -q -p gpu-target --test loom_handoff --release
echo "== gdbstub adapter + oracle"; cargo test -p stub --features gdbstub-adapter adapters
echo "== the same gdb 13 / lldb 23.1 sessions against gdbserver and lldb-server (reported, not gating)"
# gdb 13 cannot use lldb-server at all (research §9), so it gets the lldb sessions only.
# A test that returns early because it does not apply records itself in
# RSP_SKIP_LOG (protocol_tests::record_skip): skips are counted and named,
# never counted as passes.
for run in "gdbserver gdb_cpu" "gdbserver lldb_cpu" "lldb-server lldb_cpu"; do
  set -- $run
  log="$target_dir/peer-$1-$2.log"
  peer_skips="$target_dir/peer-$1-$2.skips"
  : >"$peer_skips"
  if RSP_STUB=$1 RSP_REQUIRE_STUB= RSP_SKIP_LOG="$peer_skips" cargo test -q -p protocol-tests --test "$2" -- --test-threads=2 >"$log" 2>&1; then
    ran=$(grep -o '[0-9]* passed' "$log" | head -1 | grep -o '[0-9]*' || echo 0)
    skipped=$(wc -l <"$peer_skips")
    echo "$1 / $2: $((ran - skipped)) passed, $skipped skipped"
    sed 's/^/  skipped: /' "$peer_skips"
  else
    echo "$1 / $2: differences:"; grep -E '^test .* FAILED|panicked at|^    [a-z_]+$' "$log" | sed 's/^/  /' || true
  fi
done
echo "== conformance: gdbmux must pass every required scenario; gdbserver and lldb-server are reported"
cargo run -q -p protocol-tests --bin rsp-conform -- --all --markdown "$target_dir/REPORT.md"
echo "== all green; $workspace_skipped gdbmux tests were SKIPPED, not passed:"
if [ -n "$workspace_skips" ]; then printf '%s\n' "$workspace_skips" | sed 's/^/  /'; fi
