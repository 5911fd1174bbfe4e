"""Data: corpora, file readers, tokenizers, token shards and batch streams."""
from raystack.data.corpus import BatchStream, Corpus, corpus_from_files, iter_documents, read_documents, stdlib_corpus
from raystack.data.tokenizer import ByteTokenizer, byte_level_tokenizer, train_tokenizer

__all__ = ["BatchStream", "ByteTokenizer", "Corpus", "byte_level_tokenizer", "corpus_from_files", "iter_documents",
           "read_documents", "stdlib_corpus", "train_tokenizer"]
