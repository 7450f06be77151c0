"""Property-based fuzzing of every RPC against one running server (real Redis, no worker).

Hypothesis generates the request messages of all ten ``azulsim.v1.AzulSim`` methods: valid
requests with at most one field broken in a known way (so the expected status and the field the
error must name are known), random and malformed values (huge and negative numbers, odd and
empty strings, unknown bots and parameters, random job ids), random bytes in place of a message,
unknown fields, and requests over the server's message limit. Every call has a deadline. For
every request:

- the status is never INTERNAL, UNKNOWN, UNAVAILABLE or DEADLINE_EXCEEDED (no crash, no
  unmapped exception, no hang);
- an invalid field gives INVALID_ARGUMENT whose message names the field (``spec.games``,
  ``spec.configurations[1].bots[0]``, ``request_id``, ``job_id``, ``page_size``…);
- an unknown (well-formed) job id gives NOT_FOUND, a request over the limit RESOURCE_EXHAUSTED;
- a valid request succeeds;
- no error message is longer than `MAX_DETAILS` (300) characters, however long the value sent
  (a message quotes at most a short prefix of a bad value);

and after each test the server still answers its health check with SERVING. The number of
requests sent is printed at the end of the module (``-s`` shows it); the default run sends about
2,300. ``AZULSIM_FUZZ_SCALE=4`` multiplies the examples per test.
"""

from __future__ import annotations

import logging
import os
import re
import uuid

import grpc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from service.api import azulsim_pb2 as pb
from service.client import Client
from service.config import ServerConfig
from service.testing import ServerThread
from sim.bots.registry import parse_bot_spec
from sim.rules.rulesets import RuleSet
from tests.stack_util import api_thread

C = grpc.StatusCode
SCALE = float(os.environ.get("AZULSIM_FUZZ_SCALE", "1"))
MAX_MESSAGE = 1024 * 1024  # replies share it: a replay of one game is ~100 kB
MAX_GAMES = 10_000
DEADLINE = 5.0
SERVICE = "/azulsim.v1.AzulSim/"
# Never acceptable: a crash or unmapped exception (INTERNAL, UNKNOWN), a hang
# (DEADLINE_EXCEEDED), a dead server (UNAVAILABLE), a method that vanished (UNIMPLEMENTED).
FORBIDDEN = {C.INTERNAL, C.UNKNOWN, C.UNAVAILABLE, C.DEADLINE_EXCEEDED, C.UNIMPLEMENTED}
ID_CHARS = re.compile(r"[A-Za-z0-9._:\-]+")  # request and job ids, per the proto
MAX_DETAILS = 300  # the longest error message allowed, whatever was sent
LONG = ["x" * 10_000, "é" * 5_000, "a:" * 3_000, "9" * 20_000, "\x00" * 5_000, "\\" * 999]
# (each under MAX_MESSAGE and over any field limit; NUL and backslash grow 4x and 2x in a repr)

SENT = {"requests": 0}
CODES: dict[str, int] = {}


def fuzz_settings(examples: int):
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


# --- the server -------------------------------------------------------------------------------


