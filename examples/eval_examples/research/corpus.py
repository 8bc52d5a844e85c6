"""The research agent's document corpus and its BM25 search tool (bm25s)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import bm25s
from langchain_core.tools import BaseTool, tool

TOP_K = 2


@dataclass(frozen=True)
class Document:
    doc_id: str
    title: str
    text: str


class Corpus:
    def __init__(self, documents: list[Document]):
        self.documents = documents
        self.retriever = bm25s.BM25()
        tokens = bm25s.tokenize(
            [f"{d.title}. {d.text}" for d in documents], stopwords="en", show_progress=False
        )
        self.retriever.index(tokens, show_progress=False)

    def search(self, query: str, k: int = TOP_K) -> list[Document]:
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:  # nothing searchable in the query
            return []
        hits, scores = self.retriever.retrieve(
            tokens, k=min(k, len(self.documents)), show_progress=False
        )
        return [self.documents[int(i)] for i, s in zip(hits[0], scores[0], strict=True) if s > 0]


@cache
def load_corpus(path: Path) -> Corpus:
    with Path(path).open(encoding="utf-8") as handle:
        docs = [Document(**json.loads(line)) for line in handle if line.strip()]
    return Corpus(docs)


def search_tool(corpus: Corpus) -> BaseTool:
    @tool
    def search(query: str) -> str:
        """Search the document collection; returns the best matching documents."""
        return json.dumps([{"title": d.title, "text": d.text} for d in corpus.search(query)])

    return search
