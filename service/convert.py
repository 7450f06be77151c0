"""Conversions between the API messages (`service.api`) and the domain objects of `sim`/`workers`.

Requests are validated here, once: each function raises ``ValueError`` with a message that starts
with the request field's path and says what is allowed, e.g.
``spec.configurations[0].players must be 2, 3 or 4; got 5``; the server turns it into
INVALID_ARGUMENT. Replies are built from plain objects (`workers.store.JobInfo`, the statistics
document, `sim.bots.registry.BotInfo`, `service.replay.GameReplay`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from sim.jobs.spec import JobSpec
from sim.quote import shown
from sim.rules.constants import DEFAULT_MAX_ROUNDS
from sim.rules.rulesets import MAX_MARKER_POINTS, RuleSet

from .api import azulsim_pb2 as pb

MAX_CONFIGURATIONS = 100  # a 10 x 10 sweep
MAX_BOT_SPEC_CHARS = 200
MAX_JOB_ID_CHARS = 64
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
DEFAULT_WATCH_MS = 500
REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")  # fullmatch: "$" would let a final "\n" in
JOB_ID = re.compile(r"[A-Za-z0-9._:\-]{1,64}")

SEATING = {
    pb.SEATING_UNSPECIFIED: "rotate",
    pb.SEATING_ROTATE: "rotate",
    pb.SEATING_FIXED: "fixed",
    pb.SEATING_SHUFFLE: "shuffle",
    pb.SEATING_MIRRORED: "mirrored",
}
SEATING_TO_PB = {
    "rotate": pb.SEATING_ROTATE,
    "fixed": pb.SEATING_FIXED,
    "shuffle": pb.SEATING_SHUFFLE,
    "mirrored": pb.SEATING_MIRRORED,
}
STOP_RULES = {pb.StopRule.SPRT: "sprt", pb.StopRule.PRECISION: "precision"}
STOP_RULES_TO_PB = {v: k for k, v in STOP_RULES.items()}
WALL = {pb.WALL_UNSPECIFIED: "coloured", pb.WALL_COLOURED: "coloured", pb.WALL_GRAY: "gray"}
WALL_TO_PB = {"coloured": pb.WALL_COLOURED, "gray": pb.WALL_GRAY}
MARKER = {pb.Rules.MARKER_FLOOR: "floor", pb.Rules.MARKER_OFF: "off"}
MARKER_TO_PB = {v: k for k, v in MARKER.items()}
# The Rules message's whole-number fields, named as the rule set's keys (`sim.rules.rulesets.KEYS`).
RULE_NUMBERS = (
    "row_bonus",
    "column_bonus",
    "colour_bonus",
    "tiles_per_factory",
    "tiles_per_colour",
    "end_rows",
)
STATES = ("QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


# --- requests ---------------------------------------------------------------------------------


def spec_from_proto(msg: pb.JobSpec, has_spec: bool = True, path: str = "spec") -> JobSpec:
    """A validated `JobSpec` from the request's ``spec`` (errors name ``spec.<field>``)."""
    if not has_spec:
        raise ValueError(f"{path} is required")
    if len(msg.configurations) > MAX_CONFIGURATIONS:
        raise ValueError(
            f"{path}.configurations must hold at most {MAX_CONFIGURATIONS} configurations; "
            f"got {len(msg.configurations)}"
        )
    configs = []
    for k, c in enumerate(msg.configurations):
        where = f"{path}.configurations[{k}]"
        for i, bot in enumerate(c.bots):
            if len(bot) > MAX_BOT_SPEC_CHARS:
                raise ValueError(
                    f"{where}.bots[{i}] must be at most {MAX_BOT_SPEC_CHARS} characters; "
                    f"got {len(bot)}"
                )
        if c.seating not in SEATING:
            raise ValueError(
                f"{where}.seating must be ROTATE, FIXED, SHUFFLE or MIRRORED; got {c.seating}"
            )
        if c.wall not in WALL:
            raise ValueError(f"{where}.wall must be COLOURED or GRAY; got {c.wall}")
        config = {
            "players": c.players,
            "bots": list(c.bots),
            "seating": SEATING[c.seating],
            "wall": WALL[c.wall],
        }
        if c.max_rounds:
            config["max_rounds"] = c.max_rounds
        if c.HasField("rules"):
            config["rules"] = rules_from_proto(c.rules, f"{where}.rules")
        configs.append(config)
    data: dict[str, Any] = {"configurations": configs, "games": msg.games, "seed": msg.seed}
    if msg.max_rounds:
        data["max_rounds"] = msg.max_rounds
    if msg.HasField("baseline"):
        data["baseline"] = msg.baseline
    if msg.HasField("stop"):
        data["stop"] = stop_from_proto(msg.stop, f"{path}.stop")
    if msg.HasField("ratings"):
        data["ratings"] = {"anchor": msg.ratings.anchor}
    if msg.sweep:
        data["sweep"] = list(msg.sweep)
    if msg.game_records:
        data["game_records"] = True
    if msg.pairs:
        data["pairs"] = [[p.configuration, p.baseline] for p in msg.pairs]
    try:
        return JobSpec.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{path}.{exc}" if path else str(exc)) from None


