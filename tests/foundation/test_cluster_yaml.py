"""cluster.yaml is a valid Ray cluster-launcher file, by Ray's own validation."""
import copy
from pathlib import Path

import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

CLUSTER_YAML = Path(__file__).resolve().parents[2] / "cluster.yaml"


def test_cluster_yaml_passes_rays_validation():
    config = yaml.safe_load(CLUSTER_YAML.read_text())
    validate_config(prepare_config(copy.deepcopy(config)))
    types = config["available_node_types"]
    assert config["head_node_type"] in types
    assert any("GPU" in t["resources"] for t in types.values()), "a GPU worker type"
    assert any("GPU" not in t["resources"] and t["max_workers"] > 0 for t in types.values()), "a CPU worker type"
    assert any("raystack" in cmd for cmd in config["setup_commands"]), "setup installs raystack"
    assert "--dashboard-port=8265" in " ".join(config["head_start_ray_commands"])


def test_validation_rejects_a_typo():
    config = yaml.safe_load(CLUSTER_YAML.read_text())
    config["available_node_types"]["cpu_worker"]["max_workerz"] = 3
    with pytest.raises(Exception, match="max_workerz"):
        validate_config(prepare_config(config))
