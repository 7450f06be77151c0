"""The web view (service/web) over HTTP, on a real stack: the session's Redis, a real Celery
worker and the API server with its web view, in this process so a test can see its feeds.

Every figure the pages show is checked against GetStatistics (as ``azulsim stats`` prints it),
the game page against ReplayGame, the event stream through a running job to its end, and the
bearer tokens when auth is on. The browser tests are in tests/test_web_browser.py, the fuzzing of
the routes in tests/test_web_fuzz.py.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from html import escape

import pytest

from service.cli.output import _rate, format_table
from service.client import Client
from service.config import ServerConfig
from service.server import make_backend
from service.testing import ServerThread
from sim.experiments.balance_lab import balance_document, balance_spec
from sim.experiments.sweep import sweep_spec
from sim.experiments.tournament import tournament_spec
from tests.waits import wait_until
from tests.web_util import LONG, PLAIN, SPRT, TOKEN, Tables, fetch
from workers.settings import load_settings


class Web:
    def __init__(self, server: ServerThread, worker):
        self.server, self.worker = server, worker
        self.url = server.web_url
        self.client = Client(server.address, token="", timeout=60)
        self.jobs: dict[str, str] = {}

    def done(self, job_id: str):
        return wait_until(
            lambda: (j := self.client.get(job_id)).state in (3, 4, 5) and j,
            180,
            f"job {job_id} to end",
            interval=0.2,
            details=lambda: self.worker.log()[-4000:],
        )


@pytest.fixture(scope="module")
def web(module_env, module_worker_process):
    env = {**module_env, "AZULSIM_CHUNK_GAMES": "100"}
    worker = module_worker_process(env)
    config = ServerConfig(web_listen="127.0.0.1:0")
    server = ServerThread(make_backend(config, load_settings(env)), config).start()
    w = Web(server, worker)
    specs = {
        "sprt": SPRT,
        "plain": PLAIN,
        "tournament": tournament_spec(["greedy", "random", "heuristic"], 2, 60, seed=3),
        "sweep": sweep_spec(["heuristic:floor=0..2/1", "greedy"], games=60, seed=4,
                            baseline="floor=1"),
        "balance": balance_spec(["printed", "wall=gray"], [2, 3], "greedy", ["marker", "five"],
                                games=40, seed=6),
    }  # fmt: skip
    for name, spec in specs.items():
        request_id = f"web-{name}-{module_env['AZULSIM_PREFIX']}"
        w.jobs[name] = w.client.submit(spec, request_id=request_id)[0].job_id
    for job_id in w.jobs.values():
        w.done(job_id)
    yield w
    w.client.close()
    server.stop()


def _in_order(line: str, cells: list[str]) -> bool:
    at = 0
    for cell in cells:
        at = line.find(cell, at)
        if at < 0:
            return False
        at += len(cell)
    return True


@pytest.mark.parametrize("name", ["sprt", "plain", "tournament", "sweep"])
def test_every_table_of_a_job_page_reads_as_azulsim_stats_prints_getstatistics(web, name):
    job_id = web.jobs[name]
    doc = json.loads(web.client.statistics(job_id).statistics_json)
    text = format_table(doc).splitlines()
    status, html, _ = fetch(f"{web.url}/jobs/{job_id}")
    assert status == 200
    page = Tables(html)
    checked = 0
    for cfg in doc["configurations"]:
        k = cfg["index"]
        for table in ("bots", "seats", "bonuses", "h2h", "turn-order", "start-seats"):
            rows = page.tables.get(f"{table}-{k}")
            if rows is None:
                assert table in ("h2h", "turn-order", "start-seats"), (table, k)
                continue
            for row in rows[1:]:
                assert any(
                    ln.strip().startswith(row[0]) and _in_order(ln, row[1:]) for ln in text
                ), (table, k, row)
                checked += 1
        assert f"games finished {cfg['games_finished']:,}" in page.texts[f"configuration-{k}"]
    assert checked >= 4 * len(doc["configurations"])
    if name == "sprt":
        s = doc["stopping"]
        figures = page.texts["stopping-figures"]
        assert f"{s['llr']:+.3f}" in figures and f"{s['estimate']:.4g}" in figures
        assert f"[{s['llr_bounds'][0]:.3f}, {s['llr_bounds'][1]:.3f}]" in figures
        g = doc["configurations"][0]["groups"]
        pairs = page.tables["stopping-pairs"][1]
        assert pairs[5] == " ".join(f"{n:,}" for n in g["pentanomial"])
        assert pairs[3].startswith(f"{g['elo']:.1f} [{g['elo_ci95'][0]:.1f}")
        assert 'id="llr-chart"' in html and "<polyline" in html
        assert s["reason"].replace("_", " ") in page.texts["stopping-line"]
    if name == "tournament":
        rows = {r[0]: r for r in page.tables["ratings-table"][1:]}
        for b in doc["ratings"]["bots"]:
            assert rows[b["bot"]][1].startswith(f"{b['elo']:.1f} [{b['elo_ci95'][0]:.1f}")
        for pair in doc["ratings"]["head_to_head"]:
            assert f"{100 * pair['observed']:.0f}%" in page.texts["h2h-matrix"]
    if name == "sweep":
        rows = page.tables["sweep-table"][1:]
        assert [r[3] for r in rows] == [_rate(r) for r in doc["sweep"]["rows"]]
        assert html.count('class="band s0"') == 2  # win rate and score, each with its band


def test_jobs_page_lists_newest_first_pages_and_filters_by_state(web):
    status, html, _ = fetch(f"{web.url}/jobs?size=200")
    assert status == 200
    order = [line.split('data-job="')[1][:32] for line in html.splitlines() if "data-job=" in line]
    listed, _ = web.client.list(200)
    assert order == [j.job_id for j in listed]  # newest first, as ListJobs
    sprt = web.jobs["sprt"]
    assert "web-sprt-" in html and "SPRT on elo" in html
    status, html, _ = fetch(f"{web.url}/jobs?size=1")
    assert html.count("data-job=") == 1 and 'id="next-page"' in html
    token = html.split("page=")[1].split("&")[0]
    status, html2, _ = fetch(f"{web.url}/jobs?size=1&page={token}")
    assert status == 200 and html2.count("data-job=") == 1
    assert html2.split('data-job="')[1][:32] == listed[1].job_id
    status, html, _ = fetch(f"{web.url}/jobs?state=succeeded&size=200")
    assert status == 200 and sprt in html and "state-running" not in html
    status, html, _ = fetch(f"{web.url}/jobs?state=FAILED")
    assert status == 200 and 'id="no-jobs"' in html


def _blocks(text: str) -> dict[int, list[str]]:
    """``azulsim balance``'s text, its lines by player count."""
    out: dict[int, list[str]] = {}
    for line in text.splitlines():
        if line and line[0].isdigit() and " players (" in line:
            out[players := int(line.split()[0])] = []
        elif line:
            out[players].append(line)
    return out


