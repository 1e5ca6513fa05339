"""Extreme multi-label classifiers a student can use: sparse features in, scored labels out.

Two candidates were measured (benchmarks/expand.md) behind this one seam, so the
comparison runs the same featurizer, targets and cut:

- `omikuji` (Parabel/Bonsai label trees with linear nodes, Rust);
- `knn` (the training texts nearest by tf-idf cosine vote with their keyword sets: no
  training at all, numpy only);
- `auto` (the default): knn for up to `KNN_MAX_TEXTS` training texts, omikuji above.

napkinxc 0.7.2 (probabilistic label trees) aborted with heap corruption on its first fit
of a real keyword file, and libpecos 1.2.8 (XR-Linear) pins numpy < 2 and scipy < 1.14 and
requires torch and transformers, which a serving host must not need; neither ships.

Each backend keeps its model in one folder it owns (`save` copies nothing else there).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol
import omikuji
import hashlib
import numpy as np
import json

from cogr_search.generators.students.export import Forest

Row = list[tuple[int, float]]
BACKENDS = ("omikuji", "knn")
DEFAULT_BACKEND = "auto"
KNN_MAX_TEXTS = 5_000
"""`auto` takes knn up to this many training texts, omikuji above: measured
(benchmarks/expand.md), knn was the more faithful and about twice as fast at the CPU runs'
scale (hundreds of texts), but its cost grows with the texts it holds (at 20,000 Home
Depot titles it was no faster than omikuji, whose label trees grow logarithmically)."""


class Classifier(Protocol):
    """A fitted multi-label classifier over `n_features` sparse inputs."""

    name: str

    def predict(self, row: Row, top_k: int) -> list[tuple[int, float]]: ...

    def save(self, folder: Path) -> None: ...

    def export(self) -> dict: ...


def fit(name: str, rows: Sequence[Row], labels: Sequence[Sequence[int]], n_features: int, n_labels: int,
        workdir: Path, threads: int = 0) -> Classifier:
    """Fit backend `name` (`auto`: by the number of rows, see `KNN_MAX_TEXTS`); `workdir`
    is an empty folder the backend may keep files in."""
    if name == "auto":
        name = "knn" if len(rows) <= KNN_MAX_TEXTS else "omikuji"
    if name == "omikuji":
        return OmikujiClassifier.fit(rows, labels, n_features, n_labels, workdir, threads)
    if name == "knn":
        return KnnClassifier(rows, labels)
    raise ValueError(f"student model {name!r}: expected one of {', '.join(BACKENDS)}")


def load(name: str, folder: Path) -> Classifier:
    if name == "omikuji":
        return OmikujiClassifier.load(folder)
    if name == "knn":
        return KnnClassifier.load(folder)
    raise ValueError(f"{folder}: unknown student model {name!r} (expected one of {', '.join(BACKENDS)})")


class OmikujiClassifier:
    """omikuji with Parabel's settings, except smaller leaves for small label sets."""

    name = "omikuji"

    def __init__(self, model: object, forest: Forest) -> None:
        self.model = model  # omikuji's own, for saving its files
        self.forest = forest  # what predicts: the export format's inference (export.py says why)

    @classmethod
    def _with_forest(cls, model: object) -> OmikujiClassifier:
        """The model and its trees read back from omikuji's own files."""
        with tempfile.TemporaryDirectory(prefix="cogr-omikuji-") as scratch:
            with quiet_native_output(None):
                model.save(scratch)  # type: ignore[attr-defined]
            _canonical_tree_order(Path(scratch))
            return cls(model, Forest.from_omikuji(Path(scratch)))

    @classmethod
    def fit(cls, rows: Sequence[Row], labels: Sequence[Sequence[int]], n_features: int, n_labels: int,
            workdir: Path, threads: int) -> OmikujiClassifier:
        # omikuji trains from a file in the Extreme Classification Repository's format
        data = workdir / "train.txt"
        with open(data, "w", encoding="ascii") as out:
            out.write(f"{len(rows)} {n_features} {n_labels}\n")
            for row, row_labels in zip(rows, labels):
                features = " ".join(f"{i}:{w:.6g}" for i, w in row)
                out.write(f"{','.join(map(str, sorted(row_labels)))} {features}\n")
        params = omikuji.Model.default_hyper_param()
        params.n_trees = 3
        params.min_branch_size = 16
        params.cluster_k = 2
        with quiet_native_output(workdir / "train.log"):  # omikuji logs every step at INFO on stderr
            model = omikuji.Model.train_on_data(str(data), params, n_threads=threads or None)
            # dense node weights: predictions 2-3x faster (benchmarks/expand.md); done before
            # saving, so a loaded model is already dense and saves back byte for byte
            model.densify_weights(0.1)
        data.unlink()
        return cls._with_forest(model)

    @classmethod
    def load(cls, folder: Path) -> OmikujiClassifier:
        with quiet_native_output(None):
            model = omikuji.Model.load(str(folder))
        return cls(model, Forest.from_omikuji(folder))

    def predict(self, row: Row, top_k: int) -> list[tuple[int, float]]:
        """The export format's forest inference over omikuji's trees (`export.Forest`):
        omikuji's own `predict` depends on the order a directory lists the trees and on a
        randomly seeded hash map for ties, so the plugin could not repeat it exactly."""
        return self.forest.predict(row, top_k)

    def export(self) -> dict:
        return self.forest.to_json()

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        with quiet_native_output(None):
            self.model.save(str(folder))  # type: ignore[attr-defined]
        _canonical_tree_order(folder)


