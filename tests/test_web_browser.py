"""The web view in a real browser: Debian's headless Chromium (driven by Selenium through
chromedriver) on a real stack — the session's Redis, a Celery worker and the API server with its
web view as child processes (`service.stack.Stack`, as ``azulsim up`` runs them).

What a reader sees is checked: the text of the pages, screenshots of drawn elements (the tiles of
a game's boards in the game's colours, the LLR path and its bounds), the page changing while its
job runs and stopping when it ends, the keyboard and the slider stepping through a game, and the
login form when auth is on. Chromium must be installed (.ci/run does it): these tests fail, not
skip, without it.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from PIL import Image
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from service.client import Client
from service.config import ServerConfig
from service.server import make_backend
from service.stack import Stack
from service.testing import ServerThread
from tests.waits import wait_until
from tests.web_util import LONG, SPRT, TOKEN, browser
from workers.settings import load_settings

BLUE, YELLOW, RED = (0x1F, 0x6F, 0xD1), (0xF2, 0xC2, 0x30), (0xD3, 0x3A, 0x2C)
GAME = {"configurations": [{"players": 3, "bots": ["greedy", "random", "heuristic"]}],
        "games": 40, "seed": 11}  # fmt: skip


def pixels(png: bytes, colour: tuple[int, int, int], tolerance: int = 14) -> int:
    """How many pixels of the screenshot are `colour` (within `tolerance` per channel)."""
    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    return int((np.abs(image - np.array(colour, np.int16)) <= tolerance).all(axis=2).sum())


def text(driver, element_id: str) -> str:
    """An element's text, read in one script call: the live parts are replaced as updates come,
    so an element found in one call may be gone by the next."""
    return driver.execute_script(
        "const e = document.getElementById(arguments[0]); return e ? e.innerText : null;",
        element_id,
    )


def shows(driver, element_id: str, expected: str, timeout: float = 30.0) -> None:
    """Wait until the element's text is `expected` (a key's handler runs after send_keys)."""
    wait_until(
        lambda: text(driver, element_id) == expected,
        timeout,
        f"#{element_id} to read {expected!r}",
        details=lambda: repr(text(driver, element_id)),
    )


@pytest.fixture(scope="module")
def stack(module_env, tmp_path_factory):
    env = {**os.environ, **module_env, "AZULSIM_CHUNK_GAMES": "100"}
    s = Stack(
        workers=1,
        listen="127.0.0.1:0",
        web="127.0.0.1:0",
        env=env,
        workdir=tmp_path_factory.mktemp("stack"),
    )
    s.start()
    client = Client(s.address, token="", timeout=60)
    client.wait_ready(60)
    yield s, client
    client.close()
    s.stop()


@pytest.fixture
def chrome(tmp_path):
    driver = browser(tmp_path / "profile")
    yield driver
    driver.quit()


def _finished(client: Client, job_id: str, stack: Stack):
    return wait_until(
        lambda: (j := client.get(job_id)).state in (3, 4, 5) and j,
        180,
        f"job {job_id} to end",
        interval=0.2,
        details=lambda: stack.tail("worker", 40),
    )


def test_job_page_updates_while_the_job_runs_and_stops_when_it_ends(stack, chrome):
    s, client = stack
    job = client.submit(LONG)[0]
    wait_until(lambda: client.get(job.job_id).games_done > 0, 120, "the job to start")
    chrome.get(f"{s.web_url}jobs/{job.job_id}")
    live = chrome.find_element(By.ID, "live")
    assert text(chrome, "job-id") == job.job_id
    first = text(chrome, "games")
    wait_until(
        lambda: (
            int(live.get_attribute("data-updates") or 0) >= 1
            and text(chrome, "games") not in (first, None)
        ),
        120,
        "the page to show more games without a reload",
        details=lambda: s.tail("api"),
    )
    assert text(chrome, "job-state") == "RUNNING"
    width = chrome.execute_script("return document.querySelector('#bar > div').style.width")
    assert width.endswith("%") and float(width[:-1]) > 0
    assert "By bot" in text(chrome, "statistics")
    client.cancel(job.job_id)
    wait_until(
        lambda: live.get_attribute("data-finished") == "true",
        60,
        "the page to close its event stream at the job's end",
    )
    assert text(chrome, "job-state") == "CANCELLED"
    assert text(chrome, "live-status") == "The job has ended."
    assert chrome.execute_script("return document.readyState") == "complete"


def test_game_page_draws_the_boards_and_steps_with_keys_and_slider(stack, chrome):
    s, client = stack
    job = client.submit(GAME)[0]
    _finished(client, job.job_id, s)
    replay = client.replay(job.job_id, game=3)
    chrome.get(f"{s.web_url}jobs/{job.job_id}/game?configuration=0&game=3")
    steps = len(replay.steps)
    shows(chrome, "step-label", f"step 1 of {steps}")
    visible = chrome.find_elements(By.CSS_SELECTOR, "figure.step:not([hidden])")
    assert len(visible) == 1 and "the factories are filled" in visible[0].text
    dealt = visible[0].find_element(By.CSS_SELECTOR, "svg.table").screenshot_as_png
    # The factories hold 28 tiles of the bag's colours: each colour drawn shows as its own pixels.
    assert sum(pixels(dealt, c) > 200 for c in (BLUE, YELLOW, RED)) >= 2
    body = chrome.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_RIGHT)
    shows(chrome, "step-label", f"step 2 of {steps}")
    shown = chrome.find_element(By.CSS_SELECTOR, "figure.step:not([hidden]) figcaption").text
    assert f"takes {replay.steps[1].action_text}" in shown
    body.send_keys(Keys.END)
    shows(chrome, "step-label", f"step {steps} of {steps}")
    end = chrome.find_element(By.CSS_SELECTOR, "figure.step:not([hidden]) svg.table")
    assert f"{replay.steps[-1].state.boards[0].score} pts" in end.text
    assert end.screenshot_as_png != dealt
    body.send_keys(Keys.HOME)
    shows(chrome, "step-label", f"step 1 of {steps}")
    assert chrome.find_element(By.ID, "replay").get_attribute("data-current") == "0"
    chrome.execute_script(
        "const s = document.getElementById('slider'); s.value = 5;"
        "s.dispatchEvent(new Event('input'));"
    )
    shows(chrome, "step-label", f"step 6 of {steps}")


def test_stopping_rule_page_draws_the_llr_path_against_its_bounds(stack, chrome):
    s, client = stack
    job = client.submit(SPRT)[0]
    _finished(client, job.job_id, s)
    doc = client.statistics_document(job.job_id)
    chrome.get(f"{s.web_url}jobs/{job.job_id}")
    section = chrome.find_element(By.ID, "section-stopping")
    assert f"{doc['stopping']['llr']:+.3f}" in section.text
    assert "h1 accepted" in section.text or "h0 accepted" in section.text
    chart = chrome.find_element(By.CSS_SELECTOR, "#llr-chart svg").screenshot_as_png
    assert pixels(chart, BLUE) > 100  # the LLR's line and check points
    assert pixels(chart, RED) > 100  # the bounds it was read against
    assert chrome.find_element(By.ID, "live").get_attribute("data-finished") == "true"


def test_balance_job_page_shows_its_balance_sheet(stack, chrome):
    from service.cli.balance import _cell
    from sim.experiments.balance_lab import balance_document, balance_spec

    s, client = stack
    spec = balance_spec(["printed", "wall=gray"], [2], "greedy", ["five"], games=40, seed=2)
    job = client.submit(spec)[0]
    _finished(client, job.job_id, s)
    sheet = balance_document(client.statistics_document(job.job_id))
    chrome.get(f"{s.web_url}jobs/{job.job_id}")
    section = chrome.find_element(By.ID, "section-balance")
    assert section.find_element(By.TAG_NAME, "h2").text == "Balance sheet"
    table = chrome.find_element(By.ID, "balance-measures-2")
    assert table.is_displayed()
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == list(sheet["measures"])
    first, other = sheet["tables"][0]["rule_sets"]
    cells = [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")]  # balance
    m0, m1 = first["measures"]["balance"], other["measures"]["balance"]
    assert cells[1:] == [_cell(m0["value"], m0["ci95"], 3), _cell(m1["value"], m1["ci95"], 3),
                         _cell(m1["diff"], m1["diff_ci95"], 3)]  # fmt: skip
    restricted = chrome.find_element(By.ID, "balance-restricted-2").text
    assert "five" in restricted and "50.0 %" in restricted  # the fair share at two players
    what = chrome.find_element(By.ID, "balance-measures")  # the measures' descriptions, folded
    described = sheet["measures"]["lead_changes"]
    assert described not in what.text
    what.find_element(By.TAG_NAME, "summary").click()
    assert described in what.text
    # The game picker and the jobs list name each configuration's rule set unless printed.
    doc = client.statistics_document(job.job_id)
    picker = chrome.find_elements(By.CSS_SELECTOR, "#game-picker option")
    labels = [c.get("rules") for c in doc["configurations"]]
    assert "wall=gray" in labels and None in labels
    for option, label in zip(picker, labels, strict=True):
        text = option.get_attribute("textContent")
        assert (f", rules {label})" in text) if label else "rules" not in text, (text, label)
    chrome.get(f"{s.web_url}jobs")
    summary = chrome.find_element(By.CSS_SELECTOR, f'tr[data-job="{job.job_id}"] td.spec').text
    assert "rules wall=gray" in summary and "rules printed" not in summary


@pytest.fixture
def authed(module_env):
    config = ServerConfig(web_listen="127.0.0.1:0", auth_tokens=(TOKEN,))
    server = ServerThread(make_backend(config, load_settings(module_env)), config).start()
    yield server
    server.stop()


def test_with_auth_the_browser_is_refused_until_it_signs_in(stack, authed, chrome):
    s, client = stack
    job = client.submit(GAME)[0]
    chrome.get(f"{authed.web_url}/jobs/{job.job_id}")
    assert chrome.find_element(By.TAG_NAME, "h1").text == "Sign in"
    assert "needs a bearer token" in chrome.find_element(By.ID, "error-message").text
    assert job.job_id not in chrome.find_element(By.TAG_NAME, "main").text
    chrome.find_element(By.ID, "token").send_keys("not-the-token")
    chrome.find_element(By.ID, "sign-in").click()
    wait_until(
        lambda: "not accepted" in (text(chrome, "error-message") or ""),
        30,
        "the form to say the token is not accepted",
    )
    chrome.find_element(By.ID, "token").send_keys(TOKEN)
    chrome.find_element(By.ID, "sign-in").click()
    wait_until(lambda: "/login" not in chrome.current_url, 30, "the form to return to the job")
    shows(chrome, "job-id", job.job_id)
