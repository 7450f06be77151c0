"""Every game as a row (sim/jobs/gamerows.py): the rows are the records, the file is the same
whatever the chunking, workers or chunk-file order, and pandas and polars read it as is."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from sim.experiments.sweep import sweep_spec
from sim.jobs.chunk import chunks_total
from sim.jobs.gamerows import gather, play_chunk_with_rows, spec_digest, write_chunk
from sim.jobs.local import run_local
from sim.jobs.play import play_games
from sim.jobs.spec import JobSpec

SPEC = JobSpec.from_dict(
    {
        "configurations": [
            {"players": 2, "bots": ["greedy", "random"]},
            {"players": 3, "bots": ["greedy", "random", "heuristic"], "seating": "mirrored"},
        ],
        "games": 300,
        "seed": 8,
    }
)


@pytest.fixture(scope="module")
def games_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("rows") / "games.parquet"
    result = run_local(SPEC, workers=1, chunk_size=90, games_out=path)
    assert result.extra["games_out"]["rows"] == 600
    return path


def test_rows_are_the_records(games_file):
    table = pq.read_table(games_file).to_pydict()
    assert len(table["game"]) == 600
    digest = spec_digest(SPEC)
    at = 0
    for k, config in enumerate(SPEC.configurations):
        rec = play_games(config, SPEC.seed, 0, SPEC.games)
        for i in range(SPEC.games):
            row = {name: values[at + i] for name, values in table.items()}
            assert row["spec"] == digest and row["configuration"] == k and row["game"] == i
            assert row["players"] == config.players and row["wall"] == "coloured"
            assert row["group"] == (i // 3 if config.seating == "mirrored" else None)
            assert row["first_player"] == rec.first_player[i]
            for p in range(4):
                if p >= config.players:
                    assert row[f"bot_{p}"] is None and row[f"score_{p}"] is None
                    continue
                assert row[f"bot_{p}"] == config.bots[rec.seat_bot[i, p]]
                assert row[f"score_{p}"] == rec.scores[i, p]
                assert row[f"rows_{p}"] == rec.complete_rows[i, p]
                assert row[f"columns_{p}"] == rec.complete_cols[i, p]
                assert row[f"colours_{p}"] == rec.complete_colours[i, p]
                assert row[f"bonus_{p}"] == rec.bonus[i, p]
                assert row[f"floor_{p}"] == rec.floor_penalty[i, p]
                assert row[f"marker_{p}"] == rec.marker_takes[i, p]
                assert row[f"winner_{p}"] == bool(rec.winners[i, p])
            assert row["rounds"] == rec.rounds[i] and row["turns"] == rec.turns[i]
            assert row["winners"] == rec.winners[i].sum()
            assert (
                row["end_reason"] == ("row_completed", "round_cap", "no_tiles")[rec.end_reason[i]]
            )
        at += SPEC.games
    meta = pq.ParquetFile(games_file).schema_arrow.metadata
    assert JobSpec.from_json(meta[b"azulsim.spec"]) == SPEC


def test_same_file_whatever_chunks_and_workers(games_file, tmp_path):
    other = tmp_path / "other.parquet"
    run_local(SPEC, workers=2, chunk_size=51, games_out=other)
    assert pq.read_table(other).equals(pq.read_table(games_file))
    # Paired configurations run in joint chunks (spooled, then gathered): the same order too.
    sweep = sweep_spec(["heuristic:floor=0|2", "greedy"], games=120, seed=1)
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    ra = run_local(sweep, workers=1, chunk_size=40, games_out=a)
    rb = run_local(sweep, workers=2, chunk_size=120, games_out=b)
    assert ra.counters == rb.counters
    ta = pq.read_table(a)
    assert ta.equals(pq.read_table(b))
    assert ta.column("configuration").to_pylist() == [0] * 120 + [1] * 120
    assert ta.column("game").to_pylist() == list(range(120)) * 2
    assert not list(tmp_path.glob(".azulsim-games-*"))  # the spool is cleaned up


def test_chunk_files_in_any_order_with_rewrites_gather_to_the_same_file(games_file, tmp_path):
    chunk_games = 75  # whole mirrored groups (the service aligns its chunks so)
    total = chunks_total(SPEC, chunk_games)
    order = np.random.default_rng(1).permutation(total)
    for chunk in [*order, order[0], order[3]]:  # two redelivered chunks rewrite their files
        play_chunk_with_rows(SPEC, chunk_games, int(chunk), tmp_path / "job")
    out = tmp_path / "export.parquet"
    assert gather(tmp_path / "job", out) == 600
    assert pq.read_table(out).equals(pq.read_table(games_file))
    (tmp_path / "job" / "chunk-000002.parquet").unlink()
    with pytest.raises(ValueError, match=f"{total - 1} of {total} chunk files"):
        gather(tmp_path / "job", out)


def test_a_chunk_of_another_spec_is_refused(tmp_path):
    other = JobSpec.from_dict({**SPEC.to_dict(), "seed": 9})
    write_chunk(tmp_path, 0, SPEC, [(0, play_games(SPEC.configurations[0], 8, 0, 10))], 2)
    write_chunk(tmp_path, 1, other, [(0, play_games(other.configurations[0], 9, 0, 10))], 2)
    with pytest.raises(ValueError, match="records of another spec"):
        gather(tmp_path, tmp_path / "x.parquet")


def test_pandas_and_polars_read_it_as_is(games_file):
    import pandas as pd
    import polars as pl

    df = pd.read_parquet(games_file)
    assert len(df) == 600 and df["score_0"].dtype == np.int16
    first = df[df.configuration == 1].groupby("first_player")["winner_0"].count()
    assert first.sum() == 300
    pf = pl.read_parquet(games_file)
    assert pf.height == 600
    assert pf.filter(pl.col("players") == 2)["bot_2"].null_count() == 300
    assert pf["game"].to_list() == df["game"].tolist()


def test_simulate_games_out_and_its_errors(tmp_path, capsys):
    from service.cli import main

    out = tmp_path / "g.parquet"
    argv = ["simulate", "--bots", "greedy,random", "--games", "50", "--seed", "2", "--json"]
    assert main([*argv, "--games-out", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    table = pq.read_table(out)
    assert table.num_rows == 50
    assert sum(table.column("winner_0").to_pylist()) == doc["seats"][0]["wins"]
    assert main([*argv, "--games-out", str(tmp_path / "no" / "g.parquet")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_game_records_field():
    assert JobSpec.from_dict({**SPEC.to_dict(), "game_records": True}).game_records
    assert "game_records" not in SPEC.to_dict()
    with pytest.raises(ValueError, match="game_records must be true or false"):
        JobSpec.from_dict({**SPEC.to_dict(), "game_records": "yes"})
    stop = {"configurations": [{"players": 2, "bots": ["greedy", "random"], "seating": "mirrored"}],
            "games": 100, "seed": 1, "stop": {"rule": "sprt", "elo0": 0, "elo1": 10},
            "game_records": True}  # fmt: skip
    with pytest.raises(ValueError, match="game_records cannot be combined with a stopping rule"):
        JobSpec.from_dict(stop)


def test_the_long_form_is_one_row_per_game_and_seat_with_one_type_per_column(games_file, tmp_path):
    """`write_long`: a row per seat a table has (no null seats 2-3 for two players, so no float
    NaN columns in pandas), each seat's figures equal to the wide row's, and per-bot wins that
    add up to the statistics'."""
    from sim.jobs.gamerows import long_schema, write_long

    path = games_file
    out = tmp_path / "long.parquet"
    wide = pq.read_table(path).to_pandas()
    assert write_long(path, out) == int(wide["players"].sum()) == 300 * 2 + 300 * 3
    table = pq.read_table(out)
    assert table.schema.remove_metadata() == long_schema()
    assert table.schema.metadata == pq.read_schema(path).metadata  # the spec travels along
    long = table.to_pandas()
    seat_columns = ["seat", "position", "bot", "score", "rows", "floor", "marker", "winner"]
    assert not long[seat_columns].isna().any().any()
    assert long["score"].dtype == np.int16 and long["winner"].dtype == bool
    assert list(long[["configuration", "game", "seat"]].itertuples(index=False)) == sorted(
        long[["configuration", "game", "seat"]].itertuples(index=False)
    )
    for row in long.sample(50, random_state=1).itertuples():
        w = wide[(wide.configuration == row.configuration) & (wide.game == row.game)].iloc[0]
        assert row.score == w[f"score_{row.seat}"] and row.bot == w[f"bot_{row.seat}"]
        assert row.position == (row.seat - w.first_player) % w.players
    for k in range(len(SPEC.configurations)):  # per-bot wins without a melt, as with one
        wins = long[long.configuration == k].groupby("bot", observed=True)["winner"].sum()
        games = wide[wide.configuration == k]
        melted: dict[str, int] = {}
        for p in range(int(games.players.iloc[0])):
            for bot, won in zip(games[f"bot_{p}"], games[f"winner_{p}"], strict=True):
                melted[bot] = melted.get(bot, 0) + int(won)
        assert {b: int(n) for b, n in wins.items()} == melted and sum(melted.values()) > 0


def test_simulate_and_export_write_the_long_form_beside(tmp_path, capsys):
    from service.cli import main

    wide, long = tmp_path / "g.parquet", tmp_path / "g-long.parquet"
    argv = ["simulate", "--bots", "greedy,random,random", "--games", "30", "--workers", "1"]
    assert main([*argv, "--games-out", str(wide), "--long-out", str(long)]) == 0
    assert "wrote 90 rows (games x seats)" in capsys.readouterr().err
    assert pq.read_table(long).num_rows == 90
    assert main([*argv, "--long-out", str(long)]) == 2
    assert "--long-out needs --games-out" in capsys.readouterr().err
    assert main([*argv, "--games-out", str(wide), "--long-out", str(tmp_path / "l.csv")]) == 2
    assert "--long-out writes Parquet" in capsys.readouterr().err
