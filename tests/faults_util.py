"""Helpers of tests/test_faults.py: a fault-injecting worker preamble, a proxy that loses Redis
replies, and what the tests read of the pool children (Redis: `service.stack.RedisServer`; an
API server process: `tests.stack_util.ApiProcess`; waits: `tests.waits`).

The preamble (`FAULT_PREAMBLE`) runs in a worker's main process before the pool forks, so every
pool child inherits it. It is driven by environment variables of that worker:

``AZULSIM_FAULT_DIR``    a directory for the files below (required)
``AZULSIM_FAULT_DELAY``  seconds added to every chunk's play (half before, half after), so that
                         a test can act while a chunk is surely mid-way
``AZULSIM_FAULT_KILL``   ``phase:chunk`` items, comma-separated: the pool child SIGKILLs itself
                         on the first attempt of that chunk at that phase:
                         ``play`` (half-way through the play), ``merge`` (played, counted, before
                         the Lua merge) or ``acked`` (after the Lua merge returned, before the
                         task returns and its message is acked)
``AZULSIM_FAULT_HOLD``   ``chunk``: after the first merge of that chunk, write ``held-<chunk>``
                         and wait (up to 120 s) for the test to create ``release`` — the test
                         kills Redis in between, so the merge is applied but the ack is not
``AZULSIM_FAULT_RACE``   ``1``: the task's own "is the job still running?" check before merging
                         always says yes, as if a cancel landed just after it; only the Lua
                         merge's atomic check is left to refuse
``AZULSIM_FAULT_DELIVER_DELAY``  ``chunk:seconds`` items: the worker's main process waits that
                         long between taking the chunk's message off the queue (BRPOP) and
                         kombu's ``unacked`` bookkeeping. In that window the message is in
                         neither, so "queue and unacked empty" does not mean "every message ran"

Files written in the directory: ``busy-<pid>`` (the chunk a pool child is playing, while it plays),
``killed-<phase>-<chunk>`` (time of a self-kill), ``held-<chunk>``.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

# Worker time limits that make redelivery after a lost node take seconds, in the order the
# settings demand (soft < hard < visibility < stall); the lease is renewed every second while a
# chunk plays. An attempt of the fault tests takes ~0.1 s of play plus the injected delay, far
# below the soft limit even on two busy cores. Tests add their attempts and sweep interval.
SHORT_LIMITS = {
    "AZULSIM_TASK_SOFT_LIMIT_S": "6",
    "AZULSIM_TASK_HARD_LIMIT_S": "8",
    "AZULSIM_VISIBILITY_TIMEOUT_S": "10",
    "AZULSIM_STALL_S": "12",
    "AZULSIM_LEASE_S": "3",
}

REPO = Path(__file__).resolve().parent.parent

FAULT_PREAMBLE = r"""
import os, signal, time, pathlib
import workers.tasks as _ft, workers.store as _fs
_fdir = pathlib.Path(os.environ["AZULSIM_FAULT_DIR"])
_fdelay = float(os.environ.get("AZULSIM_FAULT_DELAY") or 0)
_fkill = set()
for _item in filter(None, (os.environ.get("AZULSIM_FAULT_KILL") or "").split(",")):
    _phase, _, _c = _item.partition(":")
    _fkill.add((_phase, int(_c)))
_fhold = int(os.environ.get("AZULSIM_FAULT_HOLD") or -1)

def _fwrite(name, text):
    tmp = _fdir / (name + ".tmp%d" % os.getpid())
    tmp.write_text(text)
    os.replace(tmp, _fdir / name)

