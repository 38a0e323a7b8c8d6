# contiv-vpp build. `make run` and `make test` are the two commands the README promises.
# `make help` lists the targets: the text after "## " on a target's line (README.md's
# Development table describes the same targets; test/readme checks that they agree).

GO          ?= go
BIN_DIR     ?= bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -X github.com/contiv-vpp/contiv-vpp/pkg/version.Version=$(VERSION) \
               -X github.com/contiv-vpp/contiv-vpp/pkg/version.Commit=$(COMMIT)
BINARIES    := contiv-agent contiv-init contiv-cni contiv-ksr contiv-netctl contiv-stn vpp-sim
STATICCHECK ?= staticcheck
GOIMPORTS   ?= goimports
DEADCODE    ?= deadcode
# Pinned tool versions; .ci/run installs exactly these.
STATICCHECK_VERSION   := v0.7.0
# golang.org/x/tools: goimports (import grouping in make lint) and deadcode (make deadcode).
XTOOLS_VERSION        := v0.40.0
PROTOC_GEN_GO_VERSION := v1.36.10
PROTOC_GEN_GO_GRPC_VERSION := v1.5.1
CNITOOL_VERSION := v1.3.0
CNI_PLUGINS_VERSION := v1.7.1
# Reference CNI plugins (host-local for the chained-IPAM test of contiv-cni).
CNI_PLUGINS_DIR ?= $(shell $(GO) env GOPATH)/cni-plugins

# Where `make run` serves the agent REST API (as set in k8s/examples/http.conf).
RUN_HTTP    := 127.0.0.1:9999
# The demo's node (MICROSERVICE_LABEL=k8s-worker1 make run: the other one) and its data
# directory: .run/standalone for k8s-master, .run/standalone-<node> for another node, so
# that each keeps its node ID file, bolt mirror and pod state (shell expressions).
RUN_NODE    := $${MICROSERVICE_LABEL:-k8s-master}
RUN_DIR     := .run/standalone$$([ "$(RUN_NODE)" = k8s-master ] || echo "-$(RUN_NODE)")
# RUN_FLAGS: more agent flags for make run, e.g. RUN_FLAGS=-strict-config (a misspelt
# configuration key fails start-up instead of a warning among the start-up lines).

.PHONY: all build help test lint deadcode deadcode-check generate run run-build-notice bench bench-scale fuzz clean tools k8s-control-plane cluster test-cluster $(BINARIES)

all: build ## the same as build

build: $(BINARIES) ## every binary into bin/, version and commit stamped

help: ## this list
	@echo "make TARGET, TARGET one of:"
	@awk -F ':[^#]*## ' -v bins="$(BINARIES)" '/^[a-z$$][^:]*:[^#]*## / { t = $$1; d = $$2; \
	  if (t == "$$(BINARIES)") { t = "<binary>"; sub(/\$$\(BINARIES\)/, bins, d) }; printf "  %-18s %s\n", t, d }' $(MAKEFILE_LIST)

# Static binaries, as the images ship them (contiv-cni runs on the host, whatever its libc).
# GOBUILDFLAGS: more go build flags (make run sets -v: the packages compiled are listed).
$(BINARIES): ## one binary into bin/: $(BINARIES)
	CGO_ENABLED=0 $(GO) build $(GOBUILDFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN_DIR)/$@ ./cmd/$@

test: ## every test, race detector on (go test -race -count=1 ./...)
	CONTIV_TEST_CNI_PLUGINS=$(CNI_PLUGINS_DIR) $(GO) test -race -count=1 -timeout 30m ./...

# Import grouping: standard library, then other modules, then this module's packages
# (goimports -local); generated files are left as their generators write them.
lint: ## gofmt, goimports -local (import grouping), go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	@out=$$($(GOIMPORTS) -l -local github.com/contiv-vpp/contiv-vpp \
	    $$(git ls-files --cached --others --exclude-standard '*.go' | xargs grep -L '^// Code generated .* DO NOT EDIT\.$$')); \
	  if [ -n "$$out" ]; then echo "import grouping (goimports -local github.com/contiv-vpp/contiv-vpp) needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@# the measured alternative of the DNat44 path (docs/ARCHITECTURE.md) must keep building
	$(GO) vet -tags natpermapping ./plugins/vpp/natplugin/
	$(STATICCHECK) -tags natpermapping ./plugins/vpp/natplugin/

