"""Sharded float16 embedding stores with a manifest, resumable shard by shard."""

from bimine.store.store import EmbeddingStore, build_store

__all__ = ["EmbeddingStore", "build_store"]
