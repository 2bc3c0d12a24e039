// Command gptq-bench times ane/rebuild/quantize.GPTQ against the published algorithm
// in PyTorch (baseline.py) on the same inputs and prints the ratio
// ours/theirs (median seconds). It also compares the two results: the share
// of identical values and each one's proxy loss tr(ΔW·H·ΔWᵀ)/tr(W·H·Wᵀ).
//
//	go run ./bench/gptq -n 4096 [-runs 3] [-python /usr/bin/python3]
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/rebuild/blas"
	"github.com/forgedaemon/forged/ane/rebuild/quantize"
)

func main() {
	n := flag.Int("n", 4096, "matrix size (Cout = Cin = Hessian dim)")
	runs := flag.Int("runs", 3, "timed runs per side (the median is reported)")
	python := flag.String("python", "/usr/bin/python3", "python with torch and numpy (Debian python3-torch)")
	format := flag.String("format", "LUT4 per-tensor + pcs", "format of the rounder both sides use")
	jsonOut := flag.Bool("json", false, "print one JSON object")
	flag.Parse()
	if err := run(*n, *runs, *python, *format, *jsonOut); err != nil {
		log.Fatalf("gptq-bench: %v", err)
	}
}

type result struct {
	N            int       `json:"n"`
	Format       string    `json:"format"`
	Backend      string    `json:"blas"`
	GoThreads    int       `json:"go_threads"`
	TorchThreads int       `json:"torch_threads"`
	Torch        string    `json:"torch_version"`
	Ours         []float64 `json:"ours_seconds"`
	Theirs       []float64 `json:"theirs_seconds"`
	Ratio        float64   `json:"ratio_ours_over_theirs"`
	SameValues   float64   `json:"same_values"`
	LossOurs     float64   `json:"rel_proxy_loss_ours"`
	LossTheirs   float64   `json:"rel_proxy_loss_theirs"`
	LossRTN      float64   `json:"rel_proxy_loss_rtn"`
}

