"""``azulsim report``: plots from a saved ``azulsim simulate --json`` document and from a job on
a real API server (chunks played in-process, no worker), checked as images: valid PNG, a sensible
size, not blank; HTML embeds them."""

from __future__ import annotations

import base64
import io
import json
import re

import numpy as np
import pytest
from PIL import Image

from service import report
from service.cli import main


@pytest.fixture(scope="module")
def stats_file(tmp_path_factory):
    """``azulsim simulate --json`` of a small two-configuration run, saved to a file."""
    path = tmp_path_factory.mktemp("report") / "stats.json"
    spec = path.with_name("spec.json")
    spec.write_text(
        json.dumps(
            {
                "configurations": [
                    {"players": 2, "bots": ["greedy", "random"]},
                    {"players": 3, "bots": ["greedy", "random", "random"], "seating": "fixed"},
                ],
                "games": 120,
                "seed": 11,
            }
        )
    )
    out = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out):
        assert main(["simulate", "--spec", str(spec), "--workers", "1", "--json"]) == 0
    path.write_text(out.getvalue())
    return path


def check_image(data: bytes | str, min_size=(600, 250)) -> Image.Image:
    image = Image.open(data if isinstance(data, str) else io.BytesIO(data))
    image.load()
    assert image.format == "PNG"
    assert image.width >= min_size[0] and image.height >= min_size[1], image.size
    pixels = np.asarray(image.convert("L"), dtype=float)
    assert pixels.std() > 10, "the image is (nearly) blank"
    assert (pixels < 200).mean() > 0.02, "too few drawn pixels"
    return image


def test_png_from_saved_json(stats_file, tmp_path, capsys):
    out = tmp_path / "report.png"
    assert main(["report", "--from", str(stats_file), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().err
    image = check_image(str(out))
    assert image.height > image.width / 4  # two rows of panels: one per configuration
    assert out.stat().st_size > 20_000


def test_html_embeds_the_images_and_the_figures(stats_file, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", "--from", str(stats_file), "-o", str(out), "--title", "T & t"]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<h1>T &amp; t</h1>" in page
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 2  # one per configuration
    for b64 in images:
        check_image(base64.b64decode(b64))
    doc = json.loads(stats_file.read_text())
    rate = doc["configurations"][0]["bots"]["greedy"]["win_rate"]
    assert f"{100 * rate:.1f}%" in page and "seat 2" in page
    assert "http" not in page.replace("http-equiv", "")  # self-contained: nothing fetched


def test_svg_and_pdf_and_wrapped_documents(stats_file, tmp_path):
    doc = json.loads(stats_file.read_text())
    wrapped = {"job": {"job_id": "x"}, "statistics_json": json.dumps(doc)}
    svg = report.write_report(wrapped, tmp_path / "r.svg")
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))
    pdf = report.write_report({"statistics": doc}, tmp_path / "r.pdf")
    assert pdf.read_bytes().startswith(b"%PDF")


def test_usage_errors(stats_file, tmp_path, capsys):
    assert main(["report", "--from", str(stats_file), "-o", str(tmp_path / "r.txt")]) == 2
    assert "-o must end in .png" in capsys.readouterr().err
    assert main(["report", "-o", str(tmp_path / "r.png")]) == 2
    assert "either JOB or --from" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    assert main(["report", "--from", str(bad), "-o", str(tmp_path / "r.png")]) == 2
    assert "not a statistics document" in capsys.readouterr().err
    assert not (tmp_path / "r.png").exists()


def test_report_of_a_job_through_the_api(azulsim_env, tmp_path):
    """Submit through a real server, play the chunks in this process (`run_chunk`, the worker's
    task body), then ``azulsim report JOB`` fetches the statistics through the client."""
    from service.client import Client
    from service.config import ServerConfig
    from service.server import make_backend
    from service.testing import ServerThread
    from sim.jobs.local import run_local
    from sim.jobs.spec import JobSpec
    from workers.app import make_app
    from workers.settings import load_settings
    from workers.tasks import run_chunk

    settings = load_settings(azulsim_env)
    spec = JobSpec.from_dict(
        {"configurations": [{"players": 2, "bots": ["greedy", "random"]}], "games": 100, "seed": 3}
    )
    config = ServerConfig(auth_tokens=("tok",))
    with ServerThread(make_backend(config, settings), config) as server:
        with Client(server.address, token="tok") as client:
            job, _ = client.submit(spec, request_id="report-1")
        app = make_app(settings)
        for chunk in range(job.chunks_total):
            assert run_chunk(app, job.job_id, chunk)["status"] == "ok"
        out = tmp_path / "job.png"
        status = main(
            ["report", job.job_id, "--server", server.address, "--token", "tok", "-o", str(out)]
        )
        assert status == 0
        check_image(str(out))
        fetched = report.fetch_statistics(job.job_id, address=server.address, token="tok")
        assert (
            main(
                [
                    "report",
                    "0" * 32,
                    "--server",
                    server.address,
                    "--token",
                    "tok",
                    "-o",
                    str(tmp_path / "none.png"),
                ]
            )
            == 1
        )
    local = run_local(spec, workers=1).statistics()
    local.pop("timing", None)
    assert fetched == json.loads(json.dumps(local))
