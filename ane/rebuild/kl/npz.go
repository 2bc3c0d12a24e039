package kl

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/internal/atomicfile"
)

// Array is one named array of an .npz archive.
type Array struct {
	Name  string // without ".npy"
	Descr string // <i4 <i8 <f4
	Shape []int
	Data  []byte
}

// npzTime is the fixed modification time of archive entries, so the same
// arrays always give the same bytes.
var npzTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// WriteNPZ writes arrays as an uncompressed .npz (a zip of .npy files, as
// numpy.savez), atomically: each array goes through tensor.WriteNPY.
func WriteNPZ(path string, arrays []Array) error {
	tmpDir, err := os.MkdirTemp(filepath.Dir(path), ".npz-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	out, err := atomicfile.Create(path, 0o600)
	if err != nil {
		return err
	}
	defer out.Abort() // a no-op after Commit
	zw := zip.NewWriter(out)
	for _, a := range arrays {
		npy := filepath.Join(tmpDir, a.Name+".npy")
		if err := tensor.WriteNPY(npy, a.Descr, a.Shape, a.Data); err != nil {
			return err
		}
		data, err := os.ReadFile(npy)
		if err != nil {
			return err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: a.Name + ".npy", Method: zip.Store, Modified: npzTime})
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return out.Commit()
}

// maxNPZEntry bounds one array's size (a hostile archive cannot make us
// allocate more).
const maxNPZEntry = 8 << 30

// ReadNPZ reads every .npy entry of an .npz archive, validating each
// header and that the data is exactly the size the header implies.
func ReadNPZ(path string) (map[string]Array, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("%s: not an .npz (zip) archive: %w", path, err)
	}
	defer zr.Close()
	return readNPZ(path, &zr.Reader)
}

func readNPZ(path string, zr *zip.Reader) (map[string]Array, error) {
	out := map[string]Array{}
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".npy") || strings.ContainsAny(f.Name, "/\\") {
			return nil, fmt.Errorf("%s: entry %q is not a top-level .npy array", path, f.Name)
		}
		name := strings.TrimSuffix(f.Name, ".npy")
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s: array %q appears twice", path, name)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, f.Name, err)
		}
		a, err := readArray(rc, name, int64(min(f.UncompressedSize64, maxNPZEntry)))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, f.Name, err)
		}
		out[name] = a
	}
	return out, nil
}

func readArray(r io.Reader, name string, limit int64) (Array, error) {
	h, err := tensor.ReadNPYHeader(r)
	if err != nil {
		return Array{}, err
	}
	if h.FortranOrder {
		return Array{}, fmt.Errorf("Fortran-order arrays are not supported")
	}
	size := h.DataSize()
	if size < 0 || size > limit {
		return Array{}, fmt.Errorf("shape %v needs %d bytes, more than the entry holds", h.Shape, size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return Array{}, fmt.Errorf("data is shorter than shape %v needs: %w", h.Shape, err)
	}
	if n, _ := io.Copy(io.Discard, r); n > 0 {
		return Array{}, fmt.Errorf("%d bytes after the data shape %v needs", n, h.Shape)
	}
	return Array{Name: name, Descr: h.Descr, Shape: slices.Clone(h.Shape), Data: data}, nil
}

// Ints returns an integer array's values (<i4 or <i8).
func (a Array) Ints() ([]int, error) {
	switch a.Descr {
	case "<i4":
		v := make([]int, len(a.Data)/4)
		for i := range v {
			v[i] = int(int32(binary.LittleEndian.Uint32(a.Data[4*i:])))
		}
		return v, nil
	case "<i8":
		v := make([]int, len(a.Data)/8)
		for i := range v {
			v[i] = int(int64(binary.LittleEndian.Uint64(a.Data[8*i:])))
		}
		return v, nil
	}
	return nil, fmt.Errorf("array %q has dtype %s, want an integer (<i4, <i8)", a.Name, a.Descr)
}

// Floats returns a float32 array's values.
func (a Array) Floats() ([]float32, error) {
	if a.Descr != "<f4" {
		return nil, fmt.Errorf("array %q has dtype %s, want <f4", a.Name, a.Descr)
	}
	v := make([]float32, len(a.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
	}
	return v, nil
}

func i32Array(name string, v []int, shape ...int) Array {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(x)))
	}
	return Array{Name: name, Descr: "<i4", Shape: shape, Data: b}
}

func i64Array(name string, v []int) Array {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(int64(x)))
	}
	return Array{Name: name, Descr: "<i8", Shape: []int{len(v)}, Data: b}
}

func f32Array(name string, v []float32, shape ...int) Array {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Array{Name: name, Descr: "<f4", Shape: shape, Data: b}
}
