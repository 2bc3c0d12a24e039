package ref

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/layout"
)

// f32Embedding is a float32 (rows, cols) table.
type f32Embedding struct {
	rows, cols int
	w          []float32
}

func (e *f32Embedding) Rows() int                 { return e.rows }
func (e *f32Embedding) Cols() int                 { return e.cols }
func (e *f32Embedding) Bytes() int64              { return int64(len(e.w)) * 4 }
func (e *f32Embedding) Row(id int, dst []float32) { copy(dst, e.w[id*e.cols:(id+1)*e.cols]) }

// denseModel runs tensors (name → float32 values, shapes taken from
// shapes) as a dense checkpoint.
func denseModel(t *testing.T, cfg Config, tensors map[string][]float32, shapes Source) *Model {
	t.Helper()
	src := MapSource{}
	for name, v := range tensors {
		ref, ok := shapes.Tensor(name)
		if !ok {
			t.Fatalf("effective tensor %s is not a checkpoint tensor", name)
		}
		src[name] = Tensor{DType: "F32", Shape: ref.Shape, Data: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))}
	}
	r := &reader{src: src, where: "effective tensors"}
	w, err := loadWeights(cfg, r, &denseMatrices{r}, &f32Embedding{cfg.Vocab, cfg.Hidden, tensors[embedName]})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(cfg, w, Options{Ladder: []int{64}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A dense model over an export's effective tensors computes the export's
// logits to float rounding: the export (ane/ref export_test.go's
// buildExport) stores every MLP in a rotated basis (rotIn, rotMid), layer
// 1's mixer too (mixIn, mixOut), every mixer matrix with a low-rank
// branch, in LUT, vector-LUT and INT8 formats. Unfolded rotations or a
// dropped branch move the logits by far more than the limit.
func TestEffectiveTensorsRunLikeTheExport(t *testing.T) {
	_, m, _, src := loadTinyExport(t)
	L1 := &m.w.layers[1]
	if L1.mixIn == nil || L1.mixOut == nil || L1.rotIn == nil || L1.rotMid == nil || L1.qkv.A == nil {
		t.Fatal("the test export lost its rotations or low-rank branches")
	}
	eff := m.EffectiveTensors()
	if got, names := slices.Sorted(maps.Keys(eff)), slices.Sorted(maps.Keys(src)); !slices.Equal(got, names) {
		t.Fatalf("effective tensors %v, checkpoint tensors %v", got, names)
	}
	dense := denseModel(t, m.Config(), eff, src)
	r := rand.New(rand.NewPCG(30, 30))
	for _, n := range []int{1, 7, 24} {
		ids := randIDs(r, n, m.Config().Vocab)
		a, b := openSession(t, m), openSession(t, dense)
		want, err := a.Feed(ids)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Feed(ids)
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr32(got, want); e > 2e-5 {
			t.Fatalf("%d-token prompt: dense effective logits differ from the export's by %.3g of the range", n, e)
		} else {
			t.Logf("%d-token prompt: %.2g of the logit range", n, e)
		}
	}
}

// A dense checkpoint's effective tensors are the checkpoint itself: the
// ane/format/layout table, value for value.
func TestEffectiveTensorsOfACheckpoint(t *testing.T) {
	dir := tinyCheckpoint(t)
	cm, err := hfconfig.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	eff := m.EffectiveTensors()
	src, closer, err := OpenCheckpointSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	table := layout.CheckpointTensors(cm)
	if len(eff) != len(table) {
		t.Fatalf("%d effective tensors, the checkpoint table has %d", len(eff), len(table))
	}
	for _, s := range table {
		ct, _ := src.Tensor(s.Name)
		want := make([]float32, s.Elements())
		half.BF16ToF32(want, half.View(ct.Data))
		if !slices.Equal(eff[s.Name], want) {
			t.Fatalf("%s: effective values differ from the checkpoint's", s.Name)
		}
	}
}
