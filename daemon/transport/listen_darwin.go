package transport

// maxSocketPath is sizeof(sun_path) on macOS (104) minus the terminating NUL.
const maxSocketPath = 103

// systemGroup reports whether members of gid may be trusted with a
// group-writable ancestor of the socket directory: wheel (0) and daemon
// (1), which holds the system's /private/var/run (root:daemon, 0775), the
// parent of the system socket's directory.
func systemGroup(gid uint32) bool { return gid == 0 || gid == 1 }
