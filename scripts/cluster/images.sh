#!/usr/bin/env bash
# Builds the cluster's images from this checkout and the machine's Debian packages, without a
# container engine or registry, as OCI archives in .cluster/images/ (umoci builds the layout, tar
# packs it; up.sh imports them with `ctr -n k8s.io images import`):
#   clusterdns:test     the Dockerfile's runtime stage: Node 24 (the checkout's node_modules/.bin/
#                       node, glibc from Debian 12 as in distroless/nodejs24-debian12), /app with
#                       the production node_modules, dist (tsconfig.build.json), package.json and
#                       bin; USER, ENV, ENTRYPOINT, CMD, WORKDIR, EXPOSE and the node binary's file
#                       capability (if any) read from the Dockerfile (images/dockerfile-runtime.mjs)
#   pause:test          containerd's sandbox_image (images/pause.c, static musl)
#   client-glibc:test   Debian's getent and dig, images/resolve.c against glibc, and
#                       images/dnsload.c (the rollout tests' load client), images/dnslat.c (the
#                       node-local test's latency probe)
#   client-musl:test    images/resolve.c static against musl (getaddrinfo/getnameinfo of the musl
#                       resolver, as in Alpine images), and dig (its own resolver; glibc beside)
#   coredns:test        the reference CoreDNS 1.15.0 (.bin/coredns, the binary the differential
#                       tests use) as /coredns, user 65532, as CoreDNS's own image
#   node-cache:test     clusterdns:test plus the host tools `clusterdns node-cache` drives (ip,
#                       nft, iptables-nft/-legacy with their extension modules): the chart's
#                       nodeLocalDNS.image for cluster:up --node-local and test/cluster/node-local
# Each is rebuilt only when its inputs' hash changes. Usage: images.sh [--force]
set -euo pipefail
SCRIPT_NAME="${SCRIPT_NAME:-images}"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HERE="$REPO_ROOT/scripts/cluster/images"
cd "$REPO_ROOT"
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1
mkdir -p "$IMAGE_DIR" "$LOG_DIR"
# Build directories live under $IMAGE_DIR/.build-*: a build that failed (set -e exits without
# running a function's RETURN trap) leaves its directory, which the next run, or this run's exit,
# removes.
rm -rf "$IMAGE_DIR"/.build-*
trap 'rm -rf "$IMAGE_DIR"/.build-*' EXIT
# Progress lines go to fd 3 (the terminal) while each build's own output goes to the log.
exec 3>&2
progress() { echo "[$SCRIPT_NAME]     $*" >&3; }
LOG="$LOG_DIR/images.log"
: >"$LOG"

need() { command -v "$1" >/dev/null 2>&1 || { echo "images: $1 not found ($2)" >&2; exit 1; }; }
need umoci "apt-get install umoci, or run scripts/cluster/install-packages.sh"
need musl-gcc "apt-get install musl-tools"
need gcc "apt-get install gcc libc6-dev"
need dig "apt-get install dnsutils"
need setcap "apt-get install libcap2-bin"

# copy_libs ROOTFS FILE...: the shared libraries ldd lists for FILE, at their paths in ROOTFS.
copy_libs() {
  local rootfs="$1" f lib
  shift
  for f in "$@"; do
    for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true); do
      [ -e "$rootfs$lib" ] || cp -L --parents "$lib" "$rootfs/"
    done
  done
}
# copy_with_libs ROOTFS FILE...: the machine's FILE at the same path in ROOTFS, with its libraries.
copy_with_libs() {
  local rootfs="$1" f
  shift
  for f in "$@"; do cp -L --parents "$f" "$rootfs/"; done
  copy_libs "$rootfs" "$@"
}
# base_files ROOTFS: what distroless's base has and the images need: users (root, nobody,
# nonroot 65532), /tmp, the CA bundle, nsswitch (hosts: files dns).
base_files() {
  local r="$1"
  mkdir -p "$r/etc" "$r/tmp" "$r/home/nonroot" "$r/etc/ssl/certs"
  chmod 1777 "$r/tmp"
  chown 65532:65532 "$r/home/nonroot"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$r/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$r/etc/nsswitch.conf"
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/"
  return 0
}

