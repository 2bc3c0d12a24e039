// Package paths is the one place forged's default locations are decided:
// the socket, the config file, the data directory (bundle store), the log
// directory and the Core AI compile cache, for the system service and for a
// user, on macOS (launchd) and Linux (systemd). Everything is spelled
// "forged".
//
// Darwin and Linux compute a platform's layout from an Env, whatever the
// running OS (so `forged install --print --target systemd` on a Mac shows
// Linux paths); Default is the running platform's (paths_darwin.go,
// paths_linux.go, paths_other.go). The package imports only the standard
// library: the client links it.
package paths

import (
	"fmt"
	"os"
	"path/filepath"
)

// Name is the one spelling of forged's directories.
const Name = "forged"

// SocketFile is the socket's file name inside its directory.
const SocketFile = Name + ".sock"

// SystemSocket is the system service's socket on every platform
// (/var/run is /run on Linux, where systemd's RuntimeDirectory= makes it).
const SystemSocket = "/var/run/" + Name + "/" + SocketFile

// Layout is where one installation keeps its files.
type Layout struct {
	Socket string // the Unix socket apps connect to
	Config string // the config file
	Data   string // the data directory: bundle store (blobs, snapshots, state)
	Logs   string // the log directory; "" where the service manager keeps logs (journald)
}

// Env is what a layout depends on.
type Env struct {
	System  bool   // the system service (root), not a user's agent
	Home    string // the user's home directory
	UID     int    // the user's id, for a private socket directory
	TempDir string // os.TempDir()
	// Getenv reads XDG_* variables; nil reads none.
	Getenv func(string) string
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Current is the Env of this process: root gets the system layout.
func Current() Env {
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	return Env{System: os.Geteuid() == 0, Home: home, UID: os.Getuid(), TempDir: os.TempDir(), Getenv: os.Getenv}
}

// Darwin is the macOS layout: everything of a user under
// ~/Library/Application Support/forged (the store in its data/
// subdirectory, so purging the data never deletes the config), logs under
// ~/Library/Logs/forged; the system service's under /Library.
func Darwin(e Env) Layout {
	if e.System {
		app := filepath.Join("/Library", "Application Support", Name)
		return Layout{
			Socket: SystemSocket,
			Config: filepath.Join(app, "config.json"),
			Data:   filepath.Join(app, "data"),
			Logs:   filepath.Join("/Library", "Logs", Name),
		}
	}
	home := e.Home
	if home == "" {
		home = filepath.Join(e.TempDir, fmt.Sprintf("%s-%d", Name, e.UID))
	}
	app := filepath.Join(home, "Library", "Application Support", Name)
	return Layout{
		Socket: filepath.Join(app, SocketFile),
		Config: filepath.Join(app, "config.json"),
		Data:   filepath.Join(app, "data"),
		Logs:   filepath.Join(home, "Library", "Logs", Name),
	}
}

// Linux is the Linux layout: the XDG base directories for a user
// ($XDG_RUNTIME_DIR, $XDG_CONFIG_HOME, $XDG_DATA_HOME), /etc, /var/lib and
// /run for the system service; logs go to the journal.
func Linux(e Env) Layout {
	if e.System {
		return Layout{
			Socket: SystemSocket,
			Config: filepath.Join("/etc", Name, "config.json"),
			Data:   filepath.Join("/var/lib", Name),
		}
	}
	private := filepath.Join(e.TempDir, fmt.Sprintf("%s-%d", Name, e.UID))
	// xdg is $key/forged, else ~/<under>/forged, else (no home) a
	// directory of the private one.
	xdg := func(key, under, homeless string) string {
		if d := e.getenv(key); d != "" {
			return filepath.Join(d, Name)
		}
		if e.Home == "" {
			return filepath.Join(private, homeless)
		}
		return filepath.Join(e.Home, under, Name)
	}
	l := Layout{
		Config: filepath.Join(xdg("XDG_CONFIG_HOME", ".config", "config"), "config.json"),
		Data:   xdg("XDG_DATA_HOME", filepath.Join(".local", "share"), "data"),
		Socket: filepath.Join(private, SocketFile),
	}
	if d := e.getenv("XDG_RUNTIME_DIR"); d != "" {
		l.Socket = filepath.Join(d, Name, SocketFile)
	}
	return l
}

// Default is this process's layout on the running platform.
func Default() Layout { return platform(Current()) }

// Socket is where this process's daemon listens by default: the system
// socket for root, the user's otherwise (apps look it up with SocketLookup).
func Socket() string { return Default().Socket }

// SocketEnv names the environment variable that tells apps where forged
// listens, before any default.
const SocketEnv = "FORGE_SOCKET"

// SocketLookup is where an app looks for forged, in order: $FORGE_SOCKET
// alone when it is set; otherwise the user's own daemon (the LaunchAgent or
// systemd user unit) first, then the system daemon. Root looks only at the
// system socket (a user's daemon is not root's to find).
func SocketLookup(e Env) []string {
	if s := e.getenv(SocketEnv); s != "" {
		return []string{s}
	}
	if e.System {
		return []string{SystemSocket}
	}
	return []string{platform(e).Socket, SystemSocket}
}

// HTTPSocketFile is the file name of the HTTP API's Unix socket, which
// sits beside the msgpack socket (same directory, same permission rules).
const HTTPSocketFile = Name + "-http.sock"

// HTTPSocketFor is the HTTP API's socket beside the msgpack socket at socket.
func HTTPSocketFor(socket string) string { return filepath.Join(filepath.Dir(socket), HTTPSocketFile) }

// Config is the default config file, of the system service or of the
// current user's agent.
func Config(system bool) string {
	e := Current()
	e.System = system
	return platform(e).Config
}

// DataDir is the default data directory.
func DataDir() string { return Default().Data }

// CoreAICache is where Core AI keeps the specializations it compiles for
// an unbundled executable (Core AI's choice, not forged's):
// ~/Library/Caches/coreai-cache; "" without a home directory.
func CoreAICache() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "Library", "Caches", "coreai-cache")
}
