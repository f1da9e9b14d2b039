"""The jerk-controlled kinematic bicycle (REFERENCE.md "Dynamics", PufferDrive 3.0).

Action ``a`` in 0..11 commands j_long = JERK_LONG[a // 3], j_lat = JERK_LAT[a % 3] (m/s^3),
scaled by the agent's C_throttle and C_steer. Accelerations and speed snap to 0 when an update
flips their sign (so braking stops at rest instead of reversing), then clip; the steering angle
follows the curvature the lateral acceleration asks for, rate-limited.
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

A_LONG_MIN = -5.0
"""Hardest braking, m/s^2."""
A_LONG_MAX = 2.5
"""Strongest forward acceleration before the C_acc multiplier, m/s^2."""
A_LAT_MAX = 4.0
"""|a_lat| limit, m/s^2."""
STEER_RATE_MAX = 0.6
"""Steering-angle rate limit, rad/s."""
STEER_MAX = 0.55
"""|steering| limit, rad."""
WHEELBASE_FRACTION = 0.6
"""Wheelbase = 0.6 x box length."""
STRAIGHT_EPS = 1e-5
"""Below this |curvature| or |turn| the arc is integrated as a straight line."""


@wp.func
def jerk_long_of(action: int):
    b = action / 3
    j = float(0.0)
    if b == 0:
        j = -15.0
    elif b == 1:
        j = -4.0
    elif b == 3:
        j = 4.0
    return j


@wp.func
def jerk_lat_of(action: int):
    b = action % 3
    j = float(0.0)
    if b == 0:
        j = -4.0
    elif b == 2:
        j = 4.0
    return j


@wp.func
def snap_clip(old: float, new: float, lo: float, hi: float):
    """``new`` clipped to [lo, hi], or 0 when the update flipped the sign of ``old``."""
    out = wp.clamp(new, lo, hi)
    if old * new < 0.0:
        out = 0.0
    return out


@wp.func
def bicycle_step(
    x: float,
    y: float,
    heading: float,
    v: float,
    a_long: float,
    a_lat: float,
    steering: float,
    length: float,
    action: int,
    c_throttle: float,
    c_steer: float,
    c_acc: float,
    v_min: float,
    v_max: float,
    a_long_max: float,
    dt: float,
):
    """One step; returns (x, y, heading, v, a_long, a_lat, steering, arc length)."""
    a_long_new = snap_clip(
        a_long, a_long + c_throttle * jerk_long_of(action) * dt, A_LONG_MIN, a_long_max * c_acc
    )
    a_lat_cmd = snap_clip(a_lat, a_lat + c_steer * jerk_lat_of(action) * dt, -A_LAT_MAX, A_LAT_MAX)
    v_new = snap_clip(v, v + 0.5 * (a_long_new + a_long) * dt, v_min, v_max)
    wheelbase = WHEELBASE_FRACTION * length
    speed_floor = wp.max(wp.abs(v_new), 1.0)
    k = a_lat_cmd / (speed_floor * speed_floor)
    target = wp.atan(k * wheelbase)
    max_delta = STEER_RATE_MAX * dt
    steering_new = wp.clamp(
        steering + wp.clamp(target - steering, -max_delta, max_delta), -STEER_MAX, STEER_MAX
    )
    k = wp.tan(steering_new) / wheelbase
    a_lat_new = v_new * v_new * k
    d = 0.5 * (v_new + v) * dt
    theta = d * k
    dx = d
    dy = float(0.0)
    if wp.abs(k) >= STRAIGHT_EPS and wp.abs(theta) >= STRAIGHT_EPS:
        dx = wp.sin(theta) / k
        half = wp.sin(0.5 * theta)
        dy = 2.0 * half * half / k  # = (1 - cos theta) / k without cancellation
    c = wp.cos(heading)
    s = wp.sin(heading)
    x_new = x + c * dx - s * dy
    y_new = y + s * dx + c * dy
    return x_new, y_new, heading + theta, v_new, a_long_new, a_lat_new, steering_new, d
