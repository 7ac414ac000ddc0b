# Both binaries in one small image: static binaries (cgo against musl, librdkafka bundled by
# confluent-kafka-go) on a distroless base, running as non-root. The binaries are built by
# scripts/build-static.sh, the same script `make test` builds and tests them with.
#
#   docker build -t dlq:dev .
#   docker run --rm dlq:dev dlq-worker --version
#   docker run --rm -e DATABASE_URL=... -e KAFKA_BOOTSTRAP_SERVERS=... -e DLQ_WORKER_GROUP_INSTANCE_ID=worker-0 \
#     -v $PWD/worker.yaml:/etc/dlq/worker.yaml:ro --read-only dlq:dev dlq-worker run --config /etc/dlq/worker.yaml

FROM golang:1.26.8-bookworm AS build
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends musl-tools && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN scripts/build-static.sh /out

# static-debian12: CA certificates, tzdata and /etc/passwd with the nonroot user, no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/dlq-worker /out/dlq-admin /usr/local/bin/
# The examples listen on loopback and carry development tokens: start from them, mount your own.
COPY config/worker.example.yaml config/admin.example.yaml /etc/dlq/examples/
USER 65532:65532
EXPOSE 8080 9464
# The container's health, without a shell: the running worker's /readyz, found from its
# configuration at /etc/dlq/worker.yaml (where the Helm chart mounts it). The start period
# covers migrate_on_start (up to 5 minutes). For a dlq-admin container, set the check
# where it runs, in exec form: ["CMD", "dlq-admin", "health", "--config", "/etc/dlq/admin.yaml"].
HEALTHCHECK --interval=10s --timeout=6s --start-period=330s --retries=3 \
  CMD ["dlq-worker", "health", "--config", "/etc/dlq/worker.yaml"]
ENTRYPOINT []
CMD ["dlq-worker", "--help"]
