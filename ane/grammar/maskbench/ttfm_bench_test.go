package maskbench

import (
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/grammar/jsonschema"
)

// BenchmarkTTFM is compile and first mask alone (no forced instances) over
// the first MASKBENCH_LIMIT schemas (all when unset), with the slowest
// schemas' split logged: the part of the run that TTFM measures, for
// profiling.
func BenchmarkTTFM(b *testing.B) {
	limit, _ := strconv.Atoi(os.Getenv("MASKBENCH_LIMIT"))
	cases, v, _ := load(b, limit)
	type one struct {
		name          string
		compile, mask time.Duration
	}
	for b.Loop() {
		var all []one
		mask := grammar.NewMask(v.Size())
		for _, c := range cases {
			t0 := time.Now()
			g, err := jsonschema.Compile(c.Schema, jsonschema.Options{})
			t1 := time.Now()
			if err != nil {
				continue
			}
			grammar.NewMatcher(g, v).Mask(mask)
			all = append(all, one{c.Name, t1.Sub(t0), time.Since(t1)})
		}
		sort.Slice(all, func(i, j int) bool { return all[i].compile+all[i].mask > all[j].compile+all[j].mask })
		for _, o := range all[:min(20, len(all))] {
			b.Logf("%-40s compile %8.2f ms  first mask %8.2f ms", o.name, float64(o.compile.Microseconds())/1e3, float64(o.mask.Microseconds())/1e3)
		}
	}
}
