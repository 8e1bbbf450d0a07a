# syntax=docker/dockerfile:1
#
# clusterdns container image.
#
#   docker build -t clusterdns:dev .
#
# Outside a cluster the kubernetes plugin needs an API server: the image ships the sandbox
# (sandbox/README.md), a local one loaded from YAML. Run it, then clusterdns with
# examples/Corefile.dev (127.0.0.1:1053, kubernetes endpoint {$SANDBOX_URL}) pointed at it:
#
#   docker run -d --rm --name clusterdns-sandbox --network host --entrypoint /nodejs/bin/node \
#     -v "$PWD/examples/cluster.yaml:/cluster.yaml:ro" clusterdns:dev \
#     /app/dist/sandbox/main.js --host 127.0.0.1 --port 8001 --file /cluster.yaml
#   docker run --rm --name clusterdns --network host -e SANDBOX_URL=http://127.0.0.1:8001 \
#     -v "$PWD/examples/Corefile.dev:/etc/coredns/Corefile:ro" clusterdns:dev
#   dig @127.0.0.1 -p 1053 kubernetes.default.svc.cluster.local     # 10.96.0.1
#
# test/chart/image.test.ts reproduces this without Docker: it copies what .dockerignore lets
# through, runs the build stage's steps there (npm ci offline from the local cache, npm run build,
# the production npm ci), assembles /app as the runtime stage does and runs the ENTRYPOINT
# against the sandbox.
#
# Runtime base: gcr.io/distroless/nodejs24-debian12:nonroot.
# Why distroless rather than node:24-bookworm-slim:
#   - no shell, package manager, npm or corepack in the image: ~half the size and far fewer CVEs to
#     triage for a cluster-critical component, same approach as CoreDNS (distroless static);
#   - it already runs as 65532:65532 ("nonroot"), the numeric user the chart's runAsUser uses.
# The node binary has no file capability. Port 53 is bound through the pod's network namespace:
# the chart sets the namespaced sysctl net.ipv4.ip_unprivileged_port_start to 53 (charts/clusterdns
# README, "Port 53"; Docker 20.10 and later set it to 0 in every container). A file capability
# (cap_net_bind_service, what this image had) makes the kernel run node in secure-exec mode
# (AT_SECURE), where glibc ignores MALLOC_ARENA_MAX and GLIBC_TUNABLES, and node ignores
# NODE_OPTIONS unless the capability is exactly that one.
# Both stages are Debian 12 (bookworm), so the build stage's native addons (none today) and the
# runtime's glibc match.

ARG NODE_BUILD_IMAGE=node:24-bookworm-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot

# ---- build: compile TypeScript, then install production dependencies into a clean folder ----
FROM ${NODE_BUILD_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --omit=optional: not the Node 24 binary npm ci installs for checkouts (this stage's node is 24).
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund --omit=optional
# The context is limited by .dockerignore to the sources tsconfig.build.json compiles (no tests,
# no benches: test/chart/image.test.ts builds from exactly this context).
COPY . .
RUN npm run build
# Production-only node_modules, without lifecycle scripts, in a folder that holds nothing else.
# --omit=optional leaves out the Node 24 binary that npm ci installs for checkouts (package.json's
# node-linux-<arch> optional dependency): the image runs on its base image's node only.
WORKDIR /prod
RUN --mount=type=cache,target=/root/.npm cp /src/package.json /src/package-lock.json ./ \
 && npm ci --omit=dev --ignore-scripts --omit=optional --no-audit --no-fund --cache /root/.npm --prefer-offline

# ---- runtime ----
FROM ${RUNTIME_IMAGE}
WORKDIR /app
COPY --from=build /prod/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY bin ./bin
USER 65532:65532
ENV NODE_ENV=production
# At most two glibc malloc arenas. glibc gives every thread that allocates an arena of its own (up
# to 8 per core) and keeps what was freed in each: the query threads and V8's helper threads.
# Measured in a 256M memory cgroup after sync and after 30,000 queries (docs/operations.md, "Port
# 53 and malloc arenas"; scripts/measure-thread-memory.sh): 7 arenas → 2, 6–8 MiB less RSS with
# two threads, 3–4 MiB with one.
ENV MALLOC_ARENA_MAX=2
# DNS (TCP and UDP), health, ready, metrics.
EXPOSE 53 53/udp 8080 8181 9153
# bin/clusterdns is the Node launcher (it imports dist/src/main.js). Distroless has no shell to
# run its shell part (which picks a checkout's node_modules/.bin/node), so node runs it directly (test/chart/image.test.ts starts it
# from this ENTRYPOINT). A 2 MiB young generation (V8's default is 16): the young generation grows to its
# maximum while the initial Kubernetes lists are parsed and under query load, and stays
# committed; at 150k pods the RSS after sync is ~85 MiB with 2, ~90 with 4, ~102 with 8 and ~117
# with 16 (~93 / ~101 after the scale bench's query load and churn with 2 / 4), while queries per
# second are the same within noise (npm run bench, bench/README.md). The launcher adds
# --max-old-space-size from the cgroup memory limit (docs/operations.md, "Memory").
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=2", "/app/bin/clusterdns"]
CMD ["-conf", "/etc/coredns/Corefile"]
