// Command gentables writes ane/text/tokenizer/internal/hftables/tables.go: the character
// classes of the split pattern (\p{L}, \p{N}, \s) and the Unicode
// normalization data (canonical combining classes, canonical and
// compatibility decompositions, canonical compositions) exactly as Hugging
// Face tokenizers has them. It reads no Unicode Character Database: it asks
// the library itself, through scripts/hf-tokenizers/oracle.mjs, about every
// code point, so the tables are the library's whatever Unicode version it
// was built with (its normalizer's tables are older than its regex
// engine's, and both differ from Go's).
//
// usage (scripts/hf-reference tables runs this):
//
//	go run ./ane/text/tokenizer/internal/gentables -oracle scripts/hf-tokenizers/oracle.mjs -o ane/text/tokenizer/internal/hftables/tables.go
//
// What it asks, and how the answers become tables:
//   - classes: the matches of a Split pre-tokenizer with the regex \p{L}
//     (\p{N}, \s) over all code points.
//   - decompositions: NFD and NFKD of each code point alone.
//   - non-starters: a code point that NFD moves past U+0334 (combining
//     class 1), or that U+0345 (class 240) moves past, is a non-starter.
//     Two non-starters have the same class when NFD reorders them in
//     neither order; the classes are ordered by which one NFD moves. Each
//     class is then named by its canonical combining class number from Go's
//     tables (class numbers never change once assigned, so the numbers
//     agree wherever both have the character; the generator checks that the
//     members of a class and the order of the classes agree with Go).
//   - compositions: a code point that NFC leaves alone but NFD changes is a
//     primary composite; NFC composes its decomposition step by step, the
//     last step being (NFC of the decomposition without its last
//     character, that last character). Those pairs are exactly the ones the
//     canonical composition algorithm ever asks about.
//   - Hangul syllables are algorithmic (not tabled); the generator checks
//     the library does the same arithmetic, including that a syllable and
//     U+11A7 do not compose.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func main() {
	oraclePath := flag.String("oracle", "scripts/hf-tokenizers/oracle.mjs", "the node question-and-answer script")
	out := flag.String("o", "ane/text/tokenizer/internal/hftables/tables.go", "output Go file")
	flag.Parse()
	if err := run(*oraclePath, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gentables:", err)
		os.Exit(1)
	}
}

// oracle is the node process answering questions about the library.
type oracle struct {
	cmd *exec.Cmd
	w   *bufio.Writer
	r   *bufio.Reader
	n   int // requests asked
}

func startOracle(script string) (*oracle, error) {
	cmd := exec.Command("node", script)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &oracle{cmd: cmd, w: bufio.NewWriterSize(stdin, 1<<20), r: bufio.NewReaderSize(stdout, 1<<20)}, nil
}

