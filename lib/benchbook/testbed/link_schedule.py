"""Time-varying link schedules: steps of bottleneck rate and added delay at set times of a run.

A schedule file holds one step per line, ``t_s rate_mbps delay_ms``, whitespace- or comma-separated,
``-`` for "unchanged", ``#`` starting a comment; steps in increasing time::

    # t_s  rate_mbps  delay_ms
    0      40         -
    3      10         -
    6      25         20

``random_schedule`` draws one from a seed (the same seed gives the same file). The dumbbell applies each
step at its time after the flows start (``tc class replace`` on the htb class, ``tc qdisc replace`` on the
tbf and of the senders' netem for delay; one ``tc -batch -`` process per host and step) and records when
each step was applied and done. A step whose successor is already due when its turn comes (a loaded host
made an earlier one late) is skipped and recorded as skipped, so lateness does not accumulate.

htb keeps a class's token debt across a rate change (the last frame sent at the old rate), so a step to a
near-zero rate holds an htb link for long after the next step (one 1514-byte frame at 1 kbit/s: 12 s);
tbf refills its bucket on a change, so a link that closes and opens (a gate) needs the tbf shaper.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from benchbook.errors import BenchbookError


class ScheduleError(BenchbookError, ValueError):
    """A schedule file or value that is not a schedule; the message names the file and line."""


@dataclass(frozen=True)
class Step:
    t_s: float
    rate_bps: int | None = None      # None: unchanged
    delay_ms: float | None = None    # None: unchanged


@dataclass(frozen=True)
class LinkSchedule:
    steps: tuple[Step, ...]
    source: str = ""                 # the file it was read from, or how it was drawn

    def __post_init__(self) -> None:
        times = [s.t_s for s in self.steps]
        if any(t < 0 for t in times) or times != sorted(times) or len(set(times)) != len(times):
            raise ScheduleError(f"{self.source or 'schedule'}: step times must be >= 0 and strictly increasing, "
                                f"got {times}")

    @property
    def has_delay(self) -> bool:
        return any(s.delay_ms is not None for s in self.steps)

    def rate_at(self, t_s: float, initial_bps: int) -> int:
        """The rate in force at ``t_s`` (the last step at or before it, else ``initial_bps``)."""
        rate = initial_bps
        for s in self.steps:
            if s.t_s <= t_s and s.rate_bps is not None:
                rate = s.rate_bps
        return rate

    def text(self) -> str:
        lines = [f"# {self.source}" if self.source else "# link schedule", "# t_s rate_mbps delay_ms"]
        for s in self.steps:
            rate = "-" if s.rate_bps is None else f"{s.rate_bps / 1e6:g}"
            delay = "-" if s.delay_ms is None else f"{s.delay_ms:g}"
            lines.append(f"{s.t_s:g} {rate} {delay}")
        return "\n".join(lines) + "\n"


def _number(field: str, what: str, where: str) -> float | None:
    if field == "-":
        return None
    try:
        value = float(field)
    except ValueError:
        raise ScheduleError(f"{where}: {what} must be a number or '-', got {field!r}") from None
    if value < 0 or (what == "rate_mbps" and value == 0):
        raise ScheduleError(f"{where}: {what} must be {'> 0' if what == 'rate_mbps' else '>= 0'}, got {field!r}")
    return value


def parse_schedule(text: str, source: str = "<schedule>") -> LinkSchedule:
    steps = []
    for lineno, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0].replace(",", " ").split()
        if not body:
            continue
        where = f"{source}:{lineno}"
        if len(body) != 3:
            raise ScheduleError(f"{where}: expected 't_s rate_mbps delay_ms' (3 fields), got {len(body)}: {line!r}")
        t = _number(body[0], "t_s", where)
        if t is None:
            raise ScheduleError(f"{where}: t_s must be a number, got '-'")
        rate = _number(body[1], "rate_mbps", where)
        steps.append(Step(t, None if rate is None else int(round(rate * 1e6)), _number(body[2], "delay_ms", where)))
    if not steps:
        raise ScheduleError(f"{source}: no steps (expected lines 't_s rate_mbps delay_ms')")
    times = [s.t_s for s in steps]
    for i in range(1, len(times)):
        if times[i] <= times[i - 1]:
            raise ScheduleError(f"{source}: step {i + 1} at {times[i]:g} s does not come after {times[i - 1]:g} s")
    return LinkSchedule(tuple(steps), source)


def read_schedule(path: Path | str) -> LinkSchedule:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ScheduleError(f"{p}: cannot read the schedule: {exc}") from exc
    return parse_schedule(text, str(p))


def random_schedule(seed: int, duration_s: float, step_s: float, rates_mbps: tuple[float, float],
                    delays_ms: tuple[float, float] | None = None) -> LinkSchedule:
    """A step every ``step_s`` from 0 to ``duration_s``, rate uniform in ``rates_mbps`` (whole Mbit/s) and,
    with ``delays_ms``, delay uniform in it (whole ms); the same seed gives the same schedule."""
    if step_s <= 0 or duration_s <= 0:
        raise ScheduleError(f"random schedule: duration_s and step_s must be > 0, got {duration_s}, {step_s}")
    rng = random.Random(seed)
    steps, t = [], 0.0
    while t < duration_s:
        rate = round(rng.uniform(*rates_mbps))
        delay = float(round(rng.uniform(*delays_ms))) if delays_ms else None
        steps.append(Step(round(t, 6), int(max(rate, 1) * 1_000_000), delay))
        t += step_s
    return LinkSchedule(tuple(steps), f"random_schedule(seed={seed}, duration_s={duration_s:g}, step_s={step_s:g}, "
                                      f"rates_mbps={rates_mbps}, delays_ms={delays_ms})")


__all__ = ["LinkSchedule", "ScheduleError", "Step", "parse_schedule", "random_schedule", "read_schedule"]
