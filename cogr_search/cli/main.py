"""The `cogr-search` command: a click group that only wires subcommands together.

Each command module parses arguments, calls the library and prints; no logic lives here.
Whatever a command fails with becomes click's one-line `Error: ...` on stderr with exit
status 1, never a traceback: library errors (`CogrError`) carry their own message;
cluster errors (OpenSearch or Elasticsearch) that escaped (4xx/5xx, bulk rejections, an unreachable cluster) and
file errors (missing, unreadable, not UTF-8) are described in one line naming the
index or file. `COGR_DEBUG=1` re-raises instead, for a traceback. SIGTERM ends a command with status 143
through its cleanup (a local node being started is stopped, half-written files removed).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator

import click

from cogr_search import __version__
from cogr_search.errors import CogrError
import os
import pydantic
from cogr_search.cluster.client import describe_error
from cogr_search.settings import Settings, load_settings
from cogr_search.known_warnings import filter_known_warnings
from cogr_search.progress import quiet_library_bars
from cogr_search.generators.threads import request_threads
from cogr_search.cli import bench_cmds, data_cmd, demo_cmd, eval_cmd, expand_cmd, index_cmds, ingest_cmd, model_cmd, node_cmds, reproduce_cmd, search_cmd, security_cmds, serve_cmd, sync_cmd, train_cmds


def describe_failure(err: BaseException) -> str | None:
    """One line for an exception a command let escape, or None for a genuine bug."""
    if isinstance(err, CogrError):
        return str(err)
    if type(err).__module__.split(".")[0] in ("opensearchpy", "elasticsearch", "elastic_transport"):
        return describe_error(err)
    if type(err).__name__ == "ValidationError" and type(err).__module__.startswith("pydantic"):
        first = err.errors()[0] if err.errors() else {}
        field = ".".join(str(part) for part in first.get("loc", ()))
        if not field:  # a whole-model check, e.g. a library's own config (vLLM's ModelConfig): name the model
            return f"{getattr(err, 'title', 'settings')}: {first.get('msg', err)}"
        return f"setting {_setting_name(field)}: {first.get('msg', err)}"
    if isinstance(err, UnicodeDecodeError):
        return f"input is not valid UTF-8 (byte {err.object[err.start]:#04x} at offset {err.start}); convert it to UTF-8"
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.filename}: {err.strerror or type(err).__name__}"
    if isinstance(err, OSError):
        return f"{type(err).__name__}: {err.strerror or err}"
    return None


def _setting_name(loc: str) -> str:
    """`'cluster_retries' (flag, COGR_CLUSTER_RETRIES or COGR_OPENSEARCH_RETRIES)` for a
    settings field or one of its variable names."""
    for name, info in Settings.model_fields.items():
        aliases = list(getattr(info.validation_alias, "choices", []) or [])
        if loc == name or loc in aliases:
            variables = [a for a in aliases if isinstance(a, str)] or [f"COGR_{name.upper()}"]
            return f"{name!r} (flag, {' or '.join(variables)})"
    return f"{loc!r} (flag or COGR_{loc.upper()})"


def _debug() -> bool:
    """`COGR_DEBUG`, read through the settings; a broken environment means no."""
    try:
        return load_settings().debug
    except Exception:
        return False


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM as an exception, so that the cleanup a command owns runs: Python's default
    ends the process on the spot, and a node being started would outlive it, unrecorded."""
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """`_exit_on_sigterm` for the duration of one command (the main thread only, where
    signal handlers live; the previous handler comes back afterwards)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class CogrGroup(click.Group):
    """A group whose commands report failures as one line instead of a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            with _sigterm_raises():
                return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            raise click.ClickException("interrupted") from None
        except Exception as err:
            message = describe_failure(err)
            if message is None or _debug():
                raise
            raise click.ClickException(" ".join(message.split())) from err


@click.group(cls=CogrGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cogr-search")
def cli() -> None:
    """Co-evolving generative keyword retrieval (CoGR) for OpenSearch."""

    filter_known_warnings()
    quiet_library_bars()
    _apply_process_settings()
    _show_library_notes()


class _Notes(logging.Handler):
    """The library's notes (its `logging` records at INFO and above) as lines on stderr,
    through click so that a test's runner captures them like any other output."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(self.format(record), err=True)


_NOTES = _Notes()


def _show_library_notes() -> None:
    """Show the notes the library logs (e.g. which cluster a command uses when none was
    named); once per process, however many commands a test runs in it."""
    logger = logging.getLogger("cogr_search")
    logger.setLevel(logging.INFO)
    if _NOTES not in logger.handlers:
        logger.addHandler(_NOTES)


def _apply_process_settings() -> None:
    """Settings that hold for the whole process (torch's thread count), made once here so
    that library code never reads the environment. A broken environment is left to the
    command that reads the broken field, which names it. vLLM logs to stdout unless told
    otherwise; stdout is the commands' output (`--json`: exactly one object), so its lines
    go to stderr (before vLLM is first imported; a value the user set wins)."""

    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")


    try:
        request_threads(load_settings().torch_threads)
    except pydantic.ValidationError:
        return


def _register() -> None:
    # Imported here so that `cli` is the only name the entry point needs.

    for command in (
        node_cmds.opensearch,
        node_cmds.elasticsearch,
        index_cmds.index,
        ingest_cmd.ingest,
        data_cmd.data,
        model_cmd.model,
        train_cmds.train,
        sync_cmd.sync,
        expand_cmd.expand,
        search_cmd.search,
        serve_cmd.serve,
        eval_cmd.eval_command,
        eval_cmd.report_command,
        reproduce_cmd.reproduce,
        demo_cmd.demo,
        bench_cmds.bench,
        security_cmds.security,
    ):
        cli.add_command(command)


_register()
