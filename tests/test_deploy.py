"""deploy/ checked without Docker or a cluster (fast; no network, no daemon).

- every YAML file parses;
- ``deploy/docker-compose.yml`` validates against the Compose Specification's JSON schema (the
  copy vendored by ``check-jsonschema``), and has what the design needs: Redis with AOF and
  ``noeviction``, a scalable worker service, Flower on the workers' app;
- every Kubernetes manifest validates, in strict mode (unknown fields are errors), against the
  Kubernetes OpenAPI schemas bundled by ``kubernetes-validate``, for the oldest and newest
  Kubernetes versions we claim; the KEDA ScaledObject (a custom resource, in no bundled schema)
  against ``tests/data/schemas/keda-scaledobject.schema.json``; and the cross-references hold
  (names, ports, queue and Redis database of the autoscaler, the token Secret);
- the Dockerfile's entry point is the ``azulsim`` console script, whose target imports, and the
  subcommands the deploy files run exist;
- every environment variable the deploy files set is one the code reads, parses with the
  code's own settings loaders, and is in the one table of docs/configuration.md, which lists
  exactly the variables the code reads.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
import tomllib
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
SCHEMAS = Path(__file__).parent / "data" / "schemas"
CODE_DIRS = ("sim", "service", "workers")
# Kubernetes versions the manifests must be valid for: gRPC probes are GA from 1.27.
K8S_VERSIONS = ("1.28", "1.37")

# Variables the deploy files may set that this project's code does not read, and who does.
THIRD_PARTY = {
    "PYTHONUNBUFFERED": "CPython: unbuffered stdout/stderr, so container logs are immediate",
    "PYTHONDONTWRITEBYTECODE": "CPython",
    "PIP_NO_CACHE_DIR": "pip, at image build time",
    "PIP_DISABLE_PIP_VERSION_CHECK": "pip, at image build time",
    "MPLCONFIGDIR": "matplotlib: a writable cache directory for the non-root user",
    "NUMBA_CACHE_DIR": "numba: where the compiled kernels are cached, built into the image",
    "SENTINEL_NAME": "the Compose Sentinels' start script: the name each announces",
}
TOKEN_REQUIRED = "${AZULSIM_TOKEN:?"  # Compose stops when AZULSIM_TOKEN is unset or empty


def load_yaml_docs(path: Path) -> list:
    with path.open() as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def yaml_files() -> list[Path]:
    return sorted(DEPLOY.rglob("*.yml")) + sorted(DEPLOY.rglob("*.yaml"))


@pytest.fixture(scope="module")
def compose() -> dict:
    return load_yaml_docs(DEPLOY / "docker-compose.yml")[0]


@pytest.fixture(scope="module")
def manifests() -> dict[str, list[dict]]:
    """``{file name: [documents]}`` of deploy/k8s."""
    return {p.name: load_yaml_docs(p) for p in sorted(K8S.glob("*.yaml"))}


def by_kind(manifests, kind: str) -> dict[str, dict]:
    return {
        d["metadata"]["name"]: d
        for docs in manifests.values()
        for d in docs
        if d.get("kind") == kind
    }


def redis_services(compose) -> set[str]:
    """The Compose services that run Redis's image (the data servers and the Sentinels)."""
    return {n for n, s in compose["services"].items() if s.get("image", "").startswith("redis:")}


def containers(manifests) -> dict[str, dict]:
    """``{workload/container: container}`` of every Deployment and StatefulSet."""
    out = {}
    for kind in ("Deployment", "StatefulSet"):
        for name, d in by_kind(manifests, kind).items():
            for c in d["spec"]["template"]["spec"]["containers"]:
                out[f"{name}/{c['name']}"] = c
    return out


# --- parsing ----------------------------------------------------------------------------------


def test_every_yaml_file_parses_and_is_not_empty():
    found = yaml_files()
    assert DEPLOY / "docker-compose.yml" in found and len(found) >= 8
    for path in found:
        docs = load_yaml_docs(path)
        assert docs, f"{path} has no document"
        assert all(isinstance(d, dict) for d in docs), path


