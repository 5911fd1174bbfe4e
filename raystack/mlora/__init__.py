"""mLoRA: many LoRA/DoRA adapters fine-tuned at once on one frozen base, pipelined."""
