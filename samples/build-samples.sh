#!/bin/sh
# Builds the sample host programs against libsimgpu_rt.so.
#
#   samples/build-samples.sh [OUT_DIR]
#
# Builds simgpu-rt with cargo first (profile from $PROFILE, default debug,
# target dir from $CARGO_TARGET_DIR, default ./target). Programs land in
# OUT_DIR (default $CARGO_TARGET_DIR/samples) with an rpath to the runtime
# and the kernel directory compiled in.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
profile=${PROFILE:-debug}
target=${CARGO_TARGET_DIR:-$root/target}
out=${1:-$target/samples}
flag=
[ "$profile" = release ] && flag=--release
cargo build -q $flag -p simgpu-rt --manifest-path "$root/Cargo.toml"
lib=$target/$profile
mkdir -p "$out"
for src in "$root"/samples/*.c; do
  name=$(basename "$src" .c)
  ${CC:-cc} -g -O1 -Wall -I"$root/samples/include" \
    -DKERNEL_DIR="\"$root/samples/kernels\"" \
    "$src" -o "$out/$name" -L"$lib" -lsimgpu_rt -Wl,-rpath,"$lib"
  echo "$out/$name"
done
