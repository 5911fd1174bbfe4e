"""Models: built-in tiny Llamas, or any local / Hub causal LM, with its tokenizer and layout."""
from raystack.models.llama import MODEL_NAMES, count_parameters, lm_loss, model_config
from raystack.models.load import ModelSource, build_model, load_model_config, meta_model, resolve_model

__all__ = ["MODEL_NAMES", "ModelSource", "build_model", "count_parameters", "lm_loss", "load_model_config",
           "meta_model", "model_config", "resolve_model"]
