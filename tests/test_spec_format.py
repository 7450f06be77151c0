"""One job-spec format for files, the Python client and the docs, with the CLI's defaults; the
proto's JSON mapping (what grpcurl sends) read as well, and the docs' grpcurl bodies valid."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from google.protobuf import json_format

from service import convert
from service.api import azulsim_pb2 as pb
from service.client import Client
from sim.jobs.spec import JobSpec
from tests.cli_util import azulsim, in_process_server, user_env  # noqa: F401 - fixture

REPO = Path(__file__).resolve().parent.parent
FILE_FORM = {
    "configurations": [{"bots": ["greedy", "random"], "seating": "fixed", "wall": "grey"}],
    "games": 300,
    "seed": 7,
}
PROTO_FORM = {
    "configurations": [
        {
            "players": 2,
            "bots": ["greedy", "random"],
            "seating": "SEATING_FIXED",
            "wall": "WALL_GRAY",
        }
    ],
    "games": "300",
    "seed": "7",
    "maxRounds": 100,
}


def grpcurl_calls(text: str) -> list[tuple[str, str]]:
    """(method, JSON body) of every grpcurl command in a Markdown text."""
    calls = []
    for line in text.splitlines():
        if line.startswith("grpcurl ") and " -d " in line:
            words = shlex.split(line)
            body = words[words.index("-d") + 1]
            calls.append((words[-1].rpartition("/")[2], body))
    return calls


def test_the_docs_grpcurl_bodies_parse_as_their_requests():
    calls = grpcurl_calls((REPO / "docs" / "api.md").read_text())
    assert {m for m, _ in calls} >= {"SubmitJob", "GetJob", "ReplayGame"}
    for method, body in calls:
        request = getattr(pb, f"{method}Request" if method != "SubmitJob" else "SubmitJobRequest")()
        json_format.Parse(body, request)  # raises on a wrong enum name, field or type
        if method == "SubmitJob":
            spec = convert.spec_from_proto(request.spec)
            assert spec.games == 10000 and spec.seed == 7 and request.request_id
            # the same job as the file format of the docs' spec example
            blocks = re.findall(r"```json\n(.*?)```", (REPO / "docs" / "api.md").read_text(), re.S)
            assert JobSpec.from_dict(json.loads(blocks[0])) == spec


def test_the_readme_spec_file_example_is_valid():
    blocks = re.findall(r"```json\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert blocks
    for block in blocks:
        JobSpec.from_dict(json.loads(block))


def test_both_forms_give_one_spec_with_the_cli_defaults():
    spec = convert.spec_from_document(FILE_FORM)
    assert convert.spec_from_document(PROTO_FORM) == spec
    assert convert.spec_from_document({"spec": PROTO_FORM, "requestId": "x"}) == spec
    assert spec.configurations[0].players == 2 and spec.configurations[0].wall == "gray"
    bare = convert.spec_from_document({"configurations": [{"bots": ["greedy", "random"]}]})
    assert (bare.games, bare.seed, bare.max_rounds) == (1000, 0, 100)
    with pytest.raises(ValueError, match=r"configurations\[0\].seating must be one of"):
        convert.spec_from_document(
            {"configurations": [{"bots": ["greedy", "greedy"], "seating": "x"}]}
        )


def test_spec_files_of_both_forms_through_the_installed_azulsim(tmp_path, in_process_server):  # noqa: F811
    """`simulate --spec` and `submit --spec` take either form; the defaults are the CLI's."""
    file_form, proto_form = tmp_path / "study.json", tmp_path / "grpc.json"
    file_form.write_text(json.dumps(FILE_FORM))
    proto_form.write_text(json.dumps({"spec": PROTO_FORM}))
    a = json.loads(azulsim("simulate", "--spec", str(file_form), "--workers", "1", "--json").stdout)
    b = json.loads(
        azulsim("simulate", "--spec", str(proto_form), "--workers", "1", "--json").stdout
    )
    a.pop("timing"), b.pop("timing")
    assert a == b and a["spec"]["configurations"][0]["wall"] == "gray"

    server = ["--server", in_process_server]
    first = azulsim("submit", "--spec", str(file_form), "--request-id", "r1", "--json", *server)
    again = azulsim("submit", "--spec", str(proto_form), "--request-id", "r1", "--json", *server)
    job = json.loads(first.stdout)["job"]
    assert json.loads(again.stdout) == {"job": job, "created": False}  # the same spec
    assert job["spec"] == {
        **FILE_FORM,
        "configurations": [
            {"players": 2, "bots": ["greedy", "random"], "seating": "fixed", "wall": "gray"}
        ],
        "max_rounds": 100,
    }
    assert isinstance(job["games_total"], int) and job["state"] == "QUEUED"

    bare = tmp_path / "bare.json"
    bare.write_text('{"configurations": [{"bots": ["random", "random", "random"]}]}')
    job = json.loads(azulsim("submit", "--spec", str(bare), "--json", *server).stdout)["job"]
    assert job["spec"]["games"] == 1000 and job["spec"]["seed"] == 0
    assert job["spec"]["configurations"][0]["players"] == 3

    with Client(in_process_server) as client:  # the Python client takes the file format too
        submitted, created = client.submit(FILE_FORM, request_id="r1")
        assert not created and submitted.job_id == json.loads(first.stdout)["job"]["job_id"]
