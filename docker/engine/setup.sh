#!/usr/bin/env bash
# A container engine on a Debian host that has no registry in reach: rootful podman from
# Debian, configured the way this kind of host needs, and its Docker-compatible API socket
# (for testcontainers and the docker client). Idempotent: a second run changes nothing.
#
# Why each setting (found by trying, issue 25):
#   runc          crun refuses hosts with hybrid cgroups ("cgroups in hybrid mode not supported")
#   cgroupfs      no systemd as PID 1 in these machines
#   ulimits       the caller lacks CAP_SYS_RESOURCE; podman's defaults fail in setrlimit
#   netavark off  CNI (Debian's podman 4.3 default) works without extra packages
set -euo pipefail
SOCKET=/run/podman/podman.sock
need=()
for tool in podman runc debootstrap podman-compose; do
  command -v "$tool" >/dev/null || need+=("$tool")
done
if [ "${#need[@]}" -gt 0 ]; then
  echo "installing ${need[*]} (apt)"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc debootstrap podman-compose >/dev/null
fi
mkdir -p /etc/containers/containers.conf.d
cat > /etc/containers/containers.conf.d/cogr-search.conf <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
# The Docker API, kept up while the machine is: --time=0 never exits on idle.
if ! curl -fs --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1; then
  mkdir -p "$(dirname "$SOCKET")"
  # from /: the service outlives this shell, and conmon fails every start once its folder is gone
  (cd / && nohup podman system service --time=0 "unix://$SOCKET" >/var/log/podman-service.log 2>&1 &)
  for _ in $(seq 100); do
    curl -fs --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1 && break
    sleep 0.1
  done
fi
curl -fs --unix-socket "$SOCKET" http://d/_ping >/dev/null || { echo "podman API did not answer on $SOCKET; see /var/log/podman-service.log" >&2; exit 1; }
echo "podman $(podman version --format '{{.Client.Version}}') (runc, cgroupfs), Docker API at unix://$SOCKET"