func run(n, runs int, python, format string, jsonOut bool) error {
	dir, err := os.MkdirTemp("", "gptq-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	w, h := inputs(n)
	r, err := quantize.Fit("bench.w", w, n, n, format, quantize.FitOptions{})
	if err != nil {
		return err
	}
	if r.CD != 1 || r.Scale == nil {
		return fmt.Errorf("baseline.py implements scalar LUTs with a per-channel scale; %q is not one", format)
	}
	for name, v := range map[string]any{"w.npy": w, "h.f64": h, "lut.npy": r.LUT, "scale.npy": r.Scale} {
		if err := saveNPY(filepath.Join(dir, name), v, n); err != nil {
			return err
		}
	}
	res := result{N: n, Format: format, Backend: blas.Backend(), GoThreads: runtime.GOMAXPROCS(0)}
	var q []float32
	for i := 0; i < runs; i++ {
		t0 := time.Now()
		q, _, err = quantize.GPTQ(w, n, n, h, r, quantize.GPTQOptions{})
		if err != nil {
			return err
		}
		res.Ours = append(res.Ours, time.Since(t0).Seconds())
		fmt.Fprintf(os.Stderr, "ours: run %d/%d: %.3f s\n", i+1, runs, res.Ours[i])
	}
	cmd := exec.Command(python, filepath.Join(sourceDir(), "baseline.py"), dir, fmt.Sprint(runs), fmt.Sprint(runtime.GOMAXPROCS(0)))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("baseline %s: %v (install Debian's python3-torch: bench/gptq/run.sh does)", python, err)
	}
	var base struct {
		Seconds []float64 `json:"seconds"`
		Threads int       `json:"threads"`
		Torch   string    `json:"torch"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &base); err != nil {
		return fmt.Errorf("baseline output %q: %v", out, err)
	}
	res.Theirs, res.TorchThreads, res.Torch = base.Seconds, base.Threads, base.Torch
	res.Ratio = median(res.Ours) / median(res.Theirs)

	theirs, err := loadF32(filepath.Join(dir, "q.npy"), n*n)
	if err != nil {
		return err
	}
	same := 0
	for i := range q {
		if q[i] == theirs[i] {
			same++
		}
	}
	res.SameValues = float64(same) / float64(len(q))
	rtn, _ := quantize.RTN(w, n, n, r)
	base0 := proxy(w, make([]float32, len(w)), h, n)
	res.LossOurs, res.LossTheirs, res.LossRTN = proxy(w, q, h, n)/base0, proxy(w, theirs, h, n)/base0, proxy(w, rtn, h, n)/base0

	if jsonOut {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("GPTQ %d×%d, %d-dim Hessian, %s; Go BLAS %s, %d threads; torch %s, %d threads\n",
		n, n, n, format, res.Backend, res.GoThreads, res.Torch, res.TorchThreads)
	fmt.Printf("ours   (Go)      median %.3f s  %v\n", median(res.Ours), round3(res.Ours))
	fmt.Printf("theirs (PyTorch) median %.3f s  %v\n", median(res.Theirs), round3(res.Theirs))
	fmt.Printf("ratio ours/theirs %.3f\n", res.Ratio)
	fmt.Printf("identical values %.4f; proxy loss tr(ΔW H ΔWᵀ)/tr(W H Wᵀ): ours %.5f, theirs %.5f, RTN %.5f\n",
		res.SameValues, res.LossOurs, res.LossTheirs, res.LossRTN)
	return nil
}

// inputs are a weight matrix with rows of different magnitude and outliers,
// and H = XᵀX/N from 2n rows of correlated activations of uneven energy.
func inputs(n int) ([]float32, []float64) {
	r := rand.New(rand.NewPCG(2026, 11))
	w := make([]float32, n*n)
	for i := 0; i < n; i++ {
		s := math.Pow(10, r.Float64()-1.5)
		for j := 0; j < n; j++ {
			v := r.NormFloat64() * s
			if r.IntN(500) == 0 {
				v *= 10
			}
			w[i*n+j] = float32(v)
		}
	}
	tokens := 2 * n
	g := make([]float32, tokens*n)
	for i := range g {
		g[i] = float32(r.NormFloat64())
	}
	mix := make([]float32, n*n)
	for i := range mix {
		mix[i] = float32(0.8 * r.NormFloat64() / math.Sqrt(float64(n)))
	}
	for i := 0; i < n; i++ {
		mix[i*n+i]++
	}
	x := make([]float32, tokens*n)
	blas.Sgemm(false, false, tokens, n, n, 1, g, n, mix, n, 0, x, n)
	energy := make([]float32, n)
	for j := range energy {
		energy[j] = float32(math.Exp(r.NormFloat64()))
	}
	for i := range x {
		x[i] *= energy[i%n]
	}
	hs := quantize.NewHessian(n)
	if err := hs.Add(x, tokens); err != nil {
		panic(err)
	}
	return w, hs.Finalize()
}

// proxy is tr(ΔW·H·ΔWᵀ) with ΔW = W − Q.
func proxy(w, q []float32, h []float64, n int) float64 {
	d := make([]float64, n*n)
	for i := range d {
		d[i] = float64(w[i]) - float64(q[i])
	}
	p := make([]float64, n*n)
	blas.Dgemm(false, false, n, n, n, 1, d, n, h, n, 0, p, n)
	var s float64
	for i := range p {
		s += p[i] * d[i]
	}
	return s
}

func saveNPY(path string, v any, n int) error {
	switch x := v.(type) {
	case []float32:
		shape := []int{len(x)}
		if len(x) == n*n {
			shape = []int{n, n}
		}
		return tensor.WriteNPY(path, "<f4", shape, unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), len(x)*4))
	case []float64:
		// ane/format/tensor writes no float64 .npy; raw little-endian (amd64/arm64) it is.
		return os.WriteFile(path, unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), len(x)*8), 0o644)
	}
	return fmt.Errorf("npy: unsupported %T", v)
}

func loadF32(path string, want int) ([]float32, error) {
	f, err := tensor.OpenNPY(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if hd := f.Header(); hd.Descr != "<f4" || len(f.Data()) != want*4 {
		return nil, fmt.Errorf("%s: %s with %d bytes, want <f4 with %d", path, hd.Descr, len(f.Data()), want*4)
	}
	out := make([]float32, want)
	if _, err := binary.Decode(f.Data(), binary.LittleEndian, out); err != nil {
		return nil, err
	}
	return out, nil
}

func sourceDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "bench/gptq"
	}
	return filepath.Dir(file)
}

func median(s []float64) float64 {
	c := slices.Clone(s)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func round3(s []float64) []float64 {
	o := make([]float64, len(s))
	for i, v := range s {
		o[i] = math.Round(v*1000) / 1000
	}
	return o
}
