"""The students' export format: one JSON file per side that a second reader (the
OpenSearch plugin, `plugins/cogr-plugin`, in Java) loads to expand exactly as Python does.

Why an own format rather than omikuji's files: omikuji's trees (`tree<i>.cbor`, serde's
layout of its Rust enums) could be read in Java, but its predictions are not a function of
the files alone: it sums a label's scores over the trees in the order the directory lists
them, keeps the beam with an unstable selection and ranks labels tied in score in the
order of a randomly seeded hash map, all in float32 with the platform's `expf`. A second
reader could only agree with it most of the time. So the export holds the trees' weights,
and *this module* defines the inference (`Forest.predict`: omikuji's beam search and
scores, in IEEE double, sequential sums, ties broken by position and label index, and an
`exp` made of + - * / only); the Python students predict with it too, so `sync`, the
Python API and the plugin run one definition. The knn vote and the featurizer were
already plain double arithmetic in a fixed order; the Java port repeats that order.

File: `<students>/<side>/cogr-student-v1.json` (`EXPORT_NAME`), written by `SideStudent.save`
(`train distill`, `--refine`) and covered by the side's digest. Fields
(docs/students.md#export-format):

- `format` "cogr-student", `version` 1, `side`, `normalization` (keywords.NORMALIZATION_VERSION);
- `featurizer`: `char_ngrams` [3,4,5], `ngrams` (sorted), `idf`;
- `labels`: the keyword vocabulary (normal form);
- `cut`: `top_k`, `threshold`, `copy_min_words`; `k_max`; `copy_vocabulary` (sorted);
- `classifier`: `{"type": "knn", "neighbours": 10, "rows": [[[feature, weight], ...], ...],
  "labels": [[label, ...], ...]}` or `{"type": "forest", "loss": "hinge", "n_features": N,
  "trees": [node, ...]}` with node `{"columns": [[[feature, weight], ...], ...],
  "children": [node, ...]}` (a branch) or `{"columns": ..., "labels": [label, ...]}` (a
  leaf); a column lists a child's or label's non-zero weights by feature, the bias as
  feature N.

Floats are JSON numbers in Python's shortest round-trip form, so both readers get the same
doubles.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cogr_search.atomic import atomic_open
import cbor2

FORMAT = "cogr-student"
VERSION = 1
EXPORT_NAME = f"{FORMAT}-v{VERSION}.json"

Row = list[tuple[int, float]]

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00


def exp_v1(x: float) -> float:
    """e**x for the forest's scores (x <= 0), from + - * / and a power of two only, so that
    any IEEE-754 double arithmetic (Java's `CogrMath.exp`) gives the same bits; within an
    ulp or two of `math.exp`. Range reduction x = k ln2 + r, |r| <= ln2/2, then Taylor to
    degree 13 by Horner (error below 1e-17 on that range)."""
    if x < -700.0:
        return 0.0
    if x > 700.0:
        return math.inf
    k = math.floor(x * _INV_LN2 + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = 1.0
    for n in range(13, 0, -1):
        p = 1.0 + r * p / n
    return math.ldexp(p, k)


def _exp_v1_array(x: np.ndarray) -> np.ndarray:
    """`exp_v1` of each element, the same operations elementwise (numpy adds no fused
    multiply-add between separate ufuncs), so the same bits: one pass instead of a
    Python call per label, which was a third of a forest prediction."""
    k = np.floor(x * _INV_LN2 + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = np.ones_like(x)
    for n in range(13, 0, -1):
        p = 1.0 + r * p / float(n)
    out = np.ldexp(p, np.clip(k, -1100, 1100).astype(np.int32))
    out[x < -700.0] = 0.0
    out[x > 700.0] = np.inf
    return out


def hinge_score(s: float) -> float:
    """omikuji's score of a hinge-loss classifier: -(max(0, 1 - s))^2."""
    m = 1.0 - s
    if m < 0.0:
        return 0.0
    return -(m * m)


class Forest:
    """omikuji's label trees as plain arrays; `predict` is the format's inference.

    A node's `columns[c]` is the sparse weight column of child (or label) c as two
    lists, features ascending and weights. The dot product with the input row runs over
    the row's features in ascending order (the bias, feature `n_features`, last) and adds
    in that order: the order Java repeats."""

    name = "omikuji"

    def __init__(self, n_features: int, trees: list[dict]) -> None:
        self.n_features = n_features
        self.trees = trees
        (self._roots, self._features, self._indptr, self._columns, self._weights,
         self._n_columns) = _compile(trees)

    # -- from omikuji's files ----------------------------------------------------------
    @classmethod
    def from_omikuji(cls, folder: Path) -> Forest:
        """The trees saved by omikuji (`settings.json`, `tree<i>.cbor`, in file-name
        order: `backends._canonical_tree_order` made it the content's order)."""
        settings = json.loads((folder / "settings.json").read_text(encoding="utf-8"))
        if settings.get("classifier_loss_type") != "Hinge":
            raise ValueError(f"{folder}/settings.json: loss {settings.get('classifier_loss_type')!r}: "
                             "the export supports omikuji's default, Hinge")
        n_features = int(settings["n_features"])
        paths = sorted(folder.glob("tree*.cbor"), key=lambda p: int(p.stem[4:]))
        trees = []
        for path in paths:
            with open(path, "rb") as handle:
                trees.append(_convert(cbor2.load(handle), n_features, path))
        if not trees:
            raise ValueError(f"{folder}: no omikuji trees (tree<i>.cbor)")
        return cls(n_features, trees)

    def export(self) -> dict:
        return self.to_json()

    def to_json(self) -> dict:
        return {"type": "forest", "loss": "hinge", "n_features": self.n_features, "trees": self.trees}

    @classmethod
    def from_json(cls, data: dict) -> Forest:
        return cls(int(data["n_features"]), data["trees"])

    # -- inference ---------------------------------------------------------------------
    def predict(self, row: Row, top_k: int) -> list[tuple[int, float]]:
        """The `top_k` labels by the trees' mean score, ties by label index; the beam is
        max(10, top_k), as the students always asked of omikuji."""
        if not row:
            return []
        beam = max(10, top_k)
        scores = self._column_scores(row)
        levels = [_beam_leaves(tree, scores, beam) for tree in self._roots]
        # each kept leaf's labels score exp(score + leaf's score), all exps in one pass
        exps = _exp_v1_array(np.array([scores[base + c] + score for level in levels
                                       for score, (base, _, labels) in level for c in range(len(labels))],
                                      dtype=np.float64)).tolist()
        totals: dict[int, float] = {}
        at = 0
        for level in levels:  # trees, leaves and labels in order: the sums' order
            for _, (_, _, labels) in level:
                scored = zip(exps[at:at + len(labels)], labels)
                at += len(labels)
                if len(labels) > beam:  # the leaf's `beam` best, ties by label index
                    scored = [(-negative, label) for negative, label in
                              sorted([(-score, label) for score, label in scored])[:beam]]
                for score, label in scored:
                    totals[label] = totals.get(label, 0.0) + score
        n = float(len(self._roots))
        ranked = sorted(((label, total / n) for label, total in totals.items()), key=lambda ls: (-ls[1], ls[0]))
        return ranked[:top_k]

    def _column_scores(self, row: Row) -> list[float]:
        """Every column's hinge score for `row` (features ascending, the bias appended).

        All columns at once, in a few numpy passes instead of a dict lookup per weight
        (6 ms a text in the item student's trees): most of a text's time was per-weight
        interpreter work. The bits are the sequential definition's: the products v * w,
        each a single IEEE multiply, are gathered feature by feature in ascending order,
        and `np.bincount` adds each column's in that order into a 0.0 start, one double
        add at a time; 1 - s and -(m * m) are single operations too. Scoring columns the
        beam never visits costs less than finding out which those are."""
        if not len(self._features):
            return [hinge_score(0.0)] * self._n_columns
        features = np.array([f for f, _ in row] + [self.n_features], dtype=np.int64)
        values = np.array([w for _, w in row] + [1.0], dtype=np.float64)
        pos = np.searchsorted(self._features, features)
        np.minimum(pos, len(self._features) - 1, out=pos)
        hit = self._features[pos] == features
        pos, values = pos[hit], values[hit]
        starts = self._indptr[pos]
        lengths = self._indptr[pos + 1] - starts
        ends = np.cumsum(lengths)
        # the concatenated ranges starts[i] .. starts[i] + lengths[i], in row order
        at = np.repeat(starts - ends + lengths, lengths) + np.arange(ends[-1] if len(ends) else 0)
        products = np.repeat(values, lengths) * self._weights[at]
        sums = np.bincount(self._columns[at], weights=products, minlength=self._n_columns)
        margin = 1.0 - sums
        return np.where(margin < 0.0, 0.0, -(margin * margin)).tolist()


def _convert(node: dict, n_features: int, where: Path) -> dict:
    """One serde-encoded omikuji `TreeNode` into the export's node."""
    (kind, body), = node.items()
    columns = _columns(body["weights"], n_features, where)
    if kind == "Branch":
        return {"columns": columns, "children": [_convert(child, n_features, where) for child in body["children"]]}
    if kind == "Leaf":
        return {"columns": columns, "labels": [int(label) for label in body["labels"]]}
    raise ValueError(f"{where}: unknown omikuji tree node {kind!r}")


def _columns(weights: dict, n_features: int, where: Path) -> list[list[list]]:
    """A `WeightMat` ((n_features + 1) x columns, dense or sparse) as sparse columns."""
    (kind, mat), = weights.items()
    if kind == "Dense":
        rows, cols = mat["dim"]
        data = mat["data"]
        if rows != n_features + 1 or len(data) != rows * cols:
            raise ValueError(f"{where}: dense weights of shape {mat['dim']} (expected {n_features + 1} rows)")
        return [[[f, float(data[f * cols + c])] for f in range(rows) if data[f * cols + c] != 0.0] for c in range(cols)]
    if kind == "Sparse":
        # omikuji's LilMat: outer = features (rows), inner = columns
        cols = int(mat["inner_dim"])
        out: list[list[list]] = [[] for _ in range(cols)]
        indptr, outer, inner, data = mat["indptr"], mat["outer_inds"], mat["inner_inds"], mat["data"]
        for n, feature in enumerate(outer):
            for k in range(indptr[n], indptr[n + 1]):
                if data[k] != 0.0:
                    out[inner[k]].append([int(feature), float(data[k])])
        for column in out:
            column.sort(key=lambda fw: fw[0])
        return out
    raise ValueError(f"{where}: unknown omikuji weight matrix {kind!r}")


def _compile(trees: list[dict]) -> tuple[list[tuple], np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The trees for fast inference: every column of every node numbered (`base` + c per
    node), and all weights in one feature-major table (`features` ascending and unique,
    `indptr` into `columns`/`weights`), so that one pass over the input row scores every
    column of the forest (`_column_scores`). Returns (roots, features, indptr, columns,
    weights, number of columns); a node is (base, children or None, labels or None)."""
    entries: list[tuple[int, int, float]] = []
    count = 0

    def walk(node: dict) -> tuple:
        nonlocal count
        base = count
        count += len(node["columns"])
        for c, column in enumerate(node["columns"]):
            entries.extend((int(f), base + c, float(w)) for f, w in column)
        if "children" in node:
            return (base, [walk(child) for child in node["children"]], None)
        return (base, None, [int(label) for label in node["labels"]])

    roots = [walk(tree) for tree in trees]
    # feature-major, and within a feature by column: each column's entries stay in
    # ascending feature order, the order its dot product adds in
    entries.sort(key=lambda e: (e[0], e[1]))
    flat_features = np.fromiter((e[0] for e in entries), dtype=np.int64, count=len(entries))
    columns = np.fromiter((e[1] for e in entries), dtype=np.int64, count=len(entries))
    weights = np.fromiter((e[2] for e in entries), dtype=np.float64, count=len(entries))
    features, starts = np.unique(flat_features, return_index=True)
    indptr = np.append(starts, len(entries)).astype(np.int64)
    return roots, features, indptr, columns, weights, count


def _beam_leaves(tree: tuple, scores: list[float], beam: int) -> list[tuple[float, tuple]]:
    """omikuji's beam search down one tree: expand every branch of the level (leaves carry
    over), keep the `beam` best by accumulated score, ties by position; returns the last
    level, (accumulated score, leaf) in level order. `scores` holds every column's hinge
    score (`Forest._column_scores`)."""
    level = [(0.0, tree)]
    while any(node[1] is not None for _, node in level):
        nxt = []
        for score, node in level:
            base, children, _ = node
            if children is None:
                nxt.append((score, node))
                continue
            for c, child in enumerate(children):
                nxt.append((scores[base + c] + score, child))
        if len(nxt) > beam:  # (-score, position) pairs sort in C, without a key function
            kept = sorted([(-entry[0], i) for i, entry in enumerate(nxt)])[:beam]
            nxt = [nxt[i] for i in sorted(i for _, i in kept)]  # the kept nodes stay in level order
        level = nxt
    return level


def export_json(side: str, featurizer_json: dict, labels: Sequence[str], cut: dict, k_max: int,
                copy_vocabulary: Sequence[str], classifier: dict, normalization: str) -> dict:
    return {"format": FORMAT, "version": VERSION, "side": side, "normalization": normalization,
            "featurizer": {"char_ngrams": featurizer_json["char_ngrams"], "ngrams": featurizer_json["ngrams"],
                           "idf": featurizer_json["idf"]},
            "labels": list(labels), "cut": cut, "k_max": k_max, "copy_vocabulary": list(copy_vocabulary),
            "classifier": classifier}


def write_export(path: Path, payload: dict) -> None:
    with atomic_open(path) as out:
        json.dump(payload, out, ensure_ascii=False, separators=(",", ":"))
        out.write("\n")


def read_export(path: Path) -> dict:
    """An export file, checked for format and version (ValueError naming the file)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: line {err.lineno}: invalid JSON ({err.msg})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ValueError(f"{path}: not a {FORMAT} v{VERSION} export "
                         f"(format {data.get('format') if isinstance(data, dict) else None!r})")
    return data
