# Multi-stage build of the contiv-vpp binaries.
#   docker build -t contiv-vpp --build-arg VERSION=$(git describe --always) .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 make build BIN_DIR=/out VERSION=${VERSION} COMMIT=${COMMIT}

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates iproute2 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/bin/
EXPOSE 9999
ENTRYPOINT ["/usr/bin/contiv-agent"]
