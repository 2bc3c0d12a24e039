package residency

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/forgedaemon/forged/bundle"
)

const gib = 1 << 30

// forgeManifest is the published Qwen3.8-27B Core AI manifest's memory figures
// (its coreai/manifest.json, written by Anemll/anemll-forge
// coreai/qwen38_coreai_build.py; sizes as recorded in that repository's
// README.md): 16 chunk packages of 0.73–0.82 GB, a 0.64 GB head, the 8K…64K
// ladder with the 64K entry holding 65,472 rows.
func forgeManifest(kv string) *bundle.Manifest {
	m := &bundle.Manifest{Ctxs: []int{8192, 16384, 32768, 49152, 65536}, KVLen: map[string]int{}, Head: &bundle.Head{File: "head_T8.aimodel", MB: 640}}
	for _, c := range m.Ctxs {
		m.KVLen[fmt.Sprint(c)] = min(c, 65472)
	}
	for i := range 16 {
		m.Chunks = append(m.Chunks, bundle.Chunk{File: fmt.Sprintf("chunk_%02d", i), MB: 730 + float64(i*6)})
	}
	m.KVCache.Format = kv
	return m
}

// forgeState is one session's DeltaNet state (Anemll/anemll-forge
// scripts/qwen38_coreai_model.py): per chunk 3 layers of conv 11×10240 +
// recurrent 48×128×128 + pending 48×25×128 fp16, doubled for the ping-pong
// buffer sets.
const forgeState = 16 * 3 * (11*10240 + 48*128*128 + 48*25*128) * 2 * 2

// forgeFootprint builds the real model's footprint. The program scratch is not
// published; it is derived from the one measured point "target at 8K wired
// +17.5 GB" (Anemll/anemll-forge COREAI_PORT_NOTES.md) and then checked against
// the other measured points.
func forgeFootprint(t *testing.T, kv string) *Footprint {
	t.Helper()
	shape := ModelShape{AttnLayers: 16, KVHeads: 4, HeadDim: 256, Recurrent: forgeState}
	f, err := FromManifest(forgeManifest(kv), shape, 0, 1.5e9)
	if err != nil {
		t.Fatal(err)
	}
	fp16, _ := KVBytesPerRow(KVFP16, 16, 4, 256)
	f.Scratch = int64(17.5e9) - f.Weights - fp16*8192 - forgeState
	return f
}

func TestKVBytesPerRowMatchesReference(t *testing.T) {
	fp16, err := KVBytesPerRow(KVFP16, 16, 4, 256)
	if err != nil || fp16 != 64*1024 {
		t.Fatalf("fp16 = %d, %v; docs/KV_CACHE_V8.md upstream says 64 KiB", fp16, err)
	}
	v8, err := KVBytesPerRow(KVV8, 16, 4, 256)
	if err != nil || float64(v8) != 48.125*1024 {
		t.Fatalf("v8 = %d, %v; docs/KV_CACHE_V8.md upstream says 48.125 KiB", v8, err)
	}
	// Anemll/anemll-forge docs/KV_CACHE_V8.md: at 65,472 rows 3.996 GiB (fp16) and 3.005 GiB (v8).
	for _, c := range []struct {
		per  int64
		want float64
	}{{fp16, 3.996}, {v8, 3.005}} {
		if got := float64(c.per*65472) / gib; math.Abs(got-c.want) > 0.001 {
			t.Errorf("%d bytes/row × 65472 = %.3f GiB, want %.3f", c.per, got, c.want)
		}
	}
	for _, bad := range []struct {
		format     string
		l, h, d    int
		wantInText string
	}{{"fp8", 16, 4, 256, `"fp8"`}, {KVFP16, 0, 4, 256, "layers 0"}, {KVV8, 16, -1, 256, "kv heads -1"}} {
		if _, err := KVBytesPerRow(bad.format, bad.l, bad.h, bad.d); err == nil || !strings.Contains(err.Error(), bad.wantInText) {
			t.Errorf("KVBytesPerRow(%q, %d, %d, %d) = %v, want an error naming %s", bad.format, bad.l, bad.h, bad.d, err, bad.wantInText)
		}
	}
}

// The model reproduces the measured wired figures it was not fitted to (Anemll/anemll-forge
// COREAI_PORT_NOTES.md).
func TestFootprintMatchesMeasuredWiredMemory(t *testing.T) {
	f := forgeFootprint(t, KVFP16)
	for _, c := range []struct {
		ctx     int
		drafter bool
		wiredGB float64
	}{{16384, false, 18.1}, {32768, false, 19.0}, {49152, false, 20.1}, {65536, false, 21.1}, {65536, true, 22.6}, {8192, true, 19.3}} {
		got := float64(f.Model(c.drafter)+f.Session(c.ctx)) / 1e9
		if math.Abs(got-c.wiredGB)/c.wiredGB > 0.05 {
			t.Errorf("%s drafter=%v: model %.2f GB, measured %.1f GB (more than 5%% apart)", entryName(c.ctx), c.drafter, got, c.wiredGB)
		}
	}
}

func TestEntrySelection(t *testing.T) {
	f := forgeFootprint(t, KVV8)
	for _, c := range []struct{ prompt, max, want int }{
		{100, 100, 8192}, {8000, 184, 8192}, {8000, 185, 16384}, {30000, 2000, 32768}, {60000, 5464, 65536},
	} {
		got, err := f.EntryFor(c.prompt, c.max)
		if err != nil || got != c.want {
			t.Errorf("EntryFor(%d, %d) = %d, %v; want %d", c.prompt, c.max, got, err, c.want)
		}
	}
	// 65,473 positions: one more than the 64K entry holds.
	_, err := f.EntryFor(60000, 5465)
	var ce *ContextExceededError
	if !errors.As(err, &ce) || ce.Limit != 65472 || ce.Need != 65473 || !strings.Contains(err.Error(), "65472") {
		t.Fatalf("EntryFor past the largest entry = %v, want context exceeded naming the 65472-row limit", err)
	}
}