def spec_from_document(data: Any) -> JobSpec:
    """A job spec from its JSON form, as a spec file or the Python client gives it.

    The format is `sim.jobs.spec.JobSpec.from_dict`'s (``"seating": "rotate"``, defaults as on the
    command line). The proto's JSON mapping of `JobSpec` — what grpcurl sends: ``SEATING_ROTATE``,
    int64 numbers as strings, ``maxRounds`` — is read too, and so is a whole `SubmitJobRequest`
    (``{"spec": …, "request_id": …}``). Errors are those of the file format.
    """
    if (
        isinstance(data, Mapping)
        and "spec" in data
        and set(data) <= {"spec", "request_id", "requestId"}
    ):
        data = data["spec"]
    try:
        return JobSpec.from_dict(data)
    except ValueError as first:
        if not isinstance(data, Mapping):
            raise
        try:
            msg = json_format.ParseDict(data, pb.JobSpec())
        except json_format.ParseError:
            raise first from None
        return spec_from_proto(msg, path="")


def rules_from_proto(m: pb.Rules, path: str) -> dict[str, Any]:
    """The JSON form of a `Rules` message (`sim.rules.rulesets.RuleSet.from_dict`): only the fields
    it sets, so unset ones stay the printed game's; the values are checked there, the marker's
    encoding here (errors name ``path.field``)."""
    out: dict[str, Any] = {n: getattr(m, n) for n in RULE_NUMBERS if m.HasField(n)}
    for name in ("floor", "factories"):  # an empty list is unset: neither may be empty
        if getattr(m, name):
            out[name] = list(getattr(m, name))
    if m.marker == pb.Rules.MARKER_POINTS:
        if not m.HasField("marker_points"):
            raise ValueError(f"{path}.marker_points is required with marker MARKER_POINTS")
        if not 0 <= m.marker_points <= MAX_MARKER_POINTS:
            raise ValueError(
                f"{path}.marker_points must be a whole number from 0 to {MAX_MARKER_POINTS}; "
                f"got {m.marker_points}"
            )
        out["marker"] = m.marker_points
    elif m.HasField("marker_points"):
        raise ValueError(
            f"{path}.marker_points is only for marker MARKER_POINTS; got marker "
            f"{pb.Rules.Marker.Name(m.marker) if m.marker in (0, *MARKER) else m.marker}"
        )
    elif m.marker in MARKER:
        out["marker"] = MARKER[m.marker]
    elif m.marker:
        raise ValueError(
            f"{path}.marker must be MARKER_FLOOR, MARKER_OFF or MARKER_POINTS; got {m.marker}"
        )
    return out


def rules_to_proto(rules: RuleSet, every: bool = False) -> pb.Rules:
    """A `Rules` message of `rules` but its wall and round cap: the rules that differ from the
    printed game (a spec's echo), or with `every`, all of them (a replay's)."""
    values = rules.to_dict() if every else rules.changed()
    msg = pb.Rules()
    for key, value in values.items():
        if key in ("wall", "max_rounds"):
            continue
        if key == "marker":
            msg.marker = MARKER_TO_PB.get(value, pb.Rules.MARKER_POINTS)
            if value not in MARKER_TO_PB:
                msg.marker_points = int(value)
        elif key in ("floor", "factories"):
            getattr(msg, key).extend(value)
        else:
            setattr(msg, key, int(value))
    return msg


def rule_set_from_proto(m: pb.Rules, wall: str, max_rounds: int, path: str = "rules") -> RuleSet:
    """The whole rule set of a `Rules` message with its wall and round cap (0: the default)."""
    data = {**rules_from_proto(m, path), "wall": wall, "max_rounds": max_rounds}
    data["max_rounds"] = data["max_rounds"] or DEFAULT_MAX_ROUNDS
    return RuleSet.from_dict(data, path)


