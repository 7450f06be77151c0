"""The gate of the netns tests (tests/conftest.py::require_netns): without the privilege they
skip with the reason locally, and fail in CI, where they must run."""

from __future__ import annotations

import pytest

import tests.netns
from tests.conftest import require_netns


def test_missing_privilege_skips_locally_with_the_reason(monkeypatch):
    monkeypatch.setattr(tests.netns, "why_unavailable", lambda: "network namespaces need root")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="need root"):
        require_netns()


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_missing_privilege_fails_in_ci(monkeypatch, ci):
    monkeypatch.setattr(tests.netns, "why_unavailable", lambda: "network namespaces need root")
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="must run in CI.*need root"):
        require_netns()


def test_ci_false_is_local(monkeypatch):
    monkeypatch.setattr(tests.netns, "why_unavailable", lambda: "no `ip` command (iproute2)")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="iproute2"):
        require_netns()
