"""One way from a pydantic config to command-line flags, for every command that has one.

A command lists its flags as `Flag(decl, fields...)`: the dotted config fields a flag
sets (one flag may set several, like `--seed`). `config_flags(Model, flags)` adds them
as click options whose default is None (a flag left out keeps the config's value) and
whose help and `[default: ...]` come from the model, plus `--config FILE`; the command
receives a `ConfigFlags` it turns into the validated model with `build(base)`. So the
numbers live in the config classes only, and a resume, a file or a preset is just
another base under the same flags.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ValidationError

from cogr_search.errors import InputError
from cogr_search.runs.presets import with_changes
import typing
from cogr_search.runs.run_dir import read_json


@dataclass(frozen=True)
class Flag:
    """A flag (`--name` or `--on/--off`) and the dotted config fields it sets."""

    decl: str
    fields: tuple[str, ...]
    help: str | None = None
    type: Any = None

    @property
    def dest(self) -> str:
        return "cfg_" + self.decl.split("/")[0].lstrip("-").replace("-", "_")


def flag(decl: str, *fields: str, help: str | None = None, type: Any = None) -> Flag:  # noqa: A002 - click's names
    return Flag(decl, fields, help, type)


def _defaults(model: type[BaseModel]) -> BaseModel | None:
    """The model with every default, or None when it has required fields (those are
    given by the command itself, e.g. `train sft --data`)."""
    try:
        return model()
    except ValidationError:
        return None


def _field(model: type[BaseModel], dotted: str) -> tuple[Any, Any]:
    """The default and the FieldInfo of a dotted field. Defaults are read from an instance
    where there is one: a nested default (`item: GRPOSideConfig = GRPOSideConfig(...)`)
    may differ from the nested class's own."""
    node: Any = _defaults(model)
    owner: Any = model
    *parents, leaf = dotted.split(".")
    for part in parents:
        owner = owner.model_fields[part].annotation
        node = getattr(node, part) if node is not None else None
    info = owner.model_fields[leaf]
    default = getattr(node, leaf) if node is not None else (None if info.is_required() else info.get_default(call_default_factory=True))
    return default, info


@dataclass
class ConfigFlags:
    """What the user gave: `--config FILE` and the flags that were set."""

    model: type[BaseModel]
    flags: Sequence[Flag]
    values: dict[str, Any] = field(default_factory=dict)
    config_file: Path | None = None

    def overrides(self) -> dict[str, Any]:
        """dotted field -> value, for the flags that were given."""
        out: dict[str, Any] = {}
        for f in self.flags:
            value = self.values.get(f.dest)
            if value is not None:
                out.update({dotted: value for dotted in f.fields})
        return out

    def build(self, base: Mapping[str, Any] | None = None, **fixed: Any) -> Any:
        """The validated model: `--config FILE` (else `base`, else the model's defaults),
        then `fixed` values (required fields the command computes), then the flags."""
        if self.config_file is not None:
            doc: dict = read_json(self.config_file)
        elif base is not None:
            doc = dict(base)
        else:
            defaults = _defaults(self.model)
            doc = defaults.model_dump(mode="json") if defaults is not None else {}
        doc = with_changes(doc, {**fixed, **self.overrides()})
        try:
            return self.model.model_validate(doc)
        except ValidationError as err:
            first = err.errors()[0]
            where = f" in {self.config_file}" if self.config_file else ""
            raise InputError(f"option {'.'.join(map(str, first['loc']))}{where}: {first['msg']}") from err


def config_flags(model: type[BaseModel], flags: Sequence[Flag], *, config_file: bool = True) -> Callable:
    """Add `flags` (and `--config FILE`) to a click command; it gets `config_flags: ConfigFlags`."""

    def decorate(command: Callable) -> Callable:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {f.dest: kwargs.pop(f.dest) for f in flags}
            path = kwargs.pop("cfg_config_file", None)
            return command(*args, config_flags=ConfigFlags(model, flags, values, path), **kwargs)

        for f in reversed(flags):
            wrapper = _option(model, f)(wrapper)
        if config_file:
            wrapper = click.option(
                "--config", "cfg_config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                default=None, help=f"A {model.__name__} JSON file as the defaults; flags override it.",
            )(wrapper)
        return wrapper

    return decorate


def _option(model: type[BaseModel], f: Flag) -> Callable:
    default, info = _field(model, f.fields[0])
    text = f.help or (info.description or "")
    if default is not None and "[default:" not in text:
        text = f"{text} [default: {default}]".strip()
    kwargs: dict[str, Any] = {"default": None, "help": text}
    if "/" not in f.decl:
        kwargs["type"] = f.type or _click_type(info.annotation)
    return click.option(f.decl, f.dest, **kwargs)


def _click_type(annotation: Any) -> Any:
    """int/float/str fields (optional or not) as click types; Literals as choices."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Literal:
        return click.Choice([str(a) for a in typing.get_args(annotation)])
    if args and typing.get_origin(annotation) is not typing.Literal:
        return _click_type(args[0])
    return annotation if annotation in (int, float, str) else None
