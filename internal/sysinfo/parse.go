package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ParseMeminfo reads MemTotal and MemAvailable (bytes) from /proc/meminfo.
func ParseMeminfo(data []byte) (total, available uint64, err error) {
	var haveTotal, haveAvail bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "MemTotal" && key != "MemAvailable") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("meminfo: %s: want \"<n> kB\", got %q", key, strings.TrimSpace(rest))
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || n > 1<<53 {
			return 0, 0, fmt.Errorf("meminfo: %s: bad number %q", key, f[0])
		}
		if key == "MemTotal" {
			total, haveTotal = n*1024, true
		} else {
			available, haveAvail = n*1024, true
		}
	}
	if !haveTotal || !haveAvail {
		return 0, 0, fmt.Errorf("meminfo: MemTotal or MemAvailable missing")
	}
	return total, available, nil
}

// CgroupPaths are this process's cgroup paths from /proc/self/cgroup.
type CgroupPaths struct {
	V2       string // the unified hierarchy ("0::/path"), "" if absent
	V1Memory string // the v1 memory controller's path, "" if absent
}

// ParseProcCgroup reads /proc/self/cgroup ("id:controllers:path" lines).
func ParseProcCgroup(data []byte) (CgroupPaths, error) {
	var p CgroupPaths
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			return CgroupPaths{}, fmt.Errorf("cgroup line %d: want \"id:controllers:/path\", got %q", i+1, line)
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			p.V2 = parts[2]
		case containsWord(parts[1], "memory"):
			p.V1Memory = parts[2]
		}
	}
	return p, nil
}

func containsWord(list, w string) bool {
	for _, s := range strings.Split(list, ",") {
		if s == w {
			return true
		}
	}
	return false
}

// v1Unlimited: cgroup v1 writes "no limit" as the largest page-aligned
// int64 (9223372036854771712); anything this large is no limit.
const v1Unlimited = 1 << 62

// ParseCgroupLimit reads a memory.max (v2: "max" or bytes) or
// memory.limit_in_bytes (v1: bytes) file; 0 means no limit.
func ParseCgroupLimit(data []byte) (uint64, error) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroup memory limit: want \"max\" or a byte count, got %q", s)
	}
	if n >= v1Unlimited {
		return 0, nil
	}
	return n, nil
}

// PSI thresholds for the pressure level (percent of the last 10 s in which
// some or all tasks stalled on memory). Warning: reclaim is slowing someone
// down; critical: everyone is stalled often enough that work is being lost.
const (
	psiWarnSome     = 10.0
	psiCriticalFull = 5.0
)

// ParsePSI reads /proc/pressure/memory and returns the level with the
// some/full avg10 values.
func ParsePSI(data []byte) (Pressure, error) {
	p := Pressure{Source: "/proc/pressure/memory"}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "some" && f[0] != "full") {
			return Pressure{}, fmt.Errorf("psi: want lines \"some|full avg10=… …\", got %q", line)
		}
		var avg10 float64
		found := false
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "avg10="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || x < 0 || x > 100 {
					return Pressure{}, fmt.Errorf("psi: %s avg10: want a percentage, got %q", f[0], v)
				}
				avg10, found = x, true
			}
		}
		if !found {
			return Pressure{}, fmt.Errorf("psi: %s line has no avg10", f[0])
		}
		if f[0] == "some" {
			p.SomeAvg10 = avg10
		} else {
			p.FullAvg10 = avg10
		}
		seen[f[0]] = true
	}
	if !seen["some"] {
		return Pressure{}, fmt.Errorf("psi: no \"some\" line")
	}
	switch {
	case p.FullAvg10 >= psiCriticalFull:
		p.Level = Critical
	case p.SomeAvg10 >= psiWarnSome:
		p.Level = Warning
	}
	return p, nil
}

// ParseOSRelease reads PRETTY_NAME (or NAME) and VERSION_ID from /etc/os-release.
func ParseOSRelease(data []byte) (name, version string) {
	vals := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok {
			vals[k] = strings.Trim(v, `"'`)
		}
	}
	name = vals["PRETTY_NAME"]
	if name == "" {
		name = vals["NAME"]
	}
	if name == "" {
		name = "Linux"
	}
	return name, vals["VERSION_ID"]
}

// DarwinPressureLevel maps the kern.memorystatus_vm_pressure_level sysctl
// (the DISPATCH_MEMORYPRESSURE_* flag values: 1 normal, 2 warning, 4
// critical) to a Level.
func DarwinPressureLevel(v uint32) (Level, error) {
	switch v {
	case 1:
		return Normal, nil
	case 2:
		return Warning, nil
	case 4:
		return Critical, nil
	}
	return Normal, fmt.Errorf("kern.memorystatus_vm_pressure_level: unknown value %d", v)
}

var appleChip = regexp.MustCompile(`^Apple M(\d+)\b`)

// NeuralEngineOf names the Neural Engine of a CPU brand string such as
// "Apple M6 Max"; generation 0 means the chip has none we can use.
func NeuralEngineOf(brand string) (generation int, desc string) {
	m := appleChip.FindStringSubmatch(strings.TrimSpace(brand))
	if m == nil {
		return 0, "none (not Apple silicon)"
	}
	gen, _ := strconv.Atoi(m[1])
	cores := "16-core"
	if strings.Contains(brand, "Ultra") {
		cores = "32-core" // two dies, two Neural Engines
	}
	return gen, fmt.Sprintf("Apple M%d-generation Neural Engine (%s)", gen, cores)
}
