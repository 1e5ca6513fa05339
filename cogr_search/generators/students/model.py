"""One side's student: a text to a keyword set drawn from a fixed keyword vocabulary.

Non-autoregressive (R4T's distillation, section "non-autoregressive set generator"): a
multi-label classifier scores every keyword of the vocabulary at once, and the set is the
keywords above a score threshold, at most `top_k` of them. Both numbers are chosen on
held-out training texts (`distill.tune_cut`), never on evaluation queries.

Sets come out in the run's normal form (the vocabulary is made of `keywords.term`
output), without the text's own form: as with the LLM generators (serve/app.py's
contract), whoever builds a query or a document adds it
(`keywords.representation(S, text)`), so it is always in the matched set.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cogr_search.atomic import atomic_open
from cogr_search.generators.students import backends, export
from cogr_search.generators.students.featurizer import Featurizer
from cogr_search.keywords import NORMALIZATION_VERSION, term

ITEM_DESCRIPTION_CHARS = 300
"""Characters of an item's description its student reads after the title: the title
carries most of what the item's keywords say, and long descriptions only cost time."""


def item_text(title: str, description: str | None) -> str:
    """What an item student featurizes."""
    return f"{title} {(description or '')[:ITEM_DESCRIPTION_CHARS]}".strip()


@dataclass(frozen=True)
class Cut:
    """How many keywords to keep: those scoring >= `threshold`, at most `top_k`; and
    whether the text's own word n-grams of at least `copy_min_words` words that are
    keywords of the run (its copy vocabulary) join them (0: none do)."""

    top_k: int
    threshold: float
    copy_min_words: int = 0

    def apply(self, scored: Sequence[tuple[str, float]]) -> list[str]:
        return [k for k, s in scored[: self.top_k] if s >= self.threshold]


class SideStudent:
    """A fitted student of one side (`query` or `item`)."""

    def __init__(self, side: str, featurizer: Featurizer, labels: Sequence[str], classifier: backends.Classifier,
                 cut: Cut, k_max: int, copy_vocabulary: Sequence[str] = ()) -> None:
        self.side = side
        self.featurizer = featurizer
        self.labels = list(labels)
        self.classifier = classifier
        self.cut = cut
        self.k_max = k_max
        self.copy_vocabulary = sorted(set(copy_vocabulary))
        self._copyable = frozenset(self.copy_vocabulary)

    def copies(self, text: str, min_words: int | None = None) -> list[str]:
        """The text's word n-grams (longest first, then left to right) of at least
        `min_words` words that are keywords of the run, without the text's own form.

        Why: an LLM teacher's keywords for a new query are mostly phrases of the query
        itself ("10 in nonstick frying pan" -> "nonstick frying pan", "frying pan"), which
        a classifier over a fixed vocabulary only finds when training queries had them."""
        min_words = self.cut.copy_min_words if min_words is None else min_words
        if min_words <= 0 or not self._copyable:
            return []
        own = term(text)
        words = own.split(" ")
        found = []
        for n in range(len(words) - 1, min_words - 1, -1):
            for start in range(len(words) - n + 1):
                gram = " ".join(words[start : start + n])
                if gram in self._copyable:
                    found.append(gram)
        return found
    def scored(self, text: str, top_k: int | None = None) -> list[tuple[str, float]]:
        """Vocabulary keywords with their scores, best first, without the text's own form."""
        own = term(text)
        k = (top_k or self.cut.top_k) + 1  # one spare: the text's own form may be among them
        found = self.classifier.predict(self.featurizer.vector(text), k)
        labels = self.labels
        return [(labels[i], float(s)) for i, s in found if labels[i] != own][: k - 1]

    def keywords(self, text: str) -> list[str]:
        """The keyword set S for `text`: its copied n-grams, then the classifier's
        keywords within the cut, de-duplicated, at most the run's `k_max`."""
        merged = dict.fromkeys(self.copies(text))
        merged.update(dict.fromkeys(self.cut.apply(self.scored(text))))
        return list(merged)[: self.k_max]

    # -- files -----------------------------------------------------------------------
    def save(self, folder: Path) -> dict:
        """Write the student into `folder` (new or empty); returns its manifest entry."""
        folder.mkdir(parents=True, exist_ok=True)
        _write_json(folder / "featurizer.json", self.featurizer.to_json())
        _write_json(folder / "labels.json", self.labels)
        _write_json(folder / "copy.json", self.copy_vocabulary)
        self.classifier.save(folder / "model")
        export.write_export(folder / export.EXPORT_NAME, self.export())
        return self.describe()

    def export(self) -> dict:
        """This student in the export format (export.py), for the plugin."""
        cut = {"top_k": self.cut.top_k, "threshold": self.cut.threshold, "copy_min_words": self.cut.copy_min_words}
        return export.export_json(self.side, self.featurizer.to_json(), self.labels, cut, self.k_max,
                                  self.copy_vocabulary, self.classifier.export(), NORMALIZATION_VERSION)

    def describe(self) -> dict:
        return {"side": self.side, "model": self.classifier.name, "vocabulary": len(self.labels),
                "features": self.featurizer.size, "top_k": self.cut.top_k, "threshold": self.cut.threshold,
                "copy_min_words": self.cut.copy_min_words, "copy_vocabulary": len(self.copy_vocabulary),
                "k_max": self.k_max}

    @classmethod
    def from_export(cls, data: dict) -> SideStudent:
        """A student read back from its export (export.py): what the plugin reads, as Python
        reads it, so the shared fixtures can be checked on both sides."""
        classifier_json = data["classifier"]
        if classifier_json["type"] == "knn":
            classifier = backends.KnnClassifier([[(int(f), float(w)) for f, w in row] for row in classifier_json["rows"]],
                                                classifier_json["labels"])
        else:
            classifier = export.Forest.from_json(classifier_json)
        featurizer = Featurizer(data["featurizer"]["ngrams"], data["featurizer"]["idf"])
        cut = Cut(int(data["cut"]["top_k"]), float(data["cut"]["threshold"]), int(data["cut"]["copy_min_words"]))
        return cls(str(data["side"]), featurizer, data["labels"], classifier, cut, int(data["k_max"]),
                   data["copy_vocabulary"])

    @classmethod
    def load(cls, folder: Path, entry: dict) -> SideStudent:
        where = str(folder)
        try:
            featurizer = Featurizer.from_json(_read_json(folder / "featurizer.json"), f"{where}/featurizer.json")
            labels = _read_json(folder / "labels.json")
            classifier = backends.load(str(entry["model"]), folder / "model")
            cut = Cut(int(entry["top_k"]), float(entry["threshold"]), int(entry["copy_min_words"]))
            copyable = _read_json(folder / "copy.json")
            return cls(str(entry["side"]), featurizer, labels, classifier, cut, int(entry["k_max"]), copyable)
        except KeyError as err:
            raise ValueError(f"{where}: the students manifest lacks field {err.args[0]!r}") from None


def _write_json(path: Path, payload: object) -> None:
    with atomic_open(path) as out:
        json.dump(payload, out, ensure_ascii=False, separators=(",", ":"))
        out.write("\n")


def _read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))
