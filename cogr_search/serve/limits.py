"""Request limits and body parsing for the expansion service, independent of the web stack.

Each check raises `RequestError` with the HTTP status and a one-line message naming the
field and index at fault, so a client (or the plugin's log) can tell what to fix.
Parsing is done here by hand rather than by a validation layer because the cached path
is the hot path: `json.loads` plus a few type checks is the cheapest correct way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

BAD_REQUEST = 400
TOO_LARGE = 413


class RequestError(Exception):
    """A request the service refuses: `status` is the HTTP code, `message` one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Limits(BaseModel):
    """What one request may carry; defaults suit search queries and catalog items."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_texts: int = Field(64, ge=1, description="Texts or items per request.")
    max_text_chars: int = Field(1_000, ge=1, description="Characters per query text or item title.")
    max_description_chars: int = Field(20_000, ge=1, description="Characters per item description.")
    max_body_bytes: int = Field(4 * 1024 * 1024, ge=1, description="Bytes per request body.")

    def as_dict(self) -> dict:
        return self.model_dump()


@dataclass(frozen=True)
class ItemInput:
    """One item to expand; what `KeywordGenerator` reads (`title`, `description`)."""

    id: str
    title: str
    description: str


def parse_body(raw: bytes, limits: Limits) -> dict:
    """A JSON object from the raw body: UTF-8, JSON, an object, within the size limit."""
    if len(raw) > limits.max_body_bytes:
        raise RequestError(TOO_LARGE, f"body is {len(raw)} bytes, over the limit of {limits.max_body_bytes}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RequestError(BAD_REQUEST, f"body is not UTF-8 (invalid byte at offset {err.start})") from None
    try:
        body = json.loads(text)
    except json.JSONDecodeError as err:
        raise RequestError(BAD_REQUEST, f"body is not JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    if not isinstance(body, dict):
        raise RequestError(BAD_REQUEST, f"body must be a JSON object, got {type(body).__name__}")
    return body


def _entries(body: dict, field: str, limits: Limits) -> list:
    values = body.get(field)
    if not isinstance(values, list):
        raise RequestError(BAD_REQUEST, f"field {field!r} must be a list")
    if not values:
        raise RequestError(BAD_REQUEST, f"field {field!r} is empty")
    if len(values) > limits.max_texts:
        raise RequestError(TOO_LARGE, f"field {field!r} has {len(values)} entries, over the limit of {limits.max_texts}")
    return values


def _text(value: object, where: str, limit: int, required: bool = True) -> str:
    if not isinstance(value, str):
        raise RequestError(BAD_REQUEST, f"{where} must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise RequestError(BAD_REQUEST, f"{where} is empty")
    if len(value) > limit:
        raise RequestError(TOO_LARGE, f"{where} has {len(value)} characters, over the limit of {limit}")
    return value


def query_texts(body: dict, limits: Limits) -> list[str]:
    """The `texts` of a query-expansion request, checked."""
    values = _entries(body, "texts", limits)
    return [_text(v, f"texts[{i}]", limits.max_text_chars) for i, v in enumerate(values)]


def item_inputs(body: dict, limits: Limits) -> list[ItemInput]:
    """The `items` of an item-expansion request, checked."""
    items = []
    for i, value in enumerate(_entries(body, "items", limits)):
        if not isinstance(value, dict):
            raise RequestError(BAD_REQUEST, f"items[{i}] must be an object, got {type(value).__name__}")
        item_id = value.get("id", "")
        if not isinstance(item_id, (str, int)) or isinstance(item_id, bool):
            raise RequestError(BAD_REQUEST, f"items[{i}].id must be a string or a number")
        where = f"items[{i}] (id {item_id!r})" if item_id != "" else f"items[{i}]"
        title = _text(value.get("title"), f"{where}.title", limits.max_text_chars)
        description = value.get("description")
        description = "" if description is None else _text(
            description, f"{where}.description", limits.max_description_chars, required=False
        )
        items.append(ItemInput(id=str(item_id), title=title, description=description))
    return items
