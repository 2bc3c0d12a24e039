package transport

import "golang.org/x/sys/unix"

// peerCredentials reads LOCAL_PEERCRED (uid and groups; the first group is
// the effective gid) and LOCAL_PEERPID.
func peerCredentials(fd int) (Peer, error) {
	x, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return Peer{}, err
	}
	p := Peer{UID: x.Uid}
	n := min(int(x.Ngroups), len(x.Groups))
	for i := range n {
		p.Groups = append(p.Groups, x.Groups[i])
	}
	if n > 0 {
		p.GID = x.Groups[0]
	}
	if pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID); err == nil {
		p.PID = int32(pid)
	}
	return p, nil
}

// maxSocketPath is sizeof(sun_path) on macOS (104) minus the terminating NUL.
const maxSocketPath = 103
