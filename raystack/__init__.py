"""raystack: train large models on cheap, mixed and unreliable clusters, on Ray.

The library layer: algorithms, configs, data and models, pure and testable without a cluster.
Ray actors live in `actors/`, entry points in `apps/`.
"""
__version__ = "0.1.0"
