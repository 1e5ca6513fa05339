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

from cogr_search.atomic import atomic_open

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
        self._index = [_compile(tree) for tree in trees]

    # -- from omikuji's files ----------------------------------------------------------
    @classmethod
    def from_omikuji(cls, folder: Path) -> Forest:
        """The trees saved by omikuji (`settings.json`, `tree<i>.cbor`, in file-name
        order: `backends._canonical_tree_order` made it the content's order)."""
        import cbor2  # heavy: a C extension needed only to read omikuji's trees (the plugin reads the export)

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
        features = [f for f, _ in row] + [self.n_features]
        values = [w for _, w in row] + [1.0]
        lookup = dict(zip(features, values))
        totals: dict[int, float] = {}
        for tree in self._index:
            for label, score in _tree_predict(tree, features, values, beam, lookup):
                totals[label] = totals.get(label, 0.0) + score
        n = float(len(self._index))
        ranked = sorted(((label, total / n) for label, total in totals.items()), key=lambda ls: (-ls[1], ls[0]))
        return ranked[:top_k]


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


def _compile(node: dict) -> tuple:
    """A node for fast lookups: per column its (feature, weight) pairs and a dict of them."""
    columns = [([(int(f), float(w)) for f, w in column], {int(f): float(w) for f, w in column})
               for column in node["columns"]]
    if "children" in node:
        return (columns, [_compile(child) for child in node["children"]], None)
    return (columns, None, [int(label) for label in node["labels"]])


def _scores(columns: list[tuple], features: Sequence[int], values: Sequence[float],
            row: dict[int, float]) -> list[float]:
    """Each column's hinge score: the products of the features both have, added in
    ascending feature order (walking whichever of the two is shorter: the same order)."""
    out = []
    for pairs, lookup in columns:
        s = 0.0
        if len(pairs) < len(features):
            for f, w in pairs:
                v = row.get(f)
                if v is not None:
                    s += v * w
        else:
            get = lookup.get
            for f, v in zip(features, values):
                w = get(f)
                if w is not None:
                    s += v * w
        out.append(hinge_score(s))
    return out


def _top(entries: list[tuple], beam: int) -> list[tuple]:
    """The `beam` best of (score, tie, payload) entries: score descending, then `tie`
    ascending (a position or a label index), so the cut is a function of the scores."""
    if len(entries) <= beam:
        return entries
    return sorted(entries, key=lambda e: (-e[0], e[1]))[:beam]


def _tree_predict(tree: tuple, features: Sequence[int], values: Sequence[float], beam: int,
                  row: dict[int, float]) -> list[tuple[int, float]]:
    """omikuji's beam search: expand every branch of the level (leaves carry over), keep
    the `beam` best by accumulated score; then each leaf's labels score exp(score +
    leaf's score), its `beam` best kept."""
    level = [(0.0, tree)]
    while any(node[1] is not None for _, node in level):
        nxt = []
        for score, node in level:
            columns, children, _ = node
            if children is None:
                nxt.append((score, node))
                continue
            for child, s in zip(children, _scores(columns, features, values, row)):
                nxt.append((s + score, child))
        if len(nxt) > beam:
            ranked = sorted(range(len(nxt)), key=lambda i: (-nxt[i][0], i))[:beam]
            ranked.sort()  # the kept nodes stay in level order
            nxt = [nxt[i] for i in ranked]
        level = nxt
    out: list[tuple[int, float]] = []
    for score, (columns, _, labels) in level:
        scored = [(exp_v1(s + score), label) for label, s in zip(labels, _scores(columns, features, values, row))]
        if len(scored) > beam:
            scored = sorted(scored, key=lambda sl: (-sl[0], sl[1]))[:beam]
        out.extend((label, s) for s, label in scored)
    return out


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
