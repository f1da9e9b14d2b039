"""pictura.envs"""
