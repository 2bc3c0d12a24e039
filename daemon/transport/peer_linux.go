package transport

import "golang.org/x/sys/unix"

// peerCredentials reads SO_PEERCRED: uid, gid and pid at connect time.
func peerCredentials(fd int) (Peer, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Peer{}, err
	}
	return Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid}, nil
}

// maxSocketPath is sizeof(sun_path) on Linux minus the terminating NUL.
const maxSocketPath = 107