class Fuzz:
    """The module's server, a client on it, and jobs that exist."""

    def __init__(self, server: ServerThread):
        self.server = server
        self.client = Client(server.address, token="", timeout=DEADLINE)
        self.channel = self.client.channel
        self.stub = self.client.stub
        self.request_ids: set[str] = set()
        two = pb.JobSpec(
            configurations=[
                pb.Configuration(players=2, bots=["greedy", "random"]),
                pb.Configuration(players=3, bots=["random"] * 3, wall=pb.WALL_GRAY),
            ],
            games=10,
            seed=5,
        )
        self.queued = self.client.submit(two)[0]  # stays QUEUED (no worker); 2 configs x 10 games
        self.cancelled = self.client.submit(two)[0]
        self.client.cancel(self.cancelled.job_id)
        self.known = {self.queued.job_id: self.queued, self.cancelled.job_id: self.cancelled}

    def unary(self, method: str, request, timeout: float = DEADLINE) -> tuple[C, str, object]:
        """Call `method` with `request` (a message or raw bytes); ``(code, details, reply)``."""
        raw = isinstance(request, bytes)
        call = self.channel.unary_unary(
            SERVICE + method,
            request_serializer=None if raw else type(request).SerializeToString,
            response_deserializer=None,
        )
        SENT["requests"] += 1
        try:
            reply = call(request, timeout=timeout)
            code, details = C.OK, ""
        except grpc.RpcError as exc:
            reply, code, details = None, exc.code(), exc.details() or ""
        return self._seen(method, code, details), details, reply

    def watch(self, request, method: str = "WatchJob") -> tuple[C, str, object]:
        """WatchJob (or another streaming `method`): the first message (or the error), then
        cancel the stream."""
        raw = isinstance(request, bytes)
        call = self.channel.unary_stream(
            SERVICE + method,
            request_serializer=None if raw else type(request).SerializeToString,
            response_deserializer=None,
        )(request, timeout=DEADLINE)
        SENT["requests"] += 1
        try:
            reply = next(call, None)
            code, details = C.OK, ""
        except grpc.RpcError as exc:
            reply, code, details = None, exc.code(), exc.details() or ""
        finally:
            call.cancel()
        return self._seen(method, code, details), details, reply

    def _seen(self, method: str, code: C, details: str) -> C:
        CODES[code.name] = CODES.get(code.name, 0) + 1
        assert code not in FORBIDDEN, f"{method}: {code.name} {details[:500]}"
        assert len(details) <= MAX_DETAILS, f"{method}: {len(details)} characters: {details[:400]}"
        return code

    def healthy(self) -> None:
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        health = health_pb2_grpc.HealthStub(self.channel)
        reply = health.Check(health_pb2.HealthCheckRequest(service="azulsim.v1.AzulSim"), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


class _ErrorLog(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def fz(redis_server):
    tag = uuid.uuid4().hex[:8]
    env = {
        "AZULSIM_REDIS_URL": f"{redis_server}/0",  # db 0: the per-test databases are 1..15
        "AZULSIM_PREFIX": f"fuzz{tag}",
        "AZULSIM_QUEUE": f"fuzz{tag}.chunks",
    }
    config = ServerConfig(
        max_message_bytes=MAX_MESSAGE,
        max_games_per_job=MAX_GAMES,
        max_queued_jobs=0,  # no limit: every valid submit must succeed
    )
    errors = _ErrorLog()
    logging.getLogger().addHandler(errors)
    server = api_thread(env, config).start()
    fuzz = Fuzz(server)
    try:
        yield fuzz
    finally:
        logging.getLogger().removeHandler(errors)
    fuzz.healthy()
    # No traceback either: nothing the requests did was logged at ERROR (an unmapped exception
    # in a servicer, grpc's "Unexpected ... raised by servicer method").
    assert not errors.records, "\n".join(r.getMessage() for r in errors.records[:5])
    fuzz.client.close()
    server.stop()
    import redis

    client = redis.Redis.from_url(env["AZULSIM_REDIS_URL"])
    for pattern in (f"fuzz{tag}:*", f"fuzz{tag}.chunks*"):
        keys = list(client.scan_iter(match=pattern, count=1000))
        if keys:
            client.delete(*keys)
    client.close()
    print(f"\ntest_fuzz: {SENT['requests']} requests; status codes {dict(sorted(CODES.items()))}")


@pytest.fixture
def server(fz):
    yield fz
    fz.healthy()  # the server still answers after every test


# --- strategies -------------------------------------------------------------------------------

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
uint64 = st.integers(0, 2**64 - 1)
odd_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "\n", "\x00", "é", "💥", "a\nb", "null", "-1", "../x", "%s%n"]),
)

