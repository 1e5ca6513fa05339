"""Fitting one side's student to teacher keyword sets, and choosing its cut.

The cut (how many keywords, above which score) is chosen on a seeded fifth of the
training texts held out from a first fit, by the mean set F1 of the student's keywords
against the teacher's; the student is then refitted on all training texts with that
cut. Evaluation queries are never seen: they are not in the texts passed here.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.generators.students import backends
from cogr_search.generators.students.featurizer import Featurizer
from cogr_search.generators.students.model import Cut, SideStudent
from cogr_search.keywords import keyword_set, term

THRESHOLDS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6)
DEV_FRACTION = 0.2
MIN_DEV = 10
MIN_DF = 2
MAX_FEATURES = 100_000
"""n-grams seen in one text only, and past the 100,000 most frequent, are dropped: on Home
Depot's 54,667 titles that is 242k -> 100k n-grams, and featurizing ran about twice as
fast (benchmarks/expand.md)."""
"""Below this many held-out texts a tuned cut is noise: keep the teacher's median set size."""


@dataclass
class FitReport:
    side: str
    texts: int
    vocabulary: int
    cut: Cut
    dev_texts: int
    dev_f1: float | None
    seconds: float
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"side": self.side, "texts": self.texts, "vocabulary": self.vocabulary, "top_k": self.cut.top_k,
                "threshold": self.cut.threshold, "copy_min_words": self.cut.copy_min_words, "dev_texts": self.dev_texts,
                "dev_f1": None if self.dev_f1 is None else round(self.dev_f1, 4), "fit_s": round(self.seconds, 2),
                **self.extra}


def set_f1(predicted: Sequence[str], target: Sequence[str]) -> float:
    if not predicted and not target:
        return 1.0
    hits = len(set(predicted) & set(target))
    return 0.0 if hits == 0 else 2 * hits / (len(set(predicted)) + len(set(target)))


def clean_targets(texts: Sequence[str], targets: Sequence[Sequence[str]], k_max: int) -> list[list[str]]:
    """Teacher sets in the run's normal form, cut to k_max as served, without the text's
    own form (the consumer adds it; as a label it would only teach copying)."""
    out = []
    for text, keywords in zip(texts, targets):
        own = term(text)
        out.append([k for k in keyword_set(keywords)[:k_max] if k != own])
    return out


def _fit_classifier(backend: str, featurizer: Featurizer, texts: Sequence[str], targets: Sequence[list[str]],
                    labels: dict[str, int], workdir: Path, threads: int) -> backends.Classifier:
    rows, row_labels = [], []
    for text, target in zip(texts, targets):
        ids = [labels[k] for k in target if k in labels]
        vector = featurizer.vector(text)
        if ids and vector:
            rows.append(vector)
            row_labels.append(ids)
    return backends.fit(backend, rows, row_labels, featurizer.size, len(labels), workdir, threads)


Objective = Callable[[Sequence[int], list[list[str]]], float]
"""Scores the keyword sets a cut gives the held-out texts (by their positions in the
`ids` passed to `fit_side`): higher is better."""

TOP_KS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30)


COPY_MIN_WORDS = (0, 1, 2, 3)
"""Copy settings tried: none, or the text's n-grams of at least 1, 2 or 3 words."""


def tune_cut(scored: Sequence[Sequence[tuple[str, float]]], targets: Sequence[Sequence[str]], k_max: int,
             objective: Callable[[list[list[str]]], float] | None = None,
             copies: Callable[[int], list[list[str]]] | None = None) -> tuple[Cut, float]:
    """The (copy_min_words, top_k, threshold) with the best objective (default: mean set
    F1 against the teacher's sets); ties go to no copying and fewer keywords. `copies(m)`
    gives each held-out text's copied n-grams of at least m words."""
    if objective is None:
        def objective(sets: list[list[str]]) -> float:
            return sum(set_f1(s, t) for s, t in zip(sets, targets)) / max(1, len(targets))
    best, best_score = Cut(1, 0.0), -1.0
    for min_words in COPY_MIN_WORDS if copies is not None else (0,):
        prefixes = copies(min_words) if min_words else [[] for _ in scored]
        for top_k in sorted({min(k, k_max) for k in TOP_KS}):
            for threshold in THRESHOLDS:
                cut = Cut(top_k, threshold, min_words)
                sets = [list(dict.fromkeys([*p, *cut.apply(s)]))[:k_max] for p, s in zip(prefixes, scored)]
                score = objective(sets)
                if score > best_score + 1e-12:
                    best, best_score = cut, score
    return best, best_score