def test_a_balance_job_page_shows_the_balance_sheet_as_azulsim_balance_prints_it(web):
    from service.cli.balance import DIGITS, _cell, format_balance

    job_id = web.jobs["balance"]
    doc = json.loads(web.client.statistics(job_id).statistics_json)
    sheet = balance_document(doc)
    printed = _blocks(format_balance(sheet))
    status, html, _ = fetch(f"{web.url}/jobs/{job_id}")
    assert status == 200 and 'id="section-balance"' in html
    page = Tables(html)
    assert [t["players"] for t in sheet["tables"]] == [2, 3]
    for table in sheet["tables"]:
        players, rows = table["players"], table["rule_sets"]
        assert [r["rule_set"] for r in rows] == ["printed", "wall=gray"]
        head, *body = page.tables[f"balance-measures-{players}"]
        assert head[1:] == ["printed [95% CI]", "wall=gray [95% CI]",
                            "wall=gray − printed, paired [95% CI]"]  # fmt: skip
        assert [b[0] for b in body] == list(sheet["measures"])
        for name, value, other, diff in body:
            m0, m1 = rows[0]["measures"][name], rows[1]["measures"][name]
            digits = DIGITS.get(name, 3)
            assert value == _cell(m0["value"], m0["ci95"], digits)
            assert other == _cell(m1["value"], m1["ci95"], digits)
            assert diff == _cell(m1["diff"], m1["diff_ci95"], digits)
            (line,) = [ln for ln in printed[players] if ln.split()[0] == name]
            assert _in_order(line, [value, other, "diff " + diff]), (players, name, line)
        games = page.texts[f"balance-games-{players}"]
        assert f"printed {rows[0]['games']:,}" in games
        assert f"({rows[1]['paired_games']:,} paired)" in games
        head, *body = page.tables[f"balance-restricted-{players}"]
        assert [b[0] for b in body] == [r["element"] for r in table["restricted"]]
        assert sorted(b[0] for b in body) == ["five", "marker"]
        for (element, bot, n, rate, fair, score, others), r in zip(
            body, table["restricted"], strict=True
        ):
            assert (bot, n, fair) == ("greedy", f"{r['games']:,}", f"{100 / players:.1f} %")
            (line,) = [ln for ln in printed[players] if ln.split()[:2] == ["never", element]]
            assert _in_order(line, [f"win rate {rate}", f"score {score} vs {others}"]), line
    # A job of another shape has no balance sheet.
    _, plain, _ = fetch(f"{web.url}/jobs/{web.jobs['plain']}")
    assert 'id="section-configurations"' in plain and 'id="section-balance"' not in plain


