"""Prompt templates for the two generators, loaded from data files.

Why data and not code: the prompt is part of what a run trained on. A run copies its
template file (with its `version`) into the run directory and every later command of
that run (RL, expand, serving) renders prompts from that copy, so editing the packaged
template never silently changes a trained model's input distribution.

A template renders to chat messages (system + user, optionally few-shot turns); the
model's own chat template turns them into text. No chain of thought: the assistant
turn is the keyword list itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from cogr_search.errors import InputError

Message = dict[str, str]
PROMPTS_PACKAGE = "cogr_search.resources.prompts"
DEFAULT_PROMPTS = "default"


@dataclass(frozen=True)
class Example:
    """One few-shot demonstration: the user turn's fields and the assistant's answer."""

    fields: dict[str, str]
    keywords: str


@dataclass(frozen=True)
class SideTemplate:
    system: str
    user: str
    user_without_description: str | None = None
    user_with_context: str | None = None
    max_description_chars: int = 300
    examples: tuple[Example, ...] = ()


@dataclass(frozen=True)
class PromptSet:
    """The item-side and query-side templates of one prompt file."""

    name: str
    version: str
    item: SideTemplate
    query: SideTemplate
    source: dict = field(repr=False, compare=False, default_factory=dict)

    def item_messages(
        self, title: str, description: str = "", max_keywords: int = 10, few_shot: bool = False
    ) -> list[Message]:
        """Chat messages asking the item generator for keywords of one item."""
        shots = [self._item_user(ex.fields.get("title", ""), ex.fields.get("description", ""), max_keywords)
                 for ex in self.item.examples] if few_shot else []
        user = self._item_user(title, description, max_keywords)
        return _messages(self.item, shots, user, few_shot, max_keywords)

    def query_messages(
        self, query: str, max_keywords: int = 15, few_shot: bool = False, context: Sequence[str] | None = None
    ) -> list[Message]:
        """Chat messages asking the query generator for keywords of one query.

        `context` holds the titles of the query's top BM25 hits (the paper's "++ search
        results", Table 4): a run trained with it always gets it, and one trained
        without it never does (`None`); an empty list means the search found nothing."""
        shots = [self.query.user.format(query=ex.fields.get("query", ""), max_keywords=max_keywords)
                 for ex in self.query.examples] if few_shot else []
        if context is None:
            user = self.query.user.format(query=query.strip(), max_keywords=max_keywords)
        else:
            user = self._query_user_with_context(query, context, max_keywords)
        return _messages(self.query, shots, user, few_shot, max_keywords)

    def _query_user_with_context(self, query: str, context: Sequence[str], max_keywords: int) -> str:
        if self.query.user_with_context is None:
            raise InputError(f"prompt set {self.name!r} v{self.version}: query.user_with_context is missing, "
                             "so it cannot show search results")
        lines = "\n".join(f"- {_clip(' '.join(title.split()), self.query.max_description_chars)}"
                          for title in context) or "- (no results)"
        return self.query.user_with_context.format(query=query.strip(), context=lines, max_keywords=max_keywords)

    def _item_user(self, title: str, description: str, max_keywords: int) -> str:
        description = _clip(" ".join(description.split()), self.item.max_description_chars)
        if not description and self.item.user_without_description:
            return self.item.user_without_description.format(title=title.strip(), max_keywords=max_keywords)
        return self.item.user.format(title=title.strip(), description=description, max_keywords=max_keywords)

    def save(self, path: Path) -> None:
        """Write the template file as loaded (for the run directory)."""
        path.write_text(json.dumps(self.source, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def assistant_text(keywords: Sequence[str]) -> str:
    """The answer format the generators are trained on: one comma-separated line."""
    return ", ".join(keywords)


def _messages(side: SideTemplate, shot_users: list[str], user: str, few_shot: bool, max_keywords: int) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": side.system.format(max_keywords=max_keywords)}]
    if few_shot:
        for shot_user, example in zip(shot_users, side.examples):
            messages.append({"role": "user", "content": shot_user})
            messages.append({"role": "assistant", "content": example.keywords})
    messages.append({"role": "user", "content": user})
    return messages


def _clip(text: str, limit: int) -> str:
    """Cut at a word boundary so long descriptions do not dominate the prompt length."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " ..."


def load_prompts(name_or_path: str | Path = DEFAULT_PROMPTS) -> PromptSet:
    """A packaged template set by name (`default`) or a JSON file by path."""
    path = Path(name_or_path)
    if path.suffix == ".json" or path.exists():
        if not path.is_file():
            raise InputError(f"{path}: prompt file not found")
        text = path.read_text(encoding="utf-8")
        origin = str(path)
    else:
        resource = resources.files(PROMPTS_PACKAGE) / f"{name_or_path}.json"
        if not resource.is_file():
            raise InputError(f"prompt set {name_or_path!r} not found in {PROMPTS_PACKAGE}")
        text = resource.read_text(encoding="utf-8")
        origin = f"{PROMPTS_PACKAGE}/{name_or_path}.json"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{origin}: line {err.lineno}: invalid JSON ({err.msg})") from err
    return parse_prompts(data, origin)


def parse_prompts(data: object, origin: str = "<prompts>") -> PromptSet:
    """Validate a template document; errors name the file and the field."""
    if not isinstance(data, dict):
        raise InputError(f"{origin}: expected a JSON object")
    for key in ("name", "version", "item", "query"):
        if key not in data:
            raise InputError(f"{origin}: missing field {key!r}")
    item = _side(data["item"], f"{origin}: item", {"title", "description", "max_keywords"})
    query = _side(data["query"], f"{origin}: query", {"query", "max_keywords"}, {"query", "context", "max_keywords"})
    return PromptSet(name=str(data["name"]), version=str(data["version"]), item=item, query=query, source=data)


def _side(data: object, where: str, placeholders: set[str], context_placeholders: set[str] = frozenset()) -> SideTemplate:
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected an object")
    for key in ("system", "user"):
        if not isinstance(data.get(key), str):
            raise InputError(f"{where}.{key}: missing or not a string")
    dummy = {name: "x" for name in placeholders}
    for key in ("system", "user", "user_without_description", "user_with_context"):
        template = data.get(key)
        if template is None:
            continue
        if key == "user_with_context" and not context_placeholders:
            raise InputError(f"{where}.{key}: only the query side shows search results")
        allowed = {"max_keywords": "x"} if key == "system" else dummy
        if key == "user_with_context":
            allowed = {name: "x" for name in context_placeholders}
        try:
            template.format(**allowed)
        except (KeyError, IndexError, ValueError) as err:
            raise InputError(f"{where}.{key}: bad placeholder {err} (allowed: {sorted(placeholders)})") from err
    examples = []
    for n, ex in enumerate(data.get("examples", [])):
        if not isinstance(ex, dict) or not isinstance(ex.get("keywords"), str):
            raise InputError(f"{where}.examples[{n}]: needs a string field 'keywords'")
        examples.append(Example(fields={k: str(v) for k, v in ex.items() if k != "keywords"}, keywords=ex["keywords"]))
    limit = data.get("max_description_chars", 300)
    if not isinstance(limit, int) or limit < 0:
        raise InputError(f"{where}.max_description_chars: expected a non-negative integer")
    return SideTemplate(
        system=data["system"],
        user=data["user"],
        user_without_description=data.get("user_without_description"),
        user_with_context=data.get("user_with_context"),
        max_description_chars=limit,
        examples=tuple(examples),
    )
