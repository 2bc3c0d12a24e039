package tokenizer

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestEncodeAndDecodeLines(t *testing.T) {
	tok := loadQwen(t)
	cases := loadEncodings(t)[:40]
	var in strings.Builder
	for _, c := range cases {
		line, _ := json.Marshal(map[string]string{"text": c.Text})
		in.Write(line)
		in.WriteString("\n")
	}
	var out strings.Builder
	if err := tok.EncodeLines(strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("%d output lines for %d inputs", len(lines), len(cases))
	}
	var idsIn strings.Builder
	for i, l := range lines {
		var got struct{ IDs []int }
		if err := json.Unmarshal([]byte(l), &got); err != nil || !slices.Equal(got.IDs, cases[i].IDs) {
			t.Fatalf("line %d: %s (err %v), want ids %v", i+1, l, err, cases[i].IDs)
		}
		idsIn.WriteString(l + "\n")
	}
	out.Reset()
	if err := tok.DecodeLines(strings.NewReader(idsIn.String()), &out); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var got struct{ Text string }
		if err := json.Unmarshal([]byte(l), &got); err != nil || got.Text != cases[i].Decoded {
			t.Fatalf("decode line %d: %s, want %q", i+1, l, cases[i].Decoded)
		}
	}
}

// A bad line is answered in place and reported; the others still come out.
func TestBadLinesAreReportedAndNothingElseLost(t *testing.T) {
	tok := loadQwen(t)
	in := `{"text":"hello world"}` + "\n" + `{"text": 5}` + "\n\n" + `not json` + "\n" + `{"txt":"x"}` + "\n" + `{"text":"a"}`
	var out strings.Builder
	err := tok.EncodeLines(strings.NewReader(in), &out)
	var le *LinesError
	if !errors.As(err, &le) || le.Bad != 3 || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v; want 3 bad lines, first line 2", err)
	}
	want := []string{
		`{"ids":[14990,1879]}`,
		`"line":2`,
		`"line":4`,
		`{"line":5,"error":"line 5: missing \"text\""}`,
		`{"ids":[64]}`,
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("output %q: want %d lines", out.String(), len(want))
	}
	for i := range want {
		if !strings.Contains(lines[i], want[i]) {
			t.Errorf("output line %d = %s, want it to contain %s", i+1, lines[i], want[i])
		}
	}

	out.Reset()
	err = tok.DecodeLines(strings.NewReader(`{"ids":[14990]}`+"\n"+`{"ids":[1, 9999999]}`+"\n"+`{"ids":[1.5]}`+"\n"), &out)
	if !errors.As(err, &le) || le.Bad != 2 || !strings.Contains(err.Error(), "line 2: ids[1]: 9999999 is not a token id") {
		t.Fatalf("decode err = %v", err)
	}
	if !strings.HasPrefix(out.String(), `{"text":"hello"}`+"\n") || strings.Count(out.String(), "\n") != 3 {
		t.Errorf("decode output %q", out.String())
	}
}

func TestParseIDs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		err  string
	}{
		{"1 2 3", []int{1, 2, 3}, ""},
		{"1,2, 3\n", []int{1, 2, 3}, ""},
		{"[4, 5]", []int{4, 5}, ""},
		{"", []int{}, ""},
		{"[]", []int{}, ""},
		{"1 x 3", nil, `item 2 ("x")`},
		{"[1, 2", nil, "ids:"},
	} {
		got, err := ParseIDs(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseIDs(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseIDs(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// FuzzLines: arbitrary input never panics, and every non-blank input line
// gets exactly one output line (an answer or an error), in order.
func FuzzLines(f *testing.F) {
	tok := flagTokenizer(f)
	f.Add([]byte(`{"text":"a<s>b"}` + "\n" + `{"ids":[97,300]}` + "\n\nnot json\n"))
	f.Add([]byte(`{"ids":[1,2,-3]}` + "\r\n" + `[1, 2]` + "\n" + `{"text":null}`))
	f.Add([]byte("1, 2 3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		want := 0
		for _, l := range strings.Split(string(data), "\n") {
			if strings.TrimSpace(l) != "" {
				want++
			}
		}
		for _, run := range []func(*strings.Builder) error{
			func(w *strings.Builder) error { return tok.EncodeLines(strings.NewReader(string(data)), w) },
			func(w *strings.Builder) error { return tok.DecodeLines(strings.NewReader(string(data)), w) },
		} {
			var out strings.Builder
			err := run(&out)
			if got := strings.Count(out.String(), "\n"); got != want {
				t.Fatalf("%d output lines for %d input lines (err %v)", got, want, err)
			}
			if err != nil && !strings.Contains(out.String(), `"error"`) {
				t.Fatalf("error %v but no error line in the output", err)
			}
		}
		if ids, err := ParseIDs(string(data)); err == nil && ids == nil {
			t.Fatal("ParseIDs returned nil without an error")
		}
	})
}
