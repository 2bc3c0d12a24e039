// Package version holds the build identity stamped in by the linker.
//
//	go build -ldflags "-X github.com/forgedaemon/forged/internal/version.Version=v0.1.0 \
//	  -X github.com/forgedaemon/forged/internal/version.Commit=$(git rev-parse HEAD) \
//	  -X github.com/forgedaemon/forged/internal/version.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X; the defaults say the binary was not built by the release scripts.
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

// Info is the build identity of a binary, as printed by `version --json`.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"go"`
	Platform  string `json:"platform"`
}

// Get returns the build identity, falling back to the VCS stamp Go embeds
// when the linker flags were not given.
func Get() Info {
	info := Info{Version: Version, Commit: Commit, Date: Date, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && info.Commit == "":
				info.Commit = s.Value
			case s.Key == "vcs.time" && info.Date == "":
				info.Date = s.Value
			}
		}
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	if info.Date == "" {
		info.Date = "unknown"
	}
	return info
}

// String is the one-line form: "forged dev (commit abc, built …, go1.26 linux/amd64)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s %s)", i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
}