def test_a_configurations_rule_set_is_shown_beside_its_wall_and_seating(web):
    """A configuration's ``rules`` (its rule set's label, only when it is not the printed
    game's) is read from the statistics document and shown where the configuration is
    described; a configuration without one shows none."""
    from service.web.sections import sections_of
    from service.web.views import Views

    doc = json.loads(web.client.statistics(web.jobs["plain"]).statistics_json)
    doc["configurations"][1]["rules"] = "wall=gray,max_rounds=30"
    html = Views().page("statistics.html", doc=doc, sections=sections_of(doc), partial=False)
    page = Tables(html)
    assert page.texts["rules-1"] == "wall=gray,max_rounds=30"
    assert "rules-0" not in page.texts
    summary = page.texts["configuration-1"]
    described = "2 players, gray wall, rotate seating, rules wall=gray,max_rounds=30"
    assert _in_order(summary, [described, "bots greedy, random"])


def test_the_jobs_list_and_the_game_picker_name_a_configurations_rule_set_unless_printed(web):
    """The one-line spec summary (the jobs list) and the job page's game picker give each
    configuration's rule-set label, as its statistics name it, when it is not ``printed``."""
    for name in ("plain", "balance"):
        job_id = web.jobs[name]
        doc = json.loads(web.client.statistics(job_id).statistics_json)
        _, listed, _ = fetch(f"{web.url}/jobs?size=200")
        (row,) = [ln for ln in listed.split("<tr ")[1:] if f'data-job="{job_id}"' in ln]
        summary = Tables(row).texts.get("spec") or row.split('class="spec">')[1].split("<")[0]
        _, page, _ = fetch(f"{web.url}/jobs/{job_id}")
        options = page.split('name="configuration">')[1].split("</select>")[0]
        shown = 0
        for cfg in doc["configurations"]:
            k, bots = cfg["index"], ", ".join(cfg["seat_bots"])
            label = cfg.get("rules")
            extra = f", rules {escape(label)}" if label else ""
            option = f'<option value="{k}">{k}: {escape(bots)} ({cfg["players"]}p{extra})</option>'
            assert option in options, (name, k, options[:400])
            if k < 3:  # the summary names the first three
                assert f"{escape(bots)} ({cfg['players']}p" in summary
                if label:
                    assert f"rules {escape(label)})" in summary, (summary, label)
            shown += bool(label)
        assert shown  # each job has a configuration of another rule set
    assert "rules printed" not in listed


