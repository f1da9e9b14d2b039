#!/usr/bin/env bash
# Every figure under docs/img that a page of docs/ (or the README) shows, with the command that
# draws it. Run from the repository root:
#   bash docs/img/make_figures.sh [part...]      parts: cpu (default) | checkpoint | gpu | list
# cpu:        scripts beside this file and the pictura tools, on the CPU, from the data root
#             ($PICTURA_DATA or ../shared/data) and the raw lines kept under docs/results/.
# checkpoint: figures of a policy, from the README's CPU demo's checkpoint
#             (python -m pictura fit -c configs/alberti.yaml -c configs/cpu.yaml first).
# gpu:        figures of training runs and paper-size evaluations: benchmarks/paper_runs.sh on
#             a CUDA host (minutes to hours); they are not redrawn here.
# list:       print which figure comes from which part.
# Plots and maps are stored as 256-colour PNGs (shrink_png.py) to keep docs/ under 3 MB.
set -euo pipefail
cd "$(dirname "$0")/../.."
IMG=docs/img
R=docs/results
CKPT="${CKPT:-runs/alberti_cpu/version_0/checkpoints/last.ckpt}"
parts=("${@:-cpu}")

cpu() {
    # docs/renderer.md, README.md
    local scene; scene="$(mktemp -d)/scene.json"
    python -m pictura render --example "$scene"
    python -m pictura render --scene "$scene" --width 384 --height 216 --out $IMG/render_scene_example.png
    python -m pictura render --scene "$scene" --scale 4 --out $IMG/render_scene_example_96x54.png
    python -m pictura render --map procedural:seed=0 --agents 80 --agent 2 --width 192 --height 108 --radius 50 \
        --out $IMG/render_procedural.png
    python docs/img/make_resolution_strip_png.py
    python docs/img/make_coverage_modes_png.py
    python -m tests.render.coverage_scan --poses 200 --seed 2 --plot $IMG/coverage_scan.png
    python docs/img/make_render_throughput_png.py        # also docs/benchmarks.md
    # docs/maps.md
    python -m pictura map-info procedural:seed=0 --png $IMG/procedural_seed0.png --dpi 130
    python -m pictura map-info procedural:seed=0 --png $IMG/procedural_junction.png --crop 120 150 195 215 --dpi 110
    python -m pictura map-info procedural:seed=0 --png $IMG/procedural_roundabout.png --crop 185 230 260 300 --dpi 110
    python -m pictura map-info procedural:seed=0 --png $IMG/procedural_corner.png --crop -15 -15 100 80 --dpi 110
    # docs/opendrive.md (CARLA data)
    python -m pictura map-info carla:Town01 --png $IMG/carla_town01.png
    python -m pictura map-info carla:Town10HD --png $IMG/carla_town10hd.png
    # docs/observations.md, docs/simulator.md, docs/womd.md
    python docs/img/make_observation_png.py
    python docs/img/make_simulator_png.py
    python docs/img/make_slot_packing_png.py
    python docs/img/make_womd_png.py
    python docs/img/make_replay_png.py
    # docs/visual_tools.md
    python -m pictura video --policy constant:7 --map procedural:seed=0 --agents 16 --agent 3 --radius 60 \
        --steps 1 --out "$(mktemp -d)/run.gif" --frame-png $IMG/video_frame.png --no-progress
    # docs/evaluation.md (~3 min)
    python -m pictura evaluate --policy random --policy constant:10 \
        --maps procedural:seed=0 procedural:seed=1 procedural:seed=2 procedural:seed=3 \
               procedural:seed=4 procedural:seed=5 procedural:seed=6 procedural:seed=7 \
        --scenarios 8 --worlds-per-batch 8 --steps 100 --resolution 16x9 \
        --json "$(mktemp -d)/sample.json" --png $IMG/evaluation_sample.png
    # docs/results.md: learning curves from the sweeps kept under docs/results/
    python -m pictura curves --actions sample \
        "Table 5/seed 0=$R/curve_alberti_table5_s0_h200_2026-12-02.jsonl" \
        "Table 5/seed 1=$R/curve_alberti_table5_s1_h200_2026-12-02.jsonl" \
        "value norm./seed 0=$R/curve_alberti_s0_h200_2026-12-02.jsonl" \
        "value norm./seed 1=$R/curve_alberti_s1_h200_2026-12-02.jsonl" \
        --out $IMG/learning_curves_alberti.png
    local runs=()
    for init in torch orthogonal; do
        for s in 0 1 2; do
            runs+=("vect., $init init/seed $s=$R/curve_vectorized_${init}_init_s${s}_h200_2026-12-02.jsonl")
        done
    done
    runs+=("Alberti/seed 0=$R/curve_alberti_s0_h200_2026-12-02.jsonl" "Alberti/seed 1=$R/curve_alberti_s1_h200_2026-12-02.jsonl")
    python -m pictura curves --actions sample "${runs[@]}" --out $IMG/learning_curves_vectorized.png
    python -m pictura curves --actions sample --metrics at_fault_driving,at_fault_halted,at_fault_parked \
        "${runs[@]}" --out $IMG/learning_curves_vectorized_partners.png
    python docs/img/shrink_png.py       # plots and maps as 256-colour PNGs (camera pixels stay exact)
}

