import pytest
import ray

from raystack import metrics


def test_local_values_without_ray():
    c = metrics.counter("test_local_total", "a test counter", tag_keys=("part",))
    c.inc(2, tags={"part": "a"})
    c.inc(3, tags={"part": "b"})
    assert c.value == 5 and c.values[(("part", "a"),)] == 2
    assert metrics.counter("test_local_total", "again") is c
    g = metrics.gauge("test_local_gauge", "a gauge")
    g.set(4)
    g.set(7)
    assert g.value == 7
    h = metrics.histogram("test_local_hist", "a histogram", boundaries=[1, 10])
    h.observe(0.5)
    h.observe(5)
    assert h.count == 2 and h.value == 5.5
    with pytest.raises(ValueError, match="unknown tag keys"):
        c.inc(1, tags={"node": "x"})
    with pytest.raises(ValueError, match="only go up"):
        c.inc(-1)
    with pytest.raises(ValueError, match="already registered"):
        metrics.gauge("test_local_total", "clash")


@pytest.mark.cluster
def test_metrics_record_inside_a_ray_actor(ray_cluster):
    @ray.remote(num_cpus=0.1)
    def record():
        from raystack import metrics as m
        c = m.counter("test_actor_total", "counted in a task")
        c.inc(3)
        return c.value, c._ray is not None

    value, recorded_to_ray = ray.get(record.remote())
    assert value == 3 and recorded_to_ray


@pytest.mark.cluster
def test_metrics_reach_the_prometheus_endpoint(ray_cluster):
    import time

    from raystack.cluster import scrape_metrics

    @ray.remote(num_cpus=0.1)
    class Recorder:
        def record(self):
            from raystack import metrics as m
            m.counter("test_scrape_total", "scraped in a test").inc(5)
            m.gauge("test_scrape_gauge", "scraped in a test").set(2.5)

    rec = Recorder.remote()
    ray.get(rec.record.remote())
    deadline, seen = time.time() + 60, {}
    while time.time() < deadline:
        seen = scrape_metrics()
        if "ray_raystack_test_scrape_total" in seen and "ray_raystack_test_scrape_gauge" in seen:
            break
        time.sleep(2)
    assert seen.get("ray_raystack_test_scrape_total") == 5
    assert seen.get("ray_raystack_test_scrape_gauge") == 2.5
    ray.kill(rec)
