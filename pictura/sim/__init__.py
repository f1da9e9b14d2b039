"""The simulator: Warp kernels over a flat pool of agent slots (no torch imports).

model = build_model(road_maps, layout, SimConfig(), device)
state_in, state_out, control = model.state(), model.state(), model.control()
reset(model, state_in, seed=0)
step(model, state_in, control, state_out); state_in, state_out = state_out, state_in
"""

from pictura.sim.builder import build_model
from pictura.sim.config import CONDITIONING_TABLE, Coefficient, SimConfig
from pictura.sim.features import (
    CONDITIONING_WIDTH,
    EGO_AUX_WIDTH,
    EGO_WIDTH,
    EVENTS,
    GOAL_FEATURES,
    NUM_ACTIONS,
    NUM_EVENTS,
    NUM_REWARD_TERMS,
    REWARD_TERMS,
)
from pictura.sim.model import Model
from pictura.sim.state import Control, State
from pictura.sim.step import reset, reset_worlds, slot_utilisation, step

__all__ = [
    "CONDITIONING_TABLE",
    "CONDITIONING_WIDTH",
    "EGO_AUX_WIDTH",
    "EGO_WIDTH",
    "EVENTS",
    "GOAL_FEATURES",
    "NUM_ACTIONS",
    "NUM_EVENTS",
    "NUM_REWARD_TERMS",
    "REWARD_TERMS",
    "Coefficient",
    "Control",
    "Model",
    "SimConfig",
    "State",
    "build_model",
    "reset",
    "reset_worlds",
    "slot_utilisation",
    "step",
]
