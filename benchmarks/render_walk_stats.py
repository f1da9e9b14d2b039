"""What the raster's walk visits, per band, on the pinned scene (one JSON line per resolution).

    PICTURA_DATA=../shared/data python benchmarks/render_walk_stats.py                # CPU, 1 world
    python benchmarks/render_walk_stats.py --resolutions 96x54,192x108 --check-bins

The scene is `render_throughput.py`'s pinned one (``--worlds`` worlds of Town10HD, or the
procedural town without a data root). After one `Renderer.render`, a diagnostic kernel repeats
the walk of `fragments.trace_ray` for every pixel (same band masks, same order, same stop rule:
the next entry's bound lies behind an opaque fragment) and records, per band, which entries
any of its pixels walked and which of those left a fragment (coverage > 0) in at least one
of them. The line gives, per non-empty band, the entries binned, walked and drawing, by kind:
the walk's cost is the entries walked, its useful work the ones drawing. ``partial`` counts the
entries drawing with a coverage strictly between 0 and 1 in some pixel of the band: the band's
warp meets the entry's edge there.

``--by-row`` adds one ``render_walk_rows`` line per resolution: per band row (its first pixel
row), the fraction of non-empty bands, the entries walked and drawing per non-empty band, and
the row's share of all walked entries and of the walked lines that draw nowhere in their band:
where in the image the walk's waste sits (e.g. ground lines just above the horizon).

``--check-bins`` also renders every view with each entry binned to every band
(``Renderer._bin_mode = 0``) and reports how many pixels differ from the tight bins: any
difference means the binning dropped an entry that draws (it must be 0).
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import warp as wp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.render_throughput import load_scene, pick_sources, spawn_scene  # noqa: E402
from pictura.render import CameraRig, Renderer, common, fragments, raster, scene  # noqa: E402
from pictura.sim.snapshot import BoxView  # noqa: E402

KINDS = {"agent": scene.REF_AGENT, "line": scene.REF_LINE, "wall": scene.REF_WALL, "light": scene.REF_LIGHT}


@wp.kernel
def walk_bands(
    view_ray: wp.array(dtype=wp.vec4),
    rec: wp.array(dtype=common.EntryRecord),
    tile_mask: wp.array(dtype=wp.uint32),
    capacity: int,
    face_color: wp.array(dtype=wp.vec3),
    misc_color: wp.array(dtype=wp.vec3),
    width: int,
    height: int,
    pix: float,
    near: float,
    far: float,
    bands: int,
    walked_out: wp.array(dtype=wp.uint32),
    drawn_out: wp.array(dtype=wp.uint32),
    partial_out: wp.array(dtype=wp.uint32),
):
    """Thread per (view, band, pixel of the band): `trace_ray`'s walk; sets bit k of the band's
    ``walked_out`` / ``drawn_out`` / ``partial_out`` words when the pixel walks / gets coverage /
    gets a coverage strictly between 0 and 1 (an edge pixel) from entry k."""
    tid = wp.tid()
    band_id = tid / 32
    v = band_id / bands
    band = band_id - v * bands
    tiles_x = (width + common.TILE_PX - 1) / common.TILE_PX
    p = raster.band_pixel(band, tid - band_id * 32, tiles_x, 1.0 / float(tiles_x))
    r1 = view_ray[3 * v + 1]
    if p[0] >= width or p[1] >= height or r1[3] < 0.0:
        return
    d = raster.pixel_ray(view_ray[3 * v], r1, view_ray[3 * v + 2], float(p[0]), float(p[1]))
    g = fragments.ground_frame(d, pix)
    words = raster.mask_words(capacity)
    base = band_id * words
    t_opaque = float(1.0e30)
    done = int(0)
    for wd in range(words):
        bits = tile_mask[base + wd]
        if done == 1:
            break
        while bits != wp.uint32(0):
            low = bits & (~bits + wp.uint32(1))
            bits = bits ^ low
            i = v * capacity + wd * 32 + wp.bit_count(low - wp.uint32(1))
            e = rec[i]
            if e.bound >= t_opaque:
                done = 1
                break
            wp.atomic_or(walked_out, base + wd, low)
            f = fragments.record_fragment(
                e.r0, e.r1, e.r2, rec, i, int(e.r2[3]), d, 0, g, face_color, misc_color[2], pix, near, far, 1,
                common.RampCoverage(),
            )  # fmt: skip
            if f.alpha > 0.0:
                wp.atomic_or(drawn_out, base + wd, low)
                if f.alpha < 1.0:
                    wp.atomic_or(partial_out, base + wd, low)
                if f.alpha >= common._OPAQUE:
                    t_opaque = wp.min(t_opaque, f.t)


def entry_bits(words: np.ndarray, capacity: int) -> np.ndarray:
    """(views, bands, words) uint32 masks -> (views, bands, capacity) bool, bit k = entry k."""
    b = np.unpackbits(words.view(np.uint8).reshape(*words.shape, 4), axis=-1, bitorder="little")
    return b.reshape(*words.shape[:2], -1)[..., :capacity].astype(bool)


def band_entry_sets(r: Renderer, views: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(binned, walked, drawn, partial): (views, bands, list capacity) bool arrays for the first
    ``views`` views of ``r``'s last render, bit k = list entry k (`walk_bands`)."""
    mask = r._tile_mask(views)
    bands, words = mask.shape[1], mask.shape[2]
    walked = wp.zeros(views * bands * words, dtype=wp.uint32, device=r.device)
    drawn = wp.zeros_like(walked)
    partial = wp.zeros_like(walked)
    rig = r.rig
    wp.launch(
        walk_bands, dim=views * bands * 32,
        inputs=[
            r._view_ray.flatten(), r._rec.flatten(), mask.flatten(), r.list_capacity, r._palette.face_color, r._palette.misc_color,
            rig.width, rig.height, 1.0 / rig.focal, rig.near, rig.far, bands,
        ],
        outputs=[walked, drawn, partial], device=r.device,
    )  # fmt: skip
    k = r.list_capacity
    return (
        entry_bits(mask.numpy()[:views], k),
        entry_bits(walked.numpy().reshape(views, bands, words), k),
        entry_bits(drawn.numpy().reshape(views, bands, words), k),
        entry_bits(partial.numpy().reshape(views, bands, words), k),
    )


