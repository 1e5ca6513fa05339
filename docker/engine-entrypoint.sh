#!/usr/bin/env bash
# Like the official images' entrypoints: every environment variable named like a setting
# (lower case with a dot: discovery.type, plugins.cogr.service_url) becomes -E name=value,
# then exec bin/opensearch (or bin/elasticsearch) in the foreground, so that a stop signal reaches the JVM.
set -euo pipefail
settings=()
while IFS='=' read -r -d '' name value; do
  if [[ "$name" =~ ^[a-z0-9_]+\.[a-z0-9_.]+$ ]]; then
    settings+=("-E" "$name=$value")
  fi
done < <(env -0)
exec "$ENGINE_BIN" "${settings[@]}" "$@"