func TestFromManifestRejectsMissingFigures(t *testing.T) {
	shape := ModelShape{AttnLayers: 16, KVHeads: 4, HeadDim: 256}
	for _, c := range []struct {
		name   string
		mutate func(*bundle.Manifest)
		want   string
	}{
		{"chunk without mb", func(m *bundle.Manifest) { m.Chunks[3].MB = 0 }, "chunks[3] (chunk_03) has no package size"},
		{"head without mb", func(m *bundle.Manifest) { m.Head.MB = 0 }, "head has no package size"},
		{"kv_len missing", func(m *bundle.Manifest) { delete(m.KVLen, "16384") }, "kv_len has no entry for ctx 16384"},
		{"unknown kv format", func(m *bundle.Manifest) { m.KVCache.Format = "int4" }, `kv_cache: kv bytes per row: unknown kv cache format "int4"`},
		{"kv_len above ctx", func(m *bundle.Manifest) { m.KVLen["8192"] = 9000 }, "kv_len of entry 8192 is 9000"},
	} {
		m := forgeManifest(KVFP16)
		c.mutate(m)
		if _, err := FromManifest(m, shape, 0, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// TestAdmissionTable decides requests on fake machines of 16–128 GiB with a
// 4 GiB reserve against the real model's figures, prints the decisions and
// checks the ones the issue names.
func TestAdmissionTable(t *testing.T) {
	f := forgeFootprint(t, KVFP16)
	type scenario struct {
		name string
		r    Occupancy
	}
	scenarios := []scenario{
		{"nothing", Occupancy{}},
		{"model", Occupancy{Models: 1}},
		{"model+8K", Occupancy{Models: 1, Sessions: []int{8192}}},
		{"model+64K", Occupancy{Models: 1, Sessions: []int{65536}}},
		{"model+2×64K", Occupancy{Models: 1, Sessions: []int{65536, 65536}}},
		{"old+new rev", Occupancy{Models: 2}},
	}
	requests := []struct {
		name string
		req  Request
	}{
		{"8K", Request{Prompt: 4000, MaxTokens: 1000}},
		{"16K+drafter", Request{Prompt: 12000, MaxTokens: 2000, Drafter: true}},
		{"32K", Request{Prompt: 30000, MaxTokens: 2000}},
		{"64K+drafter", Request{Prompt: 60000, MaxTokens: 4000, Drafter: true}},
	}
	got := map[string]Verdict{}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "machine\tresident\trequest\tentry\tused GB\tneed GB\tbudget GB\tverdict\t")
	for _, machine := range []uint64{16, 32, 64, 128} {
		budget, err := Budget(machine*gib, 4*gib)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scenarios {
			for _, rq := range requests {
				d, err := f.Decide(budget, s.r, rq.req)
				if err != nil {
					t.Fatal(err)
				}
				// Independent check of the arithmetic: sum the parts by hand.
				used := int64(s.r.Models) * (f.Weights + f.Scratch)
				for _, c := range s.r.Sessions {
					used += f.KVPerRow*int64(f.Rows(c)) + forgeState
				}
				if d.Used != used {
					t.Fatalf("%d GiB %s: used %d, summed by hand %d", machine, s.name, d.Used, used)
				}
				if fits := d.Used+d.Need <= budget; fits != (d.Verdict == Admit) {
					t.Fatalf("%d GiB %s %s: verdict %v but used+need ≤ budget is %v", machine, s.name, rq.name, d.Verdict, fits)
				}
				got[fmt.Sprintf("%d/%s/%s", machine, s.name, rq.name)] = d.Verdict
				fmt.Fprintf(w, "%d GiB\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%v\t\n", machine, s.name, rq.name, entryName(d.Entry),
					float64(d.Used)/1e9, float64(d.Need)/1e9, float64(budget)/1e9, d.Verdict)
			}
		}
	}
	w.Flush()
	t.Log("admission decisions (4 GiB reserve, real-model figures):\n" + b.String())

	want := map[string]Verdict{
		// 16 GiB: the target alone (≈16.8 GB with scratch) is over a 12 GiB budget.
		"16/nothing/8K": Never, "16/model/64K+drafter": Never,
		// 32 GiB: 64K with the drafter fits when nothing else is resident …
		"32/nothing/64K+drafter": Admit, "32/model/64K+drafter": Admit,
		// … but not beside the previous revision (an update waiting to switch)
		// or beside two other 64K conversations: it waits for them.
		"32/old+new rev/64K+drafter": Wait, "32/model+2×64K/64K+drafter": Wait,
		"32/old+new rev/8K": Wait,
		// 64 GiB and up: everything here fits.
		"64/old+new rev/64K+drafter": Admit, "64/model+2×64K/64K+drafter": Admit,
		"128/old+new rev/64K+drafter": Admit,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
}

func TestBudgetRejectsReserveAboveMachine(t *testing.T) {
	if _, err := Budget(8*gib, 8*gib); err == nil || !strings.Contains(err.Error(), "reserve") {
		t.Fatalf("Budget with reserve = machine: %v, want an error naming the reserve", err)
	}
}
