package deps

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/forgedaemon/forged"

type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
}

// graph is `go list -deps` of patterns: every package linked, with its
// direct imports.
type graph struct {
	roots []string
	pkgs  map[string]*pkg
	order []string
}

// platforms are the builds that ship: the Mac (the product) and Linux.
var platforms = []string{"darwin/arm64", "linux/amd64", "linux/arm64"}

// each runs f once per shipped platform, with go list targeting it.
func each(t *testing.T, f func(t *testing.T, list func(patterns ...string) *graph)) {
	for _, pl := range platforms {
		goos, goarch, _ := strings.Cut(pl, "/")
		t.Run(pl, func(t *testing.T) {
			f(t, func(patterns ...string) *graph { return list(t, goos, goarch, patterns...) })
		})
	}
}

func list(t *testing.T, goos, goarch string, patterns ...string) *graph {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out := func(args ...string) []byte {
		cmd := exec.Command(goTool, args...)
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return b
	}
	g := &graph{pkgs: map[string]*pkg{}}
	g.roots = strings.Fields(string(out(append([]string{"list"}, patterns...)...)))
	dec := json.NewDecoder(bytes.NewReader(out(append([]string{"list", "-deps", "-json=ImportPath,Standard,Imports"}, patterns...)...)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		g.pkgs[p.ImportPath] = &p
		g.order = append(g.order, p.ImportPath)
	}
	return g
}

// chain is the shortest import path from a root to target, for the error.
func (g *graph) chain(target string) string {
	prev := map[string]string{}
	var queue []string
	for _, r := range g.roots {
		if _, seen := prev[r]; !seen {
			prev[r] = ""
			queue = append(queue, r)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == target {
			var path []string
			for q := p; q != ""; q = prev[q] {
				path = append(path, strings.TrimPrefix(q, module+"/"))
			}
			slices.Reverse(path)
			return strings.Join(path, " → ")
		}
		if n := g.pkgs[p]; n != nil {
			for _, imp := range n.Imports {
				if _, seen := prev[imp]; !seen {
					prev[imp] = p
					queue = append(queue, imp)
				}
			}
		}
	}
	return target
}

// under reports whether path is pkg or inside it.
func under(path, pkg string) bool {
	return path == pkg || strings.HasPrefix(path, pkg+"/")
}

// forbid fails for every package of g inside one of the forbidden trees.
func forbid(t *testing.T, g *graph, what string, forbidden ...string) {
	t.Helper()
	for _, p := range g.order {
		for _, f := range forbidden {
			if under(p, f) {
				t.Errorf("%s must not link %s: %s", what, strings.TrimPrefix(f, module+"/"), g.chain(p))
			}
		}
	}
}

// The daemon serves; it does not rebuild models or make synthetic ones.
func TestForgedDoesNotLinkTheRebuild(t *testing.T) {
	each(t, func(t *testing.T, list func(...string) *graph) {
		forbid(t, list(module+"/cmd/forged"), "cmd/forged",
			module+"/ane/rebuild",
			"gonum.org/v1/gonum",
			module+"/internal/synth",
			module+"/internal/synthbundle",
		)
	})
}

// An app that imports the client links the standard library, msgpack and
// the client's own packages; internal/paths (which names the default
// socket) and internal/peercred (which reads who listens) import only the
// standard library.
func TestClientLinksOnlyMsgpack(t *testing.T) {
	each(t, func(t *testing.T, list func(...string) *graph) {
		allowed := map[string]bool{module + "/internal/paths": true, module + "/internal/peercred": true}
		for p := range list("github.com/vmihailenco/msgpack/v5").pkgs {
			allowed[p] = true
		}
		g := list(module + "/client/...")
		for _, p := range g.order {
			if g.pkgs[p].Standard || allowed[p] || under(p, module+"/client") {
				continue
			}
			t.Errorf("client/... must link only the standard library, msgpack and client/...: %s", g.chain(p))
		}
	})
}

// The engines know nothing of the daemon or of where bundles come from.
func TestAneDoesNotImportTheDaemonOrTheStore(t *testing.T) {
	each(t, func(t *testing.T, list func(...string) *graph) {
		forbid(t, list(module+"/ane/..."), "ane/...",
			module+"/daemon",
			module+"/bundle/hub",
			module+"/bundle/store",
		)
	})
}