def _canonical_tree_order(folder: Path) -> None:
    """Name the saved trees `tree<i>.cbor` in the order of their content's sha256.

    omikuji loads a forest's trees in directory order and saves them numbered in memory
    order, so load-then-save permutes the files; a forest is an average over its trees,
    so their order means nothing, and a fixed one makes saving repeatable byte for byte."""
    trees = sorted(folder.glob("tree*.cbor"))
    ordered = sorted(trees, key=lambda p: hashlib.sha256(p.read_bytes()).hexdigest())
    staged = []
    for n, path in enumerate(ordered):
        temporary = folder / f".tree{n}.cbor.tmp"
        os.replace(path, temporary)
        staged.append(temporary)
    for n, temporary in enumerate(staged):
        os.replace(temporary, folder / f"tree{n}.cbor")


class KnnClassifier:
    """The `NEIGHBOURS` training texts most similar to the input (cosine of the L2-normed
    tf-idf rows) vote for their keywords, each with its similarity; a keyword's score is
    its share of the votes. An inverted index (feature -> rows, weights) makes a query
    one `bincount` over the postings of its features."""

    name = "knn"
    NEIGHBOURS = 10

    def __init__(self, rows: Sequence[Row], labels: Sequence[Sequence[int]]) -> None:
        self.rows = [list(r) for r in rows]
        self.labels = [sorted(ls) for ls in labels]
        postings: dict[int, list[tuple[int, float]]] = {}
        for n, row in enumerate(self.rows):
            for feature, weight in row:
                postings.setdefault(feature, []).append((n, weight))
        self.postings = {
            f: (np.asarray([n for n, _ in p], dtype=np.int64), np.asarray([w for _, w in p], dtype=np.float64))
            for f, p in postings.items()
        }

    def predict(self, row: Row, top_k: int) -> list[tuple[int, float]]:
        hits = [(self.postings[f], w) for f, w in row if f in self.postings]
        if not hits:
            return []
        ids = np.concatenate([p[0] for p, _ in hits])
        sims = np.concatenate([p[1] * w for p, w in hits])
        scores = np.bincount(ids, sims, minlength=len(self.rows))
        nearest = np.argsort(-scores, kind="stable")[: self.NEIGHBOURS]
        votes: dict[int, float] = {}
        total = 0.0
        for n in nearest:
            sim = float(scores[n])
            if sim <= 0:
                break
            total += sim
            for label in self.labels[n]:
                votes[label] = votes.get(label, 0.0) + sim
        ranked = sorted(votes.items(), key=lambda lv: (-lv[1], lv[0]))[:top_k]
        return [(label, vote / total) for label, vote in ranked]

    def export(self) -> dict:
        return {"type": "knn", "neighbours": self.NEIGHBOURS, "rows": self.rows, "labels": self.labels}

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "knn.json", "w", encoding="utf-8") as out:
            json.dump({"rows": self.rows, "labels": self.labels}, out, separators=(",", ":"))

    @classmethod
    def load(cls, folder: Path) -> KnnClassifier:
        data = json.loads((folder / "knn.json").read_text(encoding="utf-8"))
        return cls([[(int(f), float(w)) for f, w in row] for row in data["rows"]], data["labels"])


@contextlib.contextmanager
def quiet_native_output(log: Path | None) -> Iterator[None]:
    """Send what native code writes on file descriptors 1 and 2 into `log` (None: nowhere)
    meanwhile: omikuji's Rust logger writes every step at INFO and has no switch."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log or os.devnull, "ab") as sink:
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def scratch_dir(parent: Path | None = None) -> tempfile.TemporaryDirectory:
    """A temporary folder for a backend's training files."""
    return tempfile.TemporaryDirectory(prefix="cogr-student-", dir=parent)
