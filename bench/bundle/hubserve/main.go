// Command hubserve runs the bundle/hubtest hub as a process, for the
// benchmark scripts and the README demo: it publishes directories as
// repositories and prints the endpoint, then serves until killed.
//
//	hubserve [-gen DIR -size BYTES -files N] REPO=DIR[@ref] ...
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/internal/synthbundle"
)

func main() {
	gen := flag.String("gen", "", "generate a synthetic bundle into this directory first")
	size := flag.Int64("size", 64<<20, "with -gen: total bytes of chunk weights")
	files := flag.Int("files", 1, "with -gen: weight files per chunk package")
	layers := flag.Int("layers", 8, "with -gen: model layers")
	chunk := flag.Int("chunk-layers", 4, "with -gen: layers per chunk package")
	token := flag.String("token", "", "require this bearer token")
	genOnly := flag.Bool("gen-only", false, "exit after generating")
	flag.Parse()
	if *gen != "" {
		if _, err := synthbundle.Generate(*gen, synthbundle.Options{TotalBytes: *size, WeightFiles: *files, Layers: *layers, ChunkLayers: *chunk, Seed: 1}); err != nil {
			log.Fatal(err)
		}
		if *genOnly {
			return
		}
	}
	h := hubtest.New()
	defer h.Close()
	h.Token = *token
	for _, arg := range flag.Args() {
		repo, dir, ok := strings.Cut(arg, "=")
		if !ok {
			log.Fatalf("argument %q is not REPO=DIR[@ref]", arg)
		}
		ref := "main"
		if d, r, ok := strings.Cut(dir, "@"); ok {
			dir, ref = d, r
		}
		commit, err := h.Publish(repo, dir, ref)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "published %s@%s = %s\n", repo, ref, commit)
	}
	fmt.Println(h.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
