#!/usr/bin/env bash
# Every benchmark behind docs/benchmarks.md, in one go, on a CUDA host.
#   bash benchmarks/gpu_suite.sh OUT_DIR [part]     part: policy | sim | render | train | all (default)
# Each script prints JSON lines; they are collected into OUT_DIR/<name>.jsonl with logs beside.
set -uo pipefail
out="${1:?usage: gpu_suite.sh OUT_DIR [part]}"
part="${2:-all}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
run() {  # name, command...
    local name="$1"; shift
    echo "== $name: $*"
    "$@" > "$out/$name.log" 2>&1
    local rc=$?
    grep '^{' "$out/$name.log" | tee "$out/$name.jsonl"
    [ $rc -eq 0 ] || { echo "!! $name exited $rc"; tail -5 "$out/$name.log"; }
}
if [[ $part == all || $part == policy ]]; then
    run policy python3 benchmarks/policy_throughput.py --device cuda --batch 4096 --compile
    run policy_variants python3 benchmarks/policy_variants.py --device cuda
fi
if [[ $part == all || $part == sim ]]; then
    run sim python3 benchmarks/sim_throughput.py --device cuda --steps 3000                    # packed, as trained
    run sim_fixed_worlds python3 benchmarks/sim_throughput.py --device cuda --steps 3000 --block-slots 0
fi
if [[ $part == all || $part == render ]]; then
    run render python3 benchmarks/render_throughput.py --device cuda --iters 5
    run render_training python3 benchmarks/render_throughput.py --device cuda --scene training --requests slots
fi
if [[ $part == all || $part == train ]]; then
    # ${MAPS_OVERLAY:-}: e.g. configs/procedural.yaml when the CARLA data is not on the host.
    # Iteration 6 is reported: the first ones pay for torch.compile and each new padded batch size.
    run train_alberti_bf16 python3 benchmarks/train_throughput.py --device cuda --iterations 6 --steps 30 \
        --precision bf16-mixed --compile --config configs/alberti.yaml ${MAPS_OVERLAY:-}
    run train_vectorized_bf16 python3 benchmarks/train_throughput.py --device cuda --iterations 6 --steps 30 \
        --precision bf16-mixed --compile --config configs/vectorized.yaml ${MAPS_OVERLAY:-}
fi
