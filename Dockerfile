# hookd: one static binary (no cgo: SQLite is modernc.org/sqlite), run as a
# non-root user, with /data for the embedded SQLite database and its key.
#
#   docker build -t hookd .
#   docker run -p 8080:8080 -v hookd-data:/data hookd
#
# PostgreSQL and scale-out: deploy/compose.yaml and docs/deploy.md.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# -buildvcs=auto stamps the VCS revision when .git is in the build context
# (hookd version and /healthz report it).
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=auto -ldflags="-s -w" -o /out/hookd ./cmd/hookd \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hookd /usr/local/bin/hookd
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
VOLUME /data
ENV HOOKD_ADDR=0.0.0.0:8080 \
    HOOKD_DATABASE=/data/hookd.db \
    HOOKD_LOG_FORMAT=json
EXPOSE 8080 9090
# The image has no shell or curl: hookd checks itself. A worker without an
# API listener sets HOOKD_HEALTHCHECK_URL to its --metrics-addr's /healthz.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/hookd", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/hookd"]
CMD ["serve"]
