package draft

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/bundle"
)

// dstep is one drafter step: context rows, then a proposal after them.
type dstep struct {
	f      []float32
	pos    []int
	anchor int
}

// draftScript is random context arriving 1–9 rows at a time from
// position 0 to about n, with a proposal after each arrival (two ctx64
// flushes over 90 rows).
func draftScript(seed uint64, F, n int) []dstep {
	r := rand.New(rand.NewPCG(seed, seed^7))
	var steps []dstep
	for next := 0; next < n; {
		k := 1 + r.IntN(9)
		s := dstep{f: make([]float32, k*F), anchor: r.IntN(400)}
		for i := range s.f {
			s.f[i] = float32(r.NormFloat64() * 3)
		}
		for i := range k {
			s.pos = append(s.pos, next+i)
		}
		next += k
		steps = append(steps, s)
	}
	return steps
}

// drafterStep runs a step and records the drafts and the draft entry's
// logits and hidden projections.
func drafterStep(d *Drafter, s dstep, out *[][]float32) error {
	if err := d.AddContext(s.f, s.pos); err != nil {
		return err
	}
	p, err := d.Propose(s.anchor, s.pos[len(s.pos)-1]+1)
	if err != nil {
		return err
	}
	tok := make([]float32, len(p.Tokens))
	for i, id := range p.Tokens {
		tok[i] = float32(id)
	}
	*out = append(*out, tok, slices.Clone(d.logits), slices.Clone(d.hp))
	return nil
}