# --- Compose ----------------------------------------------------------------------------------


def compose_schema() -> dict:
    text = files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    return json.loads(text.read_text())


def test_compose_file_validates_against_the_compose_specification(compose):
    schema = compose_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(compose)]
    assert not errors, "\n".join(errors)
    broken = json.loads(json.dumps(compose))  # the validator does reject a mistake
    broken["services"]["worker"]["enviroment"] = {}
    assert not validator.is_valid(broken)


def test_compose_has_redis_with_aof_and_noeviction_and_scalable_workers(compose):
    services = compose["services"]
    assert {"redis", "api", "worker", "flower"} <= set(services)
    redis_args = services["redis"]["command"]
    assert redis_args[redis_args.index("--appendonly") + 1] == "yes"
    assert redis_args[redis_args.index("--maxmemory-policy") + 1] == "noeviction"
    assert any(v.endswith(":/data") for v in services["redis"]["volumes"])
    worker = services["worker"]
    # `--scale worker=N` needs no fixed container name and no fixed host port
    assert "container_name" not in worker and "ports" not in worker
    images = {services[s]["image"] for s in ("api", "worker", "flower")}
    assert len(images) == 1, "one image for every role"
    assert services["api"]["build"]["dockerfile"] == "deploy/Dockerfile"
    assert services["flower"]["entrypoint"] == ["celery"]
    assert services["flower"]["command"][:3] == ["-A", "workers.app", "flower"]
    for name in ("api", "worker", "flower"):
        env = services[name]["environment"]
        host = urlsplit(env["AZULSIM_REDIS_URL"]).hostname
        assert host == "redis", f"{name} must use the redis service"
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    port = services["api"]["environment"]["AZULSIM_LISTEN"].rsplit(":", 1)[1]
    assert f"127.0.0.1:{port}:{port}" in services["api"]["ports"]


def test_compose_publishes_ports_on_loopback_only(compose):
    """The README says 127.0.0.1: every published port is bound there, none on all
    interfaces (``"50051:50051"`` would be)."""
    published = {
        (name, p) for name, s in compose["services"].items() for p in s.get("ports", [])
    }
    assert {name for name, _ in published} == {"api", "flower"}
    for name, port in published:
        assert isinstance(port, str) and port.startswith("127.0.0.1:"), (name, port)
        assert port.count(":") == 2, (name, port)


def test_compose_requires_a_token_for_the_api_and_the_client(compose):
    """``docker compose run client`` from a shell without AZULSIM_TOKEN must not recreate the
    API with auth off: both read ``${AZULSIM_TOKEN:?...}``, which stops Compose instead of
    substituting an empty value (``${AZULSIM_TOKEN:-}`` did)."""
    services = compose["services"]
    assert services["api"]["environment"]["AZULSIM_AUTH_TOKENS"].startswith(TOKEN_REQUIRED)
    assert services["client"]["environment"]["AZULSIM_TOKEN"].startswith(TOKEN_REQUIRED)
    text = (DEPLOY / "docker-compose.yml").read_text()
    assert "${AZULSIM_TOKEN:-" not in text and "${AZULSIM_TOKEN}" not in text


def test_compose_describes_a_primary_a_replica_and_three_sentinels(compose):
    services = compose["services"]
    assert redis_services(compose) == {"redis", "redis-replica", *SENTINEL_SERVICES}
    replica = services["redis-replica"]["command"]
    assert replica[replica.index("--replicaof") + 1 :][:2] == ["redis", "6379"]
    for name in ("redis", "redis-replica"):
        argv = services[name]["command"]
        assert argv[argv.index("--replica-announce-ip") + 1] == name  # a name, not an address
        # else a password-less Redis refuses the other containers (found by deploy/smoke.sh)
        assert argv[argv.index("--protected-mode") + 1] == "no", name
    for name in SENTINEL_SERVICES:
        sentinel = services[name]
        script = "\n".join(sentinel["command"])
        assert "sentinel monitor azulsim redis 6379 2" in script, name
        assert "protected-mode no" in script, name
        assert sentinel["entrypoint"][0] == "sh" and "--sentinel" in script, name
        assert sentinel["environment"]["SENTINEL_NAME"] == name
    for name in ("api", "worker", "flower"):
        env = services[name]["environment"]
        assert env["AZULSIM_REDIS_SENTINELS"].split(",") == [
            f"{s}:26379" for s in sorted(SENTINEL_SERVICES)
        ], name
        assert env["AZULSIM_REDIS_MASTER"] == "azulsim"
        depends = services[name]["depends_on"]
        for s in SENTINEL_SERVICES:
            assert depends[s]["condition"] == "service_healthy", (name, s)


