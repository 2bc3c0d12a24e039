package ref

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/forgedaemon/forged/ane/format/tensor"
)

// File is one tensor file with its metadata (a safetensors file).
type File interface {
	Source
	Metadata() map[string]string
}

// Files opens tensor files of a directory by name; absent files give an
// error satisfying errors.Is(err, fs.ErrNotExist).
type Files interface {
	Open(name string) (File, error)
}

// safeFile adapts a memory-mapped safetensors file to File.
type safeFile struct{ f *tensor.SafeFile }

func (s safeFile) Metadata() map[string]string { return s.f.Metadata() }

func (s safeFile) Tensor(name string) (Tensor, bool) {
	info, ok := s.f.Tensor(name)
	if !ok {
		return Tensor{}, false
	}
	b, err := s.f.Bytes(name)
	if err != nil {
		return Tensor{}, false
	}
	return Tensor{DType: string(info.DType), Shape: info.Shape, Data: b}, true
}

// DirFiles opens safetensors files from a directory, keeping them mapped
// until Close (weights point into the mappings).
type DirFiles struct {
	Dir    string
	opened []io.Closer
}

// Open implements Files.
func (d *DirFiles) Open(name string) (File, error) {
	f, err := tensor.OpenSafetensors(filepath.Join(d.Dir, name))
	if err != nil {
		return nil, err
	}
	d.opened = append(d.opened, f)
	return safeFile{f}, nil
}

// Close unmaps every opened file.
func (d *DirFiles) Close() error {
	var errs []error
	for _, c := range d.opened {
		errs = append(errs, c.Close())
	}
	d.opened = nil
	return errors.Join(errs...)
}

// shardedSource is a checkpoint split over shards listed by
// model.safetensors.index.json (or one model.safetensors).
type shardedSource struct {
	byName map[string]File
}

func (s *shardedSource) Tensor(name string) (Tensor, bool) {
	f, ok := s.byName[name]
	if !ok {
		return Tensor{}, false
	}
	return f.Tensor(name)
}

// openCheckpoint maps every shard of the checkpoint in dir.
func openCheckpoint(dir string, files *DirFiles) (Source, error) {
	indexPath := filepath.Join(dir, "model.safetensors.index.json")
	data, err := os.ReadFile(indexPath)
	if errors.Is(err, os.ErrNotExist) {
		f, err := files.Open("model.safetensors")
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: neither model.safetensors.index.json nor model.safetensors: %w", dir, err)
		}
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	weightMap, err := parseIndex(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", indexPath, err)
	}
	src := &shardedSource{byName: make(map[string]File, len(weightMap))}
	shards := map[string]File{}
	for name, shard := range weightMap {
		f, ok := shards[shard]
		if !ok {
			if f, err = files.Open(shard); err != nil {
				return nil, fmt.Errorf("checkpoint shard listed for %q: %w", name, err)
			}
			shards[shard] = f
		}
		if _, ok := f.Tensor(name); !ok {
			return nil, fmt.Errorf("%s: index lists tensor %q in %s, which does not hold it", indexPath, name, shard)
		}
		src.byName[name] = f
	}
	return src, nil
}
