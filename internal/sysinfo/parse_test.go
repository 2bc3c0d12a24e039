package sysinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseMeminfoFixture(t *testing.T) {
	total, avail, err := ParseMeminfo(fixture(t, "meminfo"))
	if err != nil {
		t.Fatal(err)
	}
	// testdata/meminfo: MemTotal 24683620 kB, MemAvailable 21503232 kB.
	if total != 24683620*1024 || avail != 21503232*1024 {
		t.Fatalf("total %d avail %d", total, avail)
	}
}

func TestParseMeminfoErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "MemTotal or MemAvailable missing",
		"MemTotal: 10 kB\n":                   "MemTotal or MemAvailable missing",
		"MemTotal: 10 MB\nMemAvailable: 1 kB": `MemTotal: want "<n> kB"`,
		"MemTotal: x kB\nMemAvailable: 1 kB":  `MemTotal: bad number "x"`,
	} {
		if _, _, err := ParseMeminfo([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMeminfo(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestParseProcCgroup(t *testing.T) {
	for _, tc := range []struct{ file, v2, v1 string }{
		{"proc_cgroup_v2", "/user.slice/user-1000.slice/session-2.scope", ""},
		{"proc_cgroup_v1", "/", "/process_api/0bedb7d06f3a7a846959e6294ad34954"},
		{"proc_cgroup_hybrid", "/", "/docker/abc"},
	} {
		p, err := ParseProcCgroup(fixture(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if p.V2 != tc.v2 || p.V1Memory != tc.v1 {
			t.Errorf("%s: got %+v, want v2 %q v1 %q", tc.file, p, tc.v2, tc.v1)
		}
	}
	if _, err := ParseProcCgroup([]byte("garbage")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("garbage accepted or error without line: %v", err)
	}
}

func TestParseCgroupLimit(t *testing.T) {
	for file, want := range map[string]uint64{
		"memory.max_unlimited":            0,
		"memory.max_8g":                   8 << 30,
		"memory.limit_in_bytes_unlimited": 0,
		"memory.limit_in_bytes_2g":        2 << 30,
	} {
		got, err := ParseCgroupLimit(fixture(t, file))
		if err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", file, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "lots", "1.5"} {
		if _, err := ParseCgroupLimit([]byte(bad)); err == nil || !strings.Contains(err.Error(), `want "max" or a byte count`) {
			t.Errorf("ParseCgroupLimit(%q) = %v", bad, err)
		}
	}
}

func TestParsePSI(t *testing.T) {
	for _, tc := range []struct {
		file       string
		level      Level
		some, full float64
	}{
		{"psi_calm", Normal, 0, 0},
		{"psi_warning", Warning, 12.5, 1.2},
		{"psi_critical", Critical, 61, 33.33},
		{"psi_some_only", Normal, 0, 0},
	} {
		p, err := ParsePSI(fixture(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if p.Level != tc.level || p.SomeAvg10 != tc.some || p.FullAvg10 != tc.full {
			t.Errorf("%s: got %+v", tc.file, p)
		}
	}
	for in, want := range map[string]string{
		"":               "want lines",
		"full avg10=1.0": `no "some" line`,
		"some avg60=1.0": "some line has no avg10",
		"some avg10=abc": "some avg10: want a percentage",
		"some avg10=150": "some avg10: want a percentage",
		"weird avg10=1":  "want lines",
	} {
		if _, err := ParsePSI([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePSI(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestDarwinPressureLevel(t *testing.T) {
	for v, want := range map[uint32]Level{1: Normal, 2: Warning, 4: Critical} {
		if got, err := DarwinPressureLevel(v); err != nil || got != want {
			t.Errorf("%d: %v %v", v, got, err)
		}
	}
	if _, err := DarwinPressureLevel(3); err == nil {
		t.Error("3 accepted")
	}
}

func TestNeuralEngineOf(t *testing.T) {
	for brand, gen := range map[string]int{"Apple M6 Max": 6, "Apple M1": 1, "Apple M2 Ultra": 2, "Apple M10 Pro": 10, "AMD EPYC": 0, "Intel(R) Core(TM) i9": 0, "Apple A17 Pro": 0} {
		g, desc := NeuralEngineOf(brand)
		if g != gen {
			t.Errorf("%q: generation %d, want %d (%s)", brand, g, gen, desc)
		}
	}
	if _, d := NeuralEngineOf("Apple M2 Ultra"); !strings.Contains(d, "32-core") {
		t.Errorf("Ultra: %s", d)
	}
}

func TestParseOSRelease(t *testing.T) {
	name, ver := ParseOSRelease(fixture(t, "os-release-debian"))
	if !strings.HasPrefix(name, "Debian GNU/Linux") || ver == "" {
		t.Errorf("got %q %q", name, ver)
	}
	if n, _ := ParseOSRelease(nil); n != "Linux" {
		t.Errorf("empty file: %q", n)
	}
}

func TestBudget(t *testing.T) {
	if b := (Memory{Total: 32 << 30}).Budget(); b != 32<<30 {
		t.Error(b)
	}
	if b := (Memory{Total: 32 << 30, CgroupLimit: 8 << 30}).Budget(); b != 8<<30 {
		t.Error(b)
	}
	if b := (Memory{Total: 4 << 30, CgroupLimit: 8 << 30}).Budget(); b != 4<<30 {
		t.Error(b)
	}
}

func FuzzParsers(f *testing.F) {
	for _, s := range []string{"some avg10=1.00 avg60=0 avg300=0 total=1\nfull avg10=0.5", "MemTotal: 1 kB\nMemAvailable: 1 kB", "0::/a\n4:memory:/b", "max", "123"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if p, err := ParsePSI(data); err == nil && (p.Level < Normal || p.Level > Critical) {
			t.Fatalf("level %d", p.Level)
		}
		if total, avail, err := ParseMeminfo(data); err == nil && (total > 1<<63 || avail > 1<<63) {
			t.Fatal("overflow")
		}
		ParseProcCgroup(data)
		ParseCgroupLimit(data)
		ParseOSRelease(data)
	})
}
