"""Collectives among actors with byte/time accounting and a simulated network."""
from raystack.comm.group import CommGroup, CommHandle, OpStats, default_backend, free_port
from raystack.comm.network import NetworkModel, SimulatedLink, ring_bytes

__all__ = ["CommGroup", "CommHandle", "OpStats", "NetworkModel", "SimulatedLink", "default_backend",
           "free_port", "ring_bytes"]
