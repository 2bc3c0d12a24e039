// Package maskbench runs the MaskBench method (JSONSchemaBench,
// github.com/guidance-ai/jsonschemabench) over the grammar engine: for each
// schema, compile it and take the first mask (time to first mask, TTFM),
// then force every test instance's tokens through the mask, serialized
// compactly and with two-space indentation, timing each mask (time by
// mask, TBM). A schema passes when it compiles, every valid instance is
// accepted token by token ending in an accepting state, and every invalid
// one is rejected.
package maskbench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/grammar/jsonschema"
)

// Case is one line of the data set.
type Case struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Tests  []struct {
		Valid       bool            `json:"valid"`
		Data        json.RawMessage `json:"data"`
		Description string          `json:"description"`
	} `json:"tests"`
}

// Read parses a JSON-lines data set; limit > 0 keeps the first limit cases.
func Read(r io.Reader, limit int) ([]Case, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<28)
	var out []Case
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var c Case
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if len(c.Schema) == 0 {
			return nil, fmt.Errorf("line %d: no \"schema\"", line)
		}
		out = append(out, c)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, sc.Err()
}

// Percentiles summarise a distribution.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P75  float64 `json:"p75"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

// Report is the MaskBench table.
type Report struct {
	Schemas            int            `json:"schemas"`
	Passing            int            `json:"passing"`
	CompileErrors      map[string]int `json:"compile_errors"`      // by keyword or limit
	ValidationErrors   int            `json:"validation_errors"`   // valid instances rejected
	InvalidationErrors int            `json:"invalidation_errors"` // invalid instances accepted
	Masks              int            `json:"masks"`
	TBM                Percentiles    `json:"tbm_us"`
	TTFM               Percentiles    `json:"ttfm_ms"`
	// TTFM's two parts: compiling, and the first mask.
	TTFMCompile Percentiles `json:"ttfm_compile_ms"`
	TTFMMask    Percentiles `json:"ttfm_first_mask_ms"`
	// Slowest: the schemas with the longest TTFM, slowest first (as many
	// as Options.Slowest asks for).
	Slowest []Timing `json:"slowest,omitempty"`
	// Invalidated names the schemas with an invalidation error (a bug).
	Invalidated []string `json:"invalidated,omitempty"`
	// Disagreements counts tokens where the mask and Accept disagreed (a bug).
	Disagreements int `json:"disagreements,omitempty"`
}

// Timing is one schema's TTFM, split.
type Timing struct {
	Name      string  `json:"name"`
	CompileMS float64 `json:"compile_ms"`
	MaskMS    float64 `json:"first_mask_ms"`
}

// Encoder turns text into token ids.
type Encoder func(string) []int

// Run benchmarks cases single-threaded, listing the slowest schemas.
func Run(cases []Case, v *grammar.Vocab, encode Encoder, opt jsonschema.Options, slowest int) (*Report, error) {
	rep := &Report{CompileErrors: map[string]int{}}
	var tbm, ttfm, compile, first []float64
	var timings []Timing
	mask := grammar.NewMask(v.Size())
	for _, c := range cases {
		rep.Schemas++
		t0 := time.Now()
		g, err := jsonschema.Compile(c.Schema, opt)
		if err != nil {
			rep.CompileErrors[errorKey(err)]++
			continue
		}
		t1 := time.Now()
		m := grammar.NewMatcher(g, v)
		m.Mask(mask)
		t2 := time.Now()
		ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
		ttfm = append(ttfm, ms(t2.Sub(t0)))
		compile = append(compile, ms(t1.Sub(t0)))
		first = append(first, ms(t2.Sub(t1)))
		timings = append(timings, Timing{c.Name, ms(t1.Sub(t0)), ms(t2.Sub(t1))})
		pass := true
		invalidated := false
		for _, tc := range c.Tests {
			data, err := jsonschema.Decode(tc.Data)
			if err != nil {
				return nil, fmt.Errorf("%s: test %q: %w", c.Name, tc.Description, err)
			}
			for _, text := range [][]byte{data.Compact(), data.Indent()} {
				ok, dis := force(m, mask, encode(string(text)), &tbm)
				rep.Disagreements += dis
				switch {
				case tc.Valid && !ok:
					rep.ValidationErrors++
					pass = false
				case !tc.Valid && ok:
					rep.InvalidationErrors++
					pass = false
					invalidated = true
				}
			}
		}
		if invalidated {
			rep.Invalidated = append(rep.Invalidated, c.Name)
		}
		if err := m.Err(); err != nil {
			// A limit hit at mask time: the schema compiled but its
			// automaton grew past the limit while the instances ran.
			rep.CompileErrors["mask "+errorKey(err)]++
			pass = false
		}
		if pass {
			rep.Passing++
		}
	}
	rep.Masks = len(tbm)
	rep.TBM = percentiles(tbm)
	rep.TTFM = percentiles(ttfm)
	rep.TTFMCompile = percentiles(compile)
	rep.TTFMMask = percentiles(first)
	sort.SliceStable(timings, func(i, j int) bool {
		return timings[i].CompileMS+timings[i].MaskMS > timings[j].CompileMS+timings[j].MaskMS
	})
	rep.Slowest = timings[:min(slowest, len(timings))]
	return rep, nil
}

// force runs ids through m, timing each mask; ok reports that every token
// was allowed and the end is accepting.
func force(m *grammar.Matcher, mask grammar.Mask, ids []int, tbm *[]float64) (ok bool, disagreements int) {
	m.Reset()
	for _, id := range ids {
		t0 := time.Now()
		m.Mask(mask)
		*tbm = append(*tbm, float64(time.Since(t0).Nanoseconds())/1e3)
		allowed := mask.Has(id)
		err := m.Accept(id)
		if allowed != (err == nil) {
			disagreements++
		}
		if err != nil || !allowed {
			return false, disagreements
		}
	}
	return m.Accepting(), disagreements
}

func errorKey(err error) string {
	var ce *jsonschema.Error
	if errors.As(err, &ce) {
		if ce.Keyword == "" {
			return "(schema)"
		}
		return ce.Keyword
	}
	var le *grammar.LimitError
	if errors.As(err, &le) {
		return "limit:" + le.Limit
	}
	return "(grammar)"
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	at := func(q float64) float64 {
		i := int(q * float64(len(s)-1))
		return s[i]
	}
	return Percentiles{P50: at(0.5), P75: at(0.75), P99: at(0.99), P999: at(0.999)}
}

// Keys lists the compile-error keys, most frequent first.
func (r *Report) Keys() []string {
	keys := make([]string, 0, len(r.CompileErrors))
	for k := range r.CompileErrors {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := r.CompileErrors[keys[i]], r.CompileErrors[keys[j]]
		return a > b || a == b && keys[i] < keys[j]
	})
	return keys
}
