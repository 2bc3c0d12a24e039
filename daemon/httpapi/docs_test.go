package httpapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

// example is one ```sh block of docs/HTTP.md and what it must print.
type example struct {
	script string
	expect []string // from its "# expect: …" lines
}

var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

func docExamples(t *testing.T) []example {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "HTTP.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	for _, m := range shBlock.FindAllStringSubmatch(string(data), -1) {
		if !strings.Contains(m[1], "curl ") {
			continue
		}
		ex := example{script: m[1]}
		for _, line := range strings.Split(m[1], "\n") {
			if e, ok := strings.CutPrefix(strings.TrimSpace(line), "# expect: "); ok {
				ex.expect = append(ex.expect, e)
			}
		}
		out = append(out, ex)
	}
	return out
}

// TestDocsCurlExamples runs every curl example of docs/HTTP.md against a
// daemon ($SOCK: the HTTP socket, $PORT: loopback TCP, $TOKEN: a valid
// token) and checks each prints what its "# expect:" lines say.
func TestDocsCurlExamples(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	examples := docExamples(t)
	if len(examples) < 5 {
		t.Fatalf("docs/HTTP.md has %d curl examples; the test expects at least 5", len(examples))
	}
	h := start(t, fakeengine.New(fakeengine.Options{StopAfter: 12, Revision: "0123abcd"}), daemon.Config{})
	var tok wire.TokenCreateResult
	if err := h.msgpack(t).Admin(context.Background(), wire.OpTokenCreate, wire.TokenCreateArgs{App: "docs"}, &tok); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(h.tcp, ":")
	for i, ex := range examples {
		if len(ex.expect) == 0 {
			t.Errorf("example %d has no \"# expect:\" line:\n%s", i, ex.script)
			continue
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", ex.script)
		cmd.Env = append(os.Environ(), "SOCK="+h.httpSock, "PORT="+port, "TOKEN="+tok.Token, "PATH="+filepath.Dir(curl)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("example %d failed: %v\n%s\n%s", i, err, ex.script, out)
			continue
		}
		for _, e := range ex.expect {
			if !strings.Contains(string(out), e) {
				t.Errorf("example %d printed\n%s\nwithout %q:\n%s", i, out, e, ex.script)
			}
		}
	}
}