def stop_from_proto(m: pb.StopRule, path: str) -> dict[str, Any]:
    """The spec's ``stop`` dict of a `StopRule` (proto zeros read as the defaults); the values
    are validated by `sim.jobs.stopping.StopRule`."""
    if m.rule not in STOP_RULES:
        raise ValueError(f"{path}.rule must be SPRT or PRECISION; got {m.rule}")
    rule = STOP_RULES[m.rule]
    out: dict[str, Any] = {"rule": rule, "configuration": m.configuration}
    if m.check_every:
        out["check_every"] = m.check_every
    statistic = m.statistic or "elo"
    out["statistic"] = statistic
    if rule == "sprt":
        out["alpha"] = m.alpha or 0.05
        out["beta"] = m.beta or 0.05
        if statistic.startswith("paired_"):
            out.update(delta0=m.delta0, delta1=m.delta1)
        else:
            out.update(elo0=m.elo0, elo1=m.elo1)
    else:
        out["eps"] = m.eps
    return out


def spec_to_proto(spec: JobSpec) -> pb.JobSpec:
    return pb.JobSpec(
        configurations=[
            pb.Configuration(
                players=c.players,
                bots=list(c.bots),
                seating=SEATING_TO_PB[c.seating],
                wall=WALL_TO_PB[c.wall],
                max_rounds=c.max_rounds or 0,
                rules=None if c.rules.printed else rules_to_proto(c.rules),
            )
            for c in spec.configurations
        ],
        games=spec.games,
        seed=spec.seed,
        max_rounds=spec.max_rounds,
        baseline=spec.baseline,
        stop=stop_to_proto(spec.stop),
        ratings=pb.Ratings(anchor=spec.ratings.anchor) if spec.ratings is not None else None,
        sweep=list(spec.sweep or ()),
        game_records=spec.game_records,
        pairs=[pb.Pair(configuration=k, baseline=b) for k, b in spec.pairs],
    )


def stop_to_proto(rule) -> pb.StopRule | None:
    if rule is None:
        return None
    d = rule.to_dict()
    return pb.StopRule(
        rule=STOP_RULES_TO_PB[d["rule"]],
        configuration=d["configuration"],
        statistic=d["statistic"],
        elo0=d.get("elo0") or 0.0,
        elo1=d.get("elo1") or 0.0,
        delta0=d.get("delta0") or 0.0,
        delta1=d.get("delta1") or 0.0,
        alpha=d.get("alpha") or 0.0,
        beta=d.get("beta") or 0.0,
        eps=d.get("eps") or 0.0,
        check_every=d["check_every"],
    )


def check_request_id(request_id: str) -> str:
    if request_id and not REQUEST_ID.fullmatch(request_id):
        raise ValueError(
            "request_id must be 1 to 128 characters from A-Z a-z 0-9 . _ : -; "
            f"got {shown(request_id)}"
        )
    return request_id


def check_job_id(job_id: str) -> str:
    if not job_id:
        raise ValueError("job_id is required")
    if not JOB_ID.fullmatch(job_id):
        raise ValueError(f"job_id is not a job id; got {shown(job_id)}")
    return job_id


def page_size(value: int) -> int:
    if not 0 <= value <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be in 0..{MAX_PAGE_SIZE}; got {value}")
    return value or DEFAULT_PAGE_SIZE


def replay_target(request: pb.ReplayGameRequest) -> tuple[str, int, int]:
    """``(job_id, configuration, game)`` of a ReplayGame request; the ranges of `configuration`
    and `game` within the job are checked when it is replayed (`service.replay.replay_game`)."""
    job_id = check_job_id(request.job_id)
    if request.configuration < 0:
        raise ValueError(f"configuration must be at least 0; got {request.configuration}")
    if request.game < 0:
        raise ValueError(f"game must be at least 0; got {request.game}")
    return job_id, request.configuration, request.game


def watch_interval_s(value: int) -> float:
    if value and not 100 <= value <= 60000:
        raise ValueError(f"interval_ms must be 0 or in 100..60000; got {value}")
    return (value or DEFAULT_WATCH_MS) / 1000.0


# --- replies ----------------------------------------------------------------------------------


def _timestamp(value: Any) -> Timestamp | None:
    """A Timestamp from unix seconds (int/float/str) or a datetime; None for unset values."""
    if value is None or value == "" or value == 0:
        return None
    ts = Timestamp()
    if isinstance(value, datetime):
        ts.FromDatetime(value)
        return ts
    seconds = float(value)
    ts.FromNanoseconds(int(round(seconds * 1e9)))
    return ts


