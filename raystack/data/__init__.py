"""Data: byte-level corpora, file readers and batch streams."""
from raystack.data.corpus import BatchStream, Corpus, corpus_from_files, read_documents, stdlib_corpus
from raystack.data.tokenizer import ByteTokenizer

__all__ = ["BatchStream", "ByteTokenizer", "Corpus", "corpus_from_files", "read_documents", "stdlib_corpus"]
