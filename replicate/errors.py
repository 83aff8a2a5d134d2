"""One error type for every failure a user can fix: it names the cause and the fix."""


class ReplicateError(RuntimeError):
    """A failure with a cause and a concrete fix, printed without a traceback by the CLI."""

    def __init__(self, cause: str, fix: str | None = None):
        self.cause = cause
        self.fix = fix
        super().__init__(cause if fix is None else f"{cause}\n  fix: {fix}")