GOOD_BOTS = st.one_of(
    st.sampled_from(
        [
            "greedy",
            "random",
            "heuristic",
            "heuristic:floor=2.50",
            "heuristic:floor=-0",
            "rollout:width=2",
            "rollout:width=03",
        ]
    ),
    st.builds(  # plain decimals only (no exponent): positional, up to 20 decimals
        lambda k, v, d: f"heuristic:{k}={v:.{d}f}",
        st.sampled_from(["floor", "points", "bonus", "marker"]),
        st.floats(0, 5, allow_nan=False),
        st.integers(0, 20),
    ),
    st.builds(lambda w: f"rollout:width={w}", st.integers(1, 12)),
)
BAD_BOTS = st.one_of(
    st.sampled_from(
        [
            "",
            "nope",
            "1abc",
            "greedy:",
            "greedy:x=1",
            "heuristic:floor=",
            "heuristic:floor=abc",
            "heuristic:floor=nan",
            "heuristic:floor=inf",
            "heuristic:floor=-1e308",
            "heuristic:floor=6",
            "heuristic:floor=1,floor=2",
            "heuristic:=3",
            "heuristic:nope=1",
            "rollout:width=2.5",
            "rollout:width=99999999999999999999",
            "random|x",
            "greedy\x00",
            "x" * 201,
            " greedy",
            "greedy\n",
            "heuristic: floor=1",
            "heuristic:floor=0_5",
            "heuristic:floor=\u0663",
            "heuristic:floor=1e-400",
            "heuristic:floor=1e0",
            "heuristic:floor=+1",
            "rollout:width=\u0663",
            *LONG,
        ]
    ),
    st.text(max_size=60).filter(lambda t: not _bot_ok(t)),
)


def _bot_ok(text: str) -> bool:
    try:
        parse_bot_spec(text)
    except ValueError:
        return False
    return len(text) <= 200


# The whole-number rules of a configuration (pb.Rules) and their limits (docs/rules.md, "Rule
# variants"); tiles per factory at most 7 in valid rules, so 9 factories deal at most 63 tiles.
RULE_LIMITS = {
    "row_bonus": (0, 50),
    "column_bonus": (0, 50),
    "colour_bonus": (0, 50),
    "tiles_per_factory": (1, 10),
    "tiles_per_colour": (1, 50),
    "end_rows": (1, 5),
}


@st.composite
def valid_rules(draw) -> pb.Rules | None:
    """None (the printed game) or a Rules message with some fields set within their limits."""
    if draw(st.booleans()):
        return None
    rules = pb.Rules()
    for name, (low, high) in RULE_LIMITS.items():
        if draw(st.booleans()):
            setattr(rules, name, draw(st.integers(low, min(high, 7))))
    if draw(st.booleans()):
        rules.floor.extend(draw(st.lists(st.integers(0, 20), min_size=1, max_size=7)))
    if draw(st.booleans()):
        rules.factories.extend(draw(st.lists(st.integers(1, 9), min_size=3, max_size=3)))
    rules.marker = draw(st.sampled_from(pb.Rules.Marker.values()))
    if rules.marker == pb.Rules.MARKER_POINTS:
        rules.marker_points = draw(st.integers(0, 20))
    return rules


@st.composite
def bad_rule(draw, rules: pb.Rules) -> str:
    """Break one field of `rules` (valid or empty); the field the message must name."""
    name = draw(st.sampled_from([*RULE_LIMITS, "floor", "factories", "marker", "marker_points"]))
    if name in RULE_LIMITS:
        low, high = RULE_LIMITS[name]
        setattr(rules, name, draw(int32.filter(lambda v: not low <= v <= high)))
    elif name == "floor":
        del rules.floor[:]
        long = st.lists(st.integers(0, 20), min_size=8, max_size=20)
        rules.floor.extend(draw(st.one_of(long, st.just([1, 2, draw(st.integers(21, 99))]))))
    elif name == "factories":
        del rules.factories[:]
        size = draw(st.sampled_from([1, 2, 4, 9]))
        rules.factories.extend(draw(st.lists(st.integers(1, 9), min_size=size, max_size=size)))
    elif name == "marker":
        rules.marker = draw(int32.filter(lambda v: v not in pb.Rules.Marker.values()))
        rules.ClearField("marker_points")
    else:
        rules.marker = pb.Rules.MARKER_POINTS
        rules.marker_points = draw(int32.filter(lambda v: not 0 <= v <= 20))
    return name


