package coreai

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

// Open loads a chunk's .aimodelc sibling when its MPSGraph version is not
// newer than the OS's (the test bridge reports 7.0.80), else the source.
func TestOpenPicksCompiledPackage(t *testing.T) {
	bridge := testBridge(t)
	for _, c := range []struct {
		version string
		want    string
	}{{"7.0.9", "chunk_L00-01.aimodelc"}, {"7.1.0", "chunk_L00-01.aimodel"}} {
		rt := writeRuntime(t, bundleSpec{})
		src := filepath.Join(rt, "chunk_L00-01.aimodel")
		// The compiled package is the source's stand-in package (which
		// computes it the same) at another MPSGraph version.
		compiled := filepath.Join(rt, "chunk_L00-01.aimodelc")
		if err := os.CopyFS(compiled, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(src, standin.FunctionsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := standin.WriteFunctions(compiled, strings.Replace(string(data), "mpsgraph "+standin.MPSGraphVersion, "mpsgraph "+c.version, 1)); err != nil {
			t.Fatal(err)
		}
		e, err := Open(rt, Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		got := filepath.Base(e.m.chunks[0].Path)
		// Info says which package was loaded and its MPSGraph version.
		pi := e.Model().Info().Packages[0]
		wantVersion := c.version
		if !strings.HasSuffix(c.want, "c") {
			wantVersion = "7.0.10"
		}
		if pi.File != "chunk_L00-01.aimodel" || pi.Loaded != c.want || pi.Compiled != strings.HasSuffix(c.want, "c") ||
			pi.MPSGraph != wantVersion || pi.Bytes <= 0 {
			t.Fatalf("package info %+v, want %s loaded at MPSGraph %s", pi, c.want, wantVersion)
		}
		if _, err := e.Feed([]int{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		e.Close()
		if got != c.want {
			t.Fatalf("compiled package at MPSGraph %s: loaded %s, want %s", c.version, got, c.want)
		}
	}
}
