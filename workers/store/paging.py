"""Listing jobs, newest first, a page at a time."""

from __future__ import annotations

from .base import StoreBase
from .errors import unavailable
from .records import JobInfo, job_info, text


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
        if page_token:
            try:
                upper = int(page_token)
            except ValueError:
                raise ValueError(
                    f"page_token is not a token from list_jobs: {page_token!r}"
                ) from None
            upper_arg: str = f"({upper}"
        else:
            upper_arg = "+inf"
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
        return out, str(last_seq)