@st.composite
def valid_spec(draw) -> pb.JobSpec:
    n = draw(st.integers(1, 3))
    configs = []
    for _ in range(n):
        players = draw(st.sampled_from([2, 3, 4]))
        configs.append(
            pb.Configuration(
                players=players,
                bots=draw(st.lists(GOOD_BOTS, min_size=players, max_size=players)),
                seating=draw(st.integers(0, 3)),
                wall=draw(st.integers(0, 2)),
                rules=draw(valid_rules()),
            )
        )
    return pb.JobSpec(
        configurations=configs,
        games=draw(st.integers(1, MAX_GAMES // n)),
        seed=draw(st.integers(0, 2**63 - 1)),
        max_rounds=draw(st.integers(0, 1000)),
    )


# A mutation: (name, what it changes) -> the expected code and the field the message names.
MUTATIONS = [
    "none",
    "players",
    "bots_count",
    "bad_bot",
    "seating",
    "wall",
    "rules",
    "games_low",
    "games_over_limit",
    "seed",
    "max_rounds",
    "no_configurations",
    "too_many_configurations",
    "request_id",
    "no_spec",
]


@st.composite
def submit_case(draw):
    """``(request, expected code, field path the message names)``."""
    spec = draw(valid_spec())
    request_id = draw(st.one_of(st.just(""), st.from_regex(r"\A[A-Za-z0-9._:\-]{1,40}\Z")))
    mutation = draw(st.sampled_from(MUTATIONS))
    k = draw(st.integers(0, len(spec.configurations) - 1))
    cfg = spec.configurations[k]
    where = f"spec.configurations[{k}]"
    code, field = C.INVALID_ARGUMENT, None
    if mutation == "none":
        code = C.OK
    elif mutation == "players":
        cfg.players = draw(int32.filter(lambda p: p not in (2, 3, 4)))
        field = f"{where}.players"
    elif mutation == "bots_count":
        extra = draw(st.sampled_from([-1, 1, 5]))
        bots = list(cfg.bots)
        bots = bots[:extra] if extra < 0 else bots + ["greedy"] * extra
        del cfg.bots[:]
        cfg.bots.extend(bots)
        field = f"{where}.bots"
    elif mutation == "bad_bot":
        i = draw(st.integers(0, cfg.players - 1))
        cfg.bots[i] = draw(BAD_BOTS)
        field = f"{where}.bots[{i}]"
    elif mutation == "seating":
        # Not one of the enum's numbers, read from the proto so a new seating cannot make it valid.
        cfg.seating = draw(int32.filter(lambda v: v not in pb.Seating.values()))
        field = f"{where}.seating"
    elif mutation == "wall":
        cfg.wall = draw(int32.filter(lambda v: v not in pb.Wall.values()))
        field = f"{where}.wall"
    elif mutation == "rules":
        field = f"{where}.rules.{draw(bad_rule(cfg.rules))}"
    elif mutation == "games_low":
        spec.games = draw(st.integers(-(2**63), 0))
        field = "spec.games"
    elif mutation == "games_over_limit":
        spec.games = draw(st.integers(MAX_GAMES // len(spec.configurations) + 1, 2**63 - 1))
        code, field = C.RESOURCE_EXHAUSTED, "spec.games"
    elif mutation == "seed":
        spec.seed = draw(st.integers(2**63, 2**64 - 1))
        field = "spec.seed"
    elif mutation == "max_rounds":
        spec.max_rounds = draw(int32.filter(lambda v: not 0 <= v <= 1000))
        field = "spec.max_rounds"
    elif mutation == "no_configurations":
        del spec.configurations[:]
        field = "spec.configurations"
    elif mutation == "too_many_configurations":
        first = spec.configurations[0]
        spec.configurations.extend([first] * draw(st.integers(101, 120)))
        field = "spec.configurations"
    elif mutation == "request_id":
        request_id = draw(
            st.one_of(
                st.text(min_size=1, max_size=40).filter(lambda t: not ID_CHARS.fullmatch(t)),
                st.just("x" * 129),
                st.sampled_from(["run-1\n", "a b", "ключ", "id/1", "\n", *LONG]),
            )
        )
        field = "request_id"
    request = pb.SubmitJobRequest(spec=spec, request_id=request_id)
    if mutation == "no_spec":
        request = pb.SubmitJobRequest(request_id=request_id)
        field = "spec"
    return request, code, field


job_ids = st.one_of(
    st.just(""),
    st.text(max_size=80),
    st.from_regex(r"\A[A-Za-z0-9._:\-]{1,64}\Z"),
    st.just("0123456789abcdef0123456789abcdef"),
    st.sampled_from(["../../etc/passwd", "a" * 65, "*", "{x}", "abc\n", "x:job:{y}", " a", *LONG]),
)


def expected_for_job_id(job_id: str) -> tuple[C | None, str | None]:
    """INVALID_ARGUMENT naming job_id, or None when it is well formed."""
    if not job_id or len(job_id) > 64 or not ID_CHARS.fullmatch(job_id):
        return C.INVALID_ARGUMENT, "job_id"
    return None, None


def _rule_set(rules: pb.Rules) -> RuleSet:
    from service.convert import rules_from_proto

    return RuleSet.from_dict(rules_from_proto(rules, "rules"))


def assert_names(details: str, field: str) -> None:
    assert field in details, f"the message does not name {field!r}: {details!r}"


# --- the tests --------------------------------------------------------------------------------


@fuzz_settings(700)
@given(case=submit_case())
@example(case=(pb.SubmitJobRequest(spec=pb.JobSpec(), request_id=""), C.INVALID_ARGUMENT, "spec"))
def test_submit_job(server, case):
    request, expected, field = case
    rid = request.request_id
    code, details, reply = server.unary("SubmitJob", request)
    if expected == C.OK and rid and rid in server.request_ids:
        # The id was used before: the same job (OK) or, for another spec, ALREADY_EXISTS.
        assert code in (C.OK, C.ALREADY_EXISTS), (code, details)
        return
    assert code == expected, (request, code, details)
    if field is not None:
        assert_names(details, field)
    if code == C.OK:
        server.request_ids.add(rid)
        answer = pb.SubmitJobResponse.FromString(reply)
        job, spec = answer.job, request.spec
        assert answer.created and job.state == pb.QUEUED and job.job_id
        assert job.games_total == spec.games * len(spec.configurations)
        assert job.spec.seed == spec.seed and job.request_id == rid
        for sent, echoed in zip(spec.configurations, job.spec.configurations, strict=True):
            assert list(echoed.bots) == [parse_bot_spec(b).label for b in sent.bots]
            assert _rule_set(echoed.rules) == _rule_set(sent.rules)  # the same rules come back


@fuzz_settings(250)
@given(job_id=job_ids, known=st.booleans(), interval=st.one_of(st.just(0), int32))
# An unknown id of the most characters the API takes: its NOT_FOUND quotes it whole.
@example(job_id="0" * 64, known=False, interval=0)
def test_get_cancel_statistics_watch_by_job_id(server, job_id, known, interval):
    if known:
        job_id = server.queued.job_id if interval % 2 else server.cancelled.job_id
    code_id, _ = expected_for_job_id(job_id)
    for method, request in (
        ("GetJob", pb.GetJobRequest(job_id=job_id)),
        ("GetStatistics", pb.GetStatisticsRequest(job_id=job_id)),
    ):
        code, details, reply = server.unary(method, request)
        if code_id:
            assert code == code_id and "job_id" in details, (method, job_id, code, details)
        elif job_id in server.known:
            assert code == C.OK, (method, code, details)
        else:
            assert code == C.NOT_FOUND and job_id in details, (method, code, details)
    code, details, reply = server.watch(pb.WatchJobRequest(job_id=job_id, interval_ms=interval))
    if code_id:
        assert code == code_id and "job_id" in details
    elif interval and not 100 <= interval <= 60000:
        assert code == C.INVALID_ARGUMENT and "interval_ms" in details, (code, details)
    elif job_id in server.known:
        assert code == C.OK and pb.Job.FromString(reply).job_id == job_id
    else:
        assert code == C.NOT_FOUND, (code, details)
    # ExportGames streams a job's records: neither known job asked for any.
    code, details, _ = server.watch(pb.ExportGamesRequest(job_id=job_id), "ExportGames")
    if code_id:
        assert code == code_id and "job_id" in details, (code, details)
    elif job_id in server.known:
        assert code == C.FAILED_PRECONDITION and "game_records" in details, (code, details)
    else:
        assert code == C.NOT_FOUND and job_id in details, (code, details)
    if not known:  # cancelling the known jobs is covered below; keep the QUEUED one queued
        code, details, _ = server.unary("CancelJob", pb.CancelJobRequest(job_id=job_id))
        if code_id:
            assert code == code_id and "job_id" in details
        else:
            assert code == C.NOT_FOUND, (code, details)


def test_cancel_known_jobs(server):
    for job in (server.cancelled, server.cancelled):  # cancelling twice is not an error
        code, details, reply = server.unary("CancelJob", pb.CancelJobRequest(job_id=job.job_id))
        assert code == C.OK and pb.Job.FromString(reply).state == pb.CANCELLED, details


@fuzz_settings(250)
@given(
    job_id=job_ids,
    known=st.booleans(),
    configuration=st.one_of(st.integers(-2, 3), int32),
    game=st.one_of(st.integers(-2, 12), int64),
)
def test_replay_game(server, job_id, known, configuration, game):
    if known:
        job_id = server.queued.job_id
    request = pb.ReplayGameRequest(job_id=job_id, configuration=configuration, game=game)
    code, details, reply = server.unary("ReplayGame", request, timeout=30)
    bad_id, _ = expected_for_job_id(job_id)
    if bad_id:
        assert code == bad_id and "job_id" in details, (code, details)
    elif configuration < 0:
        assert code == C.INVALID_ARGUMENT and details.startswith("configuration"), details
    elif game < 0:
        assert code == C.INVALID_ARGUMENT and details.startswith("game"), details
    elif not known:
        assert code == C.NOT_FOUND, (code, details)
    elif configuration > 1:
        assert code == C.INVALID_ARGUMENT and "configuration must be in 0..1" in details, details
    elif game > 9:
        assert code == C.INVALID_ARGUMENT and "game must be in 0..9" in details, details
    else:
        assert code == C.OK, (code, details)
        replay = pb.Replay.FromString(reply)
        assert replay.job_id == job_id and replay.game == game and replay.steps


def _b64(raw: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@fuzz_settings(250)
@given(
    page_size=st.one_of(st.integers(-2, 1002), int32),
    page_token=st.one_of(
        st.just(""),
        st.just("<real>"),  # a next_page_token the server gave
        st.sampled_from(["<real>=", "<real>==", "<real>\n", " <real>", "<real>x", "<real>+"]),
        st.integers(-(10**30), 10**30).map(str),  # the old plain-integer tokens
        st.sampled_from(["+3", " 3", "3_0", "\u0663", "-1", "99999999999999999999999", "0"]),
        st.builds(_b64, st.binary(max_size=40)),  # well-formed base64 of anything
        st.sampled_from(
            [
                _b64(b"v1.0"),
                _b64(b"v1.-1"),
                _b64(b"v1.01"),
                _b64(b"v2.3"),
                _b64(b"v1." + b"9" * 30),
                _b64(b"v1.3 "),
                _b64("v1.\u0663".encode()),
            ]
        ),
        odd_text,
        st.sampled_from(["9" * 4300, "9" * 5000, *LONG]),
    ),
)
def test_list_jobs(server, page_size, page_token):
    """Only "" and the server's own next_page_token are accepted: the token is opaque; anything
    else is INVALID_ARGUMENT naming page_token, with at most a short prefix of it quoted."""
    real = server.unary("ListJobs", pb.ListJobsRequest(page_size=1))
    real_token = pb.ListJobsResponse.FromString(real[2]).next_page_token
    assert real_token  # two jobs at least: there is a second page
    token_ok = page_token in ("", "<real>")
    page_token = page_token.replace("<real>", real_token)
    request = pb.ListJobsRequest(page_size=page_size, page_token=page_token)
    code, details, reply = server.unary("ListJobs", request)
    if not 0 <= page_size <= 1000:
        assert code == C.INVALID_ARGUMENT and "page_size" in details, (code, details)
        return
    if token_ok:
        assert code == C.OK, (code, details)
        assert len(pb.ListJobsResponse.FromString(reply).jobs) <= (page_size or 50)
    else:
        assert code == C.INVALID_ARGUMENT and "page_token" in details, (page_token, code, details)
        assert page_token[:80] not in details or len(page_token) <= 24, details


@fuzz_settings(30)
@given(st.binary(max_size=20))
def test_list_bots(server, junk):
    # ListBotsRequest has no fields: whatever parses (unknown fields) is accepted.
    code, details, reply = server.unary("ListBots", pb.ListBotsRequest())
    assert code == C.OK and len(pb.ListBotsResponse.FromString(reply).bots) >= 4
    code, details, _ = server.unary("ListBots", junk)
    assert code in (C.OK, C.INVALID_ARGUMENT), (code, details)


METHODS = ["SubmitJob", "GetJob", "ListJobs", "WatchJob", "CancelJob", "GetStatistics",
           "StreamStatistics", "ListBots", "ReplayGame", "ExportGames"]  # fmt: skip
STREAMS = ("WatchJob", "StreamStatistics", "ExportGames")


@fuzz_settings(400)
@given(method=st.sampled_from(METHODS), payload=st.binary(max_size=300))
@example(method="GetJob", payload=b"\xff\xff\xff")
@example(method="WatchJob", payload=b"\x0a\x03\xff\xfe\xfd")  # job_id with invalid UTF-8
@example(method="SubmitJob", payload=b"\x0a\x02ab")
def test_random_bytes(server, method, payload):
    """Bytes that may not be a message at all: a status that says so, never UNKNOWN."""
    if method in STREAMS:
        code, details, _ = server.watch(payload, method)
    else:
        code, details, _ = server.unary(method, payload)
    assert code in (
        C.OK,
        C.INVALID_ARGUMENT,
        C.NOT_FOUND,
        C.RESOURCE_EXHAUSTED,
        C.ALREADY_EXISTS,
        C.FAILED_PRECONDITION,
    ), (method, payload, code, details)


@fuzz_settings(100)
@given(
    number=st.integers(100, 2**29 - 1),
    value=st.one_of(st.binary(max_size=30), st.integers(0, 2**64 - 1)),
    job=st.booleans(),
)
def test_unknown_fields_are_ignored(server, number, value, job):
    """A request with fields this server does not know (a newer client) is read as without them."""
    job_id = server.queued.job_id if job else "feedface"
    base = pb.GetJobRequest(job_id=job_id).SerializeToString()
    if isinstance(value, bytes):
        extra = _varint(number << 3 | 2) + _varint(len(value)) + value
    else:
        extra = _varint(number << 3) + _varint(value)
    code, details, _ = server.unary("GetJob", base + extra)
    assert code == (C.OK if job else C.NOT_FOUND), (code, details)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


@fuzz_settings(60)
@given(
    method=st.sampled_from(["SubmitJob", "GetJob", "ListJobs", "WatchJob", "ReplayGame"]),
    size=st.integers(MAX_MESSAGE + 1, 2 * MAX_MESSAGE),
)
def test_oversize_requests(server, method, size):
    """Over the server's message limit: RESOURCE_EXHAUSTED, whatever the content."""
    big = "x" * size
    request = {
        "SubmitJob": lambda: pb.SubmitJobRequest(
            spec=pb.JobSpec(configurations=[pb.Configuration(players=2, bots=[big, "random"])])
        ),
        "GetJob": lambda: pb.GetJobRequest(job_id=big),
        "ListJobs": lambda: pb.ListJobsRequest(page_token=big),
        "WatchJob": lambda: pb.WatchJobRequest(job_id=big),
        "ReplayGame": lambda: pb.ReplayGameRequest(job_id=big),
    }[method]()
    if method == "WatchJob":
        code, details, _ = server.watch(request)
    else:
        code, details, _ = server.unary(method, request)
    assert code == C.RESOURCE_EXHAUSTED, (method, code, details)


@pytest.mark.parametrize("value", LONG, ids=lambda v: f"{v[:2]!r}x{len(v)}")
def test_long_values_are_never_echoed_in_full(server, value):
    """Every string field of every request, set to a long value: whatever the status, the
    message stays short (`_seen` checks MAX_DETAILS)."""
    spec = pb.JobSpec(
        configurations=[pb.Configuration(players=2, bots=["greedy", "random"])], games=1, seed=1
    )
    many = pb.JobSpec(
        games=1, seed=1, configurations=[pb.Configuration(players=2, bots=[value[:200]] * 40)]
    )  # 40 bots of 200: a bad count
    requests = [
        ("SubmitJob", pb.SubmitJobRequest(spec=spec, request_id=value)),
        ("SubmitJob", pb.SubmitJobRequest(spec=many)),
        (
            "SubmitJob",
            pb.SubmitJobRequest(
                spec=pb.JobSpec(
                    configurations=[pb.Configuration(players=2, bots=[value, "random"])], games=1
                )
            ),
        ),
        (
            "SubmitJob",
            pb.SubmitJobRequest(
                spec=pb.JobSpec(
                    configurations=[pb.Configuration(players=2, bots=[value[:200], "random"])],
                    games=1,
                )
            ),
        ),
        ("ListJobs", pb.ListJobsRequest(page_token=value)),
        ("GetJob", pb.GetJobRequest(job_id=value)),
        ("GetJob", pb.GetJobRequest(job_id=value[:64])),
        ("CancelJob", pb.CancelJobRequest(job_id=value)),
        ("GetStatistics", pb.GetStatisticsRequest(job_id=value)),
        ("ReplayGame", pb.ReplayGameRequest(job_id=value)),
    ]
    code, _, _ = server.watch(pb.GetStatisticsRequest(job_id=value), "StreamStatistics")
    assert code != C.OK
    for method, request in requests:
        code, _, _ = server.unary(method, request)
        assert code != C.OK, method
    code, _, _ = server.watch(pb.WatchJobRequest(job_id=value))
    assert code != C.OK


@pytest.mark.parametrize("size", [20_000, 1_000_000])
@pytest.mark.parametrize("rule", [pb.StopRule.SPRT, pb.StopRule.PRECISION])
def test_a_long_stop_statistic_is_invalid_argument_with_a_short_message(server, size, rule):
    """A 20 KB or 1 MB ``stop.statistic``: INVALID_ARGUMENT naming the field, in a message of a
    line (before, the value came back whole: an 80 KB trailer the client refused as
    RESOURCE_EXHAUSTED; 4 MB for a 1 MB value)."""
    spec = pb.JobSpec(
        configurations=[pb.Configuration(players=2, bots=["greedy", "random"])],
        games=100,
        seed=1,
        stop=pb.StopRule(rule=rule, statistic="\x00" * size, eps=0.1, elo1=10),
    )
    code, details, _ = server.unary("SubmitJob", pb.SubmitJobRequest(spec=spec))
    assert code == C.INVALID_ARGUMENT, details[:300]
    assert "stop.statistic" in details and len(details) <= MAX_DETAILS


@fuzz_settings(40)
@given(n=st.integers(1, 200), length=st.integers(201, 220))
def test_large_but_allowed_requests_name_the_field(server, n, length):
    """Under the size limit but over a field limit: INVALID_ARGUMENT naming the field."""
    spec = pb.JobSpec(
        configurations=[pb.Configuration(players=2, bots=["y" * length, "random"])] * n,
        games=1,
        seed=1,
    )
    code, details, _ = server.unary("SubmitJob", pb.SubmitJobRequest(spec=spec))
    assert code == C.INVALID_ARGUMENT, (code, details)
    if n > 100:
        assert details.startswith("spec.configurations must hold at most 100"), details
    else:
        assert details.startswith("spec.configurations[0].bots[0] must be at most 200"), details
