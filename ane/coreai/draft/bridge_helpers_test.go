package draft

import (
	"testing"

	"github.com/forgedaemon/forged/ane/coreai"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
	"github.com/forgedaemon/forged/ane/ref"
)

// The tests run over the stand-in bridge, built once per test binary
// (standintest.Main, standintest.Bridge). Those that run the target too
// open ane/coreai's engine over standintest's tiny runtimes.
func TestMain(m *testing.M) { standintest.Main(m) }

// openPair opens the runtime laid out by spec and ane/ref beside it.
func openPair(t *testing.T, spec standintest.Spec) (*coreai.Engine, *ref.Session) {
	t.Helper()
	bridge := standintest.Bridge(t)
	_, cfg, _ := standintest.Tiny(t)
	rt := t.TempDir()
	man := standintest.TinyRuntime(t, rt, spec.Options())
	e, err := coreai.Open(rt, coreai.Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), KV: spec.Format(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.SetRoPE(cfg.RopeTheta)
	return e, standintest.Reference(t, man, spec.Format())
}

// loadTiny loads the tiny runtime laid out by spec as a shared Model.
func loadTiny(t *testing.T, spec standintest.Spec) *coreai.Model {
	t.Helper()
	bridge := standintest.Bridge(t)
	_, cfg, _ := standintest.Tiny(t)
	rt := standintest.WriteRuntime(t, spec)
	m, err := coreai.Load(rt, coreai.Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), KV: spec.Format(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	m.SetRoPE(cfg.RopeTheta)
	return m
}

func newSession(t *testing.T, m *coreai.Model) *coreai.Engine {
	t.Helper()
	return standintest.Session(t, m.NewSession)
}
