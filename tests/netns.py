"""Test hosts in Linux network namespaces, wired to one router namespace, and the faults between
them (tests/test_netns.py uses them through the fixtures of tests/conftest.py).

Topology. A `Network` is a router namespace and one namespace per host. Host ``i`` has one
interface ``eth0`` with ``192.0.2.(4i+2)/30`` (RFC 5737's documentation range, which exists only
inside these namespaces), cabled by a veth pair to the router's ``h<i>`` (``192.0.2.(4i+1)``),
its default gateway. The root namespace is never touched: every interface, address and route is
inside a namespace the network created, so tests running beside each other cannot collide.

Faults (all silent: nothing answers with a reset or an ICMP error, as when a cable or a switch
dies; neighbour entries are static, so not even ARP notices):

* `Network.link_down` / `link_up`: the router's end of a host's cable goes down; every packet
  to or from that host is dropped. `flap` does it several times in a row.
* `Network.partition(a, b)` / `heal(a, b)`: the router black-holes what it would forward between
  two hosts (``ip rule ... blackhole``, both directions); each keeps reaching the others. This
  kernel has no iptables/nftables, and policy rules need neither.
* Resets, stalls (a black hole that keeps the connections open) and added latency are made by a
  userspace TCP proxy on the path (`tests/netns_proxy.py`; the kernel has no netem qdisc).

Names. Namespaces are ``azt<pid>x<n>-<host>``: the pytest process id keeps parallel runs apart,
and `clean_stale` removes those of a run whose process is gone (a crashed or killed run).
`Network.close` kills every process still inside its namespaces and deletes them; fixtures call
it from a finalizer, so it runs when a test fails too.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.faults_util import pid_alive

PREFIX = "azt"
_NAME_RE = re.compile(rf"^{PREFIX}(\d+)x(\d+)-")
_counter = itertools.count(1)


class NetnsUnavailable(RuntimeError):
    """Network namespaces cannot be made here (not root, no ``ip``, no veth or no bridge)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and out.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {out.stderr.strip() or out.returncode}")
    return out


def why_unavailable() -> str | None:
    """None when this process can make namespaces with veth pairs, else the reason."""
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN)"
    name = f"{PREFIX}{os.getpid()}x0-probe"
    try:
        _ip("netns", "add", name)
    except (RuntimeError, OSError) as exc:
        return f"cannot create a network namespace: {exc}"
    try:
        _ip("-n", name, "link", "add", "p0", "type", "veth", "peer", "name", "p1")
    except RuntimeError as exc:
        return f"cannot create a veth pair: {exc}"
    finally:
        _ip("netns", "del", name, check=False)
    return None


def _pids_in(ns: str) -> list[int]:
    out = _ip("netns", "pids", ns, check=False)
    return [int(p) for p in out.stdout.split()] if out.returncode == 0 else []


def _kill_all_in(ns: str) -> None:
    for _ in range(50):  # a process may fork while we kill; loop until the namespace is empty
        pids = _pids_in(ns)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def _delete_ns(ns: str) -> None:
    _kill_all_in(ns)
    _ip("netns", "del", ns, check=False)


def clean_stale() -> list[str]:
    """Delete the namespaces of runs whose pytest process is gone; returns their names."""
    out = _ip("netns", "list", check=False)
    removed = []
    for line in out.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = _NAME_RE.match(name)
        if m and int(m.group(1)) != os.getpid() and not pid_alive(int(m.group(1))):
            _delete_ns(name)
            removed.append(name)
    return removed


