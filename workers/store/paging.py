"""Listing jobs, newest first, a page at a time.

A page token is opaque to clients: the URL-safe base64 (no padding) of ``v1.<seq>``, where
``<seq>`` is the creation sequence number of the last job of the previous page (positive,
decimal, no leading zero). Only a token this module wrote is accepted: `decode_page_token` checks
the alphabet, the length, the canonical encoding and the payload, and its errors quote at most a
short prefix of what was sent.
"""

from __future__ import annotations

import base64
import binascii
import re

from sim.quote import shown

from .base import StoreBase
from .errors import unavailable
from .records import JobInfo, job_info, text

_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_-]{1,32}\Z")  # 32 chars: 24 bytes, room for any seq
_PAYLOAD = re.compile(rb"v1\.([1-9][0-9]{0,18})\Z")
_SHOWN = 16  # characters of a bad token quoted in the error


def encode_page_token(seq: int) -> str:
    """The token of the page after the job with sequence number `seq`."""
    return base64.urlsafe_b64encode(f"v1.{seq}".encode()).decode().rstrip("=")


def decode_page_token(token: str) -> int:
    """The sequence number in a token from `encode_page_token`; ValueError for anything else."""
    seq = None
    if _TOKEN_CHARS.match(token):
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            raw = b""
        if (m := _PAYLOAD.match(raw)) and encode_page_token(int(m.group(1))) == token:
            seq = int(m.group(1))
    if seq is None or seq >= 2**63:
        prefix = token[:_SHOWN] + ("..." if len(token) > _SHOWN else "")
        raise ValueError(
            f"page_token is not a next_page_token from ListJobs: {shown(prefix)} "
            f"({len(token)} characters)"
        )
    return seq


class JobPages(StoreBase):
    @unavailable
    def list_jobs(self, page_size: int, page_token: str = "") -> tuple[list[JobInfo], str]:
        """Jobs, newest first: ``(page, next_page_token)``; the token is ``""`` after the last page.

        `page_token` is the token of the previous page (opaque; ``""`` for the first page). Pages
        are stable while jobs are added: a new job never shifts the pages after the first. Raises
        ValueError on a malformed token or a `page_size` below 1.
        """
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1; got {page_size}")
        upper_arg = f"({decode_page_token(page_token)}" if page_token else "+inf"
        out: list[JobInfo] = []
        last_seq = None
        while len(out) < page_size:
            want = page_size - len(out)
            rows = self.redis.zrevrangebyscore(
                self.jobs_key, upper_arg, "-inf", start=0, num=want + 1, withscores=True
            )
            if not rows:
                return out, ""
            pipe = self.redis.pipeline(transaction=False)
            for member, _ in rows[:want]:
                pipe.hgetall(self.meta_key(text(member)))
            metas = pipe.execute()
            gone = []
            for (member, score), raw in zip(rows, metas, strict=False):
                job_id = text(member)
                last_seq = int(score)
                if raw:
                    out.append(job_info(job_id, raw))
                else:
                    gone.append(job_id)
            if gone:  # expired jobs: drop them from the index
                self.redis.zrem(self.jobs_key, *gone)
            if len(rows) <= want:
                return out, ""
            upper_arg = f"({last_seq}"
        return out, encode_page_token(last_seq)
