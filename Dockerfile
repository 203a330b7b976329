# syntax=docker/dockerfile:1
# Tollgate gateway image (docs/container.md). Two stages: the build stage compiles the TypeScript with the dev
# dependencies, then prunes them; the runtime stage gets the compiled code and the production dependencies only.
#   docker build -t tollgate .
#   docker run -p 8080:8080 -p 127.0.0.1:8081:8081 -e TOLLGATE_ADMIN_TOKEN=... -v tollgate-data:/app/data tollgate

# ---------------------------------------------------------------- build
FROM node:24-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 installs a prebuilt binary when one matches the platform; where none does, npm builds it from
# source with this toolchain. The runtime stage needs neither: it gets the built module.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The context holds no tests, benchmarks or docs (.dockerignore): the build compiles the gateway alone.
RUN npm run build \
    && npm prune --omit=dev --no-audit --no-fund

# ---------------------------------------------------------------- runtime
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    TOLLGATE_HOST=0.0.0.0 \
    TOLLGATE_PORT=8080 \
    TOLLGATE_ADMIN_HOST=0.0.0.0 \
    TOLLGATE_ADMIN_PORT=8081
WORKDIR /app
# Code and configuration stay owned by root (read-only to the gateway); only the data folder is the gateway's.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/gateway.config.yaml ./
COPY --from=build /app/admin/dashboard/web/index.html /app/admin/dashboard/web/style.css ./admin/dashboard/web/
# The SQLite database, the usage spill file and its dead-letter file (./data/... in gateway.config.yaml).
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
# The image's own unprivileged user (uid 1000).
USER node
# Proxy port and admin port (server.port and admin.port in gateway.config.yaml).
EXPOSE 8080 8081
# Liveness on the proxy port of the config the gateway runs with (a mounted one's server.port, GATEWAY_CONFIG).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["node", "dist/cli/index.js", "healthcheck"]
# The flags of `npm start` (package.json); SIGTERM drains in-flight requests (server.shutdown_grace_ms).
ENTRYPOINT ["node", "dist/cli/index.js"]
CMD ["start"]
