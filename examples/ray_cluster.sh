#!/usr/bin/env bash
# A ray cluster by hand (machines you can ssh into), then neurorun on it.
#
#   examples/ray_cluster.sh head                 # on the head machine
#   examples/ray_cluster.sh worker HEAD_IP       # on every other machine
#   examples/ray_cluster.sh run HEAD_IP experiment=humanoid   # anywhere in the cluster
#   examples/ray_cluster.sh stop                 # on every machine when done
#
# The head listens on RAY_PORT (default 6379); open it (and ray's node ports) between the
# machines only, never to the internet: ray runs code for whoever connects. The dashboard
# stays off. Token auth (ray 2.60): `head` writes ~/.ray/auth_token; copy that file to every
# other machine before `worker` and `run` (or export RAY_AUTH_TOKEN there).
set -euo pipefail
PORT="${RAY_PORT:-6379}"
export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=token

case "${1:-}" in
  head)
    [ -f "${HOME}/.ray/auth_token" ] || ray get-auth-token --generate
    ray start --head --port="${PORT}" --include-dashboard=false ;;
  worker)
    ray start --address="${2:?usage: ray_cluster.sh worker HEAD_IP}:${PORT}" ;;
  run)
    address="${2:?usage: ray_cluster.sh run HEAD_IP [overrides...]}:${PORT}"
    shift 2
    neurorun parallel=ray parallel.address="${address}" "$@" ;;
  stop)
    ray stop ;;  # every ray of this machine: run it only where the cluster is all there is
  *)
    sed -n '2,13p' "$0"; exit 2 ;;
esac
