#!/usr/bin/env bash
# Short training runs, learning curves, evaluations and probes behind docs/results.md, on a CUDA
# host. Each part writes a few files into OUT_DIR (checkpoints without optimizer state, so they
# stay small enough to copy back from a lent GPU host).
#   bash benchmarks/paper_runs.sh OUT_DIR part [minutes]      (minutes: M or M:SS, e.g. 7:30)
# parts:
#   curve_alberti | curve_vectorized | curve_blind   train for [minutes] (configs/learning_curve.yaml,
#                                       learning_curve_vectorized.yaml: in-domain sweeps with sampled
#                                       actions at iteration 0 and every few iterations, argmax at both ends;
#                                       the vectorized ones with configs/position_gain.yaml)
#   curve_vectorized_short            the vectorized agent with Alberti's overlay (configs/learning_curve.yaml:
#                                       sweeps every 6 iterations, cosine over 60) and position_gain.yaml, to
#                                       compare both at the same agent-steps (add FIT_ARGS="-c configs/narrow_sweeps.yaml
#                                       --model.init_args.max_iterations=38" for Alberti's 8-minute budget and
#                                       64-scenario sweeps at iterations 0, 19, 38)
#   indomain          the paper-size in-domain protocol for the vectorized checkpoint, timed
#   table1            the three checkpoints side by side on a reduced in-domain protocol
#   probes            removal (>= 1,000 removals) and takeover (>= 100 cases) on the Alberti checkpoint
#   precision         Alberti for [minutes] in fp32, then in bf16-mixed (same seed, compiled, no
#                     evaluation sweeps): training scalars side by side in precision.png
# ${PRECISION:-bf16-mixed}, ${COMPILE:-true}, ${MAPS_OVERLAY:-} ("-c configs/procedural.yaml") and
# ${FIT_ARGS:-} (more overrides, e.g. "--model.init_args.minibatch_size=8192") apply to training;
# ${SEEDS:-} ("0 1 2") runs a curve part once per seed, all at once on the one GPU (<part>_s<seed>).
# ${EVAL_DEVICE:-cuda}, ${TABLE1_SCENARIOS:-32}, ${TABLE1_STEPS:-1000}, ${PROBE_MAP:-carla:Town10HD} for the rest.
set -uo pipefail
out="${1:?usage: paper_runs.sh OUT_DIR part [minutes]}"
part="${2:?part}"
minutes="${3:-7}"
if [[ ! "$minutes" =~ ^[0-9]+(:[0-5][0-9])?$ ]]; then
    echo "paper_runs.sh: minutes must be M or M:SS (e.g. 7 or 7:30), got '$minutes'" >&2
    exit 2