generate: ## regenerate the protobuf code (scripts/genproto.sh; protoc)
	./scripts/genproto.sh

# The first build downloads the modules and compiles every package the agent needs (about
# 2 min on 2 cores); later ones reuse Go's build cache and take seconds.
run: GOBUILDFLAGS := -v
run: run-build-notice contiv-agent ## build contiv-agent and run the standalone demo (README's tour)
	@echo "contiv-agent -standalone: embedded etcd, in-process VPP simulator, the cluster of k8s/examples/demo-cluster.yaml"
	@echo "REST on http://$(RUN_HTTP): try /contiv/v1/ipam, /readiness, /scheduler/status, or make contiv-netctl && bin/contiv-netctl nodes; Ctrl-C stops it"
	./$(BIN_DIR)/contiv-agent -standalone -standalone-dir=$(RUN_DIR) -node-name=$(RUN_NODE) \
	  -cluster=k8s/examples/demo-cluster.yaml -contiv-config=k8s/examples/contiv.conf \
	  -http-config=k8s/examples/http.conf -standalone-demo-pods $(RUN_FLAGS)

run-build-notice:
	@echo "make run: building bin/contiv-agent (go build -v lists each package it compiles: the first"
	@echo "build downloads the Go modules and compiles about 600 packages, ~2 min on 2 cores; a one-time"
	@echo "cost, later builds take seconds)"

# Functions no binary reaches (tests excluded): remove them or use them. Report only; test
# helper packages (linuxtest, servicetest, etcdtest) are listed by design.
deadcode: ## functions no binary reaches (report only; deadcode)
	$(DEADCODE) ./...

# The gate CI runs: nothing reachable from no binary and no test, beyond the functions
# scripts/deadcode-allow.txt keeps with a reason.
deadcode-check: ## fail on functions no binary and no test reaches (CI; scripts/deadcode-allow.txt)
	DEADCODE=$(DEADCODE) ./scripts/deadcode-check.sh

bench: ## every Go benchmark
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The whole-agent scale benchmark (root; etcd, vpp-sim and the agent in their own
# processes), this tree against CONTIV_SCALE_BEFORE; setup: see test/scale/doc.go.
bench-scale: ## the whole-agent scale benchmark (root; see test/scale/doc.go)
	CONTIV_SCALE=1 $(GO) test -run '^TestScale$$' -v -count=1 -timeout 120m ./test/scale/

# Go native fuzzing of every parser of outside input (<package>:<target>), one target
# after the other, each for FUZZTIME (a duration, or Nx for N executions), one worker.
# New crashers land in the package's testdata/fuzz/<target>/.
FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./pkg/infra:FuzzParseConfig \
	./pkg/pbjson:FuzzDecodeKindsMatchesProtojson \
	./api/k8s/dbresources:FuzzDecodeMatchesProtojson \
	./plugins/contivconf:FuzzParse \
	./plugins/podmanager/cniplugin:FuzzParseConfig \
	./plugins/podmanager/cniplugin:FuzzCNIArgs \
	./plugins/podmanager:FuzzParsePodArgs \
	./plugins/podmanager:FuzzReadState \
	./plugins/podmanager:FuzzCNICacheEntry \
	./plugins/ksr/convert:FuzzServiceSanitize \
	./plugins/ksr/store:FuzzDecodeEtcdValue \
	./plugins/ksr/store:FuzzDecodeExternalConfig \
	./plugins/nodesync:FuzzVppNodeRecord \
	./plugins/nodesync:FuzzIDFile \
	./standalone:FuzzClusterFileParse \
	./pkg/unarygrpc:FuzzResponse

fuzz: ## every fuzz target for FUZZTIME (default 30s; CI: FUZZTIME=500x)
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz: $$name in $$pkg for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -parallel 1 $$pkg; \
	done

tools: ## install the pinned Go tools (staticcheck, goimports, deadcode, protoc-gen-go, protoc-gen-go-grpc, cnitool, host-local) into GOPATH/bin
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GO) install golang.org/x/tools/cmd/goimports@$(XTOOLS_VERSION)
	$(GO) install golang.org/x/tools/cmd/deadcode@$(XTOOLS_VERSION)
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	$(GO) install github.com/containernetworking/cni/cnitool@$(CNITOOL_VERSION)
	CGO_ENABLED=0 GOBIN=$(CNI_PLUGINS_DIR) $(GO) install github.com/containernetworking/plugins/plugins/ipam/host-local@$(CNI_PLUGINS_VERSION)

