"""EDiT on a simulated multi-node cluster: ranks packed per replica and replicas spread (read
from Ray's state API), and a node lost mid-run: the survivors keep stepping (their step counters
never go back), the lost replica is replaced on another node and healed from the live replica,
and the final validation loss stays within 1.05x of the fault-free run's."""
from __future__ import annotations

import pytest
import torch

from raystack.config import load_config
from raystack.edit.config import EDiTConfig

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def cfg_for(out_dir, **run):
    return load_config(EDiTConfig, {
        "model": "tiny-1m", "mode": "edit", "ranks": 4, "shards": 2, "steps": 36,
        "sync": {"h": 6, "warmup_steps": 6},
        "data": {"max_bytes": 300_000, "batch_size": 4, "seq_len": 32, "eval_batches": 4},
        "penalty": {"warmup_syncs": 1},
        "run": {"out_dir": str(out_dir), "checkpoint_every": 0, "eval_every": 0, "comm_timeout_s": 30.0,
                "segments_per_call": 1, **run}})


def test_a_lost_node_heals_its_replica_from_a_live_peer_and_survivors_never_step_back(nodes, tmp_path):
    from raystack.actors.edit import EDiTGroup

    sim = nodes
    group = EDiTGroup(cfg_for(tmp_path / "clean"))
    try:
        group.start()
        where = sim.actor_nodes(dict(zip(group.group.keys, group.workers)))
        # each replica's two ranks share a node (packed); the two replicas do not (spread)
        assert where["rank-0"] == where["rank-1"] and where["rank-2"] == where["rank-3"], where
        assert where["rank-0"] != where["rank-2"], where
        clean = group.run(progress=False, save=False)

        group.reconfigure(cfg_for(tmp_path / "lost"))      # the same actors, a fresh run
        steps: dict[str, list[int]] = {k: [] for k in group.group.keys}
        lost = {}

        def lose_replica_1(g, segment):
            for k, r in zip(g.group.keys, g.group.call("report")):
                steps[k].append(r.step)
            if segment == 3 and not lost:                   # mid-run, after warm-up
                lost["node"] = where["rank-2"]
                node_id = sim.members[lost["node"]].node_id
                sim.remove(lost["node"])
                sim.wait_dead(node_id)      # its processes are gone before the next segment
        faulty = group.run(progress=False, on_segment=lose_replica_1, save=False)

        assert lost and faulty.replacements == 2 and faulty.steps == 36
        after = sim.actor_nodes(dict(zip(group.group.keys, group.workers)))
        assert after["rank-2"] == after["rank-3"] != lost["node"], after   # packed again, elsewhere
        for k in ("rank-0", "rank-1"):                      # survivors: never a step back
            assert steps[k] == sorted(steps[k]) and steps[k][-1] == 36, steps[k]
            losses, _ = group.group.ask(k, "losses")
            assert len(losses) == 36                        # each step ran once: nothing redone
        # the replacements joined with the survivors' state: same synced parameters everywhere
        states = group.group.call("heal_state")
        for a, b in zip(states[0]["outer"]["theta_sync"], states[2]["outer"]["theta_sync"]):
            torch.testing.assert_close(a, b)
        assert faulty.val_loss <= 1.05 * clean.val_loss, (faulty.val_loss, clean.val_loss)
    finally:
        group.shutdown()


def test_a_spare_replica_takes_a_lost_replicas_place_without_starting_a_process(nodes, tmp_path):
    """run.spare_replicas=1: the spare's ranks start ahead on a node no rank uses; when a
    replica's node is lost, the spare's own actors become its ranks (no new process: the same
    pids), healed from the live replica; the survivors never step back; a new spare is started
    off the lost node once the run goes on."""
    from raystack.actors.edit import EDiTGroup

    sim = nodes
    group = EDiTGroup(cfg_for(tmp_path / "spare", spare_replicas=1))
    try:
        group.start()
        ranks = sim.actor_nodes(dict(zip(group.group.keys, group.workers)))
        spares = dict(zip(group.spares.group.keys, group.spares.group.handles))
        assert sorted(spares) == ["spare0-0", "spare0-1"]
        spare_pids = {k: pid for k, pid in zip(spares, group.spares.group.call("take_rank", -1, group.cfg_dict))}
        where = sim.actor_nodes(spares)
        assert where["spare0-0"] == where["spare0-1"], where                 # packed like a replica
        assert where["spare0-0"] not in {ranks["rank-0"], ranks["rank-2"]}, (where, ranks)  # a node of its own
        steps: dict[str, list[int]] = {k: [] for k in group.group.keys}
        lost = {}

        def lose_replica_1(g, segment):
            for k, r in zip(g.group.keys, g.group.call("report")):
                steps[k].append(r.step)
            if segment == 3 and not lost:
                lost["node"] = ranks["rank-2"]
                node_id = sim.members[lost["node"]].node_id
                sim.remove(lost["node"])
                sim.wait_dead(node_id)
        faulty = group.run(progress=False, on_segment=lose_replica_1, save=False)

        assert lost and faulty.replacements == 2 and faulty.steps == 36
        assert group.promoted == ["spare0-0", "spare0-1"]
        # the lost ranks are now the spare's actors: the same processes, on the spare's node
        assert group.group.call_each("take_rank", {"rank-2": (2, group.cfg_dict), "rank-3": (3, group.cfg_dict)}) \
            == [spare_pids["spare0-0"], spare_pids["spare0-1"]]
        after = sim.actor_nodes(dict(zip(group.group.keys, group.workers)))
        assert after["rank-2"] == after["rank-3"] == where["spare0-0"], after
        for k in ("rank-0", "rank-1"):                      # survivors: never a step back
            assert steps[k] == sorted(steps[k]) and steps[k][-1] == 36, steps[k]
        states = group.group.call("heal_state")
        for a, b in zip(states[0]["outer"]["theta_sync"], states[2]["outer"]["theta_sync"]):
            torch.testing.assert_close(a, b)
        # a new spare replica was started, not on the lost node
        assert sorted(group.spares.group.keys) == ["spare1-0", "spare1-1"]
        spare_group = group.spares.group
        assert lost["node"] not in sim.actor_nodes(dict(zip(spare_group.keys, spare_group.handles))).values()
    finally:
        group.shutdown()
