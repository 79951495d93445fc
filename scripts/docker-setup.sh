#!/usr/bin/env bash
# Makes this machine ready for the container tests and for README's `docker compose up`:
#
#   1. a Docker engine that answers: when none does, installs Debian's docker.io (as root) and
#      starts dockerd in the background, writing its pid to $ATOLL_DOCKERD_PIDFILE when that is set
#      (.ci/run uses it to stop that dockerd, and only that one, when the run ends);
#   2. the Compose v2 plugin (`docker compose`): when missing, takes the single binary from Debian
#      13's docker-compose package, fetched with an apt configuration of its own (the machine's
#      Debian source with the suite changed to trixie, separate state and cache directories), so
#      the system's apt setup is untouched;
#   3. a base image: $BASE_IMAGE when set; else node:20-bookworm-slim when present or pullable;
#      else, when no registry is reachable, `atoll-base:local`, imported from this machine's own
#      node binary, the libraries ldd lists for it, a shell, a few coreutils, npm, the machine's CA
#      certificates (npm is told to trust them, as this machine's npm does, so `npm ci` in the
#      build reaches the registry the same way) and an /etc/passwd with a `node` user (uid 1000, as
#      in the official image);
#   4. the Atoll image, `atoll:local`, built from this checkout on that base.
#
# Safe to run again: each step is skipped when its result is already there (the Atoll image is
# rebuilt, which Docker's layer cache makes quick when nothing changed). Prints the base image it
# used on its last line as `docker-setup: BASE_IMAGE=...`.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly official_base='node:20-bookworm-slim'
readonly local_base='atoll-base:local'
readonly atoll_image="${ATOLL_IMAGE:-atoll:local}"
readonly plugin_dir='/usr/libexec/docker/cli-plugins'
readonly engine_wait_seconds=60
readonly pull_timeout_seconds=30

log() { echo "docker-setup: $*"; }
fail() {
  echo "docker-setup: error: $*" >&2
  exit 1
}

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

# Installs Debian packages, refreshing the package lists only when the first try fails.
apt_install() {
  [ "$(id -u)" = "0" ] || fail "installing $* needs root"
  apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 ||
    { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends "$@" >/dev/null; } ||
    fail "apt-get install $* failed"
}

ensure_engine() {
  if engine_answers; then
    log "a Docker engine answers; using it"
    return
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    log "installing Debian's docker.io (no Docker engine here)"
    apt_install docker.io
  fi
  command -v docker >/dev/null 2>&1 || fail "the docker client is missing after installing docker.io"
  [ "$(id -u)" = "0" ] || fail "no Docker engine answers and starting dockerd needs root"
  local log_file="${ATOLL_DOCKERD_LOG:-/var/log/atoll-dockerd.log}"
  log "starting dockerd (log: $log_file)"
  nohup dockerd >"$log_file" 2>&1 </dev/null &
  local pid=$!
  disown "$pid" 2>/dev/null || true
  if [ -n "${ATOLL_DOCKERD_PIDFILE:-}" ]; then echo "$pid" >"$ATOLL_DOCKERD_PIDFILE"; fi
  local waited=0
  until engine_answers; do
    kill -0 "$pid" 2>/dev/null || fail "dockerd exited at start; the end of $log_file: $(tail -n 20 "$log_file")"
    [ "$waited" -lt "$engine_wait_seconds" ] || fail "dockerd did not answer within ${engine_wait_seconds} s (see $log_file)"
    sleep 1
    waited=$((waited + 1))
  done
  log "dockerd (pid $pid) answers after ${waited} s"
}

