"""pictura.modules: the Alberti policy, GAE and the PPO LightningModule (torch only)."""

from pictura.modules.alberti import AlbertiPolicy
from pictura.modules.gae import AdvantageFilter, ReturnNormalizer, generalized_advantage
from pictura.modules.ppo import PPO, ppo_loss

__all__ = ["PPO", "AdvantageFilter", "AlbertiPolicy", "ReturnNormalizer", "generalized_advantage", "ppo_loss"]
