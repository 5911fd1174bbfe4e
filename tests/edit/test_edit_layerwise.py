"""Layer-wise sync: hooks drive launch/finish in block order with prefetch; shard layout."""
import torch
from torch import nn

from raystack.edit.layerwise import LayerwiseSync
from raystack.edit.shard import ShardLayout, flatten, partition_blocks, unflatten_into


class Recorder:
    def __init__(self):
        self.events = []

    def launch(self, b):
        self.events.append(("launch", b))

    def finish(self, b):
        self.events.append(("finish", b))


def _chain(n=3):
    return nn.Sequential(*[nn.Linear(4, 4) for _ in range(n)])


def test_each_block_synced_before_its_forward_with_next_prefetched():
    model = _chain(3)
    rec = Recorder()
    seen = []
    for i, m in enumerate(model):
        m.register_forward_pre_hook(lambda mod, args, i=i: seen.append(("forward", i)))
    sync = LayerwiseSync(list(model), rec, prefetch=True)
    sync.arm(launch_first=True)
    log = rec.events
    model(torch.randn(2, 4))
    # block 0 was launched at arm time; at block l's forward: launch l+1, then finish l
    assert log == [("launch", 0), ("launch", 1), ("finish", 0), ("launch", 2), ("finish", 1), ("finish", 2)]
    assert not sync.active
    model(torch.randn(2, 4))          # disarmed: a plain forward syncs nothing
    assert len(log) == 6


def test_no_prefetch_and_flush_without_forward():
    model = _chain(3)
    rec = Recorder()
    sync = LayerwiseSync(list(model), rec, prefetch=False)
    sync.arm(launch_first=False)
    sync.flush()
    assert rec.events == [("launch", 0), ("finish", 0), ("launch", 1), ("finish", 1), ("launch", 2), ("finish", 2)]
    sync.remove()


def test_sync_writes_before_the_block_computes():
    model = _chain(2)

    class Zeroing(Recorder):
        def finish(self, b):
            with torch.no_grad():
                for p in model[b].parameters():
                    p.zero_()
    sync = LayerwiseSync(list(model), Zeroing())
    sync.arm()
    out = model(torch.randn(3, 4))
    assert torch.count_nonzero(out) == 0   # the forward used the synced (zeroed) weights


def test_shard_layout_splits_and_joins_with_padding():
    flat = torch.arange(10.0)
    layouts = [ShardLayout(10, 4, r) for r in range(4)]
    shards = [lay.take(flat) for lay in layouts]
    assert [s.numel() for s in shards] == [3, 3, 3, 3]
    assert shards[3].tolist() == [9.0, 0.0, 0.0]
    assert torch.equal(layouts[0].join(shards), flat)


def test_blocks_own_each_parameter_once_and_roundtrip():
    model = _chain(3)
    model[2].weight = model[0].weight            # a tied parameter
    blocks = partition_blocks(model, [("a", model[0], [model[0]]), ("b", model[1], [model[1]]),
                                      ("c", model[2], [model[2]])])
    ids = [id(p) for b in blocks for p in b.params]
    assert len(ids) == len(set(ids)) == len(list(model.parameters()))
    flat = flatten(blocks[1].params)
    unflatten_into(torch.zeros_like(flat), blocks[1].params)
    assert float(model[1].weight.abs().sum()) == 0.0