# The first Debian mirror this machine's apt uses for its release (not the security archive).
debian_mirror() {
  local mirror=''
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    mirror=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
    mirror=$(awk '/^deb / && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)
  fi
  echo "${mirror:-http://deb.debian.org/debian}"
}

ensure_compose() {
  if docker compose version >/dev/null 2>&1; then
    log "Compose v2 is installed: $(docker compose version --short 2>/dev/null || true)"
    return
  fi
  [ "$(id -u)" = "0" ] || fail "installing the Compose v2 plugin needs root"
  command -v dpkg-deb >/dev/null 2>&1 || fail "dpkg-deb is needed to unpack the compose plugin"
  local work
  work=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now: $work is local
  trap "rm -rf '$work'" RETURN
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts" "$work/download"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(debian_mirror) trixie main" >"$work/sources.list"
  local apt_options=(
    -o "Dir::Etc::SourceList=$work/sources.list"
    -o "Dir::Etc::SourceParts=$work/parts"
    -o "Dir::State::Lists=$work/lists"
    -o "Dir::Cache=$work/cache"
    -o "Dir::State::Status=$work/status"
    -o "APT::Sandbox::User=root"
  )
  : >"$work/status"
  log "installing the Compose v2 plugin from Debian trixie's docker-compose package"
  apt-get "${apt_options[@]}" update >"$work/update.log" 2>&1 || fail "apt-get update for trixie failed: $(tail -n 5 "$work/update.log")"
  (cd "$work/download" && apt-get "${apt_options[@]}" download docker-compose >"$work/download.log" 2>&1) ||
    fail "downloading docker-compose from trixie failed: $(tail -n 5 "$work/download.log")"
  dpkg-deb -x "$work"/download/docker-compose_*.deb "$work/unpacked"
  mkdir -p "$plugin_dir"
  install -m 0755 "$work/unpacked/usr/libexec/docker/cli-plugins/docker-compose" "$plugin_dir/docker-compose"
  docker compose version >/dev/null 2>&1 || fail "docker compose does not run after installing $plugin_dir/docker-compose"
  log "Compose $(docker compose version --short) installed in $plugin_dir"
}

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# Copies a file into the root file system at the same path, with the libraries ldd lists for it.
copy_with_libraries() {
  local root=$1 file=$2 library
  cp -L --parents "$file" "$root"
  for library in $(ldd "$file" 2>/dev/null | awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }'); do
    [ -e "$root$library" ] || cp -L --parents "$library" "$root"
  done
}

build_local_base() {
  local root node_version
  node_version=$(node --version)
  root=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now: $root is local
  trap "rm -rf '$root'" RETURN
  log "building $local_base from this machine's node $node_version (no registry reachable)"
  local node_path npm_root
  node_path=$(command -v node)
  copy_with_libraries "$root" "$node_path"
  [ "$node_path" = /usr/bin/node ] || { mkdir -p "$root/usr/bin" && ln -s "$node_path" "$root/usr/bin/node"; }
  # The shell and the few tools a Dockerfile's RUN steps use (all present in the official image).
  local tool
  for tool in /bin/sh /usr/bin/env /bin/mkdir /bin/chown /bin/chmod /bin/ln /bin/rm /bin/cat /bin/ls /bin/sleep /usr/bin/id; do
    copy_with_libraries "$root" "$tool"
  done
  npm_root="$(npm root -g)/npm"
  mkdir -p "$root/usr/local/lib/node_modules" "$root/usr/local/bin"
  cp -a "$npm_root" "$root/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/root" "$root/home/node"
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  chmod 1777 "$root/tmp"
  chown 1000:1000 "$root/home/node"
  printf 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnode:x:1000:\n' >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV NPM_CONFIG_CAFILE=/etc/ssl/certs/ca-certificates.crt' \
    --change "LABEL atoll.base.node-version=$node_version" \
    --change 'CMD ["node"]' \
    - "$local_base" >/dev/null
  log "$local_base built ($(docker image inspect -f '{{.Size}}' "$local_base" | awk '{ printf "%d MB", $1 / 1000000 }'))"
}

# Prints the base image to build on (the only thing this function writes to stdout).
choose_base() {
  if [ -n "${BASE_IMAGE:-}" ]; then
    image_exists "$BASE_IMAGE" || timeout "$pull_timeout_seconds" docker pull -q "$BASE_IMAGE" >&2 || fail "BASE_IMAGE=$BASE_IMAGE is neither here nor pullable"
    echo "$BASE_IMAGE"
  elif image_exists "$official_base"; then
    echo "$official_base"
  elif image_exists "$local_base" && [ "$(docker image inspect -f '{{index .Config.Labels "atoll.base.node-version"}}' "$local_base")" = "$(node --version)" ]; then
    echo "$local_base"
  elif timeout "$pull_timeout_seconds" docker pull -q "$official_base" >/dev/null 2>&1; then
    echo "$official_base"
  else
    build_local_base >&2
    echo "$local_base"
  fi
}

build_atoll_image() {
  local base=$1 started=$SECONDS build_log="${TMPDIR:-/tmp}/atoll-docker-build.log"
  log "building $atoll_image on $base (log: $build_log)"
  # Debian's engine comes without buildx: the legacy builder (--force-rm: no leftovers on failure).
  DOCKER_BUILDKIT=0 docker build --force-rm --build-arg "BASE_IMAGE=$base" -t "$atoll_image" . >"$build_log" 2>&1 ||
    { tail -n 40 "$build_log" >&2; fail "docker build failed"; }
  log "$atoll_image built in $((SECONDS - started)) s"
}

started=$SECONDS
ensure_engine
ensure_compose
base=$(choose_base)
build_atoll_image "$base"
log "ready in $((SECONDS - started)) s"
log "BASE_IMAGE=$base"