def _spec_of(info: Any) -> JobSpec | None:
    spec = getattr(info, "spec", None)
    if spec is None or isinstance(spec, JobSpec):
        return spec
    if isinstance(spec, str | bytes):
        return JobSpec.from_json(spec)
    return JobSpec.from_dict(spec)


def job_to_proto(info: Any) -> pb.Job:
    """A `Job` message from a `workers.store.JobInfo`."""
    job = pb.Job(
        job_id=info.job_id,
        state=pb.JobState.Value(info.state) if info.state in STATES else 0,
        request_id=info.request_id or "",
        games_total=int(info.games_total or 0),
        games_done=int(info.games_done or 0),
        chunks_total=int(info.chunks_total or 0),
        chunks_done=int(info.chunks_done or 0),
        error=info.error or "",
        rules_version=info.rules_version or "",
    )
    spec = _spec_of(info)
    if spec is not None:
        job.spec.CopyFrom(spec_to_proto(spec))
        summary = stopping_summary(info, spec)
        if summary is not None:
            job.stopping.CopyFrom(stopping_to_proto(summary))
    for name in ("created_at", "started_at", "finished_at"):
        ts = _timestamp(getattr(info, name, None))
        if ts is not None:
            getattr(job, name).CopyFrom(ts)
    return job


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def stopping_summary(info: Any, spec: JobSpec) -> dict[str, Any] | None:
    """The ``stopping`` section of a job with a rule, from its record's stored prefix state."""
    if spec.stop is None:
        return None
    from sim.jobs.sequential import Prefix

    raw = getattr(info, "stopping", "") or ""
    return Prefix.restore(spec, json.loads(raw) if raw else None).summary()


def stopping_to_proto(s: dict[str, Any]) -> pb.Stopping:
    bounds = s["llr_bounds"] or [None, None]
    ci = s["ci95"] or [None, None]
    return pb.Stopping(
        reason=s["reason"] or "",
        games=int(s["games"]),
        llr=_nan(s["llr"]),
        llr_lower=_nan(bounds[0]),
        llr_upper=_nan(bounds[1]),
        estimate=_nan(s["estimate"]),
        ci95_low=_nan(ci[0]),
        ci95_high=_nan(ci[1]),
        check_points=len(s["check_points"]),
    )


def statistics_parts(reply: pb.Statistics, piece: int) -> list[pb.Statistics]:
    """`reply` as StreamStatistics sends it: the reply with the first `piece` characters of its
    document, then one message per next piece. The document is ASCII (``json.dumps`` escapes
    the rest), so a cut never splits a character."""
    text = reply.statistics_json
    first = pb.Statistics()
    first.CopyFrom(reply)
    first.statistics_json = text[:piece]
    rest = range(piece, len(text), piece)
    return [first, *(pb.Statistics(statistics_json=text[i : i + piece]) for i in rest)]


def statistics_joined(parts) -> pb.Statistics:
    """The one reply StreamStatistics' `parts` make (the inverse of `statistics_parts`)."""
    reply: pb.Statistics | None = None
    pieces: list[str] = []
    for part in parts:
        if reply is None:
            reply = part
        pieces.append(part.statistics_json)
    if reply is None:
        raise ValueError("StreamStatistics sent no message")
    reply.statistics_json = "".join(pieces)
    return reply


def statistics_to_proto(info: Any, doc: dict[str, Any]) -> pb.Statistics:
    """The `Statistics` reply: the document as JSON text plus its key figures typed."""
    cpu = (doc.get("timing") or {}).get("cpu")
    doc = {k: v for k, v in doc.items() if k != "timing"}
    if cpu:  # the bots' measured CPU per move (sim.stats.cpu) is the one timing a job keeps
        doc["timing"] = {"cpu": cpu}
    bots = []
    for cfg in doc.get("configurations", []):
        for name, g in cfg.get("bots", {}).items():
            ci = g.get("win_rate_ci95") or [None, None]
            bots.append(
                pb.BotSummary(
                    configuration=int(cfg.get("index", 0)),
                    bot=name,
                    player_games=int(g.get("player_games", 0)),
                    wins=int(g.get("wins", 0)),
                    win_rate=_nan(g.get("win_rate")),
                    win_rate_ci95_low=_nan(ci[0]),
                    win_rate_ci95_high=_nan(ci[1]),
                    score_mean=_nan(g.get("score", {}).get("mean")),
                )
            )
    return pb.Statistics(
        job=job_to_proto(info),
        partial=info.state != "SUCCEEDED",
        statistics_json=json.dumps(doc, separators=(",", ":")),
        games_done=int(doc.get("games_done", 0)),
        games_finished=int(doc.get("games_finished", 0)),
        games_truncated=int(doc.get("games_truncated", 0)),
        bots=bots,
    )


