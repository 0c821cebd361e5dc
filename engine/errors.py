"""Exceptions the engine raises on purpose.

``MechanismError`` is a refused input (exit status 2 on the command line); its
message starts with the JSON path of the offending value.  ``SimulationError``
is a failed simulation (exit status 3) and carries the simulated time.
"""


class LinkworkError(Exception):
    """Base class of all deliberate engine errors."""


class MechanismError(LinkworkError):
    """A mechanism file or specification breaks a rule of the format.

    ``path`` is the JSON path (``bodies[2].mass``), ``rule`` the broken rule.
    """

    def __init__(self, path: str, rule: str):
        self.path = path
        self.rule = rule
        super().__init__(f"{path}: {rule}" if path else rule)


class SettingsError(LinkworkError):
    """Solver settings that cannot be used (unknown formulation, dt <= 0, ...)."""


class SimulationError(LinkworkError):
    """The simulation failed at simulated time ``t``."""

    def __init__(self, t: float, message: str):
        self.t = float(t)
        self.reason = message
        super().__init__(f"simulation failed at t = {self.t:.6g} s: {message}")


class SingularSystemError(SimulationError):
    """The dynamics could not be solved: singular or inconsistent constraints."""
