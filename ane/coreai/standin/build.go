package standin

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

//go:embed csrc/bridge.c
var bridgeSource []byte

// ErrNoCompiler is returned by Build when no C compiler is on PATH.
var ErrNoCompiler = errors.New("standin: no C compiler")

// LibraryName is the file Build writes into its directory.
func LibraryName() string {
	if runtime.GOOS == "darwin" {
		return "libcoreai-standin.dylib"
	}
	return "libcoreai-standin.so"
}

// Build compiles the stand-in bridge (csrc/bridge.c, embedded) with
// `$CC -O1 -shared -fPIC` (CC defaults to cc) into dir and returns the
// library's path. This is not cgo: the result is loaded with purego.
func Build(dir string) (string, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	ccPath, err := exec.LookPath(cc)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not on PATH; install one (Debian/Ubuntu: apt-get install gcc; macOS: xcode-select --install) or set CC", ErrNoCompiler, cc)
	}
	src := filepath.Join(dir, "bridge.c")
	if err := os.WriteFile(src, bridgeSource, 0o644); err != nil {
		return "", err
	}
	lib := filepath.Join(dir, LibraryName())
	out, err := exec.Command(ccPath, "-O1", "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("standin: %s bridge.c: %v\n%s", cc, err, out)
	}
	return lib, nil
}

var (
	sharedOnce sync.Once
	sharedPath string
	sharedErr  error
)

// Shared builds the bridge once per process into a new directory under
// os.TempDir (left for the OS to clean; the library is a few tens of KB)
// and returns its path, or the error of that one build.
func Shared() (string, error) {
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "coreai-standin-")
		if err != nil {
			sharedErr = err
			return
		}
		if sharedPath, sharedErr = Build(dir); sharedErr != nil {
			os.RemoveAll(dir)
		}
	})
	return sharedPath, sharedErr
}
