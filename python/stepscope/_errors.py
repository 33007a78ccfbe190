"""StepscopeError: a failure of the C++ core, with the CLI's message and exit code."""

import re

# Where a reader says a file went wrong: "... at byte N" (JSON, gzip, a cut) or ": offset N:"
# (the protobuf formats).
_OFFSET = re.compile(r"(?:at byte|stops at byte|: offset) (\d+)")


class StepscopeError(Exception):
    """Raised with the message the CLI prints (without its "stepscope CMD: " prefix).

    Attributes: ``message``; ``exit_code``, what the CLI exits with (2 bad input, 1 a runtime
    failure, 3 a failed check); ``file``, the file at fault when known; ``offset``, the byte
    offset in it (in the decompressed content for a .gz file) when the reader gave one.
    """

    def __init__(self, message, exit_code=1, file=None):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.file = file or None
        match = _OFFSET.search(message)
        self.offset = int(match.group(1)) if match else None
