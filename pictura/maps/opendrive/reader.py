"""OpenDRIVE XML -> plain Python records (roads, lanes, junctions, signals).

Built on the standard library's expat parser so every element keeps its source line, which
error messages quote. Only what the importer uses is read; unknown elements are ignored.
"""

from __future__ import annotations

import math
import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

_SPEED_UNITS = {"m/s": 1.0, "mph": 0.44704, "km/h": 1.0 / 3.6, "kmh": 1.0 / 3.6}


@dataclass
class Node:
    """One XML element: tag, attributes, children and the 1-based line it starts on."""

    tag: str
    attrib: dict[str, str]
    line: int
    children: list[Node] = field(default_factory=list)

    def find(self, tag: str) -> Node | None:
        return next((c for c in self.children if c.tag == tag), None)

    def findall(self, tag: str) -> list[Node]:
        return [c for c in self.children if c.tag == tag]


def parse_xml(path: Path) -> Node:
    """Parse ``path`` into a `Node` tree; ``ValueError`` naming file, line and column if malformed."""
    stack: list[Node] = []
    root: list[Node] = []
    parser = xml.parsers.expat.ParserCreate()

    def start(tag: str, attrs: dict[str, str]) -> None:
        node = Node(tag, attrs, parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(tag: str) -> None:
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(Path(path).read_bytes(), True)
    except xml.parsers.expat.ExpatError as err:
        raise ValueError(f"{path}: malformed XML at line {err.lineno}, column {err.offset}: {err}") from None
    return root[0]


@dataclass
class Geometry:
    """One plan-view record: start s (m), start pose (m, m, rad), length (m), kind and parameters."""

    s: float
    x: float
    y: float
    hdg: float
    length: float
    kind: str  # line | arc | spiral | poly3 | paramPoly3
    params: dict[str, float | str]
    line: int


@dataclass
class Lane:
    id: int
    type: str
    width_s: np.ndarray  # (n,) sOffset from the section start, m
    width_coef: np.ndarray  # (n, 4) a, b, c, d of the cubic in ds
    predecessor: int | None
    successor: int | None
    speed: float  # m/s, 0 = none given
    line: int


@dataclass
class LaneSection:
    s: float
    lanes: dict[int, Lane]  # by lane id, centre lane 0 excluded
    line: int


@dataclass
class Link:
    element_type: str  # road | junction
    element_id: str
    contact_point: str | None  # start | end (roads only)


@dataclass
class Signal:
    id: str
    road: str
    s: float
    t: float
    z_offset: float
    h_offset: float
    orientation: str
    type: str
    line: int


@dataclass
class SignalReference:
    id: str  # the referenced signal
    road: str
    s: float
    orientation: str
    lanes: list[int]  # lane ids from <validity>, empty = all


@dataclass
class Crosswalk:
    """A ``<object type="crosswalk">``: s, t, zOffset (m), heading relative to the road (rad) and
    its outline's extent in the object's own frame (u along ``hdg``, v to its left), m."""

    s: float
    t: float
    z_offset: float
    hdg: float
    u_range: tuple[float, float]
    v_range: tuple[float, float]


@dataclass
class Road:
    id: str
    length: float
    junction: str  # "-1" outside junctions
    lht: bool  # rule="LHT": left-hand traffic
    predecessor: Link | None
    successor: Link | None
    geometries: list[Geometry]
    elevation_s: np.ndarray  # (n,) m
    elevation_coef: np.ndarray  # (n, 4)
    offset_s: np.ndarray  # (n,) laneOffset starts, m
    offset_coef: np.ndarray  # (n, 4)
    sections: list[LaneSection]
    speed_s: np.ndarray  # (n,) <type> starts, m
    speed: np.ndarray  # (n,) m/s, 0 = none
    line: int
    crosswalks: list[Crosswalk] = field(default_factory=list)


@dataclass
class Connection:
    incoming: str
    connecting: str
    contact_point: str
    lane_links: list[tuple[int, int]]


@dataclass
class OpenDrive:
    roads: dict[str, Road]
    junctions: dict[str, list[Connection]]
    signals: list[Signal]
    references: list[SignalReference]


class _Ctx:
    """Formats errors as ``file: road R, <element> at line N: message``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.road = "?"

    def error(self, node: Node, message: str) -> ValueError:
        return ValueError(f"{self.path}: road {self.road}, <{node.tag}> at line {node.line}: {message}")

    def num(self, node: Node, name: str, default: float | None = None) -> float:
        raw = node.attrib.get(name)
        if raw is None:
            if default is None:
                raise self.error(node, f"missing attribute {name!r}")
            return default
        try:
            value = float(raw)
        except ValueError:
            raise self.error(node, f"attribute {name!r}={raw!r} is not a number") from None
        if not math.isfinite(value):
            raise self.error(node, f"attribute {name!r}={raw!r} is not finite")
        return value

    def text(self, node: Node, name: str) -> str:
        raw = node.attrib.get(name)
        if raw is None:
            raise self.error(node, f"missing attribute {name!r}")
        return raw

    def cubic(self, node: Node, s_name: str) -> tuple[float, list[float]]:
        return self.num(node, s_name), [self.num(node, k) for k in ("a", "b", "c", "d")]


def _cubics(ctx: _Ctx, nodes: list[Node], s_name: str = "s") -> tuple[np.ndarray, np.ndarray]:
    if not nodes:
        return np.zeros(1), np.zeros((1, 4))
    rows = sorted((ctx.cubic(n, s_name) for n in nodes), key=lambda r: r[0])
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def _link(ctx: _Ctx, node: Node | None) -> Link | None:
    if node is None:
        return None
    kind = ctx.text(node, "elementType")
    if kind not in ("road", "junction"):
        raise ctx.error(node, f"elementType={kind!r}, expected 'road' or 'junction'")
    contact = node.attrib.get("contactPoint")
    if kind == "road" and contact not in ("start", "end"):
        raise ctx.error(node, f"contactPoint={contact!r}, expected 'start' or 'end'")
    return Link(kind, ctx.text(node, "elementId"), contact)


def _speed(ctx: _Ctx, node: Node) -> float:
    unit = node.attrib.get("unit", "m/s")
    if unit not in _SPEED_UNITS:
        raise ctx.error(node, f"unknown speed unit {unit!r}")
    raw = node.attrib.get("max", "")
    if raw in ("no limit", "undefined"):
        return 0.0
    return ctx.num(node, "max") * _SPEED_UNITS[unit]


def _geometry(ctx: _Ctx, node: Node) -> Geometry:
    s, x, y, hdg, length = (ctx.num(node, k) for k in ("s", "x", "y", "hdg", "length"))
    if length < 0:
        raise ctx.error(node, f"negative length {length}")
    if not node.children:
        raise ctx.error(node, "no shape element (line, arc, spiral, poly3, paramPoly3)")
    shape = node.children[0]
    kinds = {
        "line": (),
        "arc": ("curvature",),
        "spiral": ("curvStart", "curvEnd"),
        "poly3": ("a", "b", "c", "d"),
        "paramPoly3": ("aU", "bU", "cU", "dU", "aV", "bV", "cV", "dV"),
    }
    if shape.tag not in kinds:
        raise ctx.error(shape, f"unsupported plan-view geometry <{shape.tag}>")
    params: dict[str, float | str] = {k: ctx.num(shape, k) for k in kinds[shape.tag]}
    if shape.tag == "paramPoly3":
        p_range = shape.attrib.get("pRange", "normalized")
        if p_range not in ("normalized", "arcLength"):
            raise ctx.error(shape, f"pRange={p_range!r}, expected 'normalized' or 'arcLength'")
        params["pRange"] = p_range
    return Geometry(s, x, y, hdg, length, shape.tag, params, node.line)


def _lane(ctx: _Ctx, node: Node) -> Lane:
    lane_id = int(ctx.num(node, "id"))
    widths = node.findall("width")
    if lane_id != 0 and not widths:
        raise ctx.error(node, f"lane {lane_id} has no <width> record")
    width_s, width_coef = _cubics(ctx, widths, "sOffset")
    for w in widths:
        if ctx.num(w, "a") < 0:
            raise ctx.error(w, f"lane {lane_id} has negative width a={ctx.num(w, 'a')}")
    link = node.find("link")
    pred = succ = None
    if link is not None:
        p, q = link.find("predecessor"), link.find("successor")
        pred = int(ctx.num(p, "id")) if p is not None else None
        succ = int(ctx.num(q, "id")) if q is not None else None
    speeds = node.findall("speed")
    speed = _speed(ctx, speeds[0]) if speeds else 0.0
    return Lane(lane_id, node.attrib.get("type", "none"), width_s, width_coef, pred, succ, speed, node.line)


def _crosswalks(ctx: _Ctx, road: Node) -> list[Crosswalk]:
    objects = road.find("objects")
    out = []
    for obj in objects.findall("object") if objects is not None else []:
        if obj.attrib.get("type") != "crosswalk":
            continue
        outline = obj.find("outline")
        corners = outline.findall("cornerLocal") if outline is not None else []
        if corners:
            u = [ctx.num(c, "u") for c in corners]
            v = [ctx.num(c, "v") for c in corners]
        else:  # no outline: the object's length x width rectangle around its origin
            half_l, half_w = 0.5 * ctx.num(obj, "length"), 0.5 * ctx.num(obj, "width")
            u, v = [-half_l, half_l], [-half_w, half_w]
        out.append(
            Crosswalk(ctx.num(obj, "s"), ctx.num(obj, "t"), ctx.num(obj, "zOffset", 0.0), ctx.num(obj, "hdg", 0.0),
                      (min(u), max(u)), (min(v), max(v)))
        )  # fmt: skip
    return out


def _road(ctx: _Ctx, node: Node) -> Road:
    rid = ctx.text(node, "id")
    ctx.road = rid
    length = ctx.num(node, "length")
    link = node.find("link")
    pred = _link(ctx, link.find("predecessor")) if link is not None else None
    succ = _link(ctx, link.find("successor")) if link is not None else None
    plan = node.find("planView")
    if plan is None or not plan.findall("geometry"):
        raise ctx.error(node, "no <planView> geometry")
    geoms = sorted((_geometry(ctx, g) for g in plan.findall("geometry")), key=lambda g: g.s)
    elev = node.find("elevationProfile")
    elevation_s, elevation_coef = _cubics(ctx, elev.findall("elevation") if elev is not None else [])
    lanes_node = node.find("lanes")
    if lanes_node is None:
        raise ctx.error(node, "no <lanes>")
    offset_s, offset_coef = _cubics(ctx, lanes_node.findall("laneOffset"))
    sections = []
    for sec in lanes_node.findall("laneSection"):
        lanes: dict[int, Lane] = {}
        for side in ("left", "right"):
            side_node = sec.find(side)
            for lane_node in side_node.findall("lane") if side_node is not None else []:
                lane = _lane(ctx, lane_node)
                if (lane.id > 0) != (side == "left") or lane.id == 0:
                    raise ctx.error(lane_node, f"lane id {lane.id} does not belong to <{side}>")
                lanes[lane.id] = lane
        sections.append(LaneSection(ctx.num(sec, "s"), lanes, sec.line))
    if not sections:
        raise ctx.error(lanes_node, "no <laneSection>")
    sections.sort(key=lambda sc: sc.s)
    speed_rows = []
    for t in node.findall("type"):
        sp = t.find("speed")
        speed_rows.append((ctx.num(t, "s"), _speed(ctx, sp) if sp is not None else 0.0))
    speed_rows.sort()
    rule = node.attrib.get("rule", "RHT")
    if rule not in ("RHT", "LHT"):
        raise ctx.error(node, f"rule={rule!r}, expected 'RHT' or 'LHT'")
    return Road(
        rid, length, node.attrib.get("junction", "-1"), rule == "LHT", pred, succ, geoms,
        elevation_s, elevation_coef, offset_s, offset_coef, sections,
        np.array([r[0] for r in speed_rows]), np.array([r[1] for r in speed_rows]), node.line,
        _crosswalks(ctx, node),
    )  # fmt: skip


def _signals(ctx: _Ctx, road: Node, rid: str) -> tuple[list[Signal], list[SignalReference]]:
    sig_node = road.find("signals")
    if sig_node is None:
        return [], []
    signals = [
        Signal(
            ctx.text(n, "id"),
            rid,
            ctx.num(n, "s"),
            ctx.num(n, "t"),
            ctx.num(n, "zOffset", 0.0),
            ctx.num(n, "hOffset", 0.0),
            n.attrib.get("orientation", "+"),
            n.attrib.get("type", ""),
            n.line,
        )  # fmt: skip
        for n in sig_node.findall("signal")
    ]
    refs = []
    for n in sig_node.findall("signalReference"):
        lanes: list[int] = []
        for v in n.findall("validity"):
            lo, hi = sorted((int(ctx.num(v, "fromLane")), int(ctx.num(v, "toLane"))))
            lanes.extend(i for i in range(lo, hi + 1) if i != 0)
        refs.append(
            SignalReference(ctx.text(n, "id"), rid, ctx.num(n, "s"), n.attrib.get("orientation", "+"), lanes)
        )
    return signals, refs


def read_document(path: Path) -> OpenDrive:
    """Parse an OpenDRIVE file into records; ``ValueError`` naming file, road and line on bad input."""
    path = Path(path)
    root = parse_xml(path)
    if root.tag != "OpenDRIVE":
        raise ValueError(f"{path}: not an OpenDRIVE file (root element <{root.tag}>, expected <OpenDRIVE>)")
    ctx = _Ctx(path)
    roads: dict[str, Road] = {}
    signals: list[Signal] = []
    refs: list[SignalReference] = []
    for node in root.findall("road"):
        road = _road(ctx, node)
        if road.id in roads:
            raise ctx.error(node, f"duplicate road id {road.id!r}")
        roads[road.id] = road
        sig, ref = _signals(ctx, node, road.id)
        signals += sig
        refs += ref
    if not roads:
        raise ValueError(f"{path}: OpenDRIVE file holds no <road>")
    junctions: dict[str, list[Connection]] = {}
    for node in root.findall("junction"):
        ctx.road = "-"
        conns = []
        for c in node.findall("connection"):
            links = [(int(ctx.num(ll, "from")), int(ctx.num(ll, "to"))) for ll in c.findall("laneLink")]
            conns.append(
                Connection(ctx.text(c, "incomingRoad"), ctx.text(c, "connectingRoad"),
                           c.attrib.get("contactPoint", "start"), links)
            )  # fmt: skip
        junctions[ctx.text(node, "id")] = conns
    return OpenDrive(roads, junctions, signals, refs)
