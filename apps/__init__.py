"""Entry points: the `raystack` CLI, `ray job submit` scripts, the Serve app, notebooks."""
