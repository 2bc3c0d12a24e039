package standin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Attach creates one purego callback per process however often it runs,
// on the same library, the same file under another name or a second
// build; a library without the stand-in symbols is refused by name.
func TestAttachMakesOneCallback(t *testing.T) {
	first, err := Build(t.TempDir())
	if errors.Is(err, ErrNoCompiler) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	second, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(t.TempDir(), "alias.so")
	if err := os.Link(second, alias); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{first, first, second, alias, second} {
		if err := Attach(p); err != nil {
			t.Fatal(err)
		}
	}
	if n := Callbacks(); n != 1 {
		t.Fatalf("%d callbacks made, want 1", n)
	}
	for _, p := range []string{"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6"} {
		if _, err := os.Stat(p); err == nil {
			err := Attach(p)
			if err == nil || err.Error() != "standin: "+p+" is not the stand-in bridge (it does not export tb_set_compute)" {
				t.Fatalf("Attach(libm): %v", err)
			}
			return
		}
	}
}

// Shared builds once per process: the same library every time.
func TestSharedBuildsOnce(t *testing.T) {
	a, err := Shared()
	if errors.Is(err, ErrNoCompiler) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(a)) })
	b, err := Shared()
	if st, serr := os.Stat(a); err != nil || b != a || serr != nil || st.Size() == 0 {
		t.Fatalf("Shared: %s then %s (%v, %v)", a, b, err, serr)
	}
}