func (o *oracle) call(req map[string]any, out any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	o.w.Write(data)
	o.w.WriteByte('\n')
	if err := o.w.Flush(); err != nil {
		return err
	}
	line, err := o.r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	o.n++
	var resp struct {
		Out   json.RawMessage `json:"out"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("oracle answer: %w", err)
	}
	if resp.Error != "" {
		return errors.New("oracle: " + resp.Error)
	}
	return json.Unmarshal(resp.Out, out)
}

const batch = 8192

// normalize returns the library's form of each text.
func (o *oracle) normalize(form string, texts []string) []string {
	out := make([]string, 0, len(texts))
	for i := 0; i < len(texts); i += batch {
		var part []string
		if err := o.call(map[string]any{"op": "normalize", "form": form, "texts": texts[i:min(i+batch, len(texts))]}, &part); err != nil {
			fatal(err)
		}
		if len(part) != min(batch, len(texts)-i) {
			fatal(fmt.Errorf("oracle answered %d of %d texts", len(part), min(batch, len(texts)-i)))
		}
		out = append(out, part...)
	}
	return out
}

// matches returns the matches of regex in each text.
func (o *oracle) matches(regex string, texts []string) [][]string {
	var out [][]string
	for i := 0; i < len(texts); i += 64 {
		var part [][]string
		if err := o.call(map[string]any{"op": "matches", "regex": regex, "texts": texts[i:min(i+64, len(texts))]}, &part); err != nil {
			fatal(err)
		}
		out = append(out, part...)
	}
	return out
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gentables:", err)
	os.Exit(1)
}

// scalars is every Unicode scalar value (surrogates cannot be asked about:
// the binding turns them into U+FFFD).
func scalars() []rune {
	var cps []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r < 0xD800 || r > 0xDFFF {
			cps = append(cps, r)
		}
	}
	return cps
}

const (
	sBase, lBase, vBase, tBase = 0xAC00, 0x1100, 0x1161, 0x11A7
	lCount, vCount, tCount     = 19, 21, 28
	sCount                     = lCount * vCount * tCount
)

func isHangulSyllable(r rune) bool { return r >= sBase && r < sBase+sCount }

func hangulDecompose(r rune) string {
	i := r - sBase
	l, v, t := lBase+i/(vCount*tCount), vBase+(i%(vCount*tCount))/tCount, tBase+i%tCount
	if t == tBase {
		return string([]rune{l, v})
	}
	return string([]rune{l, v, t})
}

type decomposition struct {
	r rune
	d string
}

type composition struct{ a, b, c rune }

type cccRange struct {
	lo, hi rune
	ccc    uint8
}

func run(oraclePath, outPath string) error {
	o, err := startOracle(oraclePath)
	if err != nil {
		return err
	}
	var version string
	if err := o.call(map[string]any{"op": "version"}, &version); err != nil {
		return err
	}
	cps := scalars()
	single := make([]string, len(cps))
	for i, r := range cps {
		single[i] = string(r)
	}
	fmt.Fprintf(os.Stderr, "gentables: tokenizers %s, %d code points\n", version, len(cps))

	// Character classes.
	classOf := func(regex string) []rune {
		var texts []string
		for i := 0; i < len(cps); i += 4096 {
			texts = append(texts, strings.Join(single[i:min(i+4096, len(cps))], ""))
		}
		var set []rune
		for _, ms := range o.matches(regex, texts) {
			for _, m := range ms {
				for _, r := range m {
					set = append(set, r)
				}
			}
		}
		slices.Sort(set)
		return slices.Compact(set)
	}
	letters, numbers, spaces := classOf(`\p{L}`), classOf(`\p{N}`), classOf(`\s`)
	fmt.Fprintf(os.Stderr, "gentables: %d letters, %d numbers, %d spaces\n", len(letters), len(numbers), len(spaces))
	for _, r := range spaces {
		if !unicode.Is(unicode.White_Space, r) {
			return fmt.Errorf("the library's \\s has %U, which is not White_Space", r)
		}
	}
	if err := checkASCIIFolding(o); err != nil {
		return err
	}

	// Decompositions.
	nfd := o.normalize("NFD", single)
	nfkd := o.normalize("NFKD", single)
	nfc := o.normalize("NFC", single)
	nfkc := o.normalize("NFKC", single)
	var canonical, compat []decomposition
	for i, r := range cps {
		if isHangulSyllable(r) {
			if nfd[i] != hangulDecompose(r) || nfkd[i] != nfd[i] || nfc[i] != single[i] || nfkc[i] != single[i] {
				return fmt.Errorf("Hangul syllable %U: the library's NFD is %+q, not the algorithm's %+q", r, nfd[i], hangulDecompose(r))
			}
			continue
		}
		if nfd[i] != single[i] {
			canonical = append(canonical, decomposition{r, nfd[i]})
		}
		if nfkd[i] != nfd[i] {
			compat = append(compat, decomposition{r, nfkd[i]})
		}
	}
	fmt.Fprintf(os.Stderr, "gentables: %d canonical and %d compatibility decompositions\n", len(canonical), len(compat))

	// Non-starters: NFD-stable code points only (a decomposable character
	// is never itself in a decomposed string).
	var stable []rune
	var probeA, probeB []string
	for i, r := range cps {
		if nfd[i] == single[i] {
			stable = append(stable, r)
			probeA = append(probeA, single[i]+"\u0334")
			probeB = append(probeB, "\u0345"+single[i])
		}
	}
	outA, outB := o.normalize("NFD", probeA), o.normalize("NFD", probeB)
	var nonStarters []rune
	for i, r := range stable {
		if outA[i] == "\u0334"+string(r) || outB[i] == string(r)+"\u0345" {
			nonStarters = append(nonStarters, r)
		} else if outA[i] != probeA[i] || outB[i] != probeB[i] {
			return fmt.Errorf("%U: unexpected NFD %+q / %+q", r, outA[i], outB[i])
		}
	}
	classes, err := combiningClasses(o, nonStarters)
	if err != nil {
		return err
	}
	ccc := map[rune]uint8{}
	for _, cl := range classes {
		for _, r := range cl.members {
			ccc[r] = cl.ccc
		}
	}
	fmt.Fprintf(os.Stderr, "gentables: %d non-starters in %d combining classes\n", len(nonStarters), len(classes))

	// Compositions.
	var composites []rune
	var decomposed [][]rune
	var prefixes []string
	for i, r := range cps {
		if isHangulSyllable(r) || nfc[i] != single[i] || nfd[i] == single[i] {
			continue
		}
		d := []rune(nfd[i])
		composites = append(composites, r)
		decomposed = append(decomposed, d)
		prefixes = append(prefixes, string(d[:len(d)-1]))
	}
	composedPrefixes := o.normalize("NFC", prefixes)
	var compositions []composition
	seen := map[[2]rune]rune{}
	for i, p := range composites {
		a := []rune(composedPrefixes[i])
		d := decomposed[i]
		if len(a) != 1 {
			return fmt.Errorf("%U: NFC of its decomposition minus the last character is %+q, not one character", p, composedPrefixes[i])
		}
		c := composition{a[0], d[len(d)-1], p}
		if prev, dup := seen[[2]rune{c.a, c.b}]; dup {
			return fmt.Errorf("%U and %U both compose from %U %U", prev, p, c.a, c.b)
		}
		seen[[2]rune{c.a, c.b}] = p
		compositions = append(compositions, c)
	}
	sort.Slice(compositions, func(i, j int) bool {
		if compositions[i].a != compositions[j].a {
			return compositions[i].a < compositions[j].a
		}
		return compositions[i].b < compositions[j].b
	})
	var pairTexts []string
	for _, c := range compositions {
		pairTexts = append(pairTexts, string([]rune{c.a, c.b}))
	}
	for i, got := range o.normalize("NFC", pairTexts) {
		if c := compositions[i]; got != string(c.c) {
			return fmt.Errorf("the library's NFC of %U %U is %+q, not %U", c.a, c.b, got, c.c)
		}
	}
	fmt.Fprintf(os.Stderr, "gentables: %d compositions\n", len(compositions))
	if err := checkHangulComposition(o); err != nil {
		return err
	}
	if err := checkASCII(canonical, compat, ccc, compositions); err != nil {
		return err
	}

	src := render(version, letters, numbers, spaces, cccRanges(ccc), canonical, compat, compositions)
	formatted, err := format.Source(src)
	if err != nil {
		return fmt.Errorf("gofmt of the generated file: %w", err)
	}
	if err := os.WriteFile(outPath, formatted, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gentables: wrote %s (%d bytes, %d questions)\n", outPath, len(formatted), o.n)
	return nil
}

type combiningClass struct {
	members []rune
	ccc     uint8
}

// combiningClasses groups the non-starters by how NFD orders them and names
// each group by Go's canonical combining class number.
func combiningClasses(o *oracle, nonStarters []rune) ([]combiningClass, error) {
	var classes []combiningClass
	for _, r := range nonStarters {
		var texts []string
		for _, cl := range classes {
			rep := cl.members[0]
			texts = append(texts, string([]rune{r, rep}), string([]rune{rep, r}))
		}
		got := o.normalize("NFD", texts)
		found := false
		for k := range classes {
			if got[2*k] == texts[2*k] && got[2*k+1] == texts[2*k+1] {
				classes[k].members = append(classes[k].members, r)
				found = true
				break
			}
		}
		if !found {
			classes = append(classes, combiningClass{members: []rune{r}})
		}
	}
	// Order: a before b when NFD puts a first whichever order they come in.
	var texts []string
	for _, a := range classes {
		for _, b := range classes {
			texts = append(texts, string([]rune{b.members[0], a.members[0]}))
		}
	}
	got := o.normalize("NFD", texts)
	n := len(classes)
	before := func(i, j int) bool { // NFD turns (j, i) into (i, j)
		return got[i*n+j] == string([]rune{classes[i].members[0], classes[j].members[0]}) && i != j
	}
	for i := range n {
		for j := range n {
			if i != j && before(i, j) == before(j, i) {
				return nil, fmt.Errorf("combining classes of %U and %U are not ordered one way", classes[i].members[0], classes[j].members[0])
			}
		}
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(x, y int) bool { return before(idx[x], idx[y]) })
	ordered := make([]combiningClass, n)
	prev := 0
	for k, i := range idx {
		cl := classes[i]
		var num uint8
		for _, r := range cl.members {
			c := norm.NFD.PropertiesString(string(r)).CCC()
			if c == 0 {
				return nil, fmt.Errorf("%U is a non-starter for the library but has combining class 0 in Go's tables", r)
			}
			if num != 0 && c != num {
				return nil, fmt.Errorf("%U (class %d in Go) sorts like %U (class %d)", r, c, cl.members[0], num)
			}
			num = c
		}
		if int(num) <= prev {
			return nil, fmt.Errorf("class %d sorts after class %d", num, prev)
		}
		prev = int(num)
		cl.ccc = num
		ordered[k] = cl
	}
	return ordered, nil
}

// checkASCIIFolding: (?i) in the split pattern (the contractions) folds
// ASCII letters exactly as Go's unicode.SimpleFold does, so the matcher can
// keep using it (the orbits of 'k' and 's' include U+212A and U+017F).
func checkASCIIFolding(o *oracle) error {
	cps := scalars()
	var all strings.Builder
	for _, r := range cps {
		all.WriteRune(r)
	}
	text := all.String()
	for c := 'a'; c <= 'z'; c++ {
		var got []rune
		for _, ms := range o.matches("(?i:"+string(c)+")", []string{text}) {
			for _, m := range ms {
				got = append(got, []rune(m)...)
			}
		}
		slices.Sort(got)
		want := []rune{c}
		for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
			want = append(want, f)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return fmt.Errorf("(?i:%c) matches %U in the library, %U under Go's simple folding", c, got, want)
		}
	}
	return nil
}

// checkHangulComposition: every L V pair and every LV syllable with every
// trailing jamo (and the ones around them) compose by the arithmetic of
// Unicode's Hangul algorithm with trailing jamo U+11A8 … U+11C2.
func checkHangulComposition(o *oracle) error {
	var texts, want []string
	for l := rune(lBase - 1); l <= lBase+lCount; l++ {
		for v := rune(vBase - 1); v <= vBase+vCount; v++ {
			texts = append(texts, string([]rune{l, v}))
			if l >= lBase && l < lBase+lCount && v >= vBase && v < vBase+vCount {
				want = append(want, string(sBase+((l-lBase)*vCount+(v-vBase))*tCount))
			} else {
				want = append(want, string([]rune{l, v}))
			}
		}
	}
	for s := rune(sBase); s < sBase+sCount; s += 97 {
		for t := rune(tBase - 1); t <= tBase+tCount; t++ {
			texts = append(texts, string([]rune{s, t}))
			if (s-sBase)%tCount == 0 && t > tBase && t < tBase+tCount {
				want = append(want, string(s+t-tBase))
			} else {
				want = append(want, string([]rune{s, t}))
			}
		}
	}
	got := o.normalize("NFC", texts)
	for i := range texts {
		if got[i] != want[i] {
			return fmt.Errorf("Hangul: the library's NFC of %+q is %+q, the algorithm's %+q", texts[i], got[i], want[i])
		}
	}
	return nil
}

// checkASCII: ASCII never decomposes, is never a non-starter and never the
// second character of a composition, so the normalizer passes it through
// without looking it up.
func checkASCII(canonical, compat []decomposition, ccc map[rune]uint8, compositions []composition) error {
	for _, d := range append(slices.Clone(canonical), compat...) {
		if d.r < utf8.RuneSelf {
			return fmt.Errorf("ASCII %U decomposes", d.r)
		}
	}
	for r := range ccc {
		if r < utf8.RuneSelf {
			return fmt.Errorf("ASCII %U is a non-starter", r)
		}
	}
	for _, c := range compositions {
		if c.b < utf8.RuneSelf {
			return fmt.Errorf("ASCII %U composes with what precedes it", c.b)
		}
	}
	return nil
}

func cccRanges(ccc map[rune]uint8) []cccRange {
	rs := make([]rune, 0, len(ccc))
	for r := range ccc {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	var out []cccRange
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].hi == r-1 && out[n-1].ccc == ccc[r] {
			out[n-1].hi = r
			continue
		}
		out = append(out, cccRange{r, r, ccc[r]})
	}
	return out
}

func render(version string, letters, numbers, spaces []rune, ccc []cccRange, canonical, compat []decomposition, compositions []composition) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `// Code generated by go run ./ane/text/tokenizer/internal/gentables (scripts/hf-reference tables); DO NOT EDIT.

// The tables below are Hugging Face tokenizers %s (npm "tokenizers", the
// Rust library's Node binding), asked about every code point: they are
// what the library does, not a Unicode version's data. See
// internal/gentables for how each answer becomes a table.

package hftables

import "unicode"

// Version is the library version the tables come from.
const Version = %q

`, version, version)
	writeTable(&b, "Letter", `\p{L} in the library's split regex (Oniguruma): `+strconv.Itoa(len(letters))+` code points`, letters)
	writeTable(&b, "Number", `\p{N} in the library's split regex: `+strconv.Itoa(len(numbers))+` code points`, numbers)
	writeTable(&b, "Space", `\s in the library's split regex: `+strconv.Itoa(len(spaces))+` code points`, spaces)

	fmt.Fprintf(&b, "// CCC lists the library's non-starters, by range: the canonical combining\n// class of every code point not listed is 0.\nvar CCC = [...]CCCRange{\n")
	for _, c := range ccc {
		fmt.Fprintf(&b, "\t{%#04x, %#04x, %d},\n", c.lo, c.hi, c.ccc)
	}
	b.WriteString("}\n\n")

	writeDecomps := func(name, doc string, ds []decomposition) {
		fmt.Fprintf(&b, "// %s\nvar %s = [...]Decomposition{\n", doc, name)
		for _, d := range ds {
			fmt.Fprintf(&b, "\t{%#04x, %s},\n", d.r, strconv.QuoteToASCII(d.d))
		}
		b.WriteString("}\n\n")
	}
	writeDecomps("Canonical", "Canonical is the library's NFD of each code point it changes (the full\n// canonical decomposition, in canonical order), Hangul syllables excepted.", canonical)
	writeDecomps("Compat", "Compat is the library's NFKD of each code point where it differs from\n// the NFD (the full compatibility decomposition).", compat)

	b.WriteString("// Compositions are the pairs canonical composition joins: first, second,\n// composite (sorted by first, then second). Hangul is algorithmic.\nvar Compositions = [...]Composition{\n")
	for _, c := range compositions {
		fmt.Fprintf(&b, "\t{%#04x, %#04x, %#04x},\n", c.a, c.b, c.c)
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// writeTable writes a *unicode.RangeTable of the code points (stride 1).
func writeTable(b *bytes.Buffer, name, doc string, cps []rune) {
	type rng struct{ lo, hi rune }
	var rs []rng
	for _, r := range cps {
		if n := len(rs); n > 0 && rs[n-1].hi == r-1 && r != 0x10000 { // R16 and R32 split at U+10000
			rs[n-1].hi = r
			continue
		}
		rs = append(rs, rng{r, r})
	}
	fmt.Fprintf(b, "// %s is %s.\nvar %s = &unicode.RangeTable{\n\tR16: []unicode.Range16{\n", name, doc, name)
	latin := 0
	for _, r := range rs {
		if r.hi <= 0xFFFF {
			fmt.Fprintf(b, "\t\t{%#04x, %#04x, 1},\n", r.lo, r.hi)
			if r.hi <= unicode.MaxLatin1 {
				latin++
			}
		}
	}
	b.WriteString("\t},\n\tR32: []unicode.Range32{\n")
	for _, r := range rs {
		if r.lo > 0xFFFF {
			fmt.Fprintf(b, "\t\t{%#x, %#x, 1},\n", r.lo, r.hi)
		}
	}
	fmt.Fprintf(b, "\t},\n\tLatinOffset: %d,\n}\n\n", latin)
}
