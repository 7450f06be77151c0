"""External bots: any program that speaks the JSON-lines protocol of docs/bots.md on stdin/stdout.

A spec ``external:cmd=PATH[,args=A;B][,timeout=S][,batch=N][,cost=C]`` runs ``PATH A B``; a name
registered from ``AZULSIM_EXTERNAL_BOTS`` (``name=command line;name2=...``, set by whoever runs
the workers) runs that command line. Running a command a job names is opt-in
(``AZULSIM_EXTERNAL_CMD=1``): on a service it would let any client run programs on the workers.

Each request is one line: a batch of positions with public information only (no bag order, no
future deals) and their legal actions in the `sim.rules.actions` encoding; each answer is one line
with one action (or one gray-wall column) per position. One process per command per worker process,
started on first use and kept across chunks and jobs (`_PROCESSES`), closed at exit. A timeout, a
crash, a malformed or illegal answer raises `ExternalBotError` naming the bot and the position, and
the process is killed (the next request starts a fresh one): never a hang, never a silently wrong
game.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import selectors
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass
from dataclasses import replace as replace_field
from typing import Any

import numpy as np

from ..rules.engine import wall_colours
from ..settings import Kind, from_env, setting
from .base import Bot
from .features import unpack
from .registry import Param, register_bot
from .supports import WALL_CHOICES, declare_supports, parse_players, table_refusal

PROTOCOL = 1
ENV_ALLOW_CMD = "AZULSIM_EXTERNAL_CMD"
ENV_NAMED = "AZULSIM_EXTERNAL_BOTS"

# Any text but an "on" word leaves commands off (never an error: off is the safe reading).
ON_WORD = Kind("1 to allow", lambda var, text: text.lower() in ("1", "true", "yes", "on"))


@dataclass(frozen=True)
class ExternalSettings:
    """Where external bots may come from (docs/configuration.md; the loader `sim.settings`)."""

    allow_cmd: bool = setting(ENV_ALLOW_CMD, False, ON_WORD, doc_default="unset")
    named: str = setting(ENV_NAMED, "", doc_default="unset")


PARAMS = (
    Param("timeout", "float", 60.0, 0.01, 3600, doc="seconds a request may take beyond move_ms"),
    Param("batch", "int", 1024, 1, 65536, doc="positions per request at most"),
    Param("cost", "float", 10.0, 0.01, 100000, doc="time per game relative to greedy (chunking)"),
    Param("move_ms", "float", 0.0, 0, 3600000, doc="ms it may think per position (it is told)"),
    Param("walls", "choice", "both", choices=WALL_CHOICES, doc="the walls it plays"),
    Param("players", "text", "234", doc="the player counts it plays, as digits (e.g. 24)"),
)
CMD_PARAMS = (
    Param("cmd", "text", "", doc="the program to run (a path, or a name on PATH)"),
    Param("args", "text", "", doc="its arguments, separated by ';'"),
) + PARAMS

try:  # orjson: about 5x faster than json.dumps on a batch of positions (pyproject.toml)
    import orjson

    def _dumps(obj: Any) -> bytes:
        # Positions hold numpy arrays (`positions`): orjson writes them natively, the same
        # bytes as their nested lists, without building those lists.
        return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY, default=np.ndarray.tolist)

    _loads = orjson.loads
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib is the fallback

    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":"), default=np.ndarray.tolist).encode()

    _loads = json.loads


class ExternalBotError(RuntimeError):
    """An external bot failed: timeout, crash, malformed or illegal answer."""


# --- positions -------------------------------------------------------------------------------


def legal_actions(st, slots: np.ndarray) -> np.ndarray:
    """(n, n_actions) bool: the legal action ids of the seat to move in each game of `slots`."""
    n = slots.shape[0]
    present = unpack(np.ascontiguousarray(st.sources[:, slots])) > 0  # (S, 5, n)
    acc = st.accept.reshape(-1)[st.current[slots].astype(np.intp) * st.batch + slots]
    dest = np.ones((5, 6, n), bool)
    shift = (5 * np.arange(5)[:, None] + np.arange(5)[None, :]).astype(np.int32)  # (c, r)
    dest[:, :5] = ((acc[None, None] >> shift[:, :, None]) & 1).astype(bool)
    mask = present[:, :, None, :] & dest[None]  # (S, 5, 6, n)
    return np.ascontiguousarray(mask.reshape(-1, n).T)


def _rows(a: np.ndarray) -> np.ndarray:
    """`a` as a C-ordered int64 array: its rows are then views that orjson writes directly."""
    return np.ascontiguousarray(a, dtype=np.int64)


def positions(st, slots: np.ndarray, seats: np.ndarray | None = None) -> list[dict]:
    """The public view of each game of `slots` as protocol dicts (docs/bots.md).

    `seats` is the seat each position is asked about (default: the seat to move). The list-valued
    fields are int64 numpy arrays (rows of one array per field, no Python lists: building those
    took most of the protocol's time per position); ``.tolist()`` gives the plain lists.
    """
    n = slots.shape[0]
    tiles = _rows(unpack(np.ascontiguousarray(st.sources[:, slots])).transpose(2, 0, 1))
    lines = np.stack([st.line_colour[:, :, slots], st.line_count[:, :, slots]], axis=-1)
    lines = _rows(lines.transpose(2, 0, 1, 3))  # (n, P, 5, 2)
    walls = _rows(wall_colours(st, slots).reshape(st.players, 5, 5, n).transpose(3, 0, 1, 2))
    factories, centre = tiles[:, 1:], tiles[:, 0]
    bag, lid = _rows(st.bag[:, slots].T), _rows(st.lid[:, slots].T)
    floor, scores = _rows(st.floor[:, slots].T), _rows(st.scores[:, slots].T)
    seat = (st.current[slots] if seats is None else seats).tolist()
    columns = zip(
        st.game[slots].tolist(),
        st.round[slots].tolist(),
        st.turn[slots].tolist(),
        seat,
        st.marker_in_centre[slots].tolist(),
        st.marker_holder[slots].tolist(),
        strict=True,
    )
    return [
        {
            "game": g,
            "round": r,
            "turn": t,
            "seat": s,
            "factories": factories[i],
            "centre": centre[i],
            "marker_in_centre": mc,
            "marker_holder": mh,
            "bag": bag[i],
            "lid": lid[i],
            "lines": lines[i],
            "wall": walls[i],
            "floor": floor[i],
            "scores": scores[i],
        }
        for i, (g, r, t, s, mc, mh) in enumerate(columns)
    ]


def _rules_fields(st) -> dict:
    """The request's ``rules`` (every rule, `RuleSet.to_dict`: the game the positions are from)
    and ``rules_label`` (its canonical label, ``printed`` for the printed game). A state's wall
    and round cap are its own fields (`BatchState.gray`, `max_rounds`), so they are the ones
    told."""
    wall = "gray" if st.gray else "coloured"
    return _rules_of(replace_field(st.rule_set, wall=wall, max_rounds=int(st.max_rounds)))


@functools.lru_cache(maxsize=64)
def _rules_of(rule_set) -> dict:
    return {"rules": rule_set.to_dict(), "rules_label": rule_set.label}


# --- the process -----------------------------------------------------------------------------


class _Process:
    """One running external bot: a line out, a line back, under a deadline."""

    def __init__(self, argv: list[str]):
        self.argv = argv
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                bufsize=0,
            )
        except OSError as exc:
            self.stderr.close()
            raise ExternalBotError(f"cannot start {shlex.join(argv)!r}: {exc}") from exc
        os.set_blocking(self.proc.stdin.fileno(), False)
        os.set_blocking(self.proc.stdout.fileno(), False)
        _widen(self.proc.stdin.fileno())
        self.pending = b""  # bytes read past the last answer (a protocol error if not empty)
        self.cpu_seen = self.cpu_ticks()  # the process's CPU already accounted (clock ticks)

    def cpu_ticks(self) -> int:
        """User + system CPU of the process so far, in clock ticks (Linux /proc; else 0)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            return int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            return 0

    def exchange(self, line: bytes, timeout: float) -> bytes:
        """Send `line` (ending in a newline), return the answer line; raise on timeout/EOF."""
        deadline = time.monotonic() + timeout
        out_fd, in_fd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        if self.pending:
            raise ExternalBotError("wrote more than one line for a request")
        view, sent = memoryview(line), 0
        chunks: list[bytes] = []
        with selectors.DefaultSelector() as sel:
            sel.register(out_fd, selectors.EVENT_WRITE)
            sel.register(in_fd, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ExternalBotError(f"no answer within {timeout:g} s")
                for key, _ in sel.select(left):
                    if key.fd == out_fd:
                        try:
                            sent += os.write(out_fd, view[sent:])
                        except BlockingIOError:  # the pipe filled up after select said ready
                            continue
                        except BrokenPipeError:
                            raise ExternalBotError(self._died()) from None
                        if sent == len(line):
                            sel.unregister(out_fd)
                    else:
                        try:
                            data = os.read(in_fd, 1 << 20)
                        except BlockingIOError:
                            continue
                        if not data:
                            raise ExternalBotError(self._died())
                        chunks.append(data)
                        if b"\n" in data:
                            if sent < len(line):
                                raise ExternalBotError("answered before reading the request")
                            answer, _, self.pending = b"".join(chunks).partition(b"\n")
                            return answer

    def _died(self) -> str:
        try:
            code = self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return "closed its output"
        return f"exited with status {code}{self.stderr_tail()}"

    def stderr_tail(self) -> str:
        try:
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - 800))
            text = self.stderr.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends: {text}" if text else ""

    def close(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            if not kill:
                try:
                    self.proc.stdin.close()  # EOF: a bot exits when its input ends
                    self.proc.wait(timeout=2)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.stderr):
            try:
                f.close()
            except OSError:
                pass


