# Parsec — build, run and test. `make run` and `make test` are all a new
# machine needs.

export GOFLAGS ?= -mod=mod

BIN      := bin/parsec
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/parsecdb/parsec/engine.Version=$(VERSION)
PKGS     := ./...
CLIENTS  := integration/clients

.PHONY: all build run cluster test clients debian-clients bench fuzz lint clean conformance conformance-baseline

all: build

build:
	go build -ldflags '$(LDFLAGS)' -o $(BIN) .

## run: build and start the server on 127.0.0.1:27017 with data in ./parsec-data
run: build
	./$(BIN) serve --listen 127.0.0.1:27017 --data-dir ./parsec-data

## cluster: build and start a local three-node cluster on 127.0.0.1-3
## (clients on port 27017, Raft on 7001, data under ./parsec-cluster);
## Ctrl-C stops it
cluster: build
	./$(BIN) cluster up --nodes 3 --dir ./parsec-cluster

## test: install the client packages (mongosh, Node.js driver, pymongo, tmux), lint, then
## every Go test (unit, integration, client scenarios) with the race detector
test: clients lint
	go test -race -count=1 -timeout 35m $(PKGS)

## clients: what the client scenarios (TestClients, TestMongosh*) need:
## mongosh, the Node.js driver and its zstd/snappy compressors from
## integration/clients/package-lock.json (npm ci), and from Debian, when
## missing, pymongo for /usr/bin/python3, tmux and chromium (the console's
## browser test, TestConsoleBrowser) (apt-get, as root)
clients: $(CLIENTS)/node_modules/.installed debian-clients

$(CLIENTS)/node_modules/.installed: $(CLIENTS)/package.json $(CLIENTS)/package-lock.json
	cd $(CLIENTS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

debian-clients:
	@missing=""; \
	/usr/bin/python3 -c 'import pymongo' 2>/dev/null || missing="$$missing python3-pymongo"; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing with apt-get"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing; } || \
		{ echo "could not install$$missing: install them (Debian packages) and run make again"; exit 1; }; \
	fi

## conformance: the driver spec tests (../shared/specs) with every failure
## and its reason; conformance-baseline records what passes now in
## integration/conformance/baseline.txt (make test fails if one stops passing)
conformance:
	go test ./integration/ -run TestConformance -count=1 -v
conformance-baseline:
	go test ./integration/ -run TestConformance -count=1 -args -conformance.rewrite

## bench: whole-system benchmarks against a server started for the run;
## ONLY=<regexp> runs only the matching sections (make bench ONLY=metrics:
## point reads with and without a scraper of /metrics; ONLY=cluster: three
## nodes against a single server; ONLY=elastic: a 100 MB partition's
## replica moved between nodes, and the load during the move;
## ONLY=changes: writes with a change stream open, and the latency from a
## write to its event)
bench:
	go run ./integration/bench -out bench-results.json $(if $(ONLY),-only '$(ONLY)')

## fuzz: a short run of every fuzz target (FUZZTIME=30s by default)
FUZZTIME ?= 30s
fuzz:
	bash .ci/fuzz ./wire FuzzReadMessage $(FUZZTIME)
	bash .ci/fuzz ./engine/query FuzzLanguage $(FUZZTIME)
	bash .ci/fuzz ./engine/update FuzzUpdate $(FUZZTIME)
	bash .ci/fuzz ./engine/expr FuzzExpression $(FUZZTIME)
	bash .ci/fuzz ./engine/agg FuzzPipeline $(FUZZTIME)
	bash .ci/fuzz ./engine/value FuzzEncodeKeyOrder $(FUZZTIME)
	bash .ci/fuzz ./engine/auth FuzzConversation $(FUZZTIME)

lint:
	go vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin parsec-data bench-results.json $(CLIENTS)/node_modules
