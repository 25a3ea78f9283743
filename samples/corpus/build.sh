#!/bin/sh
# Build the corpus (OpenCL C *.cl and HIP device code *.hip) into gfx90a code
# objects at -O0 -g, -O1, -O2 and -O3: bin/NAME.O{0,1,2,3}.hsaco.
#
#   samples/corpus/build.sh          rebuild bin/ in place
#   samples/corpus/build.sh --check  rebuild into a temporary directory and
#                                    fail if any committed code object differs
#
# No ROCm device library or header is used (-nogpulib, -nogpuinc); paths in
# the debug info are relative (-ffile-prefix-map), so the output does not
# depend on the checkout location.
set -eu

CLANG=${CLANG:-clang-19}
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-build}

case "$mode" in
build) out=$here/bin ;;
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
mkdir -p "$out"
common="-nogpulib -ffile-prefix-map=$here=."
status=0
for src in *.cl *.hip; do
  name=${src%.*}
  case "$src" in
  *.cl) lang="-target amdgcn-amd-amdhsa -mcpu=gfx90a -x cl -cl-std=CL2.0 -cl-fp32-correctly-rounded-divide-sqrt" ;;
  *.hip) lang="-x hip -nogpuinc --cuda-device-only --offload-arch=gfx90a --no-gpu-bundle-output -std=c++17 -cuid=$name" ;;
  esac
  extra=
  # flat_scratch: private memory through scratch_* instructions.
  [ "$name" = flat_scratch ] && extra="-Xclang -target-feature -Xclang +enable-flat-scratch"
  # d16_loads, lds_float: with SRAM ECC off clang-19 keeps the other half of
  # a register and emits the load_*_d16(_hi) / ds_read_*_d16(_hi)
  # instructions.
  case "$name" in d16_loads | lds_float) lang=$(echo "$lang" | sed 's/-mcpu=gfx90a/-mcpu=gfx90a:sramecc-/') ;; esac
  for level in 0 1 2 3; do
    dbg=
    [ "$level" = 0 ] && dbg=-g
    obj=$name.O$level.hsaco
    # shellcheck disable=SC2086 # word splitting of the flag lists is intended
    "$CLANG" $common $lang $extra -O$level $dbg "$src" -o "$out/$obj"
    if [ "$mode" = --check ] && ! cmp -s "$out/$obj" "$here/bin/$obj"; then
      echo "MISMATCH $obj (run samples/corpus/build.sh and review)" >&2
      status=1
    fi
  done
done
[ "$mode" = --check ] && [ $status = 0 ] && echo "corpus code objects up to date"
exit $status
