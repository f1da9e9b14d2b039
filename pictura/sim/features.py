"""Widths and names shared by the simulator, the env and the networks (one source of truth).

Every observation width, reward-term and event name used outside `pictura.sim` comes from
here, so kernels, TorchRL specs and encoders cannot drift apart.
"""

from __future__ import annotations

NUM_ACTIONS = 12
"""Joint discrete action: 4 longitudinal x 3 lateral jerk bins (REFERENCE.md "Dynamics")."""
JERK_LONG = (-15.0, -4.0, 0.0, 4.0)
"""Longitudinal jerk of action ``a`` is ``JERK_LONG[a // 3]`` (m/s^3)."""
JERK_LAT = (-4.0, 0.0, 4.0)
"""Lateral jerk of action ``a`` is ``JERK_LAT[a % 3]`` (m/s^3)."""


def action_index(long_bin: int, lat_bin: int) -> int:
    """Action id of longitudinal bin ``long_bin`` (0..3) and lateral bin ``lat_bin`` (0..2)."""
    return 3 * long_bin + lat_bin


ACTION_COAST = action_index(2, 1)
"""Action 7: zero jerk on both axes (keeps the current accelerations)."""

EGO_WIDTH = 7
"""ego: speed/40, length/10, width/5, steering/0.55, a_long/5, a_lat/4, speed limit/40."""
EGO_AUX_WIDTH = 2
"""ego aux: clip(lateral offset/4, -1, 1), cos(heading - lane heading); zeros off-lane."""
NUM_GOALS = 3
"""Waypoints per goal set (the third is the goal proper)."""
GOAL_FEATURES = 2 * NUM_GOALS
"""goals: (x/600, y/600) of the 3 waypoints in the ego frame, flattened to 6 floats."""

# Table 2 coefficients in conditioning-column order (the sampler, the reward kernels and
# the observation all index by these).
CONDITIONING_NAMES = (
    "delta_goal",
    "v_goal",
    "alpha_collision",
    "alpha_offroad",
    "alpha_stop_line",
    "alpha_comfort",
    "alpha_lane_align",
    "alpha_vel_align",
    "alpha_lane_center",
    "alpha_center_bias",
    "alpha_velocity",
    "alpha_reverse",
    "alpha_overspeed",
    "alpha_timestep",
    "c_throttle",
    "c_steer",
    "c_acc",
)
NUM_COEFFICIENTS = len(CONDITIONING_NAMES)
"""17 sampled coefficients (14 reward, 3 dynamics); then the agent-type one-hot."""
(
    COND_DELTA_GOAL,
    COND_V_GOAL,
    COND_COLLISION,
    COND_OFFROAD,
    COND_STOP_LINE,
    COND_COMFORT,
    COND_LANE_ALIGN,
    COND_VEL_ALIGN,
    COND_LANE_CENTER,
    COND_CENTER_BIAS,
    COND_VELOCITY,
    COND_REVERSE,
    COND_OVERSPEED,
    COND_TIMESTEP,
    COND_THROTTLE,
    COND_STEER,
    COND_ACC,
) = range(NUM_COEFFICIENTS)
COND_TYPE = NUM_COEFFICIENTS
"""First column of the type one-hot (vehicle, pedestrian, cyclist), in AGENT_* order."""
CONDITIONING_WIDTH = NUM_COEFFICIENTS + 3
"""20: 17 coefficients + 3 type one-hot columns."""

REWARD_TERMS = (
    "goal",
    "collision",
    "offroad",
    "red_light",
    "comfort",
    "lane_align",
    "lane_center",
    "velocity",
    "overspeed",
    "reverse",
    "timestep",
)
"""Column names of ``State.reward_terms``; ``State.reward`` is their sum."""
NUM_REWARD_TERMS = len(REWARD_TERMS)
(
    TERM_GOAL,
    TERM_COLLISION,
    TERM_OFFROAD,
    TERM_RED_LIGHT,
    TERM_COMFORT,
    TERM_LANE_ALIGN,
    TERM_LANE_CENTER,
    TERM_VELOCITY,
    TERM_OVERSPEED,
    TERM_REVERSE,
    TERM_TIMESTEP,
) = range(NUM_REWARD_TERMS)

EVENTS = ("collision", "offroad", "red_light", "goal")
"""Column names of ``State.events`` (int 0/1 per step)."""
NUM_EVENTS = len(EVENTS)
EVENT_COLLISION, EVENT_OFFROAD, EVENT_RED_LIGHT, EVENT_GOAL = range(NUM_EVENTS)