# The cluster lab (test/cluster): a real Kubernetes control plane, built once into a cache
# outside the tree (scripts/k8s-control-plane.sh prints its directory), and NODES nodes as
# network namespaces. Root only.
NODES ?= 3
# NIC is the lab's node wiring: dual (VPP's NIC apart from the host's) or single (one NIC per node,
# stolen for VPP by contiv-stn: STN). test-cluster without NIC (and make test) runs both: every
# test on two-NIC nodes, then the STN and core traffic tests on single-NIC nodes, one lab after
# the other (test/cluster/main_test.go).
NIC ?= dual
# IPFAMILY is the lab's address families: dual (dual-stack, IPv4 primary; the default, ipv4 with
# NIC=single), ipv4, or ipv6 (single-stack IPv6, pods routed over the node network without VXLAN).
# test-cluster without IPFAMILY (and make test) runs the suite on a dual-stack lab, then the STN
# and core traffic tests on single-NIC (IPv4) nodes, then the IPv6 tests on a single-stack IPv6
# lab; with IPFAMILY (or NIC), the whole suite runs on one lab (test/cluster/main_test.go).
IPFAMILY ?=
# RENDERER is contiv.conf's serviceRenderer in the lab (nat44, the default, or cnat: IPv4
# Services rendered with VPP's cnat too). test-cluster without IPFAMILY and RENDERER (and make
# test) also runs the Service tests on a dual-stack lab with cnat, after the other labs.
RENDERER ?=

k8s-control-plane: ## build the cluster lab's Kubernetes control plane (cached in ~/.cache/contiv-vpp)
	./scripts/k8s-control-plane.sh >/dev/null

cluster: build k8s-control-plane ## the cluster lab: NODES nodes (default 3) on a real control plane (root); NIC=single: single-NIC (STN) nodes; IPFAMILY=ipv4 or ipv6: single-stack nodes and pods (default dual-stack)
	$(GO) build -o $(BIN_DIR)/cluster-lab ./test/cluster/cmd/cluster-lab
	exec $(BIN_DIR)/cluster-lab -nodes $(NODES) -nic $(NIC) -ipfamily "$(IPFAMILY)" -contiv-bin $(BIN_DIR) -k8s-bin "$$(./scripts/k8s-control-plane.sh -print)"

test-cluster: k8s-control-plane ## the cluster lab's tests (test/cluster) on dual-stack two-NIC nodes, then single-NIC (STN), IPv6 and cnat-renderer nodes; NIC=dual or single, IPFAMILY=dual, ipv4 or ipv6: one lab; RENDERER=cnat: the renderer of IPv4 Services
	CONTIV_LAB_NIC=$(if $(filter command line,$(origin NIC) $(origin IPFAMILY)),$(NIC),both) \
	  $(if $(filter command line,$(origin IPFAMILY)),CONTIV_LAB_IPFAMILY=$(IPFAMILY)) \
	  $(if $(filter command line,$(origin RENDERER)),CONTIV_LAB_RENDERER=$(RENDERER)) \
	  CONTIV_K8S_BIN="$$(./scripts/k8s-control-plane.sh -print)" $(GO) test -count=1 -v -timeout 30m ./test/cluster/...

# Go's test cache is not touched: it is the user's, shared by every module (make test runs
# with -count=1 and does not use it; `go clean -testcache` empties all of it).
clean: ## remove bin/ and .run/ (the demo's data)
	rm -rf $(BIN_DIR) .run
