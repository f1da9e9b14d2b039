"""The simulator: Warp kernels over a flat pool of agent slots (no torch imports)."""