# A request of 1,024 positions is about 0.5-0.8 MB: in the default 64 KB pipe it goes in a dozen
# writes, each waking the bot to read a piece (bench/external.py). A pipe this wide (Linux:
# at most /proc/sys/fs/pipe-max-size, 1 MB by default) takes most requests in one write.
PIPE_BYTES = 1 << 20


def _widen(fd: int) -> None:
    """Ask for a `PIPE_BYTES` pipe buffer (Linux); elsewhere, or if refused, keep the default."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass


# Running bots of this process, by command. A forked child (a pool worker) must not use its
# parent's pipes, so entries remember the pid that started them.
_PROCESSES: dict[tuple[str, ...], tuple[int, _Process]] = {}


def _process(argv: list[str]) -> _Process:
    key = tuple(argv)
    entry = _PROCESSES.get(key)
    if entry is not None and entry[0] == os.getpid() and entry[1].proc.poll() is None:
        return entry[1]
    if entry is not None and entry[0] == os.getpid():
        entry[1].close(kill=True)
    proc = _Process(argv)
    _PROCESSES[key] = (os.getpid(), proc)
    return proc


def _drop(argv: list[str]) -> None:
    entry = _PROCESSES.pop(tuple(argv), None)
    if entry is not None and entry[0] == os.getpid():
        entry[1].close(kill=True)


@atexit.register
def close_all() -> None:
    """Close every external bot this process started (stdin EOF, then kill after 2 s)."""
    for key, (pid, proc) in list(_PROCESSES.items()):
        if pid == os.getpid():
            proc.close()
        _PROCESSES.pop(key, None)


# --- the bot ---------------------------------------------------------------------------------


_TICK_NS = 10**9 // (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


class ExternalBot(Bot):
    """Asks the program for its moves; accounts the CPU the program spent (`outside_cpu_ns`)."""

    cpu_accounted = True  # its CPU per move is in the job's timing (`sim.jobs.play.BotClock`)

    def __init__(
        self, argv: list[str], label: str, timeout: float, batch: int, move_ms: float = 0.0
    ):
        if not argv or not argv[0]:
            raise ValueError(f"bot {label!r}: needs a command (cmd=PATH)")
        self.argv = list(argv)
        self.label = label
        self.timeout = float(timeout)
        self.batch = int(batch)
        self.move_ms = float(move_ms)
        self._next_id = 0
        self._outside_ns = 0

    def outside_cpu_ns(self) -> int:
        """CPU the program has spent on this bot's requests so far, in ns: what it reports
        (``cpu_us`` in its answers), else what the system counted for its process."""
        return self._outside_ns

    def deadline(self, positions: int) -> float:
        """Seconds a request of `positions` positions may take: `timeout` + `move_ms` each."""
        return self.timeout + positions * self.move_ms / 1000.0

    def act(self, st, slots, keys=None) -> np.ndarray:
        out = np.empty(slots.shape[0], np.int64)
        for lo in range(0, slots.shape[0], self.batch):
            part = slots[lo : lo + self.batch]
            mask = legal_actions(st, part)
            where = positions(st, part)
            rows, ids = np.nonzero(mask)
            ids = np.ascontiguousarray(ids)  # strided out of nonzero; orjson writes C order only
            bounds = np.searchsorted(rows, np.arange(part.shape[0] + 1)).tolist()
            for i, pos in enumerate(where):
                pos["legal"] = ids[bounds[i] : bounds[i + 1]]
            chosen = self._ask(st, "act", where, "actions")
            ok = (chosen >= 0) & (chosen < mask.shape[1])
            ok[ok] = mask[np.flatnonzero(ok), chosen[ok]]
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                _drop(self.argv)
                raise self._error(f"illegal action {int(chosen[i])}", where[i])
            out[lo : lo + part.shape[0]] = chosen
        return out

    def choose_columns(self, st, slots, seat, row, colours, legal, keys=None) -> np.ndarray:
        out = np.empty(slots.shape[0], np.intp)
        for lo in range(0, slots.shape[0], self.batch):
            part = slots[lo : lo + self.batch]
            where = positions(st, part, np.full(part.shape[0], seat, np.int8))
            bits = legal[lo : lo + self.batch]
            for pos, c, m in zip(
                where, colours[lo : lo + self.batch].tolist(), bits.tolist(), strict=True
            ):
                pos["row"] = row
                pos["colour"] = c
                pos["columns"] = [k for k in range(5) if m >> k & 1]
            chosen = self._ask(st, "columns", where, "columns")
            ok = (chosen >= 0) & (chosen < 5)
            ok[ok] = (bits[ok] >> chosen[ok]) & 1 == 1
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                _drop(self.argv)
                raise self._error(f"illegal column {int(chosen[i])} for row {row}", where[i])
            out[lo : lo + part.shape[0]] = chosen
        return out

    def _ask(self, st, kind: str, where: list[dict], field: str) -> np.ndarray:
        self._next_id += 1
        request = {
            "protocol": PROTOCOL,
            "id": self._next_id,
            "type": kind,
            "players": st.players,
            "wall": "gray" if st.gray else "coloured",
            "floor_slots": len(st.rule_set.floor),
            **_rules_fields(st),
            "move_ms": self.move_ms,
            "positions": where,
        }
        try:
            proc = _process(self.argv)
            answer = proc.exchange(_dumps(request) + b"\n", self.deadline(len(where)))
        except ExternalBotError as exc:
            _drop(self.argv)
            raise self._error(str(exc), where[0], batch=len(where)) from None
        except BaseException:  # e.g. a task time limit mid-exchange: the pipe is out of step
            _drop(self.argv)
            raise
        try:
            reply = _loads(answer)
            if not isinstance(reply, dict):
                raise ValueError("not a JSON object")
            if "error" in reply:
                raise ValueError(f"reported an error: {str(reply['error'])[:300]}")
            if reply.get("id") != self._next_id:
                raise ValueError(f"answer id {reply.get('id')!r}, expected {self._next_id}")
            values = reply.get(field)
            if not isinstance(values, list) or len(values) != len(where):
                raise ValueError(f"needs {field!r}: a list of {len(where)} integers")
            if not all(type(v) is int for v in values):
                raise ValueError(f"{field!r} must hold integers only")
            reported = reply.get("cpu_us")
            if reported is not None and (type(reported) is not int or reported < 0):
                raise ValueError(f"'cpu_us' must be a non-negative integer; got {reported!r}")
        except ValueError as exc:
            _drop(self.argv)
            text = answer[:200].decode(errors="replace")
            raise self._error(f"bad answer ({exc}): {text!r}", where[0], batch=len(where)) from None
        ticks = proc.cpu_ticks()
        if reported is not None:
            self._outside_ns += reported * 1000
        else:
            self._outside_ns += max(0, ticks - proc.cpu_seen) * _TICK_NS
        proc.cpu_seen = ticks
        return np.asarray(values, np.int64)

    def _error(self, what: str, pos: dict, batch: int = 0) -> ExternalBotError:
        at = f"game {pos['game']}, round {pos['round']}, seat {pos['seat']}"
        if batch > 1:
            at += f" (first of a request of {batch} positions)"
        return ExternalBotError(f"external bot {self.label!r}: {what} at {at}")


# --- registration ----------------------------------------------------------------------------


def _allowed() -> bool:
    return from_env(ExternalSettings).allow_cmd


def _check_players(params: dict) -> None:
    parse_players(params["players"], "parameter 'players'")


def _supports(params, players: int, wall: str) -> str | None:
    """The table refusal of an external bot's declared `walls` and `players` parameters."""
    counts = parse_players(params["players"], "players")
    return table_refusal(params["walls"], counts, players, wall)


