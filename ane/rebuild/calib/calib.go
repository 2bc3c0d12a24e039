// Package calib loads calibration token rows from .npy arrays and mixes
// several sources the way the published quantizer's CAL_MIX does
// ("rows.npy:16,other.npy:16"). Every id is checked against the
// vocabulary before any work starts.
package calib

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane/format/tensor"
)

// Source is one calibration array and how many rows to take from it
// (0: all).
type Source struct {
	Path string
	Rows int
}

// ParseSpec parses "FILE[:N],FILE[:N],…".
func ParseSpec(spec string) ([]Source, error) {
	var out []Source
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("--calib %q: empty entry", spec)
		}
		s := Source{Path: part}
		if i := strings.LastIndexByte(part, ':'); i >= 0 {
			n, err := strconv.Atoi(part[i+1:])
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("--calib entry %q: row count %q is not a positive integer", part, part[i+1:])
			}
			s.Path, s.Rows = part[:i], n
		}
		out = append(out, s)
	}
	return out, nil
}

// Set is the calibration rows, all of one length.
type Set struct {
	Rows [][]int
	Seq  int
	// Hash identifies the rows (SHA-256 of their int32 ids) for the
	// resume checkpoint and reports.
	Hash string
}

// Load reads the sources. A 2-D array (rows, seq) gives its rows; a 1-D
// array of ids is cut into rows of seq tokens (seq must be > 0 then). With
// seq > 0, 2-D rows longer than seq are truncated and shorter ones are an
// error. Ids must lie in [0, vocab).
func Load(sources []Source, seq, vocab int) (*Set, error) {
	if len(sources) == 0 {
		return nil, fmt.Errorf("calibration: no sources")
	}
	set := &Set{Seq: seq}
	for _, src := range sources {
		// Every source gives rows of the first source's length.
		rows, err := loadOne(src, set.Seq, vocab)
		if err != nil {
			return nil, err
		}
		if set.Seq == 0 {
			set.Seq = len(rows[0])
		}
		set.Rows = append(set.Rows, rows...)
	}
	h := sha256.New()
	var b [4]byte
	for _, r := range set.Rows {
		for _, id := range r {
			binary.LittleEndian.PutUint32(b[:], uint32(id))
			h.Write(b[:])
		}
	}
	set.Hash = hex.EncodeToString(h.Sum(nil))
	return set, nil
}

func loadOne(src Source, seq, vocab int) ([][]int, error) {
	f, err := tensor.OpenNPY(src.Path)
	if err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	defer f.Close()
	h := f.Header()
	size := map[string]int{"<i4": 4, "<i8": 8, "<u4": 4, "|u1": 1}[h.Descr]
	if size == 0 {
		return nil, fmt.Errorf("calibration %s: dtype %s is not an integer token array (<i4, <i8, <u4)", src.Path, h.Descr)
	}
	if h.FortranOrder {
		return nil, fmt.Errorf("calibration %s: Fortran-order arrays are not supported", src.Path)
	}
	data := f.Data()
	var ids []int64
	switch size {
	case 1:
		for _, b := range data {
			ids = append(ids, int64(b))
		}
	case 4:
		for i := 0; i+4 <= len(data); i += 4 {
			v := binary.LittleEndian.Uint32(data[i:])
			if h.Descr == "<i4" {
				ids = append(ids, int64(int32(v)))
			} else {
				ids = append(ids, int64(v))
			}
		}
	case 8:
		for i := 0; i+8 <= len(data); i += 8 {
			ids = append(ids, int64(binary.LittleEndian.Uint64(data[i:])))
		}
	}
	var width int
	switch len(h.Shape) {
	case 1:
		if seq <= 0 {
			return nil, fmt.Errorf("calibration %s: a 1-D id array needs a row length (--seq)", src.Path)
		}
		width = seq
	case 2:
		width = h.Shape[1]
		if seq > 0 && width < seq {
			return nil, fmt.Errorf("calibration %s: rows of %d tokens are shorter than --seq %d", src.Path, width, seq)
		}
	default:
		return nil, fmt.Errorf("calibration %s: shape %v is not (rows, seq) or (ids,)", src.Path, h.Shape)
	}
	if width <= 0 {
		return nil, fmt.Errorf("calibration %s: empty rows", src.Path)
	}
	use := width
	if seq > 0 {
		use = seq
	}
	avail := len(ids) / width
	n := avail
	if src.Rows > 0 {
		if src.Rows > avail {
			return nil, fmt.Errorf("calibration %s: %d rows requested, the array has %d", src.Path, src.Rows, avail)
		}
		n = src.Rows
	}
	if n == 0 {
		return nil, fmt.Errorf("calibration %s: no complete row of %d tokens", src.Path, width)
	}
	rows := make([][]int, n)
	for r := range rows {
		rows[r] = make([]int, use)
		for c := 0; c < use; c++ {
			id := ids[r*width+c]
			if id < 0 || id >= int64(vocab) {
				return nil, fmt.Errorf("calibration %s: row %d, position %d: token id %d is out of range [0, %d)", src.Path, r, c, id, vocab)
			}
			rows[r][c] = int(id)
		}
	}
	return rows, nil
}

// WriteRows writes token rows as an int32 (rows, seq) .npy, the layout Load
// reads (for tests and tools that make calibration sets).
func WriteRows(path string, rows [][]int) error {
	if len(rows) == 0 {
		return fmt.Errorf("%s: no rows", path)
	}
	seq := len(rows[0])
	data := make([]byte, 0, 4*seq*len(rows))
	for i, r := range rows {
		if len(r) != seq {
			return fmt.Errorf("%s: row %d has %d tokens, row 0 has %d", path, i, len(r), seq)
		}
		for _, id := range r {
			data = binary.LittleEndian.AppendUint32(data, uint32(int32(id)))
		}
	}
	return tensor.WriteNPY(path, "<i4", []int{len(rows), seq}, data)
}
