"""Bad OpenDRIVE input fails loudly with the file and element named."""

from __future__ import annotations

import re

import pytest

from pictura.maps.opendrive import read_opendrive
from tests.maps.test_opendrive_geometry import write_xodr


def test_truncated_xml(tmp_path):
    good = write_xodr(tmp_path, "<line/>", 20.0).read_text()
    bad = tmp_path / "truncated.xodr"
    bad.write_text(good[: len(good) // 2])
    with pytest.raises(ValueError, match=r"truncated\.xodr: malformed XML at line \d+"):
        read_opendrive(bad, use_cache=False)


def test_geometry_missing_attribute(tmp_path):
    path = write_xodr(tmp_path, "<line/>", 20.0)
    path.write_text(re.sub(r' hdg="[^"]*"', "", path.read_text(), count=1))
    with pytest.raises(
        ValueError, match=r"synthetic\.xodr: road 1, <geometry> at line \d+: missing attribute 'hdg'"
    ):
        read_opendrive(path, use_cache=False)


def test_arc_missing_curvature(tmp_path):
    path = write_xodr(tmp_path, "<arc/>", 20.0)
    with pytest.raises(ValueError, match=r"road 1, <arc> at line \d+: missing attribute 'curvature'"):
        read_opendrive(path, use_cache=False)


def test_negative_lane_width(tmp_path):
    path = write_xodr(
        tmp_path, "<line/>", 20.0, right_widths='<width sOffset="0" a="-3.5" b="0" c="0" d="0"/>'
    )
    with pytest.raises(ValueError, match=r"road 1, <width> at line \d+: lane -1 has negative width"):
        read_opendrive(path, use_cache=False)


def test_width_turning_negative_along_the_lane(tmp_path):
    path = write_xodr(
        tmp_path, "<line/>", 20.0, right_widths='<width sOffset="0" a="3.0" b="-0.5" c="0" d="0"/>'
    )
    with pytest.raises(
        ValueError, match=r"road 1, <lane> at line \d+: lane -1 width -\d\.\d+ m is negative at s="
    ):
        read_opendrive(path, use_cache=False)


def test_not_opendrive(tmp_path):
    path = tmp_path / "page.xodr"
    path.write_text("<html><body>not a map</body></html>")
    with pytest.raises(ValueError, match=r"page\.xodr: not an OpenDRIVE file \(root element <html>"):
        read_opendrive(path, use_cache=False)


def test_unsupported_geometry(tmp_path):
    path = write_xodr(tmp_path, "<clothoidish/>", 20.0)
    with pytest.raises(
        ValueError, match=r"road 1, <clothoidish> at line \d+: unsupported plan-view geometry"
    ):
        read_opendrive(path, use_cache=False)


def test_bad_speed_unit(tmp_path):
    path = write_xodr(tmp_path, "<line/>", 20.0)
    path.write_text(path.read_text().replace('unit="km/h"', 'unit="furlong/fortnight"'))
    with pytest.raises(ValueError, match=r"road 1, <speed> at line \d+: unknown speed unit"):
        read_opendrive(path, use_cache=False)
