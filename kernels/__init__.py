"""Kernels written in tessera's language (Triton's syntax)."""
