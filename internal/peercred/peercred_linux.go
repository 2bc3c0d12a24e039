package peercred

import "syscall"

// read reads SO_PEERCRED: uid, gid and pid at connect (or listen) time.
func read(fd int) (Peer, error) {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return Peer{}, err
	}
	return Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid}, nil
}
