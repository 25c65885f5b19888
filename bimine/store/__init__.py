"""Sharded float16 embedding stores with a manifest, resumable shard by shard."""

from bimine.store.store import EmbeddingStore, EmbedRun, build_store

__all__ = ["EmbedRun", "EmbeddingStore", "build_store"]