def _fonce(tag):
    try:
        os.close(os.open(_fdir / ("once-" + tag), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False

def _fdie(phase, chunk):
    if (phase, chunk) in _fkill and _fonce("%s-%d" % (phase, chunk)):
        _fwrite("killed-%s-%d" % (phase, chunk), repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)

_fplay = _ft.play_chunk
def _play_chunk(spec, chunk_games, chunk):
    busy = "busy-%d" % os.getpid()
    _fwrite(busy, str(chunk))
    try:
        time.sleep(_fdelay / 2)
        _fdie("play", chunk)
        out = _fplay(spec, chunk_games, chunk)
        time.sleep(_fdelay / 2)
        return out
    finally:
        (_fdir / busy).unlink(missing_ok=True)
_ft.play_chunk = _play_chunk

_fmerge = _fs.JobStore.merge_chunk
def _merge_chunk(self, job_id, chunk, *args, **kwargs):
    _fdie("merge", chunk)
    out = _fmerge(self, job_id, chunk, *args, **kwargs)
    _fdie("acked", chunk)
    if chunk == _fhold and _fonce("hold-%d" % chunk):
        _fwrite("held-%d" % chunk, repr(out))
        deadline = time.monotonic() + 120
        while not (_fdir / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return out
_fs.JobStore.merge_chunk = _merge_chunk

_fdeliver = {}
for _item in filter(None, (os.environ.get("AZULSIM_FAULT_DELIVER_DELAY") or "").split(",")):
    _c, _, _s = _item.partition(":")
    _fdeliver[int(_c)] = float(_s)
if _fdeliver:
    import json as _fjson
    import kombu.transport.redis as _fkr
    _fappend = _fkr.QoS.append
    def _append(self, message, delivery_tag):
        try:
            _c = int(_fjson.loads(message.body)[0][1])
        except Exception:
            _c = -1
        time.sleep(_fdeliver.get(_c, 0.0))
        return _fappend(self, message, delivery_tag)
    _fkr.QoS.append = _append

if os.environ.get("AZULSIM_FAULT_RACE") == "1":
    _fs.JobStore.job_state = lambda self, job_id: "RUNNING"
"""


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def busy_children(fault_dir: Path) -> dict[int, int]:
    """``{pid: chunk}`` of the live pool children playing a chunk right now."""
    out = {}
    for path in fault_dir.glob("busy-*"):
        if ".tmp" in path.name:
            continue
        try:
            pid, chunk = int(path.name[5:]), int(path.read_text())
        except (OSError, ValueError):
            continue
        if pid_alive(pid):
            out[pid] = chunk
    return out


class ReplyCuttingProxy:
    """A TCP proxy in front of Redis that can lose a reply: after forwarding a request that
    contains `pattern` (e.g. the SHA1 of a Lua script, sent with EVALSHA), it closes the client's
    and the server's sockets when the reply arrives, instead of passing it on. The command has run
    in Redis; the client sees only a dropped connection, as when Redis or the network dies after
    the work and before the answer. It does so `cuts` times, then passes everything.
    """

    def __init__(self, upstream_port: int, pattern: bytes = b"", cuts: int = 0):
        import threading

        self.upstream_port = upstream_port
        self.pattern, self.cuts_left, self.cut = pattern, cuts, 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def arm(self, pattern: bytes, cuts: int) -> None:
        with self.lock:
            self.pattern, self.cuts_left = pattern, cuts

    def _accept(self) -> None:
        import threading

        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            state = {"drop": False}
            threading.Thread(target=self._up, args=(client, server, state), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, state), daemon=True).start()

    def _up(self, client: socket.socket, server: socket.socket, state: dict) -> None:
        try:
            while data := client.recv(65536):
                with self.lock:
                    if self.cuts_left > 0 and self.pattern and self.pattern in data:
                        self.cuts_left -= 1
                        state["drop"] = True
                server.sendall(data)
        except OSError:
            pass
        finally:
            _close(client, server)

    def _down(self, server: socket.socket, client: socket.socket, state: dict) -> None:
        try:
            while data := server.recv(65536):
                if state["drop"]:  # the reply to the marked request: lose it, and the link
                    with self.lock:
                        self.cut += 1
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            _close(client, server)

    def close(self) -> None:
        self.closed = True
        self.listener.close()


def _close(*socks: socket.socket) -> None:
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()
