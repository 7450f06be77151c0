"""Every game as a row: per-game records to Parquet, streamed chunk by chunk (pyarrow).

A job that asks for its games (``azulsim simulate --games-out FILE``, or a service job with
``game_records``) writes each chunk's records to a *chunk file* ``chunk-NNNNNN.parquet`` in a
directory (a local temporary one, or the cluster's shared ``AZULSIM_GAMES_DIR/<job id>``); one row
group per configuration the chunk played. `gather` then copies the row groups, ordered by
(configuration, first game), into one file, one row group at a time, so memory stays constant
whatever the game count. Game g's record is the same in any chunk, so the gathered file is the
same row for row whatever the chunk size or worker count: the in-process file and the service
export of one spec are equal.

One row per game (seats 0..3; seats a table does not have are null):

========================  =========================================================================
``spec``                  digest of the job spec (first 16 hex digits of SHA-256 of its JSON)
``configuration``         index of the configuration in the spec
``game``                  game index in the configuration
``group``                 mirrored group (``game // players``); null for other seatings
``players``, ``wall``     of the configuration
``rules``                 the label of its whole rule set (`sim.rules.rulesets.RuleSet.of`: wall and
                          round cap included), ``printed`` for the printed game
``first_player``          seat that started round 1
``bot_<p>``               canonical label of the bot in seat p
``score_<p>``             final score (bonuses included when the game ended naturally)
``rows_<p>``, ``columns_<p>``, ``colours_<p>``   complete rows, columns, colours
``bonus_<p>``             end bonus points (what they would have been for a truncated game)
``floor_<p>``             floor penalty points over the game, before the clamp at 0
``marker_<p>``            rounds in which the seat took the first-player marker
``winner_<p>``            among the docs/rules.md §8.3 winners (all false for a truncated game)
``rounds``, ``turns``     rounds played, picks by all seats
``end_reason``            row_completed, round_cap or no_tiles
``winners``               number of winners (0 for a truncated game)
========================  =========================================================================

The file's key-value metadata holds the spec (``azulsim.spec``) and the rules version.

``rules`` is never null: ``printed`` keeps a filter or a group-by (pandas drops null keys) on it
whole, and the column is dictionary-encoded like ``wall``, so it costs a few bytes a row group.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from sim.quote import shown

from ..rules.constants import END_REASONS
from ..rules.records import GameRecords
from ..rules.rulesets import RuleSet

MAX_SEATS = 4
SPEC_KEY = b"azulsim.spec"
CHUNK_KEY = b"azulsim.chunk"  # per chunk file: [[configuration, first game], ...] per row group
_SEAT_FIELDS = (
    ("score", "scores", "int16"),
    ("rows", "complete_rows", "int8"),
    ("columns", "complete_cols", "int8"),
    ("colours", "complete_colours", "int8"),
    ("bonus", "bonus", "int16"),
    ("floor", "floor_penalty", "int32"),
    ("marker", "marker_takes", "int16"),
)


def _pa():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - a dependency; a broken install says so
        raise RuntimeError("per-game records need pyarrow (pip install pyarrow)") from None
    return pa, pq


def spec_identity(spec) -> str:
    """The spec's JSON without ``game_records`` (asking for the rows does not change the games)."""
    data = spec.to_dict()
    data.pop("game_records", None)
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def spec_digest(spec) -> str:
    return hashlib.sha256(spec_identity(spec).encode()).hexdigest()[:16]


def schema():
    """The Arrow schema of a row (the same for every job)."""
    pa, _ = _pa()
    text = pa.dictionary(pa.int8(), pa.string())
    fields = [
        pa.field("spec", text),
        pa.field("configuration", pa.int16()),
        pa.field("game", pa.int64()),
        pa.field("group", pa.int64()),
        pa.field("players", pa.int8()),
        pa.field("wall", text),
        pa.field("rules", text),
        pa.field("first_player", pa.int8()),
    ]
    fields += [pa.field(f"bot_{p}", text) for p in range(MAX_SEATS)]
    for name, _, kind in _SEAT_FIELDS:
        fields += [pa.field(f"{name}_{p}", getattr(pa, kind)()) for p in range(MAX_SEATS)]
    fields += [pa.field(f"winner_{p}", pa.bool_()) for p in range(MAX_SEATS)]
    fields += [
        pa.field("rounds", pa.int16()),
        pa.field("turns", pa.int32()),
        pa.field("end_reason", text),
        pa.field("winners", pa.int8()),
    ]
    return pa.schema(fields)