@dataclass
class Host:
    """A test host: its namespace, its address and the router's interface that cables it."""

    name: str
    ns: str
    addr: str
    gateway: str
    port_if: str  # the router's end of the cable

    def argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.ns, *argv]

    def popen(self, argv: Sequence[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.argv(argv), **kwargs)

    def run(
        self, argv: Sequence[str], timeout: float = 30, **kwargs
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.argv(argv), capture_output=True, text=True, timeout=timeout, **kwargs
        )


@dataclass
class Network:
    """A router namespace and its hosts; `add_host` cables a new one. A context manager."""

    tag: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}x{next(_counter)}")
    hosts: dict[str, Host] = field(default_factory=dict)
    rules: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.router = f"{self.tag}-router"
        self.namespaces: list[str] = []
        self._new_ns(self.router)
        self._sysctl(self.router, "net.ipv4.ip_forward", "1")
        # While a host's cable is down its connected route is gone: without this, the router
        # would answer "network unreachable" (ICMP) instead of dropping silently.
        _ip("-n", self.router, "route", "add", "blackhole", "192.0.2.0/24", "metric", "1000")

    def _new_ns(self, ns: str) -> None:
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")

    @staticmethod
    def _sysctl(ns: str, key: str, value: str) -> None:
        out = subprocess.run(
            ["ip", "netns", "exec", ns, "sysctl", "-qw", f"{key}={value}"],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:  # no sysctl binary: write /proc inside the namespace
            path = "/proc/sys/" + key.replace(".", "/")
            subprocess.run(
                ["ip", "netns", "exec", ns, "sh", "-c", f"echo {value} > {path}"], check=True
            )

    def add_host(self, name: str) -> Host:
        """A new host ``name`` cabled to the router (its index is the order of creation)."""
        if not re.fullmatch(r"[a-z][a-z0-9]{0,11}", name) or name in self.hosts:
            raise ValueError(f"bad or duplicate host name {name!r}")
        i = len(self.hosts) + 1
        if i > 60:
            raise ValueError("at most 60 hosts in 192.0.2.0/24")
        ns = f"{self.tag}-{name}"
        self._new_ns(ns)
        port_if, gw, addr = f"h{i}", f"192.0.2.{4 * i + 1}", f"192.0.2.{4 * i + 2}"
        _ip(
            "-n",
            self.router,
            "link",
            "add",
            port_if,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            ns,
        )
        _ip("-n", self.router, "addr", "add", f"{gw}/30", "dev", port_if)
        _ip("-n", ns, "addr", "add", f"{addr}/30", "dev", "eth0")
        _ip("-n", self.router, "link", "set", port_if, "up")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "route", "add", "default", "via", gw)
        # Static neighbours: a cut link stays silent (no ARP failure turning into "no route").
        mac_r = _mac(self.router, port_if)
        mac_h = _mac(ns, "eth0")
        _ip("-n", ns, "neigh", "replace", gw, "lladdr", mac_r, "dev", "eth0", "nud", "permanent")
        _ip(
            "-n",
            self.router,
            "neigh",
            "replace",
            addr,
            "lladdr",
            mac_h,
            "dev",
            port_if,
            "nud",
            "permanent",
        )
        host = Host(name, ns, addr, gw, port_if)
        self.hosts[name] = host
        return host

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    # -- faults ------------------------------------------------------------------------------

    def link_down(self, host: str) -> None:
        """Cut `host`'s cable at the router: all its traffic is dropped, silently."""
        _ip("-n", self.router, "link", "set", self.hosts[host].port_if, "down")

    def link_up(self, host: str) -> None:
        _ip("-n", self.router, "link", "set", self.hosts[host].port_if, "up")
        # A link that comes back loses the router's routes and neighbours on it: restore them.
        h = self.hosts[host]
        _ip(
            "-n",
            self.router,
            "neigh",
            "replace",
            h.addr,
            "lladdr",
            _mac(h.ns, "eth0"),
            "dev",
            h.port_if,
            "nud",
            "permanent",
        )

    def flap(self, host: str, times: int, down_s: float, up_s: float) -> list[tuple[float, float]]:
        """`times` short cuts of `host`'s link; returns each cut's (down, up) monotonic times."""
        out = []
        for k in range(times):
            t0 = time.monotonic()
            self.link_down(host)
            time.sleep(down_s)
            self.link_up(host)
            out.append((t0, time.monotonic()))
            if k + 1 < times:
                time.sleep(up_s)
        return out

    def partition(self, a: str, b: str) -> None:
        """The router drops what it would forward between `a` and `b` (both ways), silently."""
        self._blackhole("add", a, b)

    def heal(self, a: str, b: str) -> None:
        self._blackhole("del", a, b)

    def _blackhole(self, op: str, a: str, b: str) -> None:
        """Add (`op` "add") or remove ("del") the router's blackhole rules between `a` and `b`."""
        for src, dst in ((a, b), (b, a)):
            if ((src, dst) in self.rules) == (op == "add"):
                continue
            addrs = ("from", self.hosts[src].addr, "to", self.hosts[dst].addr)
            _ip("-n", self.router, "rule", op, *addrs, "blackhole", "priority", "100")
            if op == "add":
                self.rules.add((src, dst))
            else:
                self.rules.discard((src, dst))
        _flush_route_cache(self.router)

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every process left in the hosts' namespaces, then delete them all."""
        for ns in reversed(self.namespaces):
            _delete_ns(ns)
        self.namespaces.clear()

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _mac(ns: str, dev: str) -> str:
    out = _ip("-n", ns, "-o", "link", "show", dev).stdout
    m = re.search(r"link/ether ([0-9a-f:]{17})", out)
    if not m:
        raise RuntimeError(f"no MAC address on {dev} in {ns}: {out}")
    return m.group(1)


def _flush_route_cache(ns: str) -> None:
    _ip("-n", ns, "route", "flush", "cache", check=False)
