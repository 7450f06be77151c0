"""Helpers of the web view's tests: HTTP requests, the tables of a page, headless Chromium."""

from __future__ import annotations

import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

# Jobs of the web tests: a stopping rule, two plain configurations, one that runs long.
SPRT = {
    "configurations": [{"players": 2, "bots": ["heuristic", "greedy"], "seating": "mirrored"}],
    "games": 2000,
    "seed": 1,
    "stop": {"rule": "sprt", "elo0": 250, "elo1": 300, "check_every": 40},
}
PLAIN = {"configurations": [{"players": 3, "bots": ["greedy", "random", "heuristic"]},
                            {"players": 2, "bots": ["greedy", "random"], "wall": "gray"}],
         "games": 300, "seed": 5}  # fmt: skip
LONG = {"configurations": [{"players": 2, "bots": ["greedy", "random"]}], "games": 100_000,
        "seed": 9}  # fmt: skip
TOKEN = "web-test-token"

CHROMIUM = "/usr/bin/chromium"  # Debian's package (`apt-get install chromium chromium-driver`)
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1600",
)


def fetch(url: str, headers: dict[str, str] | None = None, timeout: float = 30.0):
    """``(status, body text, headers)`` of a GET, whatever the status."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.read().decode(), r.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace"), exc.headers


class Tables(HTMLParser):
    """The tables of a page with an ``id``: ``tables[id] = [[cell text, …], …]`` (header
    first), and the text of elements by id (``texts``)."""

    def __init__(self, html: str):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.texts: dict[str, str] = {}
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._open: list[tuple[str, str | None]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self._table = a["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        if tag not in ("br", "input", "meta", "link", "img", "rect", "circle", "line"):
            self._open.append((tag, a.get("id")))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        if any(t == tag for t, _ in self._open):
            while self._open and self._open.pop()[0] != tag:
                pass

    def handle_startendtag(self, tag, attrs):  # <rect/>: nothing stays open
        pass

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        for _, ident in self._open:
            if ident:
                self.texts[ident] = self.texts.get(ident, "") + data


def browser(profile: Path):
    """Headless Debian Chromium through Selenium and chromedriver (never a downloaded browser)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver
