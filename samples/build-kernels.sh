#!/bin/sh
# Build the sample OpenCL C kernels into gfx90a code objects (.hsaco).
#
#   samples/build-kernels.sh          rebuild samples/kernels/*.hsaco in place
#   samples/build-kernels.sh --check  rebuild into a temporary directory and
#                                     fail if any committed .hsaco differs
#
# The kernels use no ROCm device library: samples/kernels/simgpu.h supplies
# the work-item functions from clang builtins. Paths in the debug info are made
# relative (-ffile-prefix-map) so the output does not depend on the checkout
# location.
set -eu

CLANG=${CLANG:-clang-19}
here=$(cd "$(dirname "$0")/kernels" && pwd)
mode=${1:-build}

case "$mode" in
build) out=$here ;;
--check)
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  ;;
*)
  echo "usage: $0 [--check]" >&2
  exit 2
  ;;
esac

cd "$here"
status=0
for src in *.cl; do
  name=${src%.cl}
  "$CLANG" -target amdgcn-amd-amdhsa -mcpu=gfx90a -O1 -g -nogpulib \
    -cl-std=CL2.0 -x cl -ffile-prefix-map="$here"=. \
    "$src" -o "$out/$name.hsaco"
  if [ "$mode" = --check ]; then
    if cmp -s "$out/$name.hsaco" "$here/$name.hsaco"; then
      echo "ok       $name.hsaco"
    else
      echo "MISMATCH $name.hsaco (run samples/build-kernels.sh and review)" >&2
      status=1
    fi
  else
    echo "built    $name.hsaco"
  fi
done
exit $status
