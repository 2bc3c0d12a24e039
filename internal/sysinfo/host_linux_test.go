package sysinfo

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The real machine, checked against the kernel by a second route.
func TestHostMemoryMatchesSysinfo(t *testing.T) {
	m, err := Host().Memory()
	if err != nil {
		t.Fatal(err)
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	want := uint64(si.Totalram) * uint64(si.Unit)
	page := uint64(os.Getpagesize())
	if diff := int64(m.Total) - int64(want); diff < -int64(page) || diff > int64(page) {
		t.Fatalf("/proc/meminfo total %d vs sysinfo(2) %d: more than a page apart", m.Total, want)
	}
	if m.Available == 0 || m.Available > m.Total {
		t.Fatalf("available %d outside (0, %d]", m.Available, m.Total)
	}
	if m.CgroupLimit != 0 && m.Budget() != min(m.Total, m.CgroupLimit) {
		t.Fatalf("budget %d", m.Budget())
	}
	t.Logf("memory: total %d MiB, available %d MiB, cgroup limit %d MiB", m.Total>>20, m.Available>>20, m.CgroupLimit>>20)
}

func TestHostDiskMatchesStatfs(t *testing.T) {
	dir := t.TempDir()
	d, err := Host().Disk(dir + "/not/yet/created")
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if d.Total != st.Blocks*uint64(st.Bsize) {
		t.Fatalf("total %d vs statfs %d", d.Total, st.Blocks*uint64(st.Bsize))
	}
	// Free space moves as other processes write; allow 1 GiB of drift.
	want := st.Bavail * uint64(st.Bsize)
	if d.Free > want+1<<30 || d.Free+1<<30 < want {
		t.Fatalf("free %d vs statfs %d", d.Free, want)
	}
}

func TestHostPressureAndOS(t *testing.T) {
	p, err := Host().Pressure()
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile("/proc/pressure/memory"); err == nil {
		want, _ := ParsePSI(data)
		if p.Source != "/proc/pressure/memory" || (p.Level != want.Level && p.Level != want.Level+1 && p.Level+1 != want.Level) {
			t.Fatalf("pressure %+v vs file %+v", p, want)
		}
	}
	o, err := Host().OS()
	if err != nil || o.Kernel == "" || o.Name == "" {
		t.Fatalf("%+v %v", o, err)
	}
	c, err := Host().Chip()
	if err != nil || c.ANEGeneration != 0 || c.Brand == "" {
		t.Fatalf("Linux has no Neural Engine: %+v %v", c, err)
	}
}

func TestSmallestLimitWalksAncestors(t *testing.T) {
	root := t.TempDir()
	write := func(dir, content string) {
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		os.WriteFile(filepath.Join(root, dir, "memory.max"), []byte(content), 0o644)
	}
	write("/", "max\n")
	write("/a", "4294967296\n") // the parent binds: 4 GiB
	write("/a/b", "max\n")
	write("/a/b/c", "8589934592\n")
	if got := smallestLimit(root, "/a/b/c", "memory.max"); got != 4<<30 {
		t.Fatalf("limit %d, want the parent's 4 GiB", got)
	}
	if got := smallestLimit(root, "/x", "memory.max"); got != 0 {
		t.Fatalf("unlimited path gave %d", got)
	}
}
