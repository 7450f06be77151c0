#!/usr/bin/env bash
# Build the image and smoke-test the Compose stack (deploy/docker-compose.yml) wherever a Docker
# daemon and Docker Compose v2 run. From the repository root:
#
#   bash deploy/smoke.sh            # build, start, test, then remove the stack and its volumes
#   KEEP=1 bash deploy/smoke.sh     # leave the stack running afterwards
#
# Steps (each prints "ok: ..." or stops the script with "FAILED: ..."):
#   1. build the image, start Redis (primary, replica, three Sentinels), the API, 2 workers;
#   2. auth is on: no token, or a wrong one, is refused;
#   3. a job runs to the end with every game counted;
#   4. a worker container is SIGKILLed while a job runs: the job still ends with every game;
#   5. a game-record job writes its rows to the games volume and `azulsim export` gathers them
#      (the volume is writable by the image's user, uid 10001);
#   6. the Redis primary is SIGKILLed for good: the Sentinels promote the replica and a new job
#      runs to the end.
# Not part of CI (CI has no Docker daemon): tests/test_deploy.py checks the files themselves.
# Where no registry is reachable, load local images tagged python:3.11-slim and redis:7.2 first,
# and set DOCKER_BUILDKIT=0 (BuildKit would fetch the Dockerfile's syntax frontend).
set -euo pipefail

cd "$(dirname "$0")/.."
FILE=deploy/docker-compose.yml
PROJECT=${PROJECT:-azulsim-smoke}
export AZULSIM_TOKEN=${AZULSIM_TOKEN:-smoke-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')}
dc() { docker compose -p "$PROJECT" -f "$FILE" "$@"; }
client() { dc run --rm -T client "$@"; }
fail() { echo "FAILED: $*" >&2; dc ps >&2 || true; dc logs --tail 60 >&2 || true; exit 1; }
ok() { echo "ok: $*"; }
games_done() {  # JOB -> games counted, from the statistics document
  client stats "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["games_done"])'
}
cleanup() { [ -n "${KEEP:-}" ] || dc down -v --remove-orphans >/dev/null 2>&1 || true; }
trap cleanup EXIT

docker compose version | grep -q "v2\|version 2" || fail "Docker Compose v2 is required"

# 1. build and start
dc build
dc up -d --wait --scale worker=2 || fail "the stack did not become healthy"
ok "stack up: $(dc ps --services | tr '\n' ' ')"

# 2. auth on
if AZULSIM_TOKEN= dc run --rm -T client jobs >/dev/null 2>&1; then
  fail "compose ran the client without AZULSIM_TOKEN"
fi
out=$(dc run --rm -T -e AZULSIM_TOKEN=wrong client jobs 2>&1) && fail "a wrong token was accepted"
grep -q UNAUTHENTICATED <<<"$out" || fail "a wrong token: expected UNAUTHENTICATED, got: $out"
ok "auth on: no token refused by compose, a wrong one UNAUTHENTICATED"

# 3. a job
job=$(client submit --bots greedy,random --games 20000 --seed 7)
client watch "$job" >/dev/null || fail "job $job did not succeed"
[ "$(games_done "$job")" = 20000 ] || fail "job $job: games_done $(games_done "$job") != 20000"
ok "job $job: 20000 games"

# 4. a worker killed mid-job
job=$(client submit --bots greedy,random,greedy --games 200000 --seed 8)
sleep 5
victim=$(dc ps -q worker | head -n 1)
docker kill --signal KILL "$victim" >/dev/null
client watch "$job" >/dev/null || fail "job $job did not succeed after a killed worker"
[ "$(games_done "$job")" = 200000 ] || fail "job $job: games_done $(games_done "$job")"
ok "job $job: 200000 games with worker ${victim:0:12} SIGKILLed mid-job"
dc up -d --scale worker=2 >/dev/null

# 5. a game-record job and its export
spec='{"configurations":[{"players":2,"bots":["greedy","random"]}],"games":2000,"seed":9,"game_records":true}'
job=$(dc run --rm -T -e SPEC="$spec" --entrypoint sh client -c \
  'printf "%s" "$SPEC" > /tmp/spec.json && azulsim submit --spec /tmp/spec.json')
client watch "$job" >/dev/null || fail "game-record job $job did not succeed"
client export "$job" -o "/games/$job.parquet" || fail "export of $job"
ok "game-record job $job exported to the games volume"

# 6. the Redis primary killed for good
primary=$(dc ps -q redis)
docker update --restart=no "$primary" >/dev/null  # never started again
docker kill --signal KILL "$primary" >/dev/null
for _ in $(seq 60); do  # the Sentinels promote the replica (down-after 5 s)
  job=$(client submit --bots greedy,random --games 20000 --seed 10 2>/dev/null) && break
  sleep 2
done
[ -n "${job:-}" ] || fail "no submit succeeded after the primary was killed"
client watch "$job" >/dev/null || fail "job $job did not succeed on the promoted replica"
[ "$(games_done "$job")" = 20000 ] || fail "job $job after failover: $(games_done "$job")"
ok "primary killed: job $job ran on the promoted replica"
echo "smoke test passed"
