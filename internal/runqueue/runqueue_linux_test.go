package runqueue

import (
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCountCPUList(t *testing.T) {
	for in, want := range map[string]int{
		"0": 1, "0-1": 2, "0-3,8,10-11": 7, "2-2": 1,
		"": 0, "1-0": 0, "a": 0, "0-": 0, "-1": 0, "0,,1": 0,
		"0-9223372036854775807": 0, "2000000": 0,
	} {
		if got := countCPUList(in); got != want {
			t.Errorf("countCPUList(%q) = %d, want %d", in, got, want)
		}
	}
}

// The count includes the reading thread, and a second thread spinning
// takes one CPU more; reading allocates nothing (the pool reads it from
// Run, which must not).
func TestSpareCPUsCountsRunningThreads(t *testing.T) {
	n := runtime.NumCPU()
	spare, ok := SpareCPUs()
	if !ok {
		t.Skip("/proc/loadavg does not count this process's CPUs here (a container's affinity mask)")
	}
	if spare > n-1 {
		t.Fatalf("spare %d with the reader running on one of %d CPUs, want at most %d", spare, n, n-1)
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps for a second running thread")
	}
	var spinning, stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		spinning.Store(true)
		for !stop.Load() {
		}
	}()
	for !spinning.Load() {
		runtime.Gosched()
	}
	spare, _ = SpareCPUs()
	stop.Store(true)
	<-done
	if spare > n-2 {
		t.Fatalf("spare %d with two threads running on %d CPUs, want at most %d", spare, n, n-2)
	}
	if a := testing.AllocsPerRun(100, func() { SpareCPUs() }); a != 0 {
		t.Fatalf("SpareCPUs allocates %.1f times a call", a)
	}
}

func TestParseLoadavg(t *testing.T) {
	good := map[string]int{
		"0.13 1.12 1.60 1/103 16222\n": 1,
		"12.50 9.01 7.77 37/2048 99\n": 37,
		"0.00 0.00 0.00 0/1 1":         0,
	}
	for in, want := range good {
		if got, err := parseLoadavg([]byte(in)); err != nil || got != want {
			t.Errorf("parseLoadavg(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                           "fewer than four fields",
		"0.13 1.12 1.60":             "fewer than four fields",
		"0.13 1.12 1.60 103 16222":   "not running/total",
		"0.13 1.12 1.60 /103 16222":  "not a count",
		"0.13 1.12 1.60 -1/103 1":    "not a count",
		"0.13 1.12 1.60 1x/103 1":    "not a count",
		"0.1 0.1 0.1 9999999999/1 1": "not a count",
	}
	for in, want := range bad {
		if _, err := parseLoadavg([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseLoadavg(%q): error %v, want one saying %q", in, err, want)
		}
	}
}

// What a read of the count costs (the pool reads it at most every 10 ms).
func BenchmarkSpareCPUs(b *testing.B) {
	if _, ok := SpareCPUs(); !ok {
		b.Skip("no count here")
	}
	for b.Loop() {
		SpareCPUs()
	}
}

// parseLoadavg agrees with strings.Fields and strconv.Atoi wherever the
// input is plain ASCII separated by spaces, tabs and newlines (the
// kernel's form), and never panics on anything.
func FuzzParseLoadavg(f *testing.F) {
	for _, seed := range []string{"0.13 1.12 1.60 1/103 16222\n", "1 2 3 4", "a b c /1", "0 0 0 -0/1 1", "0 0 0 99999999999/1 1", "\t1\t2\t3\t7/8\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseLoadavg(b)
		if err == nil && got < 0 {
			t.Fatalf("parseLoadavg(%q) = %d", b, got)
		}
		if !utf8.Valid(b) || strings.ContainsFunc(string(b), func(r rune) bool { return unicode.IsSpace(r) && !strings.ContainsRune(" \t\n", r) }) {
			return // strings.Fields splits on these too; the kernel writes none
		}
		want, wantErr := -1, true
		if fields := strings.Fields(string(b)); len(fields) >= 4 {
			num, _, ok := strings.Cut(fields[3], "/")
			digits := num != "" && strings.Trim(num, "0123456789") == ""
			if n, err := strconv.Atoi(num); ok && digits && err == nil && len(num) <= 9 {
				want, wantErr = n, false
			}
		}
		if (err != nil) != wantErr || (err == nil && got != want) {
			t.Fatalf("parseLoadavg(%q) = %d, %v; the reference parse gives %d (error %v)", b, got, err, want, wantErr)
		}
	})
}

// countCPUList never panics, never goes negative, and counts a list
// joined from two valid ones as their sum.
func FuzzCountCPUList(f *testing.F) {
	for _, seed := range [][2]string{{"0-3", "8"}, {"0", "1-1"}, {"5-2", "0"}, {"0-1048576", "0"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		na, nb, nab := countCPUList(a), countCPUList(b), countCPUList(a+","+b)
		if na < 0 || nb < 0 || nab < 0 {
			t.Fatalf("negative counts: %q %d, %q %d, joined %d", a, na, b, nb, nab)
		}
		if na > 0 && nb > 0 && nab != na+nb {
			t.Fatalf("countCPUList(%q) = %d, %q %d, joined %d", a, na, b, nb, nab)
		}
	})
}