def _param_text(param: Any, value: Any) -> str:
    return param.format(value) if hasattr(param, "format") else str(value)


def bots_to_proto(infos: list[Any]) -> pb.ListBotsResponse:
    out = pb.ListBotsResponse()
    for info in infos:
        bot = out.bots.add(name=info.name, description=info.description)
        for p in info.params:
            param = bot.parameters.add(
                name=p.name,
                type=p.type,
                default=_param_text(p, p.default),
                choices=list(p.choices),
                doc=p.doc,
            )
            if p.min is not None:
                param.min = float(p.min)
            if p.max is not None:
                param.max = float(p.max)
    return out


def _counts(values) -> pb.TileCounts:
    return pb.TileCounts(counts=[int(v) for v in values])


def state_to_proto(s: dict[str, Any]) -> pb.GameState:
    """A `GameState` from a `sim.rules.engine.snapshot` dict."""
    return pb.GameState(
        round=s["round"],
        turn=s["turn"],
        current=s["current"],
        factories=[_counts(f) for f in s["factories"]],
        centre=_counts(s["centre"]),
        marker_in_centre=s["marker_in_centre"],
        marker_holder=s["marker_holder"],
        bag=_counts(s["bag"]),
        lid=_counts(s["lid"]),
        boards=[
            pb.Board(
                lines=[pb.PatternLine(colour=c, count=n) for c, n in s["lines"][p]],
                wall=[cell for row in s["wall"][p] for cell in row],
                floor=s["floor"][p],
                score=s["scores"][p],
            )
            for p in range(len(s["scores"]))
        ],
    )


def state_from_proto(m: pb.GameState) -> dict[str, Any]:
    """The snapshot dict back from a `GameState` (for text rendering on the client)."""
    return {
        "round": m.round,
        "turn": m.turn,
        "current": m.current,
        "factories": [list(f.counts) for f in m.factories],
        "centre": list(m.centre.counts),
        "marker_in_centre": m.marker_in_centre,
        "marker_holder": m.marker_holder,
        "bag": list(m.bag.counts),
        "lid": list(m.lid.counts),
        "lines": [[[ln.colour, ln.count] for ln in b.lines] for b in m.boards],
        "wall": [[list(b.wall[5 * r : 5 * r + 5]) for r in range(5)] for b in m.boards],
        "floor": [b.floor for b in m.boards],
        "scores": [b.score for b in m.boards],
    }


def replay_to_proto(job_id: str, replay: Any, rules_version: str) -> pb.Replay:
    """A `Replay` message from a `service.replay.GameReplay`."""
    return pb.Replay(
        job_id=job_id,
        configuration=replay.configuration,
        game=replay.game,
        players=replay.players,
        wall=WALL_TO_PB[replay.wall],
        seat_bots=replay.seat_bots,
        first_player=replay.first_player,
        steps=[
            pb.ReplayStep(
                kind=pb.ReplayStep.Kind.Value(step.kind),
                seat=step.seat,
                action=step.action,
                action_text=step.action_text,
                state=state_to_proto(step.state),
            )
            for step in replay.steps
        ],
        scores=replay.scores,
        end_reason=replay.end_reason,
        winners=replay.winners,
        rules_version=rules_version,
        rules=rules_to_proto(replay.rules, every=True),
        max_rounds=replay.rules.max_rounds,
    )


def replay_from_proto(m: pb.Replay):
    """A `service.replay.GameReplay` back from a `Replay` message (for `format_replay`)."""
    from .replay import GameReplay, Step

    return GameReplay(
        configuration=m.configuration,
        game=m.game,
        players=m.players,
        wall=WALL.get(m.wall, "coloured"),
        seat_bots=list(m.seat_bots),
        first_player=m.first_player,
        steps=[
            Step(pb.ReplayStep.Kind.Name(s.kind), state_from_proto(s.state), s.seat, s.action)
            for s in m.steps
        ],
        scores=list(m.scores),
        end_reason=m.end_reason,
        winners=list(m.winners),
        rules=rule_set_from_proto(m.rules, WALL.get(m.wall, "coloured"), m.max_rounds),
    )