# oci NAME HASH POPULATE-FN CONFIG-ARGS...: build .cluster/images/NAME.tar unless its hash matches.
oci() {
  local name="$1" hash="$2" populate="$3"
  shift 3
  local tarball="$IMAGE_DIR/$name.tar" stamp="$IMAGE_DIR/$name.hash"
  if [ "$FORCE" = 0 ] && [ -f "$tarball" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$hash" ]; then
    echo "[$SCRIPT_NAME]   $name:$IMAGE_TAG up to date" >&2
    return 0
  fi
  local t0 work
  t0=$(date +%s)
  echo "[$SCRIPT_NAME]   building $name:$IMAGE_TAG (log: $LOG) ..." >&2
  work="$(mktemp -d "$IMAGE_DIR/.build-$name.XXXXXX")"
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  umoci init --layout "$work/layout" >>"$LOG" 2>&1
  umoci new --image "$work/layout:$IMAGE_TAG" >>"$LOG" 2>&1
  umoci unpack --image "$work/layout:$IMAGE_TAG" "$work/bundle" >>"$LOG" 2>&1
  "$populate" "$work/bundle/rootfs" >>"$LOG" 2>&1 || { echo "images: populating $name failed (log: $LOG)" >&2; tail -n 20 "$LOG" >&2; exit 1; }
  umoci repack --image "$work/layout:$IMAGE_TAG" "$work/bundle" >>"$LOG" 2>&1
  umoci config --image "$work/layout:$IMAGE_TAG" "$@" >>"$LOG" 2>&1
  umoci gc --layout "$work/layout" >>"$LOG" 2>&1
  tar -C "$work/layout" -cf "$tarball.tmp" .
  mv -f "$tarball.tmp" "$tarball"
  echo "$hash" >"$stamp"
  echo "[$SCRIPT_NAME]   $name:$IMAGE_TAG built in $(($(date +%s) - t0))s ($(du -h "$tarball" | cut -f1))" >&2
}

# Inputs' hash: files and the tool's versions; a checkout's uncommitted edits count too.
hash_of() {
  { for f in "$@"; do
      if [ -d "$f" ]; then (cd "$REPO_ROOT" && git ls-files -s -- "$f" && git diff HEAD -- "$f" && git ls-files --others --exclude-standard -- "$f" | xargs -r cat)
      else cat "$f"; fi
    done
    cat "${BASH_SOURCE[0]}"
  } | sha256sum | cut -d' ' -f1
}

# ---- pause ---------------------------------------------------------------------------------------
populate_pause() { musl-gcc -static -O2 -Wall -o "$1/pause" "$HERE/pause.c" && strip "$1/pause"; }
oci pause "$(hash_of "$HERE/pause.c")" populate_pause --config.entrypoint /pause --config.user 65535:65535

# ---- clients -------------------------------------------------------------------------------------
populate_glibc() {
  local r="$1"
  base_files "$r"
  mkdir -p "$r/usr/local/bin"
  gcc -O2 -Wall -o "$r/usr/local/bin/resolve" "$HERE/resolve.c"
  gcc -O2 -Wall -o "$r/usr/local/bin/dnsload" "$HERE/dnsload.c"
  gcc -O2 -Wall -o "$r/usr/local/bin/dnslat" "$HERE/dnslat.c"
  copy_with_libs "$r" /usr/bin/getent /usr/bin/dig
  copy_libs "$r" "$r/usr/local/bin/resolve"
  # A shell and cat for `kubectl exec` by hand (debugging); the tests use resolve/getent/dig.
  copy_with_libs "$r" /bin/sh /bin/dash /bin/cat
}
populate_musl() {
  local r="$1"
  base_files "$r"
  mkdir -p "$r/usr/local/bin"
  musl-gcc -static -O2 -Wall -o "$r/usr/local/bin/resolve" "$HERE/resolve.c"
  strip "$r/usr/local/bin/resolve"
  # dig sends its own queries (it reads /etc/resolv.conf itself): its glibc does not resolve here.
  copy_with_libs "$r" /usr/bin/dig /bin/sh /bin/dash /bin/cat
}
client_cfg=(--config.cmd /usr/local/bin/resolve --config.cmd sleep
  --config.env PATH=/usr/local/bin:/usr/bin:/bin)
oci client-glibc "$(hash_of "$HERE/resolve.c" "$HERE/dnsload.c" "$HERE/dnslat.c"; dpkg-query -W libc6 dnsutils 2>/dev/null)" populate_glibc "${client_cfg[@]}"
oci client-musl "$(hash_of "$HERE/resolve.c"; dpkg-query -W musl dnsutils 2>/dev/null)" populate_musl "${client_cfg[@]}"

# ---- coredns (the reference server beside clusterdns) ---------------------------------------------
COREDNS_BIN="$BIN_DIR/coredns"
[ -x "$COREDNS_BIN" ] || { echo "images: $COREDNS_BIN missing (scripts/install-coredns.sh builds it)" >&2; exit 1; }
populate_coredns() {
  base_files "$1"
  cp -L "$COREDNS_BIN" "$1/coredns"
}
oci coredns "$(hash_of "$COREDNS_BIN")" populate_coredns --config.entrypoint /coredns \
  --config.user 65532:65532 --config.workingdir / --config.exposedports 53/udp --config.exposedports 53/tcp

# ---- clusterdns ----------------------------------------------------------------------------------
runtime="$("$NODE_BIN" "$HERE/dockerfile-runtime.mjs" "$REPO_ROOT/Dockerfile")"
field() { "$NODE_BIN" -e 'const v = JSON.parse(process.argv[1])[process.argv[2]]; for (const x of [].concat(v ?? [])) console.log(x)' "$runtime" "$1"; }
populate_clusterdns() {
  local r="$1" prod
  base_files "$r"
  # /nodejs/bin/node: Node 24 with the libraries it links (Debian 12's glibc, libstdc++).
  mkdir -p "$r/nodejs/bin"
  cp -L "$NODE_BIN" "$r/nodejs/bin/node"
  copy_libs "$r" "$r/nodejs/bin/node"
  local caps
  caps="$(field nodeCapabilities)"
  if [ -n "$caps" ]; then setcap "$caps" "$r/nodejs/bin/node"; fi
  # /app as the build stage makes it: dist from tsconfig.build.json (the Docker context holds the
  # same sources, .dockerignore), production node_modules without optional deps or scripts.
  mkdir -p "$r/app"
  progress "compiling /app/dist (tsc -p tsconfig.build.json, ~10 s on a quiet machine)"
  (cd "$REPO_ROOT" && node_modules/.bin/tsc -p tsconfig.build.json --outDir "$r/app/dist")
  progress "production node_modules (npm ci --omit=dev --offline)"
  prod="$(mktemp -d "$IMAGE_DIR/.build-prod-modules.XXXXXX")"
  cp "$REPO_ROOT/package.json" "$REPO_ROOT/package-lock.json" "$prod/"
  (cd "$prod" && npm ci --omit=dev --ignore-scripts --omit=optional --no-audit --no-fund --offline)
  mv "$prod/node_modules" "$r/app/node_modules"
  rm -rf "$prod"
  cp "$REPO_ROOT/package.json" "$r/app/"
  cp -a "$REPO_ROOT/bin" "$r/app/bin"
  chown -R 0:0 "$r/app"
}
cfg=(--config.workingdir "$(field workdir)" --config.user "$(field user)"
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt)
while IFS= read -r x; do cfg+=(--config.env "$x"); done < <(field env)
while IFS= read -r x; do cfg+=(--config.entrypoint "$x"); done < <(field entrypoint)
while IFS= read -r x; do cfg+=(--config.cmd "$x"); done < <(field cmd)
while IFS= read -r x; do cfg+=(--config.exposedports "$x"); done < <(field expose)
oci clusterdns "$(hash_of Dockerfile package.json package-lock.json tsconfig.json tsconfig.build.json src plugins sandbox tools bin "$NODE_BIN" "$HERE/dockerfile-runtime.mjs")" populate_clusterdns "${cfg[@]}"

# ---- node-cache (clusterdns:test plus the host tools node-cache runs) ----------------------------
# The distroless server image has no `ip`, `nft` or `iptables` (docs/node-cache.md, "Image"): this
# one is the clusterdns image's root file system with the machine's iproute2, nftables and
# iptables (both back ends, their dlopen()ed extensions in xtables/) and their libraries added, the
# same runtime configuration otherwise. Rebuilt when the clusterdns image or those packages change.
populate_node_cache() {
  local r="$1" src
  src="$(mktemp -d "$IMAGE_DIR/.build-node-cache-src.XXXXXX")"
  mkdir -p "$src/layout"
  tar -C "$src/layout" -xf "$IMAGE_DIR/clusterdns.tar"
  umoci unpack --image "$src/layout:$IMAGE_TAG" "$src/bundle"
  cp -a "$src/bundle/rootfs/." "$r/"
  rm -rf "$src"
  # /etc/protocols: iptables resolves `-p udp` through getprotobyname().
  cp /etc/protocols "$r/etc/"
  copy_with_libs "$r" /usr/sbin/ip /usr/sbin/nft /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi
  local multiarch
  multiarch="$(gcc -print-multiarch)"
  cp -a --parents "/usr/lib/$multiarch/xtables" "$r/"
  copy_libs "$r" "/usr/lib/$multiarch/xtables/"*.so
  for t in iptables ip6tables; do
    for v in "" -save -restore; do
      ln -sf xtables-nft-multi "$r/usr/sbin/$t-nft$v"
      ln -sf xtables-legacy-multi "$r/usr/sbin/$t-legacy$v"
    done
  done
}
oci node-cache "$(cat "$IMAGE_DIR/clusterdns.hash"; dpkg-query -W iproute2 nftables iptables 2>/dev/null)" populate_node_cache "${cfg[@]}"
