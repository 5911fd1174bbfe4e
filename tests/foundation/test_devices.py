import pytest

from raystack.devices import CPU, DevicePlan, plan_devices


def test_auto_without_gpus_stays_on_cpu():
    assert plan_devices("auto", 2, 0) == CPU
    assert plan_devices("auto", 2, 0.5) == CPU  # a fraction of a GPU in the cluster is not one
    assert plan_devices("cpu", 4, 8) == CPU


def test_a_gpu_per_actor_uses_nccl():
    assert plan_devices("auto", 2, 2) == DevicePlan("cuda", 1.0, "nccl")
    assert plan_devices("cuda", 4, 8) == DevicePlan("cuda", 1.0, "nccl")


def test_fewer_gpus_than_actors_share_evenly_over_gloo():
    p = plan_devices("auto", 2, 1)
    assert p == DevicePlan("cuda", 0.5, "gloo")
    # 3 actors on 2 GPUs: halves pack (2 + 1), while 2/3 each would leave the third unplaced
    p = plan_devices("auto", 3, 2)
    assert p.gpus_per_actor == 0.5 and p.backend == "gloo"
    assert plan_devices("auto", 3, 1).gpus_per_actor == pytest.approx(1 / 3, abs=1e-4)


def test_cuda_without_gpus_and_bad_values_name_the_problem():
    with pytest.raises(ValueError, match="device: cuda, but the cluster has 0 GPUs"):
        plan_devices("cuda", 2, 0)
    with pytest.raises(ValueError, match="device must be"):
        plan_devices("gpu", 2, 1)
