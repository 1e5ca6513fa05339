"""The one exception type the command line turns into a one-line message.

Library code raises `CogrError` (or a subclass) for anything a user can fix: bad input,
an unreachable cluster, a busy port. The CLI prints `Error: <message>` and exits 1, so
messages must fit on one line and name the file, line, field or URL at fault. What
escapes as another type (an opensearch-py error, an OSError, a settings validation
error) is turned into one line by `cogr_search.cli.main.describe_failure`; raising
`CogrError` with a precise message is still better, because only the library knows
which index or file it was working on.
"""


class CogrError(Exception):
    """A user-facing failure with a one-line explanation."""


class InputError(CogrError):
    """Malformed input: the message names the file, line and field."""