SENTINEL_SERVICES = {"sentinel-1", "sentinel-2", "sentinel-3"}


def test_the_games_volume_is_writable_by_the_image_user(compose, manifests):
    """The image runs as uid 10001; a named volume is created root-owned: the games-owner
    service chowns it before the API and the workers start, the image's /games is 10001's (a
    fresh volume takes it), and on Kubernetes the pods' fsGroup is 10001."""
    instructions = dockerfile_instructions()
    (install,) = [rest for word, rest in instructions if word == "RUN" and "useradd" in rest]
    uid = re.search(r"--uid (\d+)", install).group(1)
    assert f"install -d -o {uid} -g {uid} /games" in install
    owner = compose["services"]["games-owner"]
    assert owner["user"] == "0" and owner["entrypoint"] == ["chown", f"{uid}:{uid}", "/games"]
    assert "games:/games" in owner["volumes"]
    for name in ("api", "worker"):
        done = compose["services"][name]["depends_on"]["games-owner"]["condition"]
        assert done == "service_completed_successfully", name
        (deployment,) = [d for d in manifests[f"{name}.yaml"] if d["kind"] == "Deployment"]
        security = deployment["spec"]["template"]["spec"]["securityContext"]
        assert security["runAsUser"] == security["fsGroup"] == int(uid), name


def test_compose_health_check_is_generous_and_the_readme_says_compose_v2(compose):
    """A 5 s health-check timeout failed twice on a loaded host: the check's own gRPC deadline
    is generous and below the health check's timeout."""
    check = compose["services"]["api"]["healthcheck"]
    seconds = int(check["timeout"].rstrip("s"))
    deadline = float(re.search(r"timeout=(\d+)", check["test"][-1]).group(1))
    assert seconds >= 20 and deadline < seconds
    readme = (REPO / "README.md").read_text()
    assert "Compose v2" in readme


# --- Kubernetes -------------------------------------------------------------------------------


def test_kustomization_lists_every_manifest(manifests):
    kustomization = manifests["kustomization.yaml"][0]
    listed = set(kustomization["resources"])
    present = set(manifests) - {"kustomization.yaml", "secret.example.yaml"}
    assert listed == present
    assert kustomization["namespace"] == "azulsim"


def test_manifests_validate_against_the_kubernetes_schemas(manifests):
    import kubernetes_validate

    checked = 0
    for name, docs in manifests.items():
        for doc in docs:
            if doc["kind"] in ("Kustomization", "ScaledObject"):
                continue
            for version in K8S_VERSIONS:
                try:
                    kubernetes_validate.validate(doc, version, strict=True)
                except kubernetes_validate.ValidationError as exc:
                    pytest.fail(
                        f"{name} {doc['kind']}/{doc['metadata']['name']} "
                        f"(Kubernetes {version}): {exc}"
                    )
            checked += 1
    assert checked >= 10
    bad = json.loads(json.dumps(by_kind(manifests, "Deployment")["worker"]))
    bad["spec"]["template"]["spec"]["containers"][0]["envfrom"] = []  # a typo is caught
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSIONS[0], strict=True)


