import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Seating(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEATING_UNSPECIFIED: _ClassVar[Seating]
    SEATING_ROTATE: _ClassVar[Seating]
    SEATING_FIXED: _ClassVar[Seating]
    SEATING_SHUFFLE: _ClassVar[Seating]
    SEATING_MIRRORED: _ClassVar[Seating]

class Wall(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WALL_UNSPECIFIED: _ClassVar[Wall]
    WALL_COLOURED: _ClassVar[Wall]
    WALL_GRAY: _ClassVar[Wall]

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    QUEUED: _ClassVar[JobState]
    RUNNING: _ClassVar[JobState]
    SUCCEEDED: _ClassVar[JobState]
    FAILED: _ClassVar[JobState]
    CANCELLED: _ClassVar[JobState]
SEATING_UNSPECIFIED: Seating
SEATING_ROTATE: Seating
SEATING_FIXED: Seating
SEATING_SHUFFLE: Seating
SEATING_MIRRORED: Seating
WALL_UNSPECIFIED: Wall
WALL_COLOURED: Wall
WALL_GRAY: Wall
JOB_STATE_UNSPECIFIED: JobState
QUEUED: JobState
RUNNING: JobState
SUCCEEDED: JobState
FAILED: JobState
CANCELLED: JobState

class Configuration(_message.Message):
    __slots__ = ("players", "bots", "seating", "wall", "max_rounds", "rules")
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    BOTS_FIELD_NUMBER: _ClassVar[int]
    SEATING_FIELD_NUMBER: _ClassVar[int]
    WALL_FIELD_NUMBER: _ClassVar[int]
    MAX_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    players: int
    bots: _containers.RepeatedScalarFieldContainer[str]
    seating: Seating
    wall: Wall
    max_rounds: int
    rules: str
    def __init__(self, players: _Optional[int] = ..., bots: _Optional[_Iterable[str]] = ..., seating: _Optional[_Union[Seating, str]] = ..., wall: _Optional[_Union[Wall, str]] = ..., max_rounds: _Optional[int] = ..., rules: _Optional[str] = ...) -> None: ...

class Pair(_message.Message):
    __slots__ = ("configuration", "baseline")
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    BASELINE_FIELD_NUMBER: _ClassVar[int]
    configuration: int
    baseline: int
    def __init__(self, configuration: _Optional[int] = ..., baseline: _Optional[int] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ("configurations", "games", "seed", "max_rounds", "baseline", "stop", "ratings", "sweep", "game_records", "pairs")
    CONFIGURATIONS_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    MAX_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    BASELINE_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    RATINGS_FIELD_NUMBER: _ClassVar[int]
    SWEEP_FIELD_NUMBER: _ClassVar[int]
    GAME_RECORDS_FIELD_NUMBER: _ClassVar[int]
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    configurations: _containers.RepeatedCompositeFieldContainer[Configuration]
    games: int
    seed: int
    max_rounds: int
    baseline: int
    stop: StopRule
    ratings: Ratings
    sweep: _containers.RepeatedScalarFieldContainer[str]
    game_records: bool
    pairs: _containers.RepeatedCompositeFieldContainer[Pair]
    def __init__(self, configurations: _Optional[_Iterable[_Union[Configuration, _Mapping]]] = ..., games: _Optional[int] = ..., seed: _Optional[int] = ..., max_rounds: _Optional[int] = ..., baseline: _Optional[int] = ..., stop: _Optional[_Union[StopRule, _Mapping]] = ..., ratings: _Optional[_Union[Ratings, _Mapping]] = ..., sweep: _Optional[_Iterable[str]] = ..., game_records: _Optional[bool] = ..., pairs: _Optional[_Iterable[_Union[Pair, _Mapping]]] = ...) -> None: ...

class Ratings(_message.Message):
    __slots__ = ("anchor",)
    ANCHOR_FIELD_NUMBER: _ClassVar[int]
    anchor: str
    def __init__(self, anchor: _Optional[str] = ...) -> None: ...

class StopRule(_message.Message):
    __slots__ = ("rule", "configuration", "statistic", "elo0", "elo1", "delta0", "delta1", "alpha", "beta", "eps", "check_every")
    class Rule(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        RULE_UNSPECIFIED: _ClassVar[StopRule.Rule]
        SPRT: _ClassVar[StopRule.Rule]
        PRECISION: _ClassVar[StopRule.Rule]
    RULE_UNSPECIFIED: StopRule.Rule
    SPRT: StopRule.Rule
    PRECISION: StopRule.Rule
    RULE_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    STATISTIC_FIELD_NUMBER: _ClassVar[int]
    ELO0_FIELD_NUMBER: _ClassVar[int]
    ELO1_FIELD_NUMBER: _ClassVar[int]
    DELTA0_FIELD_NUMBER: _ClassVar[int]
    DELTA1_FIELD_NUMBER: _ClassVar[int]
    ALPHA_FIELD_NUMBER: _ClassVar[int]
    BETA_FIELD_NUMBER: _ClassVar[int]
    EPS_FIELD_NUMBER: _ClassVar[int]
    CHECK_EVERY_FIELD_NUMBER: _ClassVar[int]
    rule: StopRule.Rule
    configuration: int
    statistic: str
    elo0: float
    elo1: float
    delta0: float
    delta1: float
    alpha: float
    beta: float
    eps: float
    check_every: int
    def __init__(self, rule: _Optional[_Union[StopRule.Rule, str]] = ..., configuration: _Optional[int] = ..., statistic: _Optional[str] = ..., elo0: _Optional[float] = ..., elo1: _Optional[float] = ..., delta0: _Optional[float] = ..., delta1: _Optional[float] = ..., alpha: _Optional[float] = ..., beta: _Optional[float] = ..., eps: _Optional[float] = ..., check_every: _Optional[int] = ...) -> None: ...

class Stopping(_message.Message):
    __slots__ = ("reason", "games", "llr", "llr_lower", "llr_upper", "estimate", "ci95_low", "ci95_high", "check_points")
    REASON_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    LLR_FIELD_NUMBER: _ClassVar[int]
    LLR_LOWER_FIELD_NUMBER: _ClassVar[int]
    LLR_UPPER_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    CI95_LOW_FIELD_NUMBER: _ClassVar[int]
    CI95_HIGH_FIELD_NUMBER: _ClassVar[int]
    CHECK_POINTS_FIELD_NUMBER: _ClassVar[int]
    reason: str
    games: int
    llr: float
    llr_lower: float
    llr_upper: float
    estimate: float
    ci95_low: float
    ci95_high: float
    check_points: int
    def __init__(self, reason: _Optional[str] = ..., games: _Optional[int] = ..., llr: _Optional[float] = ..., llr_lower: _Optional[float] = ..., llr_upper: _Optional[float] = ..., estimate: _Optional[float] = ..., ci95_low: _Optional[float] = ..., ci95_high: _Optional[float] = ..., check_points: _Optional[int] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("job_id", "state", "spec", "request_id", "games_total", "games_done", "chunks_total", "chunks_done", "created_at", "started_at", "finished_at", "error", "rules_version", "stopping")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    GAMES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    GAMES_DONE_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_DONE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RULES_VERSION_FIELD_NUMBER: _ClassVar[int]
    STOPPING_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    state: JobState
    spec: JobSpec
    request_id: str
    games_total: int
    games_done: int
    chunks_total: int
    chunks_done: int
    created_at: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    error: str
    rules_version: str
    stopping: Stopping
    def __init__(self, job_id: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., request_id: _Optional[str] = ..., games_total: _Optional[int] = ..., games_done: _Optional[int] = ..., chunks_total: _Optional[int] = ..., chunks_done: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., error: _Optional[str] = ..., rules_version: _Optional[str] = ..., stopping: _Optional[_Union[Stopping, _Mapping]] = ...) -> None: ...

class SubmitJobRequest(_message.Message):
    __slots__ = ("spec", "request_id")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    spec: JobSpec
    request_id: str
    def __init__(self, spec: _Optional[_Union[JobSpec, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class SubmitJobResponse(_message.Message):
    __slots__ = ("job", "created")
    JOB_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    job: Job
    created: bool
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_page_token: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchJobRequest(_message.Message):
    __slots__ = ("job_id", "interval_ms")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    interval_ms: int
    def __init__(self, job_id: _Optional[str] = ..., interval_ms: _Optional[int] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class GetStatisticsRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class BotSummary(_message.Message):
    __slots__ = ("configuration", "bot", "player_games", "wins", "win_rate", "win_rate_ci95_low", "win_rate_ci95_high", "score_mean")
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    PLAYER_GAMES_FIELD_NUMBER: _ClassVar[int]
    WINS_FIELD_NUMBER: _ClassVar[int]
    WIN_RATE_FIELD_NUMBER: _ClassVar[int]
    WIN_RATE_CI95_LOW_FIELD_NUMBER: _ClassVar[int]
    WIN_RATE_CI95_HIGH_FIELD_NUMBER: _ClassVar[int]
    SCORE_MEAN_FIELD_NUMBER: _ClassVar[int]
    configuration: int
    bot: str
    player_games: int
    wins: int
    win_rate: float
    win_rate_ci95_low: float
    win_rate_ci95_high: float
    score_mean: float
    def __init__(self, configuration: _Optional[int] = ..., bot: _Optional[str] = ..., player_games: _Optional[int] = ..., wins: _Optional[int] = ..., win_rate: _Optional[float] = ..., win_rate_ci95_low: _Optional[float] = ..., win_rate_ci95_high: _Optional[float] = ..., score_mean: _Optional[float] = ...) -> None: ...

class Statistics(_message.Message):
    __slots__ = ("job", "partial", "statistics_json", "games_done", "games_finished", "games_truncated", "bots")
    JOB_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    STATISTICS_JSON_FIELD_NUMBER: _ClassVar[int]
    GAMES_DONE_FIELD_NUMBER: _ClassVar[int]
    GAMES_FINISHED_FIELD_NUMBER: _ClassVar[int]
    GAMES_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    BOTS_FIELD_NUMBER: _ClassVar[int]
    job: Job
    partial: bool
    statistics_json: str
    games_done: int
    games_finished: int
    games_truncated: int
    bots: _containers.RepeatedCompositeFieldContainer[BotSummary]
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., partial: _Optional[bool] = ..., statistics_json: _Optional[str] = ..., games_done: _Optional[int] = ..., games_finished: _Optional[int] = ..., games_truncated: _Optional[int] = ..., bots: _Optional[_Iterable[_Union[BotSummary, _Mapping]]] = ...) -> None: ...

class ListBotsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BotParameter(_message.Message):
    __slots__ = ("name", "type", "default", "min", "max", "choices", "doc")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    default: str
    min: float
    max: float
    choices: _containers.RepeatedScalarFieldContainer[str]
    doc: str
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., default: _Optional[str] = ..., min: _Optional[float] = ..., max: _Optional[float] = ..., choices: _Optional[_Iterable[str]] = ..., doc: _Optional[str] = ...) -> None: ...

class Bot(_message.Message):
    __slots__ = ("name", "description", "parameters")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters: _containers.RepeatedCompositeFieldContainer[BotParameter]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[_Iterable[_Union[BotParameter, _Mapping]]] = ...) -> None: ...

class ListBotsResponse(_message.Message):
    __slots__ = ("bots",)
    BOTS_FIELD_NUMBER: _ClassVar[int]
    bots: _containers.RepeatedCompositeFieldContainer[Bot]
    def __init__(self, bots: _Optional[_Iterable[_Union[Bot, _Mapping]]] = ...) -> None: ...

class ReplayGameRequest(_message.Message):
    __slots__ = ("job_id", "configuration", "game")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    configuration: int
    game: int
    def __init__(self, job_id: _Optional[str] = ..., configuration: _Optional[int] = ..., game: _Optional[int] = ...) -> None: ...

class ExportGamesRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class GameRecordsPart(_message.Message):
    __slots__ = ("data", "games")
    DATA_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    games: int
    def __init__(self, data: _Optional[bytes] = ..., games: _Optional[int] = ...) -> None: ...

class TileCounts(_message.Message):
    __slots__ = ("counts",)
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    counts: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, counts: _Optional[_Iterable[int]] = ...) -> None: ...

class PatternLine(_message.Message):
    __slots__ = ("colour", "count")
    COLOUR_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    colour: int
    count: int
    def __init__(self, colour: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class Board(_message.Message):
    __slots__ = ("lines", "wall", "floor", "score")
    LINES_FIELD_NUMBER: _ClassVar[int]
    WALL_FIELD_NUMBER: _ClassVar[int]
    FLOOR_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedCompositeFieldContainer[PatternLine]
    wall: _containers.RepeatedScalarFieldContainer[int]
    floor: int
    score: int
    def __init__(self, lines: _Optional[_Iterable[_Union[PatternLine, _Mapping]]] = ..., wall: _Optional[_Iterable[int]] = ..., floor: _Optional[int] = ..., score: _Optional[int] = ...) -> None: ...

class GameState(_message.Message):
    __slots__ = ("round", "turn", "current", "factories", "centre", "marker_in_centre", "marker_holder", "bag", "lid", "boards")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    FACTORIES_FIELD_NUMBER: _ClassVar[int]
    CENTRE_FIELD_NUMBER: _ClassVar[int]
    MARKER_IN_CENTRE_FIELD_NUMBER: _ClassVar[int]
    MARKER_HOLDER_FIELD_NUMBER: _ClassVar[int]
    BAG_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    BOARDS_FIELD_NUMBER: _ClassVar[int]
    round: int
    turn: int
    current: int
    factories: _containers.RepeatedCompositeFieldContainer[TileCounts]
    centre: TileCounts
    marker_in_centre: bool
    marker_holder: int
    bag: TileCounts
    lid: TileCounts
    boards: _containers.RepeatedCompositeFieldContainer[Board]
    def __init__(self, round: _Optional[int] = ..., turn: _Optional[int] = ..., current: _Optional[int] = ..., factories: _Optional[_Iterable[_Union[TileCounts, _Mapping]]] = ..., centre: _Optional[_Union[TileCounts, _Mapping]] = ..., marker_in_centre: _Optional[bool] = ..., marker_holder: _Optional[int] = ..., bag: _Optional[_Union[TileCounts, _Mapping]] = ..., lid: _Optional[_Union[TileCounts, _Mapping]] = ..., boards: _Optional[_Iterable[_Union[Board, _Mapping]]] = ...) -> None: ...

class ReplayStep(_message.Message):
    __slots__ = ("kind", "seat", "action", "action_text", "state")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[ReplayStep.Kind]
        DEAL: _ClassVar[ReplayStep.Kind]
        PICK: _ClassVar[ReplayStep.Kind]
        WALL_TILING: _ClassVar[ReplayStep.Kind]
    KIND_UNSPECIFIED: ReplayStep.Kind
    DEAL: ReplayStep.Kind
    PICK: ReplayStep.Kind
    WALL_TILING: ReplayStep.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACTION_TEXT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    kind: ReplayStep.Kind
    seat: int
    action: int
    action_text: str
    state: GameState
    def __init__(self, kind: _Optional[_Union[ReplayStep.Kind, str]] = ..., seat: _Optional[int] = ..., action: _Optional[int] = ..., action_text: _Optional[str] = ..., state: _Optional[_Union[GameState, _Mapping]] = ...) -> None: ...

class Replay(_message.Message):
    __slots__ = ("job_id", "configuration", "game", "players", "wall", "seat_bots", "first_player", "steps", "scores", "end_reason", "winners", "rules_version")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    WALL_FIELD_NUMBER: _ClassVar[int]
    SEAT_BOTS_FIELD_NUMBER: _ClassVar[int]
    FIRST_PLAYER_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    WINNERS_FIELD_NUMBER: _ClassVar[int]
    RULES_VERSION_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    configuration: int
    game: int
    players: int
    wall: Wall
    seat_bots: _containers.RepeatedScalarFieldContainer[str]
    first_player: int
    steps: _containers.RepeatedCompositeFieldContainer[ReplayStep]
    scores: _containers.RepeatedScalarFieldContainer[int]
    end_reason: str
    winners: _containers.RepeatedScalarFieldContainer[int]
    rules_version: str
    def __init__(self, job_id: _Optional[str] = ..., configuration: _Optional[int] = ..., game: _Optional[int] = ..., players: _Optional[int] = ..., wall: _Optional[_Union[Wall, str]] = ..., seat_bots: _Optional[_Iterable[str]] = ..., first_player: _Optional[int] = ..., steps: _Optional[_Iterable[_Union[ReplayStep, _Mapping]]] = ..., scores: _Optional[_Iterable[int]] = ..., end_reason: _Optional[str] = ..., winners: _Optional[_Iterable[int]] = ..., rules_version: _Optional[str] = ...) -> None: ...
