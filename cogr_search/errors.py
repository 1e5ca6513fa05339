"""The one exception type the command line turns into a one-line message.

Library code raises `CogrError` (or a subclass) for anything a user can fix: bad input,
an unreachable cluster, a busy port. The CLI prints `error: <message>` and exits 1, so
messages must fit on one line and name the file, line, field or URL at fault.
"""


class CogrError(Exception):
    """A user-facing failure with a one-line explanation."""


class InputError(CogrError):
    """Malformed input: the message names the file, line and field."""