def test_a_rule_set_label_of_the_summary_is_the_statistics_label():
    """`rule_set_label` of a stored spec is `sim.rules.rulesets.RuleSet.of`'s label, the job's round
    cap included where the configuration has none."""
    from service.convert import spec_to_proto
    from service.web.jobs import rule_set_label, spec_summary
    from sim.jobs.spec import JobSpec
    from sim.rules.rulesets import RuleSet

    spec = JobSpec.from_dict({
        "configurations": [
            {"players": 2, "bots": ["greedy", "random"]},
            {"players": 2, "bots": ["greedy", "random"], "wall": "gray"},
            {"players": 3, "bots": ["greedy"] * 3, "max_rounds": 12},
            {"players": 2, "bots": ["greedy", "random"], "rules": {"column_bonus": 9}},
        ],
        "games": 10,
        "seed": 1,
        "max_rounds": 20,
    })  # fmt: skip
    message = spec_to_proto(spec)
    labels = [rule_set_label(c, message) for c in message.configurations]
    assert labels == [RuleSet.of(c, spec).label for c in spec.configurations]
    assert (
        labels[0] == "max_rounds=20" and "wall=gray" in labels[1] and "column_bonus=9" in labels[3]
    )
    plain = {k: v for k, v in spec.to_dict().items() if k != "max_rounds"}
    printed = spec_to_proto(JobSpec.from_dict(plain))
    assert rule_set_label(printed.configurations[0], printed) == "printed"
    assert "(2p)" in spec_summary(printed) and "rules wall=gray" in spec_summary(printed)


def test_getstatistics_after_a_page_answers_what_it_answers_without_one(web):
    """The page derives its document without the reply's JSON; the first GetStatistics after it
    builds the reply from that document: the same reply, byte for byte, as one derived for
    GetStatistics alone, and the page's document is its ``statistics_json``."""
    from service.server.replies import StatisticsReplies

    backend = web.server.backend
    for name in ("balance", "sprt"):
        job_id = web.jobs[name]
        after_page = StatisticsReplies()
        shown = after_page.document(backend, job_id)
        assert not after_page.replies  # no reply built for the page
        reply = after_page.reply(backend, job_id)
        alone = StatisticsReplies().reply(backend, job_id)
        wire = reply.SerializeToString(deterministic=True)
        assert wire == alone.SerializeToString(deterministic=True)
        doc = json.loads(reply.statistics_json)
        assert shown.doc == {k: v for k, v in doc.items() if k != "timing"}
        assert after_page.document(backend, job_id) is shown  # kept for the next page


def test_game_page_replays_the_game_replaygame_replays(web):
    job_id = web.jobs["plain"]
    replay = web.client.replay(job_id, game=7, configuration=0)
    status, html, _ = fetch(f"{web.url}/jobs/{job_id}/game?configuration=0&game=7")
    assert status == 200
    assert html.count('<figure class="step"') == len(replay.steps)
    assert html.count('<svg class="table"') == len(replay.steps)
    assert f'data-steps="{len(replay.steps)}"' in html
    picks = [s for s in replay.steps if s.action_text]
    for step in picks[:20]:
        assert f"takes {escape(step.action_text)}" in html
    result = ", ".join(f"seat {p} {s}" for p, s in enumerate(replay.scores))
    assert result in html
    status, html, _ = fetch(f"{web.url}/jobs/{job_id}/game?configuration=2&game=0")
    assert status == 400 and "configuration must be in 0..1; got 2" in html


def _events(url: str, out: list, headers=None) -> None:
    """Read an event stream to its end: ``out`` gets ``(event, data)`` pairs."""
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=120) as r:
        event = None
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                out.append((event, json.loads(line[6:])))
                if event == "end":
                    return


def test_event_stream_follows_a_running_job_and_ends_with_it(web):
    job = web.client.submit(LONG)[0]
    feeds = web.server.running.web.view.feeds
    got: list = []
    readers = [threading.Thread(target=_events, args=(f"{web.url}/jobs/{job.job_id}/events", got))
               for _ in range(3)]  # fmt: skip
    for r in readers:
        r.start()
    wait_until(lambda: feeds.watchers() == 3, 60, "three pages watching")
    assert len(feeds.feeds) == 1  # one poller, whoever watches
    wait_until(
        lambda: len({d["games_done"] for e, d in got if e == "update"}) >= 3,
        120,
        "the stream to report the job's progress thrice",
        details=lambda: web.worker.log()[-3000:],
    )
    web.client.cancel(job.job_id)
    for r in readers:
        r.join(60)
        assert not r.is_alive(), "the stream did not end with the job"
    updates = [d for e, d in got if e == "update"]
    assert [e for e, _ in got].count("end") == 3
    assert updates[-1]["state"] == "CANCELLED" and updates[-1]["finished"]
    done = [d["games_done"] for d in updates]
    assert done == sorted(done)
    assert "CANCELLED" in updates[-1]["html"]["progress"]
    shown = [d["html"]["statistics"] for d in updates if "statistics" in d["html"]]
    assert "statistics" in updates[0]["html"] and "By bot" in shown[-1]
    assert len(shown) < len(updates)  # the same statistics are not sent again with progress
    wait_until(lambda: not feeds.feeds, 30, "the feed to stop")
    # A page opened on an ended job gets its state and the end at once.
    again: list = []
    _events(f"{web.url}/jobs/{job.job_id}/events", again)
    assert [e for e, _ in again] == ["update", "end"]