def fit_side(side: str, texts: Sequence[str], targets: Sequence[Sequence[str]], k_max: int, *,
             backend: str = backends.DEFAULT_BACKEND, seed: int = 0, threads: int = 0,
             featurizer_texts: Sequence[str] | None = None, cut: Cut | None = None,
             objective: Objective | None = None, copy_vocabulary: Sequence[str] = ()) -> tuple[SideStudent, FitReport]:
    """A student of `side` mapping `texts[i]` to `targets[i]` (teacher keyword sets).

    `featurizer_texts` (default: `texts`) are the texts whose n-grams and idf the
    featurizer learns: unlabelled texts of the same side may join (an item student
    learns the whole catalog's n-grams). `cut` skips the tuning; `objective` replaces
    the set F1 the cut is tuned by (the query side's: retrieval F1 of the held-out
    training queries against the round's item index). `copy_vocabulary`: the run's
    keywords a text's own n-grams may be copied from (`SideStudent.copies`); whether and
    from how many words on is tuned with the cut."""
    started = time.perf_counter()
    given = len(texts)
    targets = clean_targets(texts, targets, k_max)
    keep = [i for i, t in enumerate(targets) if t]
    texts = [texts[i] for i in keep]
    targets = [targets[i] for i in keep]
    if not texts:
        raise ValueError(f"{side} student: no training text has teacher keywords")
    featurizer = Featurizer.fit(featurizer_texts if featurizer_texts is not None else texts, min_df=MIN_DF,
                                max_features=MAX_FEATURES)
    labels = {k: i for i, k in enumerate(sorted({k for t in targets for k in t}))}
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    n_dev = round(len(texts) * DEV_FRACTION)
    dev_f1 = None
    with backends.scratch_dir() as scratch:
        if cut is None and n_dev >= MIN_DEV:
            dev, train = order[:n_dev], order[n_dev:]
            dev_dir = Path(scratch) / "dev"
            dev_dir.mkdir()
            first = _fit_classifier(backend, featurizer, [texts[i] for i in train], [targets[i] for i in train],
                                    labels, dev_dir, threads)
            probe = SideStudent(side, featurizer, sorted(labels, key=labels.get), first, Cut(k_max, 0.0), k_max,
                                copy_vocabulary)
            scored = [probe.scored(texts[i], k_max) for i in dev]
            positions = [keep[i] for i in dev]
            bound = None if objective is None else (lambda sets: objective(positions, sets))
            copies = (lambda m: [probe.copies(texts[i], m) for i in dev]) if copy_vocabulary else None
            cut, dev_f1 = tune_cut(scored, [targets[i] for i in dev], k_max, bound, copies)
        elif cut is None:
            sizes = sorted(len(t) for t in targets)
            cut = Cut(max(1, min(k_max, sizes[len(sizes) // 2])), 0.0)
        final_dir = Path(scratch) / "final"
        final_dir.mkdir()
        classifier = _fit_classifier(backend, featurizer, texts, targets, labels, final_dir, threads)
        student = SideStudent(side, featurizer, sorted(labels, key=labels.get), classifier, cut, k_max,
                              copy_vocabulary if cut.copy_min_words else ())
    report = FitReport(side, len(texts), len(labels), cut, n_dev if dev_f1 is not None else 0, dev_f1,
                       time.perf_counter() - started, {"given": given})
    return student, report