def _check_cmd(params: dict) -> None:
    _check_players(params)
    if not params["cmd"]:
        raise ValueError("bot 'external': parameter 'cmd' is required (external:cmd=PATH)")
    if not _allowed():
        raise ValueError(
            f"bot 'external': running a command named in a job is off here; set {ENV_ALLOW_CMD}=1 "
            f"where the games are played to allow it, or use a bot registered by {ENV_NAMED}"
        )


def _cmd_argv(params: dict) -> list[str]:
    args = [a for a in params["args"].split(";") if a] if params["args"] else []
    return [params["cmd"], *args]


def _make_cmd_bot(params: dict) -> ExternalBot:
    _check_cmd(params)
    label = "external:cmd=" + params["cmd"] + (",args=" + params["args"] if params["args"] else "")
    return ExternalBot(
        _cmd_argv(params), label, params["timeout"], params["batch"], params["move_ms"]
    )


def register_external_bot(
    name: str,
    command: str | list[str],
    *,
    replace: bool = False,
    walls: str = "both",
    players: str = "234",
    move_ms: float = 0.0,
):
    """Register `name` as the external bot running `command` (a shell-style line or an argv).

    `walls`, `players` and `move_ms` are what the engine declares: the defaults of those
    parameters for this name, so a job at a table it does not play is refused at submit.
    """
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError(f"external bot {name!r}: empty command")
    declared = {"walls": walls, "players": players, "move_ms": move_ms}
    params = tuple(
        replace_field(p, default=declared[p.name]) if p.name in declared else p for p in PARAMS
    )
    _check_players({"players": params[-1].default})
    info = register_bot(
        name,
        f"External bot: runs {shlex.join(argv)} (JSON-lines protocol, docs/bots.md).",
        lambda params: ExternalBot(
            argv, name, params["timeout"], params["batch"], params["move_ms"]
        ),
        params,
        replace=replace,
        source="external",
        cost=lambda params: params["cost"],
        check=_check_players,
    )
    declare_supports(name, _supports)
    return info


