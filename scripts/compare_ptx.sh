#!/usr/bin/env bash
# Compiles every kernel of kernels/manifest.txt (and one kernel with a
# device_assert, tests/python/lang_kernels/debug_ops.py) to PTX for sm_80 and sm_90a
# with both back-ends (llvm, nvrtc), plus a few environment switches that
# change code generation, and either saves the PTX as a reference or
# compares it byte for byte against one. A refactor that must not change
# code generation is checked with:
#
#   bash scripts/compare_ptx.sh --save /tmp/ptx-before      # on the old build
#   bash scripts/compare_ptx.sh --against /tmp/ptx-before   # on the new build
#
# Options:
#   --save DIR       write the PTX under DIR (DIR must not exist yet or be empty)
#   --against DIR    compile into a temporary folder, compare with DIR;
#                    exit 1 and list every file that differs, is missing or is new
#   --tessera EXE    the CLI to use (default: build/bin/tessera of this checkout,
#                    or $TESSERA_EXE)
#   --manifest FILE  the kernels (default: kernels/manifest.txt of this checkout)
#
# The folder holds one sub-folder per configuration, named
# <arch>-<backend>[-<VARIABLE>=<value>], each with `tessera aot`'s files.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tessera="${TESSERA_EXE:-$repo/build/bin/tessera}"
manifest="$repo/kernels/manifest.txt"
mode="" dir=""

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --save|--against) mode="${1#--}"; dir="${2:?$1 needs a folder}"; shift 2 ;;
    --tessera) tessera="${2:?--tessera needs a path}"; shift 2 ;;
    --manifest) manifest="${2:?--manifest needs a file}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare_ptx.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n "$mode" ]] || { echo "compare_ptx.sh: give --save DIR or --against DIR (see --help)" >&2; exit 2; }
[[ -x "$tessera" ]] || { echo "compare_ptx.sh: no tessera CLI at $tessera (build it, or pass --tessera)" >&2; exit 2; }
[[ -f "$manifest" ]] || { echo "compare_ptx.sh: no manifest $manifest" >&2; exit 2; }

# Each configuration: "<arch> <backend> [VARIABLE=value]". The variables are
# the environment switches that change the generated code; the library's
# defaults are pinned so that the caller's environment does not leak in.
configs=(
  "sm_80 llvm" "sm_90a llvm" "sm_80 nvrtc" "sm_90a nvrtc"
  "sm_90a llvm TESSERA_WGMMA=0"
  "sm_90a llvm TESSERA_MMA=0"
  "sm_90a llvm TESSERA_DEBUG=1"
  "sm_90a llvm TESSERA_FP_FUSION=0"
  "sm_90a nvrtc TESSERA_FP_FUSION=0"
)

# The manifest with absolute kernel paths; for sm_80 without the kernels that
# take tensor descriptors (TMA needs sm_90).
manifest_for() { # manifest_for ARCH > FILE
  local root line
  root="$(cd "$(dirname "$manifest")" && pwd)"
  while IFS= read -r line; do
    line="${line%%#*}"
    [[ -z "${line//[[:space:]]/}" ]] && continue
    [[ "$1" == sm_80 && "$line" == *"tensordesc<"* ]] && continue
    read -r file rest <<<"$line"
    echo "$root/$file $rest"
  done <"$manifest"
  # device_assert is only compiled in with TESSERA_DEBUG=1 (no manifest kernel has one).
  echo "$repo/tests/python/lang_kernels/debug_ops.py debug_kernel *fp32,i32 BLOCK=128"
}

compile_all() { # compile_all OUTDIR
  local out="$1" config arch backend setting name list
  for config in "${configs[@]}"; do
    read -r arch backend setting <<<"$config"
    name="$arch-$backend${setting:+-$setting}"
    list="$out/.manifest-$name"
    manifest_for "$arch" >"$list"
    env -u TESSERA_BACKEND -u TESSERA_WGMMA -u TESSERA_MMA -u TESSERA_DEBUG -u TESSERA_FP_FUSION \
        -u TESSERA_DUMP_IR -u TESSERA_COMPARE_RUNS ${setting:+"$setting"} \
      "$tessera" aot "$list" --arch "$arch" --backend "$backend" -o "$out/$name" >/dev/null 2>"$list.log" ||
      { cat "$list.log" >&2; echo "compare_ptx.sh: tessera aot failed for $name" >&2; exit 2; }
    rm -f "$list" "$list.log"
  done
}

if [[ "$mode" == save ]]; then
  if [[ -d "$dir" && -n "$(ls -A "$dir")" ]]; then
    echo "compare_ptx.sh: $dir is not empty; not overwriting a reference" >&2
    exit 2
  fi
  mkdir -p "$dir"
  compile_all "$dir"
  echo "saved $(find "$dir" -name '*.ptx' | wc -l) PTX files under $dir"
  exit 0
fi

[[ -d "$dir" ]] || { echo "compare_ptx.sh: no reference folder $dir" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/compare_ptx.XXXXXX")"
trap 'rm -rf "$work"' EXIT
compile_all "$work"
differences=0
while IFS= read -r file; do
  if [[ ! -f "$dir/$file" ]]; then echo "new (not in the reference): $file"; differences=1
  elif [[ ! -f "$work/$file" ]]; then echo "missing (only in the reference): $file"; differences=1
  elif ! cmp -s "$dir/$file" "$work/$file"; then echo "differs: $file"; differences=1
  fi
done < <( (cd "$dir" && find . -name '*.ptx'; cd "$work" && find . -name '*.ptx') | sed 's#^\./##' | sort -u)
if [[ $differences -ne 0 ]]; then
  echo "compare_ptx.sh: PTX differs from $dir" >&2
  exit 1
fi
echo "all $(find "$work" -name '*.ptx' | wc -l) PTX files are byte-identical to $dir"
