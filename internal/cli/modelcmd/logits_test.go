package modelcmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/synth"
)

func tinyModelDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := synth.Generate(dir, synth.Options{Preset: "tiny", Seed: 11}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// engineLogits runs ids through the library directly.
func engineLogits(t *testing.T, dir string, ids []int) []float32 {
	t.Helper()
	m, err := ref.Open(dir, ref.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	defer s.Close()
	l, err := s.Feed(ids)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), l...)
}

func TestLogitsCommand(t *testing.T) {
	dir := tinyModelDir(t)
	out, _, err := runCtl(t, "", "logits", "--model", dir, "--ids", "5, 17,200", "--top", "4", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res logitsResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	want := ane.TopK(engineLogits(t, dir, []int{5, 17, 200}), 4)
	if len(res.Top) != 4 || res.Position != 3 {
		t.Fatalf("result %+v", res)
	}
	for i, w := range want {
		if res.Top[i].ID != w.ID || res.Top[i].Logit != w.Logit || res.Top[i].Token == "" {
			t.Errorf("rank %d: %+v, want %+v with its token text", i, res.Top[i], w)
		}
	}

	// The ANE-mirroring options run and stay close to the exact result.
	out, _, err = runCtl(t, "", "logits", "--model", dir, "--ids", "5,17,200", "--top", "1", "--json",
		"--kv", "v8", "--numerics", "tanh-silu,stable-softplus")
	var alt logitsResult
	if err != nil || json.Unmarshal([]byte(out), &alt) != nil || alt.Top[0].ID != want[0].ID {
		t.Fatalf("--kv v8 --numerics: %v %+v (want top id %d)", err, alt.Top, want[0].ID)
	}

	// --text encodes with the checkpoint tokenizer; all logits are printed.
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = runCtl(t, "", "logits", "--model", dir, "--text", "the cat sat", "--json")
	if err != nil {
		t.Fatal(err)
	}
	res = logitsResult{}
	json.Unmarshal([]byte(out), &res)
	ids := tok.Encode("the cat sat")
	all := engineLogits(t, dir, ids)
	if len(res.Logits) != len(all) || res.Logits[7] != all[7] || len(res.IDs) != len(ids) {
		t.Fatalf("--text: %d logits (want %d), ids %v (want %v)", len(res.Logits), len(all), res.IDs, ids)
	}
}

func TestLogitsCommandErrors(t *testing.T) {
	dir := tinyModelDir(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--ids", "1,x"}, `--ids: item 1 ("x") is not an integer`},
		{[]string{"--ids", "1,512"}, "token id 512 at index 1 is out of range [0, 512)"},
		{[]string{"--ids", "1", "--text", "a"}, "exactly one of --ids and --text"},
		{[]string{"--ids", "1", "--top", "-2"}, "--top -2"},
		{[]string{"--ids", "1", "--export", t.TempDir()}, "layer_00"},
		{[]string{"--ids", "1", "--kv", "int4"}, `KV format "int4"`},
		{[]string{"--ids", "1", "--numerics", "fast-exp"}, `--numerics "fast-exp"`},
	}
	for _, c := range cases {
		_, _, err := runCtl(t, "", append([]string{"logits", "--model", dir}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
		}
	}
}
