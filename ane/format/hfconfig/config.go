// Package hfconfig reads, validates and writes the Hugging Face config.json
// of the Qwen3.5/3.8 target model (qwen3_5) and of its DFlash2 drafter.
//
// Real configs nest the text model under "text_config" and keep RoPE
// settings under "rope_parameters"; older or hand-written ones put the same
// fields at the top level. Both are accepted; a nested value wins.
package hfconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/forgedaemon/forged/internal/strictjson"
)

// MaxConfigSize bounds a config.json; real ones are a few kilobytes.
const MaxConfigSize = 1 << 20

// FieldError names the config field that is wrong and why.
type FieldError struct {
	Field string // JSON name, dotted for nested fields (e.g. "dflash_config.block_size")
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// fieldErrors is several FieldErrors reported together on one line, so a
// CLI can print every problem of a config at once.
type fieldErrors []error

func (es fieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

func (es fieldErrors) Unwrap() []error { return es }

// joinErrs returns nil, the single error, or all of them on one line.
func joinErrs(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return fieldErrors(errs)
}

// IsDrafterConfig reports whether a config.json describes a DFlash drafter
// (it has a top-level dflash_config) rather than a target model.
func IsDrafterConfig(data []byte) bool {
	var probe struct {
		DFlash json.RawMessage `json:"dflash_config"`
	}
	return json.Unmarshal(data, &probe) == nil && probe.DFlash != nil
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// readConfigFile reads path, or path/config.json when path is a directory.
func readConfigFile(path string) (string, []byte, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return path, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return path, nil, err
	}
	return path, data, nil
}

// decodeStrict unmarshals one JSON object into v (strictjson: duplicate
// keys and trailing data refused), turning the errors into ones that name
// the field and say what type it must be.
func decodeStrict(data []byte, v any) error {
	err := strictjson.Decode(data, v, strictjson.Options{MaxSize: MaxConfigSize})
	var te *json.UnmarshalTypeError
	var de *strictjson.DuplicateKeyError
	var tl *strictjson.TooLargeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tl):
		return fmt.Errorf("config is larger than %d bytes", MaxConfigSize)
	case errors.As(err, &de):
		return fieldErr(de.Path(), "key given twice (a reader would keep only one of the values)")
	case errors.As(err, &te) && te.Field != "":
		return fieldErr(te.Field, "must be %s, found a JSON %s", goTypeName(te.Type.String()), te.Value)
	}
	return fmt.Errorf("not a valid JSON object: %w", err)
}

func goTypeName(t string) string {
	switch t {
	case "int", "*int":
		return "an integer"
	case "float64", "*float64":
		return "a number"
	case "string", "*string":
		return "a string"
	case "bool", "*bool":
		return "true or false"
	case "[]string":
		return "a list of strings"
	case "[]int":
		return "a list of integers"
	}
	return t
}

// eosIDs accepts eos_token_id as a single integer or a list of integers.
type eosIDs []int

func (e *eosIDs) UnmarshalJSON(b []byte) error {
	var one int
	if err := json.Unmarshal(b, &one); err == nil {
		*e = eosIDs{one}
		return nil
	}
	var many []int
	if err := json.Unmarshal(b, &many); err != nil {
		return fieldErr("eos_token_id", "must be an integer or a list of integers, found %s", truncate(b))
	}
	*e = many
	return nil
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// ropeParams is the "rope_parameters" object (HF transformers ≥ 5).
type ropeParams struct {
	RopeType            string   `json:"rope_type,omitempty"`
	RopeTheta           *float64 `json:"rope_theta,omitempty"`
	PartialRotaryFactor *float64 `json:"partial_rotary_factor,omitempty"`
	MRopeInterleaved    *bool    `json:"mrope_interleaved,omitempty"`
	MRopeSection        []int    `json:"mrope_section,omitempty"`
}

// first returns the first non-nil value.
func first[T any](vs ...*T) *T {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// require dereferences a required integer field.
func require(name string, v *int, errs *[]error) int {
	if v == nil {
		*errs = append(*errs, fieldErr(name, "missing"))
		return 0
	}
	return *v
}

func positive(name string, v int) error {
	if v <= 0 {
		return fieldErr(name, "must be positive, got %d", v)
	}
	return nil
}

// loadWith reads a config file (path is the file or its directory) and
// parses it, prefixing a parse error with the file it came from.
func loadWith[T any](path string, parse func([]byte) (T, error)) (T, error) {
	file, data, err := readConfigFile(path)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(data)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", file, err)
	}
	return v, nil
}
