package runqueue

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// reader is /proc/loadavg, opened once, and whether its count covers
// exactly the CPUs this process may run on. In a container the file is
// usually the host's (every CPU's queue) while the affinity mask holds a
// few: there the count says nothing about our CPUs.
var reader = sync.OnceValues(func() (*os.File, bool) {
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil || countCPUList(strings.TrimSpace(string(online))) != runtime.NumCPU() {
		return nil, false
	}
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return nil, false
	}
	return f, true
})

// SpareCPUs returns the machine's CPUs minus its runnable threads, the
// caller's included: positive, CPUs with nothing to run; negative,
// threads waiting for a CPU (ok false where the kernel's count does not
// cover this process's CPUs). It allocates nothing: one pread of a file
// the kernel writes on demand, about 0.6 µs (BenchmarkSpareCPUs).
func SpareCPUs() (spare int, ok bool) {
	f, ok := reader()
	if !ok {
		return 0, false
	}
	var buf [128]byte
	n, err := unix.Pread(int(f.Fd()), buf[:], 0)
	if err != nil || n <= 0 {
		return 0, false
	}
	running, err := parseLoadavg(buf[:n])
	if err != nil {
		return 0, false
	}
	return runtime.NumCPU() - running, true
}

// maxCPU bounds a CPU number in a list: far above any kernel's NR_CPUS,
// far below what a count could overflow on.
const maxCPU = 1 << 20

// countCPUList counts the CPUs of a kernel CPU list ("0-3,8,10-11"); 0
// for anything else.
func countCPUList(s string) int {
	total := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > maxCPU {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > maxCPU {
				return 0
			}
		}
		total += b - a + 1
	}
	return total
}

// parseLoadavg returns the number of runnable threads in the contents of
// /proc/loadavg: the numerator of its fourth field ("1/103"), the
// scheduling entities runnable at the moment the file is read (proc(5),
// /proc/loadavg), the reading thread included.
func parseLoadavg(b []byte) (int, error) {
	f := nthField(b, 3)
	if f == nil {
		return 0, errors.New("loadavg: fewer than four fields")
	}
	num, _, ok := bytes.Cut(f, []byte("/"))
	if !ok {
		return 0, errors.New("loadavg: fourth field is not running/total")
	}
	if len(num) == 0 || len(num) > 9 {
		return 0, errors.New("loadavg: running count is not a count")
	}
	n := 0
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, errors.New("loadavg: running count is not a count")
		}
		n = 10*n + int(c-'0')
	}
	return n, nil
}

// nthField is b's field n (from 0) of those split by white space, or nil;
// by hand, not bytes.Fields, so that SpareCPUs allocates nothing.
func nthField(b []byte, n int) []byte {
	const space = " \t\n"
	for {
		b = bytes.TrimLeft(b, space)
		if len(b) == 0 {
			return nil
		}
		end := bytes.IndexAny(b, space)
		if end < 0 {
			end = len(b)
		}
		if n == 0 {
			return b[:end]
		}
		n--
		b = b[end:]
	}
}