checkpoint() {
    # docs/visual_tools.md: the plots' layout, from a four-iteration CPU checkpoint
    python -m pictura probe removal --ckpt "$CKPT" --map procedural:seed=0 --agents 24 --states 8 \
        --json "$(mktemp -d)/removal.json" --png $IMG/probe_removal.png
    python -m pictura probe pedestrian --ckpt "$CKPT" --map procedural:seed=0 --states 16 \
        --json "$(mktemp -d)/ped.json" --png $IMG/probe_pedestrian.png
    python -m pictura probe takeover --ckpt "$CKPT" --against constant:7 --map procedural:seed=0 \
        --agents 12 --record-steps 200 --horizon 40 --cases 8 \
        --json "$(mktemp -d)/takeover.json" --png $IMG/probe_takeover.png
    python docs/img/shrink_png.py $IMG/probe_removal.png $IMG/probe_pedestrian.png $IMG/probe_takeover.png
}

gpu() {
    cat <<'EOF'
Drawn on a CUDA host by benchmarks/paper_runs.sh (docs/results.md gives each command):
  table1_short_runs.png             TABLE1_SCENARIOS=16 TABLE1_STEPS=300 bash benchmarks/paper_runs.sh runs/ckpts table1
  indomain_paper_size_vectorized.png bash benchmarks/paper_runs.sh runs/ckpts indomain
  precision_fp32_vs_bf16.png        bash benchmarks/paper_runs.sh runs/precision precision 3, then
                                    python -m pictura curves --training fp32=... bf16-mixed=... --out docs/img/precision_fp32_vs_bf16.png
EOF
}

list() {
    cat <<'EOF'
cpu:        render_scene_example render_scene_example_96x54 render_procedural render_resolution_strip
            coverage_modes coverage_scan render_throughput procedural_seed0 procedural_junction
            procedural_roundabout procedural_corner carla_town01 carla_town10hd vectorized_observation
            simulator_world slot_packing womd_scene womd_replay video_frame evaluation_sample
            learning_curves_alberti learning_curves_vectorized learning_curves_vectorized_partners
checkpoint: probe_removal probe_pedestrian probe_takeover
gpu:        table1_short_runs indomain_paper_size_vectorized precision_fp32_vs_bf16
no command recorded: carla_town03_centre (a --crop of carla:Town03 whose window was not kept),
            training_camera_video (a frame of the CPU demo's videos/iter_0004.gif)
EOF
}

for part in "${parts[@]}"; do
    case "$part" in
        cpu | checkpoint | gpu | list) "$part" ;;
        *) echo "unknown part '$part' (cpu | checkpoint | gpu | list)" >&2; exit 2 ;;
    esac
done
