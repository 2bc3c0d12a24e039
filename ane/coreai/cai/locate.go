package cai

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BridgeName is the file name of the Swift bridge dylib.
const BridgeName = "libCoreAIBridge.dylib"

// BridgeEnv names the environment variable that points at the bridge.
const BridgeEnv = "FORGE_BRIDGE"

// ErrBridgeNotFound is wrapped by FindBridge when no candidate exists.
var ErrBridgeNotFound = errors.New("coreai: no bridge library")

// BridgeCandidates lists where the bridge is looked for, in order:
// $FORGE_BRIDGE, beside the running binary (<bin>/../lib/forged, the pkg
// and Homebrew layouts), the Homebrew opt path, /usr/local/lib/forged,
// then the source tree's build directory (relative to the working
// directory, for developers).
func BridgeCandidates() []string {
	var out []string
	if p := os.Getenv(BridgeEnv); p != "" {
		out = append(out, p)
	}
	if exe, err := os.Executable(); err == nil {
		out = append(out, filepath.Join(filepath.Dir(exe), "..", "lib", "forged", BridgeName))
	}
	return append(out,
		"/opt/homebrew/opt/forged/lib/forged/"+BridgeName,
		"/usr/local/lib/forged/"+BridgeName,
		filepath.Join("build", BridgeName))
}

// FindBridge returns the first of BridgeCandidates that is a file, and the
// candidates it looked at.
func FindBridge() (path string, tried []string, err error) {
	return FindBridgeIn(BridgeCandidates())
}

// FindBridgeIn returns the first of candidates that is a file (not a
// directory); tried is every candidate looked at, in order. It does not
// open the library: OpenLibrary checks the ABI.
func FindBridgeIn(candidates []string) (path string, tried []string, err error) {
	for _, p := range candidates {
		tried = append(tried, p)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, tried, nil
		}
	}
	return "", tried, fmt.Errorf("%w: %s not found (looked in %s)", ErrBridgeNotFound, BridgeName, strings.Join(tried, ", "))
}