def test_scaled_object_validates_and_scales_the_worker_on_the_celery_queue(manifests):
    schema = json.loads((SCHEMAS / "keda-scaledobject.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    scaled = by_kind(manifests, "ScaledObject")
    assert list(scaled) == ["worker"]
    so = scaled["worker"]
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(so)]
    assert not errors, "\n".join(errors)

    config = by_kind(manifests, "ConfigMap")["azulsim-config"]["data"]
    target = so["spec"]["scaleTargetRef"]
    assert target["name"] in by_kind(manifests, "Deployment")
    assert target["name"] == "worker"
    (trigger,) = so["spec"]["triggers"]
    meta = trigger["metadata"]
    assert trigger["type"] == "redis-sentinel"  # the primary is the one the Sentinels name
    from workers.settings import load_settings

    settings = load_settings({k: str(v) for k, v in config.items()})
    assert meta["listName"] == settings.queue_key, "KEDA must watch the chunk queue's Redis list"
    redis_url = urlsplit(config["AZULSIM_REDIS_URL"])
    assert meta["databaseIndex"] == (redis_url.path.strip("/") or "0")
    assert tuple(meta["addresses"].split(",")) == settings.redis_sentinels
    assert meta["sentinelMaster"] == settings.redis_master
    for address in settings.redis_sentinels:
        service, namespace = address.split(".")[1:3]
        assert service in by_kind(manifests, "Service")
        assert namespace == manifests["kustomization.yaml"][0]["namespace"]
    assert so["spec"]["minReplicaCount"] >= 1  # reconciler and unacked restore live in workers
    for broken in ({"listName": None}, {"listLength": "four"}, {"lisName": "x"},
                   {"addresses": None}, {"addresses": "a:1;b:2"}):  # fmt: skip
        doc = json.loads(json.dumps(so))
        m = doc["spec"]["triggers"][0]["metadata"]
        for k, v in broken.items():
            if v is None:
                m.pop(k)
            else:
                m[k] = v
        assert not validator.is_valid(doc), broken


def test_kubernetes_describes_a_primary_a_replica_and_three_sentinels(manifests):
    """StatefulSet redis (2: a primary and a replica, each its own DNS name through a headless
    Service) and StatefulSet sentinel (3, quorum 2); the ConfigMap names each Sentinel pod by
    its DNS name, and they monitor the master name the code reads."""
    from workers.settings import load_settings

    sets, services = by_kind(manifests, "StatefulSet"), by_kind(manifests, "Service")
    assert sets["redis"]["spec"]["replicas"] == 2
    assert sets["sentinel"]["spec"]["replicas"] == 3
    namespace = manifests["kustomization.yaml"][0]["namespace"]
    for name in ("redis", "sentinel"):
        service = services[sets[name]["spec"]["serviceName"]]
        assert service["spec"]["clusterIP"] == "None", name  # headless: pod DNS names
        labels = sets[name]["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= labels.items(), name
    config = by_kind(manifests, "ConfigMap")["azulsim-config"]["data"]
    settings = load_settings({k: str(v) for k, v in config.items()})
    sentinel_service = sets["sentinel"]["spec"]["serviceName"]
    assert settings.redis_sentinels == tuple(
        f"sentinel-{i}.{sentinel_service}.{namespace}.svc.cluster.local:26379" for i in range(3)
    )
    assert settings.wait_for == 1
    scripts = by_kind(manifests, "ConfigMap")["redis-config"]["data"]
    master = settings.redis_master
    assert f"sentinel monitor {master} $primary 6379 2" in scripts["start-sentinel.sh"]
    assert "protected-mode no" in scripts["start-sentinel.sh"]
    assert "protected-mode no" in scripts["redis.conf"]
    assert f"get-master-addr-by-name {master}" in scripts["start-redis.sh"]
    first = f"redis-0.{sets['redis']['spec']['serviceName']}.{namespace}"
    assert first in scripts["start-redis.sh"]
    for name, script in (("redis", "start-redis.sh"), ("sentinel", "start-sentinel.sh")):
        (container,) = sets[name]["spec"]["template"]["spec"]["containers"]
        assert container["command"] == ["sh", f"/etc/redis/{script}"], name


def test_redis_statefulset_keeps_its_data_with_aof_and_noeviction(manifests):
    redis = by_kind(manifests, "StatefulSet")["redis"]
    claims = redis["spec"]["volumeClaimTemplates"]
    (container,) = redis["spec"]["template"]["spec"]["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claims[0]["metadata"]["name"]] == "/data"
    conf = by_kind(manifests, "ConfigMap")["redis-config"]["data"]["redis.conf"]
    settings = dict(line.split(None, 1) for line in conf.splitlines() if line.strip())
    assert settings["appendonly"] == "yes" and settings["maxmemory-policy"] == "noeviction"
    assert settings["dir"] == "/data"
    assert redis["spec"]["serviceName"] in by_kind(manifests, "Service")


def test_workloads_use_the_one_image_the_config_map_and_the_token_secret(manifests):
    config_maps = by_kind(manifests, "ConfigMap")
    secrets = by_kind(manifests, "Secret")
    assert "azulsim-token" in secrets  # secret.example.yaml documents the real one's shape
    azulsim = {
        k: c
        for k, c in containers(manifests).items()
        if not k.startswith(("redis/", "sentinel/"))
    }
    assert set(azulsim) == {"api/api", "worker/worker", "flower/flower"}
    for key, c in azulsim.items():
        assert c["image"] == "azulsim", key
        assert [e["configMapRef"]["name"] for e in c["envFrom"]] == ["azulsim-config"], key
        assert c["envFrom"][0]["configMapRef"]["name"] in config_maps
    api = azulsim["api/api"]
    token = {e["name"]: e for e in api["env"]}["AZULSIM_AUTH_TOKENS"]["valueFrom"]
    ref = token["secretKeyRef"]
    assert ref["name"] == "azulsim-token" and ref["key"] in secrets[ref["name"]]["stringData"]
    listen_port = int({e["name"]: e for e in api["env"]}["AZULSIM_LISTEN"]["value"].split(":")[1])
    assert api["readinessProbe"]["grpc"]["port"] == listen_port
    service = by_kind(manifests, "Service")["api"]
    web_port = int({e["name"]: e for e in api["env"]}["AZULSIM_WEB_LISTEN"]["value"].split(":")[1])
    assert {p["port"] for p in service["spec"]["ports"]} == {listen_port, web_port, 9100}
    selector = service["spec"]["selector"]
    labels = by_kind(manifests, "Deployment")["api"]["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()


# --- the image and the commands it runs -------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (DEPLOY / "Dockerfile").read_text()
    text = re.sub(r"\\\n", " ", text)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_entry_point_is_the_azulsim_script_and_it_exists():
    instructions = dockerfile_instructions()
    assert instructions[0] == ("FROM", "python:3.11-slim")
    entry = [json.loads(rest) for word, rest in instructions if word == "ENTRYPOINT"]
    assert entry == [["azulsim"]]
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    target = pyproject["project"]["scripts"]["azulsim"]
    module, _, attr = target.partition(":")
    assert callable(getattr(importlib.import_module(module), attr))
    (cmd,) = [json.loads(rest) for word, rest in instructions if word == "CMD"]
    assert cmd[0] in cli_subcommands()
    # what it copies exists, and the .dockerignore lets it through
    copied = [rest.split()[0] for word, rest in instructions if word == "COPY"]
    allowed = {
        ln.strip().lstrip("!").rstrip("/")
        for ln in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
        if ln.startswith("!")
    }
    for src in copied:
        assert (REPO / src).exists(), src
        assert src in allowed, f"{src} is excluded from the build context"
    (install,) = [rest for word, rest in instructions if word == "RUN" and "pip install" in rest]
    extras = re.findall(r"\.\[([a-z,]+)\]", install)
    for extra in ",".join(extras).split(","):
        assert extra in pyproject["project"]["optional-dependencies"], extra


def cli_subcommands() -> set[str]:
    from service.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.choices and a.dest == "command"]
    return set(sub.choices)


def test_the_commands_the_deploy_files_run_exist(compose, manifests):
    commands = cli_subcommands()
    run = {
        name: s["command"]
        for name, s in compose["services"].items()
        if "entrypoint" not in s and "command" in s and name not in redis_services(compose)
    }
    run.update(
        {
            k: c["args"]
            for k, c in containers(manifests).items()
            if not k.startswith(("redis/", "sentinel/")) and "command" not in c
        }
    )
    assert run
    for name, argv in run.items():
        argv = shlex.split(argv) if isinstance(argv, str) else argv
        assert argv[0] in commands, f"{name}: azulsim {argv[0]} does not exist"
    # Flower's `-A workers.app` is an importable Celery app
    module = importlib.import_module("workers.app")
    assert module.app.main == "azulsim"


def test_the_wheel_ships_every_non_python_file_the_packages_need():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    package_data = pyproject["tool"]["setuptools"].get("package-data", {})
    for package in CODE_DIRS:
        root = REPO / package
        for path in root.rglob("*"):
            if (
                path.is_file()
                and path.suffix not in (".py", ".pyc", ".pyi")
                and "__pycache__" not in path.parts
            ):
                rel = path.relative_to(root).as_posix()
                assert any(Path(rel).match(g) for g in package_data.get(package, [])), (
                    f"{package}/{rel} is not in [tool.setuptools.package-data]: "
                    "`pip install .` (the image) would lack it"
                )


# --- environment variables --------------------------------------------------------------------


def code_variables() -> set[str]:
    """Variable names the code reads: quoted ``AZULSIM_*`` (and the few third-party ones it
    handles) in sim/, service/ and workers/."""
    pattern = re.compile(r"""["']((?:AZULSIM|PROMETHEUS|OMP|OPENBLAS|MKL)_[A-Z0-9_]+)["']""")
    names = set()
    for d in CODE_DIRS:
        for path in (REPO / d).rglob("*.py"):
            names |= set(pattern.findall(path.read_text()))
    return names


def deploy_variables(compose, manifests) -> dict[str, dict[str, str]]:
    """``{where: {variable: value}}`` for every place the deploy files set variables."""
    out: dict[str, dict[str, str]] = {}
    for name, service in compose["services"].items():
        env = service.get("environment") or {}
        if isinstance(env, list):
            env = dict(item.split("=", 1) for item in env)
        out[f"compose:{name}"] = {k: str(v) for k, v in env.items()}
    for name, cm in by_kind(manifests, "ConfigMap").items():
        if name == "azulsim-config":
            out[f"configmap:{name}"] = dict(cm["data"])
    for key, c in containers(manifests).items():
        out[f"k8s:{key}"] = {e["name"]: e.get("value", "<from secret>") for e in c.get("env", [])}
    env = {}
    for word, rest in dockerfile_instructions():
        if word == "ENV":
            for item in shlex.split(rest):
                k, _, v = item.partition("=")
                env[k] = v
    out["Dockerfile"] = env
    return out


def test_every_variable_the_deploy_files_set_is_read_by_the_code(compose, manifests):
    read = code_variables()
    # the settings modules' own lists agree with the grep
    from workers.settings import Settings, variables

    assert set(variables(Settings)) <= read
    unknown = {
        f"{where}: {var}"
        for where, env in deploy_variables(compose, manifests).items()
        for var in env
        if var not in read and var not in THIRD_PARTY
    }
    assert not unknown, f"set by deploy/ but read by nothing: {sorted(unknown)}"


def test_deploy_values_parse_with_the_codes_own_loaders(compose, manifests):
    from service.config import ServerConfig
    from workers.logs import log_format
    from workers.metrics import metrics_port
    from workers.settings import load_settings

    places = deploy_variables(compose, manifests)
    config = places["configmap:azulsim-config"]
    k8s = {
        "api": {**places["Dockerfile"], **config, **places["k8s:api/api"]},
        "worker": {**places["Dockerfile"], **config, **places["k8s:worker/worker"]},
    }
    defaults = re.compile(r"\$\{[A-Z_]+:-([^}]*)\}")  # Compose's ${NAME:-default}
    required = re.compile(r"\$\{[A-Z_]+:\?[^}]*\}")  # ${NAME:?error}: a value the user sets
    compose_env = {
        role: {
            k: required.sub("example-token", defaults.sub(r"\1", v))
            for k, v in {**places["Dockerfile"], **places[f"compose:{role}"]}.items()
        }
        for role in ("api", "worker", "flower")
    }
    for where, env in [*k8s.items(), *compose_env.items()]:
        settings = load_settings(env)  # validates values and the time-limit order
        assert settings.queue == "azulsim.chunks", where
        ServerConfig.from_env(env)
        log_format(env)
        if where != "flower":
            assert metrics_port(env) == 9100, where
    assert load_settings(k8s["worker"]).concurrency == 2


def documented_variables() -> set[str]:
    text = (REPO / "docs" / "configuration.md").read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
    names = set()
    for row in rows:
        first_cell = row.split("|")[1]
        names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", first_cell))
    return names


def test_the_configuration_table_lists_exactly_the_variables_the_code_reads(compose, manifests):
    documented, read = documented_variables(), code_variables()
    assert read - documented == set(), "read by the code but missing from docs/configuration.md"
    assert documented - read == set(), "in docs/configuration.md but read by nothing"
    for env in deploy_variables(compose, manifests).values():
        for var in env:
            assert var in documented or var in THIRD_PARTY, var
    readme = (REPO / "README.md").read_text()
    assert "docs/configuration.md" in readme


def test_worker_liveness_probe_watches_the_file_the_watchdog_touches(manifests):
    """The worker's liveness probe checks the age of AZULSIM_LIVENESS_FILE, on a writable
    volume (the root file system is read-only), with a staleness limit well above the
    watchdog's check interval (at most 5 s) so that a healthy worker is never restarted."""
    from workers.settings import load_settings
    from workers.watchdog import Watchdog

    (deployment,) = [d for d in manifests["worker.yaml"] if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    path = env["AZULSIM_LIVENESS_FILE"]
    command = " ".join(container["livenessProbe"]["exec"]["command"])
    assert path in command
    limit = int(re.search(r"-lt (\d+)", command).group(1))
    (config,) = [d for d in manifests["configmap.yaml"] if d["kind"] == "ConfigMap"]
    settings = load_settings({**config["data"], **env})
    assert settings.watchdog_s > settings.task_hard_limit_s
    assert limit >= 4 * Watchdog(settings).interval
    mounts = [m["mountPath"] for m in container["volumeMounts"]]
    assert any(path.startswith(m.rstrip("/") + "/") for m in mounts), (path, mounts)


def test_api_and_workers_share_one_games_volume_at_the_games_dir(compose, manifests):
    """Per-game records: every worker writes chunk files that `azulsim export` gathers, so the
    API and every worker mount one shared (ReadWriteMany) volume at AZULSIM_GAMES_DIR."""
    (config,) = [d for d in manifests["configmap.yaml"] if d["kind"] == "ConfigMap"]
    games_dir = config["data"]["AZULSIM_GAMES_DIR"]
    (claim,) = manifests["games.yaml"]
    assert claim["kind"] == "PersistentVolumeClaim"
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for name in ("api.yaml", "worker.yaml"):
        (deployment,) = [d for d in manifests[name] if d["kind"] == "Deployment"]
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounted = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert games_dir in mounted, name
        claimed = volumes[mounted[games_dir]]["persistentVolumeClaim"]["claimName"]
        assert claimed == claim["metadata"]["name"], name
    for service in ("api", "worker"):
        svc = compose["services"][service]
        games = svc["environment"]["AZULSIM_GAMES_DIR"]
        assert f"games:{games}" in svc["volumes"], service
    assert "games" in compose["volumes"]


def test_the_smoke_script_parses_and_names_what_exists(compose):
    """deploy/smoke.sh (run by hand where a Docker daemon is) parses, and the services and
    azulsim commands it uses exist."""
    import subprocess

    script = DEPLOY / "smoke.sh"
    assert script.stat().st_mode & 0o111, "deploy/smoke.sh must be executable"
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    text = script.read_text()
    for service in re.findall(r"dc ps -q (\w[\w-]*)", text):
        assert service in compose["services"], service
    used = set(re.findall(r"^\s*client (\w+) |\$\(client (\w+) |azulsim (\w+) --", text, re.M))
    used = {w for group in used for w in group if w}
    assert used and used <= cli_subcommands(), used - cli_subcommands()
