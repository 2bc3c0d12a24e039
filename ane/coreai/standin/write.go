package standin

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/forgedaemon/forged/ane/coreai/internal/refchunk"
	"github.com/forgedaemon/forged/ane/format/tensor"
)

// MPSGraphVersion is the package version written into functions.txt: not
// newer than the stand-in's OS version (7.0.80), so packages load with
// the version check on.
const MPSGraphVersion = "7.0.10"

// FunctionsText describes functions (name → inputs then outputs, as
// refchunk and refdraft list them) in the bridge's functions.txt format
// (csrc/bridge.c), in name order, after the package's MPSGraph version
// line when version is not empty.
func FunctionsText(version string, fns map[string][]refchunk.Spec) string {
	var sb strings.Builder
	if version != "" {
		fmt.Fprintf(&sb, "mpsgraph %s\n", version)
	}
	for _, name := range slices.Sorted(maps.Keys(fns)) {
		fmt.Fprintf(&sb, "function %s\n", name)
		for _, s := range fns[name] {
			role := map[refchunk.Role]string{refchunk.Input: "input", refchunk.Output: "output"}[s.Role]
			fmt.Fprintf(&sb, "%s %s %s %d", role, s.Name, s.DType, len(s.Shape))
			for _, d := range s.Shape {
				fmt.Fprintf(&sb, " %d", d)
			}
			sb.WriteString("\n")
		}
		sb.WriteString("end\n")
	}
	return sb.String()
}

// weightTensor is one float32 tensor of weights.safetensors.
type weightTensor struct {
	name  string
	shape []int
}

// WriteFunctions writes the package directory pkg (creating it) with
// functions.txt holding text (see csrc/bridge.c; FunctionsText writes the
// function lines): all a package needs whose runs a Handle handler
// computes.
func WriteFunctions(pkg, text string) error {
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(pkg, FunctionsFile), []byte(text), 0o644)
}

// writePackage writes one stand-in package directory: functions.txt
// and, unless p is nil, standin.json and weights.safetensors (the named
// tensors of src, float32, in order). It returns the bytes written.
func writePackage(dir string, fns map[string][]refchunk.Spec, p *Program, src map[string][]float32, want []weightTensor) (int64, error) {
	if err := WriteFunctions(dir, FunctionsText(MPSGraphVersion, fns)); err != nil {
		return 0, err
	}
	files := []string{FunctionsFile}
	if p != nil {
		if err := writeProgram(dir, p, src, want); err != nil {
			return 0, err
		}
		files = append(files, ProgramFile, WeightsFile)
	}
	var total int64
	for _, name := range files {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		total += st.Size()
	}
	return total, nil
}

// writeProgram writes a package's standin.json (p) and weights.safetensors.
func writeProgram(dir string, p *Program, src map[string][]float32, want []weightTensor) error {
	p.Format = ProgramFormat
	var ts []tensor.Tensor
	for _, w := range want {
		v, ok := src[w.name]
		n := 1
		for _, d := range w.shape {
			n *= d
		}
		if !ok {
			return fmt.Errorf("stand-in package %s: tensor %s is missing", filepath.Base(dir), w.name)
		}
		if len(v) != n {
			return fmt.Errorf("stand-in package %s: tensor %s has %d values, shape %v needs %d", filepath.Base(dir), w.name, len(v), w.shape, n)
		}
		// Little-endian float32 bytes in place (amd64 and arm64 are little-endian).
		ts = append(ts, tensor.Tensor{Name: w.name, DType: tensor.F32, Shape: w.shape,
			Data: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))})
	}
	if err := tensor.WriteSafetensors(filepath.Join(dir, WeightsFile), map[string]string{"format": "pt", "generator": "forged stand-in package"}, ts); err != nil {
		return err
	}
	prog, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ProgramFile), append(prog, '\n'), 0o644)
}
