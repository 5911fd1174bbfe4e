"""The file types a pretraining corpus is read from (no torch here: the planner and the
preflight checks name them without loading the readers)."""

TEXT_SUFFIXES = {".txt", ".md", ".py", ".rst"}
DATA_SUFFIXES = TEXT_SUFFIXES | {".jsonl", ".json", ".parquet"}
