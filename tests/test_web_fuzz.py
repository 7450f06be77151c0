"""Property-based fuzzing of the web view's HTTP routes, as tests/test_fuzz.py fuzzes the RPCs:
one API server with its web view on the test's Redis (no worker: its jobs stay queued, or are
cancelled), and one with bearer tokens on.

Hypothesis sends bad job ids (any text, quoted into the path), bad pages (tokens, sizes, states),
huge, negative and non-numeric configurations and games, odd methods, paths and headers. For
every request:

- the status is never 500 or above but 503 (no crash, no unmapped exception);
- a page of one job never shows another job's id, and a refused request shows none at all;
- with auth on, no request without the token gets anything but the login form (401) or a static
  file, whatever its cookie or header says;
- an error page quotes at most a short prefix of a long value.
"""

from __future__ import annotations

import http.client
import urllib.parse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.client import Client
from service.config import ServerConfig
from service.testing import ServerThread
from tests.stack_util import api_thread
from tests.test_fuzz import LONG
from workers.settings import load_settings

TOKEN = "fuzz-token"
SPEC = {"configurations": [{"players": 2, "bots": ["greedy", "random"]},
                           {"players": 3, "bots": ["random"] * 3, "wall": "gray"}],
        "games": 10, "seed": 5}  # fmt: skip
HUGE = ["9" * 40, "-1", "1e9", "0x10", "١٢", " 3", "3 ", "+4", "", "nan", "2" * 400]
MAX_ERROR_CHARS = 600  # the error message, however long the value sent


def fuzz(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


class Site:
    def __init__(self, server: ServerThread, client: Client):
        self.server = server
        self.port = server.running.web_port
        self.queued = client.submit(SPEC)[0].job_id  # no worker: stays queued
        self.cancelled = client.submit(SPEC)[0].job_id
        client.cancel(self.cancelled)
        self.ids = {self.queued, self.cancelled}

    def request(self, method: str, target: str, headers: dict | None = None, body=None):
        """``(status, body)``; an event stream's body is not read (it may stay open)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, target, body=body, headers=headers or {})
            r = conn.getresponse()
            if r.getheader("Content-Type", "").startswith("text/event-stream"):
                return r.status, ""
            return r.status, r.read().decode(errors="replace")
        finally:
            conn.close()


@pytest.fixture(scope="module")
def sites(module_env):
    settings_ = load_settings(module_env)
    out = []
    for tokens in ((), (TOKEN,)):
        config = ServerConfig(web_listen="127.0.0.1:0", auth_tokens=tokens, max_replays=4)
        server = api_thread(settings_, config).start()
        client = Client(server.address, token=TOKEN if tokens else "", timeout=30)
        out.append((server, client, Site(server, client)))
    yield out[0][2], out[1][2]
    for server, client, _ in out:
        client.close()
        server.stop()


def _check(site: Site, status: int, body: str, own: str | None) -> None:
    assert status < 500 or status == 503, (status, body[-500:])
    if own is not None:  # a job's page: no other job's id
        for other in site.ids - {own}:
            assert other not in body, (own, other)
    if status >= 400:
        for job_id in site.ids:
            assert job_id not in body
        message = body.split('id="error-message">')[-1].split("</p>")[0]
        assert len(message) <= MAX_ERROR_CHARS, len(message)


job_ids = st.one_of(
    st.text(max_size=80),
    st.sampled_from(["", ".", "..", "%00", "a/b", "x" * 65, "é", "\\", "%2F"]),
    st.sampled_from(LONG).map(lambda s: s[:3000]),
)
values = st.one_of(st.text(max_size=50), st.sampled_from(HUGE), st.integers().map(str))
names = st.sampled_from(["state", "size", "page", "configuration", "game", "next", "x"])
queries = st.dictionaries(names, values, max_size=4)
routes = st.sampled_from(["", "/live", "/game", "/events"])


@fuzz(150)
@given(job_id=job_ids, route=routes, query=queries)
def test_job_routes_with_any_id_and_query(sites, job_id, route, query):
    open_site, _ = sites
    target = f"/jobs/{urllib.parse.quote(job_id, safe='')}{route}"
    if query:
        target += "?" + urllib.parse.urlencode(query)
    status, body = open_site.request("GET", target)
    _check(open_site, status, body, own=None)
    for own in open_site.ids:  # a job that exists is shown alone, whatever the query
        status, body = open_site.request(
            "GET", f"/jobs/{own}{route}?" + urllib.parse.urlencode(query)
        )
        _check(open_site, status, body, own=own)


@fuzz(100)
@given(query=queries)
def test_jobs_list_with_any_query(sites, query):
    open_site, _ = sites
    status, body = open_site.request("GET", "/jobs?" + urllib.parse.urlencode(query))
    _check(open_site, status, body, own=None)
    if status == 200:
        assert "<table" in body or 'id="no-jobs"' in body


@fuzz(60)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]),
    path=st.one_of(
        st.text(max_size=60).map(lambda s: "/" + urllib.parse.quote(s)),
        st.sampled_from(["/static/../pyproject.toml", "/static/%2e%2e/app.py", "/login",
                         "/static/", "/" + "a" * 9000, "/jobs/" + "%" * 10, "//jobs"]),
    ),
    body=st.one_of(st.none(), st.binary(max_size=200), st.just(b"token=" + b"x" * 40_000)),
)  # fmt: skip
def test_any_method_path_and_body(sites, method, path, body):
    for site in sites:
        status, text = site.request(method, path, body=body)
        _check(site, status, text, own=None)
        assert "[tool.setuptools" not in text and "def start_web" not in text


@fuzz(100)
@given(
    job=st.sampled_from(["queued", "cancelled"]),
    route=routes,
    authorization=st.one_of(
        st.none(),
        st.text(max_size=40).filter(lambda s: s.isascii() and s.isprintable()),
        st.sampled_from(["Bearer", "Bearer ", f"Basic {TOKEN}", f"bearer {TOKEN}x", "Bearer x"]),
    ),
    cookie=st.one_of(
        st.none(),
        st.sampled_from([f"azulsim_token={TOKEN}x", "azulsim_token=", f"token={TOKEN}",
                         f"azulsim_token={TOKEN[:-1]}", "azulsim_token=\"\""]),
    ),
)  # fmt: skip
def test_with_auth_nothing_but_the_token_opens_a_page(sites, job, route, authorization, cookie):
    _, locked = sites
    headers = {}
    if authorization is not None:
        headers["Authorization"] = authorization
    if cookie is not None:
        headers["Cookie"] = cookie
    own = locked.queued if job == "queued" else locked.cancelled
    for target in (f"/jobs/{own}{route}", "/jobs", "/"):
        status, body = locked.request("GET", target, headers=headers)
        assert status == 401, (target, headers, status)
        body = body.replace(f'value="{target}"', "")  # the login form returns to the page asked
        for job_id in locked.ids:
            assert job_id not in body
    status, body = locked.request("GET", f"/jobs/{own}", {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and own in body