def records_table(records: GameRecords, spec, config_index: int, digest: str | None = None):
    """The rows of `records` (games of configuration `config_index` of `spec`) as an Arrow table."""
    pa, _ = _pa()
    config = spec.configurations[config_index]
    n, players = len(records), records.players
    sch = schema()
    labels = pa.array(list(config.bots), pa.string())
    zeros = np.zeros(n, np.int8)

    def const(value, kind):
        return pa.array(np.full(n, value, dtype=kind.to_pandas_dtype()), kind)

    def dictionary(indices, values):
        return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int8()), values)

    cols: dict[str, Any] = {
        "spec": dictionary(zeros, pa.array([digest or spec_digest(spec)])),
        "configuration": const(config_index, pa.int16()),
        "game": pa.array(records.game.astype(np.int64)),
        "group": pa.array(records.game // players, pa.int64())
        if config.seating == "mirrored"
        else pa.nulls(n, pa.int64()),
        "players": const(players, pa.int8()),
        "wall": dictionary(zeros, pa.array([config.wall])),
        "rules": dictionary(zeros, pa.array([RuleSet.of(config, spec).label])),
        "first_player": pa.array(records.first_player.astype(np.int8)),
    }
    for p in range(MAX_SEATS):
        cols[f"bot_{p}"] = (
            dictionary(records.seat_bot[:, p].astype(np.int8), labels)
            if p < players
            else pa.nulls(n, sch.field(f"bot_{p}").type)
        )
    for name, attr, kind in _SEAT_FIELDS:
        values = getattr(records, attr)
        for p in range(MAX_SEATS):
            typ = sch.field(f"{name}_{p}").type
            cols[f"{name}_{p}"] = (
                pa.array(values[:, p].astype(kind)) if p < players else pa.nulls(n, typ)
            )
    for p in range(MAX_SEATS):
        cols[f"winner_{p}"] = (
            pa.array(records.winners[:, p]) if p < players else pa.nulls(n, pa.bool_())
        )
    cols["rounds"] = pa.array(records.rounds.astype(np.int16))
    cols["turns"] = pa.array(records.turns.astype(np.int32))
    cols["end_reason"] = dictionary(records.end_reason.astype(np.int8), pa.array(list(END_REASONS)))
    cols["winners"] = pa.array(records.winners.sum(axis=1).astype(np.int8))
    return pa.Table.from_arrays([cols[f.name] for f in sch], schema=sch)


class GamesWriter:
    """The gathered file, written row group by row group (to a temporary name, renamed on a clean
    close). `spec` is the job spec or its identity JSON."""

    def __init__(self, out, spec):
        from .. import RULES_VERSION

        _, pq = _pa()
        self.spec = spec
        self.digest = None if isinstance(spec, str) else spec_digest(spec)
        identity = spec if isinstance(spec, str) else spec_identity(spec)
        meta = {SPEC_KEY: identity.encode(), b"azulsim.rules_version": RULES_VERSION.encode()}
        self.out = Path(out)
        self.tmp = Path(str(out) + ".tmp")
        self.writer = pq.ParquetWriter(self.tmp, schema().with_metadata(meta), compression="zstd")
        self.rows = 0

    def write_table(self, table) -> None:
        self.writer.write_table(table)
        self.rows += table.num_rows

    def write(self, config_index: int, records: GameRecords) -> None:
        if len(records):
            self.write_table(records_table(records, self.spec, config_index, self.digest))

    def __enter__(self) -> GamesWriter:
        return self

    def __exit__(self, kind, *exc) -> None:
        self.writer.close()
        if kind is None:
            os.replace(self.tmp, self.out)
        else:
            self.tmp.unlink(missing_ok=True)


def recording(play=None):
    """``(seen, play)``: a play function that also keeps every batch of records it returns in
    `seen`, in call order (the configurations' order in a joint chunk)."""
    if play is None:
        from .play import play_games as play
    seen: list[GameRecords] = []

    def keep(config, seed, start, stop, max_rounds=100):
        records = play(config, seed, start, stop, max_rounds)
        seen.append(records)
        return records

    return seen, keep


def play_chunk_with_rows(spec, chunk_games: int, chunk: int, directory, play=None):
    """`sim.jobs.chunk.play_chunk`, and its records written to the chunk file in `directory`."""
    from .chunk import chunk_games_range, chunks_total, play_chunk

    seen, play = recording(play)
    result = play_chunk(spec, chunk_games, chunk, play)
    k, _, _ = chunk_games_range(spec, chunk_games, chunk)
    parts = list(enumerate(seen)) if k is None else [(k, seen[0])]
    write_chunk(directory, chunk, spec, parts, chunks_total(spec, chunk_games))
    return result


def job_directory(games_dir: str, job_id: str) -> Path:
    """Where a service job's chunk files go: ``<games_dir>/<job id>``."""
    if not games_dir:
        raise ValueError(
            "this job asks for game_records but AZULSIM_GAMES_DIR is not set on this worker"
        )
    if not job_id or "/" in job_id or job_id.startswith("."):
        raise ValueError(f"job id {shown(job_id)} cannot name a directory")
    return Path(games_dir) / job_id


def chunk_file(directory: str | os.PathLike, chunk: int) -> Path:
    return Path(directory) / f"chunk-{chunk:06d}.parquet"


def write_chunk(
    directory, chunk: int, spec, parts: list[tuple[int, GameRecords]], total: int | None = None
) -> Path:
    """Write one chunk's records (``[(configuration, records), ...]``, one row group each) to its
    chunk file, atomically (a redelivered chunk rewrites the same file)."""
    pa, pq = _pa()
    path = chunk_file(directory, chunk)
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = spec_digest(spec)
    index = [[k, int(rec.game[0]) if len(rec) else 0] for k, rec in parts]
    meta = {
        SPEC_KEY: spec_identity(spec).encode(),
        CHUNK_KEY: json.dumps({"chunk": chunk, "chunks": total, "groups": index}).encode(),
    }
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with pq.ParquetWriter(tmp, schema().with_metadata(meta), compression="zstd") as writer:
        for k, rec in parts:
            writer.write_table(records_table(rec, spec, k, digest), row_group_size=max(1, len(rec)))
    os.replace(tmp, path)
    return path


def gather(directory, out, spec=None, expected_chunks: int | None = None) -> int:
    """Copy every chunk file's row groups in (configuration, first game) order into `out`; the
    rows written. Raises ValueError when `expected_chunks` are not all there or a file belongs to
    another spec. Without `expected_chunks`, the count the chunk files record is checked."""
    _, pq = _pa()
    files = sorted(Path(directory).glob("chunk-*.parquet"))
    if not files:
        raise ValueError(f"{directory}: no chunk files")
    pieces = []
    spec_json = spec_identity(spec) if spec is not None else None
    for path in files:
        pf = pq.ParquetFile(path)
        meta = pf.schema_arrow.metadata or {}
        if spec_json is None:
            spec_json = meta.get(SPEC_KEY, b"").decode()
        elif meta.get(SPEC_KEY, b"").decode() != spec_json:
            raise ValueError(f"{path} holds the records of another spec")
        info = json.loads(meta[CHUNK_KEY])
        if expected_chunks is None and info.get("chunks"):
            expected_chunks = info["chunks"]
        for group, (k, first) in enumerate(info["groups"]):
            pieces.append((k, first, path, group))
    if expected_chunks is not None and len(files) != expected_chunks:
        raise ValueError(
            f"{directory}: {len(files)} of {expected_chunks} chunk files; the job has not "
            "finished, or its records were not all written"
        )
    pieces.sort()
    rows = 0
    with GamesWriter(out, spec_json or "") as writer:
        opened: dict[Path, Any] = {}
        for _, _, path, group in pieces:
            pf = opened.get(path) or opened.setdefault(path, pq.ParquetFile(path))
            table = pf.read_row_group(group)
            writer.write_table(table)
            rows += table.num_rows
            if len(opened) > 8:  # constant memory: keep few files open
                opened.pop(next(iter(opened)))
    return rows


# --- the long form: one row per game and seat --------------------------------------------------

_GAME_FIELDS = (
    "spec", "configuration", "game", "group", "players", "wall", "rules", "first_player",
)  # fmt: skip
_END_FIELDS = ("rounds", "turns", "end_reason", "winners")


def long_schema():
    """The Arrow schema of the long form: the game's columns, then ``seat``, ``position`` (in
    the turn order of round 1: 0 is the start player), ``bot`` and the seat's figures without
    the ``_<p>`` suffix; no seat a table lacks, so no nulls and one type per column."""
    pa, _ = _pa()
    wide = schema()
    fields = [wide.field(n) for n in _GAME_FIELDS]
    fields += [pa.field("seat", pa.int8()), pa.field("position", pa.int8())]
    fields.append(pa.field("bot", pa.dictionary(pa.int8(), pa.string())))
    fields += [pa.field(name, wide.field(f"{name}_0").type) for name, _, _ in _SEAT_FIELDS]
    fields.append(pa.field("winner", pa.bool_()))
    fields += [wide.field(n) for n in _END_FIELDS]
    return pa.schema(fields)


def long_table(wide):
    """The rows of a wide table (`records_table`, or a row group of a gathered file) in the long
    form (`long_schema`), ordered by configuration, game and seat."""
    pa, _ = _pa()
    import pyarrow.compute as pc

    sch = long_schema()
    players = wide.column("players").to_numpy()
    first = wide.column("first_player").to_numpy()
    parts = []
    for p in range(MAX_SEATS):
        keep = players > p
        if not keep.any():
            continue
        sub = wide.filter(pa.array(keep))
        n = sub.num_rows
        cols = {name: sub.column(name) for name in (*_GAME_FIELDS, *_END_FIELDS)}
        cols["seat"] = pa.array(np.full(n, p, np.int8))
        cols["position"] = pa.array(((p - first[keep]) % players[keep]).astype(np.int8))
        cols["bot"] = pc.cast(sub.column(f"bot_{p}"), pa.string())
        for name, _, _ in _SEAT_FIELDS:
            cols[name] = sub.column(f"{name}_{p}")
        cols["winner"] = sub.column(f"winner_{p}")
        arrays = [cols[f.name] for f in sch if f.name != "bot"]
        names = [f.name for f in sch if f.name != "bot"]
        table = pa.table(dict(zip(names, arrays, strict=True)))
        bot = pc.dictionary_encode(pc.cast(cols["bot"], pa.string()))
        table = table.append_column("bot", bot.cast(sch.field("bot").type))
        parts.append(table.select([f.name for f in sch]).cast(sch))
    if not parts:
        return sch.empty_table()
    # Each part holds its own dictionaries; unify them so the table has one per column.
    table = pa.concat_tables(parts).unify_dictionaries().combine_chunks()
    return table.sort_by([("configuration", "ascending"), ("game", "ascending"),
                          ("seat", "ascending")])  # fmt: skip


def write_long(wide_path, out) -> int:
    """Write the long form of the gathered (or ``--games-out``) file `wide_path` to `out`, one
    row group per row group read (constant memory), with the same key-value metadata; the rows
    written (games times seats)."""
    _, pq = _pa()
    source = pq.ParquetFile(wide_path)
    meta = source.schema_arrow.metadata or {}
    out = Path(out)
    tmp = Path(str(out) + ".tmp")
    rows = 0
    try:
        with pq.ParquetWriter(tmp, long_schema().with_metadata(meta), compression="zstd") as w:
            for group in range(source.num_row_groups):
                table = long_table(source.read_row_group(group))
                w.write_table(table)
                rows += table.num_rows
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return rows
