# The gRPC proxy of `docker compose --profile cluster` (docker-compose.yml):
# Debian's own nginx package, the one tests/deploy.rs checks the
# configuration with, running deploy/nginx-cluster.conf (mounted by compose).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends nginx \
    && rm -rf /var/lib/apt/lists/*
EXPOSE 50051
STOPSIGNAL SIGQUIT
CMD ["nginx", "-c", "/etc/nginx/nginx-cluster.conf", "-g", "daemon off;"]
