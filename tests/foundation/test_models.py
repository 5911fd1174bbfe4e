import pytest
import torch

from raystack.config import ConfigError
from raystack.data import BatchStream, ByteTokenizer, stdlib_corpus
from raystack.models import MODEL_NAMES, build_model, count_parameters, lm_loss, model_config


def test_named_sizes_have_the_advertised_parameter_counts():
    assert 0.5e6 < count_parameters(build_model("tiny-1m")) < 1.5e6
    cfg = model_config("tiny-20m")
    assert cfg.vocab_size == ByteTokenizer.vocab_size
    assert set(MODEL_NAMES) >= {"tiny-1m", "tiny-20m", "small-50m"}


def test_same_seed_same_weights_other_seed_other_weights():
    a, b, c = build_model("tiny-1m", seed=1), build_model("tiny-1m", seed=1), build_model("tiny-1m", seed=2)
    pa, pb, pc = (next(m.parameters()) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown model 'gpt-9'"):
        build_model("gpt-9")


def test_checkpoint_directory_roundtrip(tmp_path):
    model = build_model("tiny-1m", seed=3)
    model.save_pretrained(tmp_path)
    loaded = build_model(str(tmp_path))
    x = torch.randint(0, 256, (2, 16))
    torch.testing.assert_close(model(input_ids=x).logits, loaded(input_ids=x).logits)
    (tmp_path / "config.json").unlink()
    with pytest.raises(ConfigError, match="no config.json"):
        build_model(str(tmp_path))


def test_a_few_steps_on_the_corpus_lower_the_loss():
    torch.manual_seed(0)
    model = build_model("tiny-1m")
    stream = BatchStream(stdlib_corpus(max_bytes=300_000).train, batch_size=8, seq_len=64, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    fixed = stream.next_batch()
    first = lm_loss(model, fixed).item()
    for _ in range(15):
        loss = lm_loss(model, stream.next_batch())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert lm_loss(model, fixed).item() < first - 0.5
