"""What ``bimine docs match`` is asked to do: the method and its settings
(:class:`DocMatchConfig`) and the whole job (:class:`DocsMatchJob`), the object the command
builds, ``bimine run`` reads from YAML, and :func:`bimine.documents.job.run_docs_match` and
:func:`bimine.documents.pipeline.match_documents` run."""

from __future__ import annotations

from dataclasses import dataclass, field

from bimine.config import bounds, check_fields
from bimine.documents.match import Eq3Config
from bimine.encoders.user import hold_model
from bimine.errors import ConfigError

METHODS = ("eq3", "counts", "embedding", "two-stage")


@dataclass(frozen=True)
class DocMatchConfig:
    method: str = "eq3"
    eq3: Eq3Config = field(default_factory=Eq3Config)
    top: int = field(default=1, metadata=bounds(min=1))  #: target documents written per source document
    one_to_one: bool = False
    candidates: int = field(default=20, metadata=bounds(min=1))  #: two-stage: target documents proposed per source document
    index: str = "auto"  #: FAISS factory of the sentence kNN

    def __post_init__(self) -> None:
        check_fields(self)
        if self.method not in METHODS:
            raise ConfigError(f"unknown method {self.method!r}; methods: {', '.join(METHODS)}")



@dataclass
class DocsMatchJob:
    """Which document of ``tgt`` translates each document of ``src`` (collections: JSONL, TSV
    ``doc_id<TAB>sentence`` or a folder of text files; ``src_format`` / ``tgt_format`` or
    ``auto``). ``match``: the method and its settings
    (:class:`DocMatchConfig`); ``splitter``: the sentence splitter
    of raw text (``None``: the default); ``calibration``: a confidence head instead of the
    model's own (``eq3`` and ``two-stage``); ``work_dir``: keep and reuse the sentence files
    and embeddings."""

    src: str
    tgt: str
    output: str
    src_lang: str | None = None
    tgt_lang: str | None = None
    model: str = "default"
    match: DocMatchConfig = field(default_factory=DocMatchConfig)
    src_format: str = "auto"
    tgt_format: str = "auto"
    splitter: str | None = None
    calibration: str | None = None
    work_dir: str | None = None
    encoding_errors: str = "strict"
    progress: bool = True
    wait: bool = True  # a work folder (or store) another run is using: wait for it; False refuses

    def __post_init__(self) -> None:
        hold_model(self)  # an encoder object given in Python: its name, the object kept
        check_fields(self)

