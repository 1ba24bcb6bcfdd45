# syntax=docker/dockerfile:1
# One image for every lightfleet subcommand: `docker run IMAGE gateway --config ...`, `... controller`, `... keys-api`.
# The base is pinned to an exact Node.js LTS release; bump NODE_IMAGE deliberately (and to a digest in your registry).
ARG NODE_IMAGE=node:24.11.1-bookworm-slim

# Production dependencies, with better-sqlite3 compiled for this Node.js and libc. Install scripts are skipped for
# everything else (none of the runtime dependencies needs one).
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
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["--help"]
