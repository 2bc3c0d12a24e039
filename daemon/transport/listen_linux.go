package transport

// maxSocketPath is sizeof(sun_path) on Linux minus the terminating NUL.
const maxSocketPath = 107

// systemGroup reports whether members of gid may be trusted with a
// group-writable ancestor of the socket directory: on Linux only root's.
func systemGroup(gid uint32) bool { return gid == 0 }
