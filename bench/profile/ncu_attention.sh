#!/usr/bin/env bash
# Nsight Compute's per-instruction stall samples of the attention forward, tessera's and
# Triton's (same source, same blocks), for bench/profile/ncu_stalls.py:
#
#   bash bench/profile/ncu_attention.sh OUT_DIR [D] [N] [causal]
#
# writes OUT_DIR/{tessera,triton}.csv (ncu --page source --csv, SASS with the stall columns)
# and OUT_DIR/{tessera,triton}.txt (the details page: cycles, warp cycles per instruction),
# then prints the comparison. Needs ncu (CUDA toolkit) and, for Triton, triton installed.
set -euo pipefail
out=${1:?usage: ncu_attention.sh OUT_DIR [D] [N] [causal]}
D=${2:-64} N=${3:-4096} CAUSAL=${4:-0}
here=$(cd "$(dirname "$0")" && pwd)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
mkdir -p "$out"
for which in tessera triton; do
  rep=$(mktemp -d)/$which
  "$NCU" -k regex:attn_fwd -s 2 -c 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    -o "$rep" python3 "$here/attention_once.py" $which "$D" "$N" "$CAUSAL" > /dev/null
  "$NCU" --import "$rep.ncu-rep" --page source --print-source sass --csv > "$out/$which.csv"
  "$NCU" --import "$rep.ncu-rep" --page details > "$out/$which.txt"
  grep -E "Elapsed Cycles|Duration|Warp Cycles Per Issued" "$out/$which.txt" | sed "s/^/$which /"
done
python3 "$here/ncu_stalls.py" "$out/tessera.csv" "$out/triton.csv"