func drafterAlone(t *testing.T, dm *Model, steps []dstep) [][]float32 {
	t.Helper()
	d, err := dm.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var out [][]float32
	for i, s := range steps {
		if err := drafterStep(d, s, &out); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return out
}

// Two drafter sessions of one Model, interleaved call by call,
// propose exactly what each proposes alone. A parked drafter session
// holds no bridge buffer or binding, keeps no context, and afterwards
// proposes exactly what a fresh session proposes. A failed draft or
// ctx64 run names the package and the entry. Closing the Model
// closes its sessions and returns every bridge object.
func TestDrafterSessionsShareModel(t *testing.T) {
	bridge := standintest.Bridge(t)
	dir := writeDrafterDir(t, t.TempDir(), drafterEdits{})
	before := standin.Live()
	dm, err := Load(dir, Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	loaded := standin.Live()
	if loaded[2] != before[2] || loaded[3] != before[3] {
		t.Fatalf("Load allocated session objects: %v → %v", before, loaded)
	}
	s1, s2 := draftScript(1, dm.F, 90), draftScript(2, dm.F, 90)
	d1, err := dm.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := dm.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var o1, o2 [][]float32
	for i := range max(len(s1), len(s2)) {
		if i < len(s1) {
			if err := drafterStep(d1, s1[i], &o1); err != nil {
				t.Fatal(err)
			}
		}
		if i < len(s2) {
			if err := drafterStep(d2, s2[i], &o2); err != nil {
				t.Fatal(err)
			}
		}
	}
	standintest.SameRecords(t, "drafter 1 interleaved", o1, drafterAlone(t, dm, s1))
	standintest.SameRecords(t, "drafter 2 interleaved", o2, drafterAlone(t, dm, s2))
	if got, mem := d1.AllocatedBytes(), d1.Memory(); got <= 0 || got != mem.KV+mem.Scratch || mem.Weights != dm.Memory().Weights {
		t.Fatalf("drafter allocated %d bytes, memory %+v, model %+v", got, mem, dm.Memory())
	}

	// Park: everything the session holds on the bridge goes.
	held := standin.Live()
	nb, nbind := int64(len(d1.bufs)), int64(len(d1.plans))
	if err := d1.Park(); err != nil {
		t.Fatal(err)
	}
	if want := [4]int64{held[0], held[1], held[2] - nb, held[3] - nbind}; standin.Live() != want || nb == 0 || nbind == 0 {
		t.Fatalf("live %v after the drafter parked, want %v", standin.Live(), want)
	}
	if mem := d1.Memory(); !d1.Parked() || mem.KV != 0 || mem.Scratch != 0 || d1.AllocatedBytes() != 0 || d1.ring.Slots() != 0 {
		t.Fatalf("parked drafter: memory %+v, %d slots", mem, d1.ring.Slots())
	}
	// Afterwards it proposes what a fresh session proposes.
	s3 := draftScript(3, dm.F, 40)
	var o3 [][]float32
	for _, s := range s3 {
		if err := drafterStep(d1, s, &o3); err != nil {
			t.Fatal(err)
		}
	}
	if d1.Parked() || standin.Live() != held {
		t.Fatalf("after the resume: parked %v, live %v, before the park %v", d1.Parked(), standin.Live(), held)
	}
	standintest.SameRecords(t, "drafter after a park", o3, drafterAlone(t, dm, s3))

	// Run errors name the drafter package and the entry.
	standintest.FailRun(t, 0)
	_, err = d2.Propose(1, 1000)
	standintest.ClearFault()
	var re *cai.RunError
	if !errors.As(err, &re) || re.Package != bundle.DrafterModel || re.Entry != draftEntry {
		t.Fatalf("draft failure: %v", err)
	}
	standintest.WantErr(t, err, "coreai: "+bundle.DrafterModel+" entry draft: run: injected ANE failure")
	pos := make([]int, 70) // more than R rows: a ctx64 flush
	for i := range pos {
		pos[i] = 1000 + i
	}
	standintest.FailRun(t, 0)
	err = d2.AddContext(make([]float32, 70*dm.F), pos)
	standintest.ClearFault()
	if !errors.As(err, &re) || re.Package != bundle.DrafterModel || re.Entry != ctxEntry {
		t.Fatalf("ctx64 failure: %v", err)
	}

	dm.Close()
	if standin.Live() != before {
		t.Fatalf("Model.Close left bridge objects: %v → %v", before, standin.Live())
	}
	_, err = d2.Propose(1, 2000)
	standintest.WantErr(t, err, "closed")
	standintest.WantErr(t, d1.Park(), "closed")
	_, err = dm.NewSession()
	standintest.WantErr(t, err, "closed")
	if d1.Close() != nil || d2.Close() != nil || dm.Sessions() != 0 {
		t.Fatal("closing twice")
	}
}

// A conversation parked mid-generation — the target session to a spill
// file, its drafter session released (it keeps no context) — resumes by
// itself on the next cycle, and the speculative tokens still equal
// ane/ref's plain greedy ones; the drafter keeps proposing after the
// resume. Target and drafter come from Load and Load (shared
// models), not Open.
func TestParkedSpeculationMatchesGreedy(t *testing.T) {
	bridge := standintest.Bridge(t)
	_, dw := standintest.SynthDrafter(t)
	m := loadTiny(t, standintest.Spec{Taps: dw.Config.DFlash.TargetLayerIDs})
	e := newSession(t, m)
	dm, err := Load(writeDrafterDir(t, t.TempDir(), drafterEdits{}),
		Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	cd, err := dm.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	d := &countingDrafter{Drafter: cd}
	prompt := standintest.RandIDs(rand.New(rand.NewPCG(10, 11)), 300, 400)
	const n, parkAt = 30, 12
	want := standintest.RefGreedy(t, prompt, n)
	e.FeatureSink = d.AddContext
	first, err := e.Feed(prompt)
	e.FeatureSink = nil
	if err != nil {
		t.Fatal(err)
	}
	spill := t.TempDir()
	proposedAtPark := -1
	st := speculateGreedy(t, e, d, first, len(prompt), want, func(got []int) error {
		if len(got) >= parkAt && proposedAtPark < 0 {
			if err := e.Park(spill); err != nil {
				return err
			}
			if err := cd.Park(); err != nil {
				return err
			}
			if !e.Parked() || !cd.Parked() || e.ParkedBytes() != 0 {
				t.Fatalf("after parking: target %v (%d host bytes), drafter %v", e.Parked(), e.ParkedBytes(), cd.Parked())
			}
			proposedAtPark = d.proposals
		}
		return nil
	})
	if proposedAtPark < 1 || d.proposals <= proposedAtPark || e.Parked() || cd.Parked() {
		t.Fatalf("%d proposals before the park, %d in all; parked after: target %v, drafter %v",
			proposedAtPark, d.proposals, e.Parked(), cd.Parked())
	}
	t.Logf("%d proposals (%d after the park), %d/%d drafts accepted", d.proposals, d.proposals-proposedAtPark,
		st.Accepted, st.Proposed)
}

// countingDrafter counts proposals.
type countingDrafter struct {
	*Drafter
	proposals int
}

func (d *countingDrafter) Propose(anchor, pos int) (speculative.Proposal, error) {
	d.proposals++
	return d.Drafter.Propose(anchor, pos)
}
