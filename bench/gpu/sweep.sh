#!/usr/bin/env bash
# The layout sweep on a GPU: runs every N.mprog under DIR (made by
# make_sweep.py on a machine with meshc) on --backend cuda and compares its
# outputs with N.ref.json, the reference interpreter's, by
# scripts/compare_outputs.py (its tolerance, or the one in the sweep's rtol
# file: bf16 programs). Exit 1 when any differs.
#
# usage: bench/gpu/sweep.sh DIR [MESHRUN]    (MESHRUN: build-gpu/bin/meshrun)
# Environment: PYTHON (default python3), BACKEND (default cuda; cpu checks a
# staged sweep on the build machine), MESHC_CUDA_* (docs/cuda.md).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${1:?usage: sweep.sh DIR [MESHRUN]}"
meshrun="${2:-$root/build-gpu/bin/meshrun}"
python="${PYTHON:-python3}"
backend="${BACKEND:-cuda}"
agree=0
failed=0
while IFS= read -r prog; do
  ref="${prog%.mprog}.ref.json"
  out="${prog%.mprog}.$backend.json"
  rtol="$(cat "$(dirname "$prog")/rtol" 2>/dev/null || true)"
  [[ -f "$ref" ]] || continue
  layout="$(grep "^$(basename "${prog%.mprog}") " "$(dirname "$prog")/layouts.txt" 2>/dev/null | cut -d' ' -f2-)"
  if ! "$meshrun" "$prog" --backend "$backend" --quiet --dump-outputs "$out" > "$out.log" 2>&1; then
    echo "FAIL $prog ($layout): meshrun: $(cat "$out.log")"
    failed=$((failed + 1))
  elif ! report="$("$python" "$root/scripts/compare_outputs.py" "$out" "$ref" $rtol)"; then
    echo "FAIL $prog ($layout):"
    echo "$report"
    failed=$((failed + 1))
  else
    agree=$((agree + 1))
  fi
done < <(find "$dir" -name '*.mprog' | sort -V)
echo "$backend sweep: $agree programs agree with the reference, $failed fail"
[[ $failed -eq 0 && $agree -gt 0 ]]
