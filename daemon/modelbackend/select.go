package modelbackend

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/client/wire"
)

// Auto is the backend setting that chooses by platform and snapshot.
const Auto = "auto"

// Contents is what a snapshot carries that a backend can serve.
type Contents struct {
	CoreAI bool // coreai/manifest.json: the Core AI runtime
	Export bool // export/small.safetensors: the quantized layers for the CPU
}

// SnapshotContents looks at a snapshot directory.
func SnapshotContents(dir string) Contents {
	return Contents{
		CoreAI: fileExists(filepath.Join(dir, bundle.ComponentCoreAI, bundle.ManifestFile)),
		Export: fileExists(filepath.Join(dir, "export", ref.SmallFile)),
	}
}

// Bridge is the outcome of looking for the Core AI bridge library.
type Bridge struct {
	Path    string   // the library found ("" when none was)
	Tried   []string // where it was looked for
	Release string   // its self-description, when it loaded
	Err     error    // nil: it loads with this build's ABI version
}

// OK reports whether the bridge can be used.
func (b Bridge) OK() bool { return b.Err == nil && b.Path != "" }

// ProbeBridge finds the bridge (path, else cai.FindBridge's candidates)
// and opens it, which checks its ABI version.
func ProbeBridge(path string) Bridge {
	var b Bridge
	if path != "" {
		b.Path, b.Tried = path, []string{path}
		if _, err := os.Stat(path); err != nil {
			b.Path, b.Err = "", fmt.Errorf("%w: %v", cai.ErrBridgeNotFound, err)
			return b
		}
	} else {
		b.Path, b.Tried, b.Err = cai.FindBridge()
		if b.Err != nil {
			return b
		}
	}
	if err := attachStandIn(b.Path); err != nil {
		b.Err = err
		return b
	}
	lib, err := cai.OpenLibrary(b.Path)
	if err != nil {
		b.Err = err
		return b
	}
	b.Release = lib.Release()
	return b
}

// Choice is the backend chosen for a snapshot, and why.
type Choice struct {
	Backend string // wire.BackendCoreAI or wire.BackendRef
	Why     string
}

// UnavailableError is why no backend can serve a snapshot here: what is
// missing, and the fix.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return e.Reason }

// Choose picks the backend for a snapshot with have on platform goos, given
// the bridge probe: want is Auto ("" too), wire.BackendCoreAI or
// wire.BackendRef. Auto serves with Core AI on darwin when the bridge
// loads and the snapshot carries the Core AI runtime, else with the
// reference engine when it carries export/; a forced choice must be met
// as asked. The error is an *UnavailableError naming what is missing and
// the fix.
func Choose(want, goos string, br Bridge, have Contents) (Choice, error) {
	switch want {
	case "", Auto:
		return chooseAuto(goos, br, have)
	case wire.BackendCoreAI:
		switch {
		case !have.CoreAI:
			return Choice{}, unavailable("backend coreai: the snapshot has no Core AI runtime (coreai/%s): this bundle cannot be served through Core AI; set backend auto", bundle.ManifestFile)
		case !br.OK():
			return Choice{}, unavailable("backend coreai: %s", bridgeProblem(goos, br))
		}
		return Choice{wire.BackendCoreAI, "forced by config (backend coreai); bridge " + br.Path}, nil
	case wire.BackendRef:
		if !have.Export {
			return Choice{}, unavailable("backend ref: the snapshot has no export/ (the quantized layers the CPU engine reads): pull with --include-export, or set backend auto")
		}
		return Choice{wire.BackendRef, "forced by config (backend ref)"}, nil
	}
	return Choice{}, unavailable("backend %q: want %s, %s or %s", want, Auto, wire.BackendCoreAI, wire.BackendRef)
}

func chooseAuto(goos string, br Bridge, have Contents) (Choice, error) {
	if have.CoreAI && goos == "darwin" && br.OK() {
		return Choice{wire.BackendCoreAI, "auto: the snapshot carries the Core AI runtime and the bridge at " + br.Path + " loads"}, nil
	}
	var notCoreAI string
	switch {
	case !have.CoreAI:
		notCoreAI = "the snapshot has no Core AI runtime"
	case goos != "darwin":
		notCoreAI = "Core AI needs macOS (this is " + goos + ")"
	default:
		notCoreAI = bridgeProblem(goos, br)
	}
	if have.Export {
		return Choice{wire.BackendRef, "auto: " + notCoreAI + "; the snapshot carries export/, served by the reference engine on the CPU"}, nil
	}
	if !have.CoreAI {
		return Choice{}, unavailable("the snapshot carries neither the Core AI runtime (coreai/%s) nor export/: nothing here can serve it; pull it again", bundle.ManifestFile)
	}
	if goos != "darwin" {
		return Choice{}, unavailable("this bundle carries only Core AI packages; the Core AI bridge is not available on %s: pull with --include-export to serve it on the CPU", goos)
	}
	return Choice{}, unavailable("this bundle carries only Core AI packages and %s; or pull with --include-export to serve it on the CPU", bridgeProblem(goos, br))
}

// bridgeProblem says why the bridge cannot be used, with the fix.
func bridgeProblem(goos string, br Bridge) string {
	if br.Path == "" || errors.Is(br.Err, cai.ErrBridgeNotFound) {
		where := strings.Join(br.Tried, ", ")
		if goos != "darwin" {
			return fmt.Sprintf("no Core AI bridge was found (looked in %s); on %s only the stand-in bridge (ane/coreai/standin) runs: point %s at it", where, goos, cai.BridgeEnv)
		}
		return fmt.Sprintf("the Core AI bridge %s was not found (looked in %s): build and install it (packaging/bridge/build.sh; docs/COREAI.md says where it goes) or set %s", cai.BridgeName, where, cai.BridgeEnv)
	}
	return fmt.Sprintf("the Core AI bridge cannot be used: %v: install the bridge built with this forged (packaging/bridge/build.sh; docs/COREAI.md says where it goes)", br.Err)
}

func unavailable(format string, args ...any) error {
	return &UnavailableError{Reason: fmt.Sprintf(format, args...)}
}

// WantsExport reports whether pulls should take export/ for backend (the
// config key: auto, coreai or ref) on goos: the reference engine reads it,
// so everywhere but macOS under auto, and whenever ref is forced; a Mac
// serves the Core AI packages and never reads the gigabytes of export/.
func WantsExport(backend, goos string) bool {
	switch backend {
	case wire.BackendRef:
		return true
	case wire.BackendCoreAI:
		return false
	}
	return goos != "darwin"
}