fi
max_time="00:00:$(printf %02d "$((10#${minutes%%:*}))"):$([[ "$minutes" == *:* ]] && echo "${minutes#*:}" || echo 00)"
mkdir -p "$out"
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
runs="${RUNS_DIR:-runs/paper_runs}"

strip_ckpt() {  # src dst: a checkpoint without optimizer / scheduler state (evaluation only)
    python3 - "$1" "$2" <<'EOF'
import sys, torch
ckpt = torch.load(sys.argv[1], map_location="cpu", weights_only=False)
keep = ("state_dict", "hyper_parameters", "epoch", "global_step", "pytorch-lightning_version")
torch.save({k: ckpt[k] for k in keep if k in ckpt}, sys.argv[2])
EOF
}

fit_for() {  # name precision fit-args...: train for [minutes] into $runs/name, log to $out/name.log
    local name="$1" precision="$2"
    shift 2
    local started=$SECONDS
    python3 -m pictura fit "$@" \
        --trainer.precision="$precision" --model.init_args.compile_policy="${COMPILE:-true}" \
        --trainer.max_time="$max_time" --trainer.enable_progress_bar=false \
        --trainer.default_root_dir="$runs" --trainer.logger.init_args.save_dir="$runs" \
        --trainer.logger.init_args.name="$name" ${FIT_ARGS:-} > "$out/$name.log" 2>&1
    echo "== $name: exit $? after $((SECONDS - started)) s"
}

last_run() {  # name: the newest version folder of the run
    ls -d "$runs/$1"/version_* | tail -1
}

collect() {  # name: copy a curve run's sweeps, stripped checkpoint and events into $out
    local name="$1" dir
    dir="$(last_run "$name")"
    cp "$dir/eval/density_sweep.jsonl" "$out/${name}_sweeps.jsonl"
    cp "$dir/eval/density_sweep_sample.jsonl" "$out/${name}_sweeps_sample.jsonl"
    strip_ckpt "$dir/checkpoints/last.ckpt" "$out/${name}.ckpt"
    cp "$dir"/events.out.tfevents.* "$out/${name}.tfevents"
    tail -3 "$out/$name.log"
}

curve() {  # name config overlay...: one run, or with ${SEEDS} ("0 1 2") one per seed at once
    local name="$1" config="$2"
    shift 2
    local overlays=()
    for overlay in "$@"; do overlays+=(-c "$overlay"); done
    if [[ -z "${SEEDS:-}" ]]; then
        fit_for "$name" "${PRECISION:-bf16-mixed}" -c "$config" "${overlays[@]}" ${MAPS_OVERLAY:-}
        collect "$name"
        return
    fi
    # the seeds' runs share the GPU (each is slower than alone), named <name>_s<seed>
    for seed in $SEEDS; do
        (
            FIT_ARGS="${FIT_ARGS:-} --seed_everything=$seed" \
                fit_for "${name}_s$seed" "${PRECISION:-bf16-mixed}" -c "$config" "${overlays[@]}" ${MAPS_OVERLAY:-}
            collect "${name}_s$seed"
        ) &
    done
    wait
}

case "$part" in
    precision)
        for prec in 32 bf16-mixed; do
            fit_for "precision_$prec" "$prec" -c configs/alberti.yaml --trainer.callbacks=[]
            cp "$(last_run "precision_$prec")"/events.out.tfevents.* "$out/precision_$prec.tfevents"
        done
        python3 -m pictura curves --training "fp32=$out/precision_32.tfevents" \
            "bf16-mixed=$out/precision_bf16-mixed.tfevents" --out "$out/precision.png"
        ;;
    curve_alberti) curve alberti configs/alberti.yaml configs/learning_curve.yaml ;;
    curve_vectorized) curve vectorized configs/vectorized.yaml configs/learning_curve_vectorized.yaml configs/position_gain.yaml ;;
    curve_blind) curve vectorized_blind configs/vectorized_blind.yaml configs/learning_curve_vectorized.yaml configs/position_gain.yaml ;;
    curve_vectorized_short) curve vectorized_short configs/vectorized.yaml configs/learning_curve.yaml configs/position_gain.yaml ;;
    indomain)
        started=$SECONDS
        python3 -m pictura evaluate --protocol in-domain --device "${EVAL_DEVICE:-cuda}" --ckpt "vectorized=$out/vectorized.ckpt" \
            --scenarios 200 --steps 3000 --densities 60 120 150 --worlds-per-batch 200 --no-progress \
            --json "$out/indomain_vectorized.json" --png "$out/indomain_vectorized.png" > "$out/indomain.log" 2>&1
        echo "== indomain: exit $? after $((SECONDS - started)) s (200 scenarios x 3000 steps x 3 densities)"
        tail -8 "$out/indomain.log"
        ;;
    table1)
        started=$SECONDS
        python3 -m pictura evaluate --protocol in-domain --device "${EVAL_DEVICE:-cuda}" \
            --ckpt "vectorized=$out/vectorized.ckpt" --ckpt "vectorized-blind=$out/vectorized_blind.ckpt" \
            --ckpt "alberti=$out/alberti.ckpt" --scenarios "${TABLE1_SCENARIOS:-32}" --steps "${TABLE1_STEPS:-1000}" \
            --worlds-per-batch "${TABLE1_SCENARIOS:-32}" \
            --densities 60 120 150 --no-progress --json "$out/table1.json" --png "$out/table1.png" > "$out/table1.log" 2>&1
        echo "== table1: exit $? after $((SECONDS - started)) s"
        tail -12 "$out/table1.log"
        ;;
    probes)
        started=$SECONDS
        python3 -m pictura probe removal --ckpt "$out/alberti.ckpt" --device cuda --map "${PROBE_MAP:-carla:Town10HD}" \
            --agents 60 --states 32 --egos 8 --json "$out/probe_removal.json" --png "$out/probe_removal.png" \
            > "$out/probe_removal.log" 2>&1
        echo "== removal: exit $? after $((SECONDS - started)) s"
        tail -4 "$out/probe_removal.log"
        started=$SECONDS
        python3 -m pictura probe takeover --ckpt "$out/alberti.ckpt" --against constant:7 --device cuda \
            --map "${PROBE_MAP:-carla:Town10HD}" --agents 60 --record-steps 600 --cases 100 \
            --json "$out/probe_takeover.json" --png "$out/probe_takeover.png" > "$out/probe_takeover.log" 2>&1
        echo "== takeover: exit $? after $((SECONDS - started)) s"
        tail -4 "$out/probe_takeover.log"
        ;;
    *) echo "unknown part $part"; exit 2 ;;
esac
