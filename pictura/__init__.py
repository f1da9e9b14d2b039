"""Pictura."""