def register_from_environment() -> None:
    """Register the bots named in ``AZULSIM_EXTERNAL_BOTS`` (``name=command;name2=command``)."""
    text = from_env(ExternalSettings).named
    for item in filter(None, (part.strip() for part in text.split(";"))):
        name, eq, command = item.partition("=")
        if "[" in name and "]" in item:  # name[walls=...,players=...]=command
            close = item.index("]") + 1
            name, (eq, command) = item[:close], (item[close : close + 1], item[close + 1 :])
        if eq != "=" or not command.strip():
            eq = ""
        if not eq or not command.strip():
            raise ValueError(f"{ENV_NAMED}: expected name=command; got {item!r}")
        name, declared = _declarations(name.strip(), item)
        register_external_bot(name, command, replace=True, **declared)


def _declarations(name: str, item: str) -> tuple[str, dict]:
    """``astra[walls=coloured,players=2,move_ms=100]`` -> ``("astra", {...})``."""
    if "[" not in name:
        return name, {}
    name, _, inner = name.partition("[")
    if not inner.endswith("]"):
        raise ValueError(f"{ENV_NAMED}: expected name[key=value,...]=command; got {item!r}")
    out: dict[str, Any] = {}
    for pair in filter(None, inner[:-1].split(",")):
        key, eq, value = pair.partition("=")
        if not eq or key not in ("walls", "players", "move_ms"):
            raise ValueError(
                f"{ENV_NAMED}: {name}: declare walls=, players= or move_ms=; got {pair!r}"
            )
        param = next(p for p in PARAMS if p.name == key)
        out[key] = param.coerce(value, bot=name)
    return name.strip(), out


def register_builtin() -> None:
    register_bot(
        "external",
        "Any program speaking the JSON-lines bot protocol on stdin/stdout (docs/bots.md); "
        f"cmd=PATH, args=A;B. Needs {ENV_ALLOW_CMD}=1 where the games are played.",
        _make_cmd_bot,
        CMD_PARAMS,
        source="builtin",
        cost=lambda params: params["cost"],
        check=_check_cmd,  # at parse time: a job that cannot run is refused at submit
    )
    declare_supports("external", _supports)
    register_from_environment()
