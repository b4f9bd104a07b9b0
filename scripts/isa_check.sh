#!/usr/bin/env bash
# The test suite at each CPU vector width XLA can target on this machine: the numerical assertions must not depend
# on it. XLA compiles jax's CPU code for the host's widest instruction set; --xla_cpu_max_isa caps it (SSE4_2, AVX,
# AVX2, AVX512), which is how this machine runs what an older or narrower x86-64 CPU would. Every run is the
# README's full test command (python -m pytest, integration tests included) with only XLA_FLAGS changed.
#
#   bash scripts/isa_check.sh [ISA ...]        # default: SSE4_2 AVX2, plus AVX512 where the CPU has it
#   ISA_CHECK_PYTEST_ARGS='-m "not slow and not integration"' bash scripts/isa_check.sh SSE4_2   # core suite only
#
# Writes paper_figures/isa_check/isa_check.txt: the CPU model and flags, then one line per width with pytest's summary.
set -uo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
isas=("$@")
if [ ${#isas[@]} -eq 0 ]; then
    isas=(SSE4_2 AVX2)
    grep -qw avx512f /proc/cpuinfo && isas+=(AVX512)
fi
out=paper_figures/isa_check/isa_check.txt
tmp="$out.tmp"
{
    echo "# scripts/isa_check.sh, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
    echo "vector extensions: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(sse4_2|avx|avx2|fma|avx512f|avx512bw|avx512vl)$' | tr '\n' ' ')"
} > "$tmp"
status=0
for isa in "${isas[@]}"; do
    log="/tmp/isa_check_${isa}.log"
    start=$(date +%s)
    eval "XLA_FLAGS=\"\${XLA_FLAGS:-} --xla_cpu_max_isa=$isa\" python -m pytest -p no:cacheprovider ${ISA_CHECK_PYTEST_ARGS:-}" \
        > "$log" 2>&1
    rc=$?
    summary=$(grep -E '(passed|failed|error)' "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
    echo "--xla_cpu_max_isa=$isa: rc $rc, $summary ($(( $(date +%s) - start )) s; log $log)" | tee -a "$tmp"
    [ "$rc" -eq 0 ] || status=1
    grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/    /' >> "$tmp"
done
mv "$tmp" "$out"
cat "$out"
exit $status
