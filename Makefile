# Tempest build targets. Everything builds with CGO_ENABLED=0.
GO ?= go
export CGO_ENABLED = 0

.PHONY: build test test-long gpu fuzz bench clean

build:
	$(GO) build -o tempest ./cmd/tempest

# The README's test command.
test:
	$(GO) test ./...

# The long tests as .ci/run runs them (the full PoCL matrix, the n5d switches, every generated
# program on PoCL, the C++ emulations; two shards side by side).
test-long:
	bash .ci/run long

# Static binaries for the GPU machine (it has no Go): the CLI and the test binaries of the
# packages that touch a GPU, stripped (-s -w: 40 MiB instead of 54 MiB unstripped; the
# carried folder and the working tree must stay under 64 MiB together).
GPU_TESTS = gpu gpurun gen tune probe driver decomp
GPU_LDFLAGS = -ldflags="-s -w"
gpu:
	mkdir -p .gpu
	$(GO) build $(GPU_LDFLAGS) -o .gpu/tempest ./cmd/tempest
	for n in $(GPU_TESTS); do $(GO) test -c $(GPU_LDFLAGS) -o .gpu/$$n.test ./internal/$$n || exit 1; done

fuzz:
	$(GO) test ./internal/syntax -run '^$$' -fuzz FuzzParse -fuzztime 30s

# CPU engine against the C loop of bench/c (docs/performance.md).
bench:
	$(GO) test ./internal/cpu -run '^$$' -bench J2D5PT -benchtime 50x -count 5
	gcc -O3 -fopenmp bench/c/j2d5pt.c -o /tmp/j2d5pt_c && for i in 1 2 3 4 5; do /tmp/j2d5pt_c 4096 50; done

clean:
	rm -rf tempest .gpu
