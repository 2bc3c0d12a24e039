package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Line-oriented JSON tools for scripts and tests (forgectl tokenize /
// detokenize --jsonl). Output line N answers input line N; a bad line is
// answered with {"line": N, "error": "…"}, reported, and the rest of the
// input is still processed, so nothing else is lost. Blank lines are skipped.

// LinesError reports the input lines that could not be processed.
type LinesError struct {
	Bad   int   // number of bad lines
	First error // the first one's error (names its line)
}

func (e *LinesError) Error() string {
	if e.Bad == 1 {
		return e.First.Error()
	}
	return fmt.Sprintf("%d bad input lines; first: %v", e.Bad, e.First)
}

func (e *LinesError) Unwrap() error { return e.First }

// EncodeLines reads {"text": …} lines and writes {"ids": […]} lines.
func (t *Tokenizer) EncodeLines(r io.Reader, w io.Writer) error {
	return eachLine(r, w, func(line []byte) (any, error) {
		var in struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(line, &in); err != nil {
			return nil, fmt.Errorf("want a JSON object {\"text\": string}: %w", err)
		}
		if in.Text == nil {
			return nil, errors.New(`missing "text"`)
		}
		return struct {
			IDs []int `json:"ids"`
		}{nonNil(t.Encode(*in.Text))}, nil
	})
}

// DecodeLines reads {"ids": […]} lines and writes {"text": …} lines. Unlike
// Decode, an id outside the vocabulary is an error here.
func (t *Tokenizer) DecodeLines(r io.Reader, w io.Writer) error {
	return eachLine(r, w, func(line []byte) (any, error) {
		var in struct {
			IDs *[]int `json:"ids"`
		}
		if err := json.Unmarshal(line, &in); err != nil {
			return nil, fmt.Errorf("want a JSON object {\"ids\": [integers]}: %w", err)
		}
		if in.IDs == nil {
			return nil, errors.New(`missing "ids"`)
		}
		if err := t.CheckIDs(*in.IDs); err != nil {
			return nil, err
		}
		return struct {
			Text string `json:"text"`
		}{t.Decode(*in.IDs)}, nil
	})
}

// CheckIDs returns an error naming the first id that is not a token.
func (t *Tokenizer) CheckIDs(ids []int) error {
	for i, id := range ids {
		if _, ok := t.TokenString(id); !ok {
			return fmt.Errorf("ids[%d]: %d is not a token id (vocabulary size %d)", i, id, t.VocabSize())
		}
	}
	return nil
}

// ParseIDs reads token ids written as a JSON array ("[1, 2]") or separated
// by spaces and/or commas ("1 2", "1,2").
func ParseIDs(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var ids []int
		if err := json.Unmarshal([]byte(s), &ids); err != nil {
			return nil, fmt.Errorf("ids: %w", err)
		}
		return nonNil(ids), nil
	}
	ids := []int{}
	for i, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		id, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("ids: item %d (%q) is not an integer", i+1, f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

func eachLine(r io.Reader, w io.Writer, handle func([]byte) (any, error)) error {
	br := bufio.NewReaderSize(r, 1<<16)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var bad *LinesError
	for n := 1; ; n++ {
		line, readErr := br.ReadBytes('\n')
		if readErr != nil && readErr != io.EOF {
			bw.Flush()
			return fmt.Errorf("line %d: %w", n, readErr)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			out, err := handle(trimmed)
			if err != nil {
				err = fmt.Errorf("line %d: %w", n, err)
				if bad == nil {
					bad = &LinesError{First: err}
				}
				bad.Bad++
				out = struct {
					Line  int    `json:"line"`
					Error string `json:"error"`
				}{n, err.Error()}
			}
			if err := enc.Encode(out); err != nil {
				return err
			}
		}
		if readErr == io.EOF {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if bad != nil {
		return bad
	}
	return nil
}