def band_first_rows(bands: int, width: int) -> np.ndarray:
    """(bands,) first pixel row of each band (mask row 2 t + h: half h of tile t, row order)."""
    band = np.arange(bands)
    tiles_x = -(-width // common.TILE_PX)
    return (band // 2) // tiles_x * common.TILE_PX + (band % 2) * (common.TILE_PX // 2)


def walk_by_row(binned: np.ndarray, walked: np.ndarray, drawn: np.ndarray, kind: np.ndarray, width: int) -> dict:
    """`--by-row`: per band row, what the walk visits (see the module docstring)."""
    rows = band_first_rows(binned.shape[1], width)
    nonempty = binned.any(-1)
    wasted_lines = walked & ~drawn & (kind == scene.REF_LINE)
    out = {}
    for r in np.unique(rows):
        sel = rows == r
        ne = nonempty[:, sel]
        per_band = {
            name: round(float(bits[:, sel].sum(-1)[ne].mean()), 3) if ne.any() else 0.0
            for name, bits in (("walked", walked), ("drawn", drawn), ("wasted_lines", wasted_lines))
        }
        out[str(int(r))] = {
            "nonempty": round(float(ne.mean()), 3), **per_band,
            "share_of_walked": round(float(walked[:, sel].sum() / max(walked.sum(), 1)), 3),
            "share_of_wasted_lines": round(float(wasted_lines[:, sel].sum() / max(wasted_lines.sum(), 1)), 3),
        }  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="Warp device (default cpu)")
    p.add_argument("--map", default="auto", help="map source (default: carla:Town10HD, else procedural:seed=0)")
    p.add_argument("--worlds", type=int, default=1, help="worlds of 128 slots (default 1)")
    p.add_argument("--agents", type=int, default=120, help="agents per world (default 120)")
    p.add_argument("--parked", type=int, default=32, help="parked cars per world (default 32)")
    p.add_argument("--resolutions", default="96x54", help="comma-separated WxH (default 96x54)")
    p.add_argument("--capacity", type=int, default=96, help="primitives kept per view")
    p.add_argument("--check-bins", action="store_true", help="also compare against every-band binning")
    p.add_argument("--by-row", action="store_true", help="also print the walk per band row (render_walk_rows)")
    args = p.parse_args(argv)
    wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)
    wp.init()
    road_maps = [load_scene(source) for source in pick_sources("pinned", args.map)]
    spawn = SimpleNamespace(worlds=args.worlds, slots_per_world=128, parked=args.parked, spawn="sim")
    layout, boxes, lights, _ = spawn_scene(road_maps, (args.agents, args.agents), spawn, args.device)
    egos = np.flatnonzero(BoxView(boxes[: layout.num_slots]).kind >= 0).astype(np.int32)
    requests = np.stack([np.zeros(len(egos), np.int32), egos], 1)
    for res in args.resolutions.split(","):
        w, h = (int(x) for x in res.split("x"))
        rig = CameraRig(width=w, height=h)
        r = Renderer(road_maps, layout, rig, device=args.device, list_capacity=args.capacity, chunk_size=len(egos))
        images = r.render_numpy(boxes[None], lights[None], requests)
        views = len(egos) * rig.num_cameras
        binned, walked_b, drawn_b, partial_b = band_entry_sets(r, views)
        bands = binned.shape[1]
        kind = r._rec.numpy()[:views]["r2"][:, :, 3].astype(int)[:, None, :]
        nonempty = binned.any(-1)
        row = {
            "name": "render_walk_stats", "device": args.device, "map": road_maps[0].name, "resolution": res,
            "views": views, "bands_per_view": bands, "nonempty_bands": round(float(nonempty.mean()), 4),
        }  # fmt: skip
        for label, sel in [("all", np.ones_like(kind, bool)), *((n, kind == k) for n, k in KINDS.items())]:
            row[label] = {
                name: round(float((bits & sel).sum(-1)[nonempty].mean()), 3)
                for name, bits in (("binned", binned), ("walked", walked_b), ("drawn", drawn_b), ("partial", partial_b))
            }
        if args.check_bins:
            r_all = Renderer(road_maps, layout, rig, device=args.device, list_capacity=args.capacity, chunk_size=len(egos))
            r_all._bin_mode = 0
            reference = r_all.render_numpy(boxes[None], lights[None], requests)
            row["pixels_differing_from_every_band_bins"] = int((reference != images).any(-1).sum())
        print(json.dumps(row), flush=True)
        if args.by_row:
            rows = walk_by_row(binned, walked_b, drawn_b, kind, w)
            print(json.dumps({"name": "render_walk_rows", "resolution": res, "rows": rows}), flush=True)


if __name__ == "__main__":
    main()
