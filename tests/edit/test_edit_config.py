"""A bad EDiT config fails up front, naming the field, before any actor starts."""
import pytest

from raystack.apps.commands.edit import load_edit_config
from raystack.config import ConfigError


@pytest.mark.parametrize("overrides, field", [
    (["sync.h=0"], "sync.h"),
    (["ranks=3", "shards=2"], "shards"),
    (["model=no-such-model"], "model"),
    (["mode=fast"], "mode"),
    (["outer.momentum=1.5"], "outer.momentum"),
    (["penalty.temperature=0"], "penalty.temperature"),
    (["simulate.slowdown=[1.0]"], "simulate.slowdown"),
    (["nonsense=1"], "nonsense"),
    (["sync.overlap_steps=16"], "sync.overlap_steps"),                 # must stay below h
    (["mode=diloco", "sync.overlap_steps=2"], "sync.overlap_steps"),   # EDiT's layer-wise sync only
    (["sync.compression=int4"], "sync.compression"),
    (["full_shard=true"], "full_shard"),                                # needs shards >= 2
    (["inner.lr_min_ratio=2"], "inner.lr_min_ratio"),
    (["ranks=2", "shards=2", "full_shard=true", "inner.fused=true"], "inner.fused"),   # no fused kernel over DTensor
    (["inner.fused=maybe"], "inner.fused"),
])
def test_bad_config_names_the_field(overrides, field):
    with pytest.raises(ConfigError) as err:
        load_edit_config(None, overrides)
    assert err.value.field == field


def test_defaults_and_example_config_load():
    cfg = load_edit_config(None)
    assert (cfg.mode, cfg.replicas, cfg.sync.h) == ("edit", 2, 16)
    cfg = load_edit_config("configs/edit.yaml", ["mode=aedit", "ranks=4", "shards=2"])
    assert cfg.mode == "aedit" and cfg.replicas == 2


def test_cli_rejects_a_bad_config_before_connecting(monkeypatch, capsys):
    import raystack.cluster
    from raystack.apps.cli import main

    def never(*a, **k):
        raise AssertionError("connected to a cluster with a bad config")
    monkeypatch.setattr(raystack.cluster, "connect", never)
    assert main(["edit", "--set", "sync.h=0"]) == 2
    assert "sync.h" in capsys.readouterr().err
