# Atoll's server and CLI. Build: `docker build -t atoll:local .` (on the official Node image), or
# `docker build --build-arg BASE_IMAGE=atoll-base:local -t atoll:local .` where no registry is
# reachable (scripts/docker-setup.sh makes that base from the machine's own node).
#
# Run: one node per container; configure it with the ATOLL_* variables of README's "Running a node"
# (at least ATOLL_ID and ATOLL_PEERS). It listens on 0.0.0.0:7001 for clients and 0.0.0.0:7101 for
# its peers, and serves its admin HTTP port (Prometheus /metrics, /livez, /readyz) on the
# container's loopback, 127.0.0.1:8001 (the client port + 1000; ATOLL_ADMIN_LISTEN=0.0.0.0:8001 lets
# probes and Prometheus from outside the container reach it), and keeps its data in the
# /var/lib/atoll volume. The peer secret file
# (ATOLL_PEER_SECRET_FILE) is best a volume every node shares, such as /var/lib/atoll-peer. Node itself handles SIGTERM (graceful, about a second), so no init is needed.
ARG BASE_IMAGE=node:20-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Scripts off: `prepare` would build before src/ is here; the native LevelDB addon ships prebuilt.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY proto proto
COPY src src
RUN npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${BASE_IMAGE}
ENV NODE_ENV=production \
    ATOLL_LISTEN=0.0.0.0:7001 \
    ATOLL_DATA_DIR=/var/lib/atoll \
    ATOLL_LOG_FORMAT=json \
    ATOLL_ENDPOINTS=127.0.0.1:7001
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/proto proto
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/dist dist
RUN chmod 0755 dist/src/cli/atoll.js dist/src/bin/atoll-server.js \
 && ln -s /app/dist/src/cli/atoll.js /usr/local/bin/atoll \
 && ln -s /app/dist/src/bin/atoll-server.js /usr/local/bin/atoll-server \
 && mkdir -p /var/lib/atoll /var/lib/atoll-peer \
 && chown node:node /var/lib/atoll /var/lib/atoll-peer
USER node
VOLUME /var/lib/atoll
EXPOSE 7001 7101 8001
# Asks the node's admin port whether the process runs (GET /livez; /readyz also wants a leader for
# every partition: docker-compose.yml uses that one). Plain node, no curl in the image.
HEALTHCHECK --interval=5s --timeout=10s --start-period=60s --retries=3 CMD ["node", "-e", "fetch('http://127.0.0.1:8001/livez',{signal:AbortSignal.timeout(4000)}).then((r)=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "/app/dist/src/bin/atoll-server.js"]