def test_job_page_of_an_unknown_job_is_not_found(web):
    status, html, _ = fetch(f"{web.url}/jobs/{'0' * 32}")
    assert status == 404 and "no job" in html
    status, body, _ = fetch(f"{web.url}/jobs/{'0' * 32}/events")
    assert status == 404


@pytest.fixture(scope="module")
def authed(web, module_env):
    config = ServerConfig(web_listen="127.0.0.1:0", auth_tokens=(TOKEN,))
    server = ServerThread(make_backend(config, load_settings(module_env)), config).start()
    yield server
    server.stop()


def test_with_auth_every_page_needs_the_token(web, authed):
    url, job_id = authed.web_url, web.jobs["plain"]
    for path in ("/jobs", f"/jobs/{job_id}", f"/jobs/{job_id}/game?game=1", "/"):
        status, html, headers = fetch(url + path)
        assert status == 401, path
        assert headers["WWW-Authenticate"] == "Bearer"
        assert 'name="token"' in html and job_id not in html.replace(f'next" value="{path}', "")
    for path in (f"/jobs/{job_id}/events", f"/jobs/{job_id}/live"):
        status, body, _ = fetch(url + path)
        assert status == 401 and "bearer token" in body and "html" not in body
    assert fetch(url + "/jobs", {"Authorization": "Bearer wrong"})[0] == 401
    assert fetch(url + "/jobs", {"Authorization": f"Basic {TOKEN}"})[0] == 401
    status, html, _ = fetch(url + f"/jobs/{job_id}", {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and job_id in html
    status, html, _ = fetch(url + "/jobs", {"Cookie": f"azulsim_token={TOKEN}"})
    assert status == 200 and job_id in html
    assert fetch(url + "/static/web.css")[0] == 200  # the login page's style


def _post(url: str, form: dict[str, str]):
    return _post_tls(url, form, None)


def test_login_form_sets_the_token_cookie_and_returns_to_a_local_page(authed):
    status, headers, body = _post(authed.web_url + "/login", {"token": "nope", "next": "/jobs"})
    assert status == 401 and "not accepted" in body and "Set-Cookie" not in headers
    status, headers, _ = _post(authed.web_url + "/login", {"token": TOKEN, "next": "/jobs?size=3"})
    assert status == 303 and headers["Location"] == "/jobs?size=3"
    cookie = headers["Set-Cookie"]
    assert f"azulsim_token={TOKEN}" in cookie and "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    for elsewhere in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        status, headers, _ = _post(authed.web_url + "/login", {"token": TOKEN, "next": elsewhere})
        assert status == 303 and headers["Location"] == "/jobs"


def test_pages_carry_a_content_security_policy_with_nothing_from_elsewhere(web):
    status, html, headers = fetch(f"{web.url}/jobs/{web.jobs['sprt']}")
    policy = headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "http" not in policy
    assert "http://" not in html.replace(web.url, "") and "https://" not in html
    assert fetch(f"{web.url}/static/web.js")[0] == 200


def test_azulsim_up_prints_where_the_web_view_is(module_env, tmp_path):
    import os
    import signal
    import subprocess
    import sys

    env = {**os.environ, **module_env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "up", "--ephemeral", "--workers", "1",
         "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if "Ctrl-C stops everything" in line:
                break
        web = [ln for ln in lines if ln.strip().startswith("web ")]
        assert web, "".join(lines)
        url = web[0].split()[1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        status, html, _ = fetch(url + "jobs")
        assert status == 200 and "<h1>Jobs</h1>" in html
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def test_a_new_statistics_section_is_one_entry_and_one_template(monkeypatch, tmp_path):
    import jinja2

    from service.web import sections, views

    (tmp_path / "sections").mkdir()
    (tmp_path / "sections" / "lead.html").write_text(
        '<p id="lead">first player wins {{ doc.lead.first }}</p>'
    )
    monkeypatch.setattr(
        sections,
        "SECTIONS",
        (*sections.SECTIONS, sections.Section("lead", "Lead", lambda d: "lead" in d)),
    )
    base = views.environment

    def environment():
        env = base()
        env.loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(tmp_path), env.loader])
        return env

    monkeypatch.setattr(views, "environment", environment)
    monkeypatch.setattr(views, "sections_of", sections.sections_of)
    doc = {"configurations": [], "lead": {"first": "51.2%"}}
    html = views.Views().page("statistics.html", doc=doc, sections=sections.sections_of(doc),
                              partial=False)  # fmt: skip
    assert 'id="section-lead"' in html and "first player wins 51.2%" in html
    assert [s.name for s in sections.sections_of({"configurations": [1]})] == ["configurations"]


def test_boards_draw_every_tile_of_the_table():
    from service.replay import replay_game
    from service.web.board import table_svg
    from sim.jobs.spec import JobSpec

    spec = JobSpec.from_dict(PLAIN)
    replay = replay_game(spec, 0, 2)
    for step in (replay.steps[0], replay.steps[len(replay.steps) // 2], replay.steps[-1]):
        s = step.state
        svg = str(table_svg(s, replay.seat_bots, replay.wall))
        on_displays = sum(min(4, sum(f)) for f in s["factories"])
        on_lines = sum(n for board in s["lines"] for c, n in board if c >= 0)
        placed = sum(cell >= 0 for board in s["wall"] for row in board for cell in row)
        centre = sum(1 for n in s["centre"] if n)  # one tile a colour, with its count
        assert svg.count('class="tile c') == on_displays + on_lines + placed + centre
        assert svg.count(" placed") == placed
        assert svg.count("floor-full") == sum(min(7, f) for f in s["floor"])
        for score in s["scores"]:
            assert f">{score} pts<" in svg


def test_queued_jobs_say_how_much_work_is_ahead_of_them(api_server):
    server = api_server(web_listen="127.0.0.1:0")  # no worker: jobs stay queued
    spec = {"configurations": [{"players": 2, "bots": ["greedy", "random"]}], "games": 30,
            "seed": 1}  # fmt: skip
    with Client(server.address, token="") as client:
        first = client.submit(spec)[0]
        second = client.submit({**spec, "seed": 2})[0]
    status, html, _ = fetch(f"{server.web_url}/jobs")
    assert status == 200
    rows = {r.split('data-job="')[1][:32]: r for r in html.split("<tr")[1:] if "data-job=" in r}
    assert "next in the queue" in rows[first.job_id]
    assert "queued behind 30 games of 1 earlier job" in rows[second.job_id]
    status, html, _ = fetch(f"{server.web_url}/jobs/{second.job_id}")
    assert "queued behind 30 games of 1 earlier job" in Tables(html).texts["remaining"]


def test_under_tls_the_web_view_speaks_https_with_the_api_certificate(api_server, tmp_path):
    import ssl

    from tests.test_security import _certificates

    ca, cert, key = _certificates(tmp_path)
    server = api_server(
        web_listen="127.0.0.1:0", tls_cert=str(cert), tls_key=str(key), auth_tokens=(TOKEN,)
    )
    https = f"https://127.0.0.1:{server.running.web_port}"
    context = ssl.create_default_context(cafile=str(ca))
    request = urllib.request.Request(f"{https}/jobs", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, context=context, timeout=30) as r:
        assert r.status == 200 and "<h1>Jobs</h1>" in r.read().decode()
    status, headers, _ = _post_tls(f"{https}/login", {"token": TOKEN}, context)
    assert status == 303 and "Secure" in headers["Set-Cookie"]  # never sent over plain HTTP
    with pytest.raises(OSError):  # plain HTTP on the TLS port: refused or cut
        urllib.request.urlopen(f"http://127.0.0.1:{server.running.web_port}/jobs", timeout=10)


def _post_tls(url: str, form: dict[str, str], context):
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    handlers = [NoRedirect] + ([urllib.request.HTTPSHandler(context=context)] if context else [])
    opener = urllib.request.build_opener(*handlers)
    data = urllib.parse.urlencode(form).encode()
    try:
        with opener.open(urllib.request.Request(url, data=data), timeout=30) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()
