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
# hookd version and /healthz report the VCS revision. With a git checkout in
# the build context (.git is not ignored) Go stamps it (-buildvcs=true:
# revision, commit time, modified). Without one (a tarball, a git worktree
# whose .git points outside the context) pass it:
#   docker build --build-arg HOOKD_REVISION=$(git rev-parse HEAD) .
# and with neither the binary says "revision unknown (built without VCS info)".
ARG HOOKD_REVISION=""
RUN vcs=false; if git rev-parse HEAD >/dev/null 2>&1; then vcs=true; fi; \
    CGO_ENABLED=0 go build -trimpath -buildvcs=$vcs \
      -ldflags="-s -w -X github.com/hookd/hookd/internal/version.stampedRevision=${HOOKD_REVISION}" \
      -o /out/hookd ./cmd/hookd \
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
