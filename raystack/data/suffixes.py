"""The file types the data readers take (no torch here: the planner and the preflight checks
name them without loading the readers)."""

TEXT_SUFFIXES = {".txt", ".md", ".py", ".rst"}
# files of records (a JSON list of objects, one object a line, a Parquet table): a fine-tuning's
# datasets, and a corpus's documents (the record's text field)
RECORD_SUFFIXES = (".json", ".jsonl", ".parquet")
# what a pretraining corpus is read from
DATA_SUFFIXES = TEXT_SUFFIXES | set(RECORD_SUFFIXES)
