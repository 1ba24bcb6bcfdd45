# syntax=docker/dockerfile:1
# One image for every lightfleet subcommand: `docker run IMAGE gateway --config ...`, `... controller`, `... keys-api`.
# The base is pinned to an exact Node.js LTS release; bump NODE_IMAGE deliberately. The release pipeline pins it by
# digest too: it resolves the tag against the registry it pulls from and builds with
#   --build-arg NODE_IMAGE=node:24.11.1-bookworm-slim@sha256:<digest>
# (a digest written here could not be checked against the registry, and differs per registry mirror).
ARG NODE_IMAGE=node:24.11.1-bookworm-slim
# Set by the release pipeline for the OCI labels below.
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown

# Production dependencies, with better-sqlite3 compiled for this Node.js and libc. Install scripts are skipped for
# everything else (none of the runtime dependencies needs one). Test tooling (anvil, the devnet's node) is a dev
# dependency and stays out.
FROM ${NODE_IMAGE} AS deps
# node-gyp compiles against the headers the base image ships instead of downloading them.
ENV npm_config_nodedir=/usr/local
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3 \
 && node -e "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()" \
 && npm cache clean --force

# The TypeScript build, with the dev dependencies (the compiler); none of them reaches the final image.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE}
ARG NODE_IMAGE
ARG VERSION
ARG REVISION
ARG CREATED
LABEL org.opencontainers.image.title="lightfleet" \
      org.opencontainers.image.description="Light-node fleet orchestrator, health controller, public Ethereum JSON-RPC gateway and key API" \
      org.opencontainers.image.source="https://github.com/lightfleet/lightfleet" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
ENV NODE_ENV=production \
    LIGHTFLEET_DATA_DIR=/data
WORKDIR /app
# Files stay owned by root and read-only to the service user: the root filesystem can be mounted read-only.
COPY package.json ./
COPY examples ./examples
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The only writable place: mount a volume (Kubernetes: emptyDir or PVC) at /data.
RUN mkdir -p /data && chown 10001:10001 /data
USER 10001:10001
VOLUME ["/data"]
# gateway (HTTP and WebSocket), key API, admin (/metrics, /healthz, /readyz)
EXPOSE 8545 8080 9464
# Garbage collected on the service's own thread: it has about a core, which V8's helper threads would wait on
# (src/process/serviceNodeFlags.ts says why; the bench's gateway runs with the same flags).
ENTRYPOINT ["node", "--single-threaded-gc", "dist/cli.js"]
CMD ["--help"]
