"""Workflow runner actors (Ray), Tune integration and catalog steps for the other parts."""
