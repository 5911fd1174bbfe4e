"""EDiT / A-EDiT: local-SGD pretraining with layer-wise, sharded, penalised synchronisation.

Pure library code: the sync triggers, the pseudo-gradient penalty, the outer optimizer, the
shard layout, the layer-wise sync hooks and the per-rank training step. The Ray actors that
run it live in ``actors/edit.py``.
"""
