"""Model factory: transformers Llama-family models by name or local checkpoint."""
from raystack.models.llama import MODEL_NAMES, build_model, count_parameters, lm_loss, model_config

__all__ = ["MODEL_NAMES", "build_model", "count_parameters", "lm_loss", "model_config"]
