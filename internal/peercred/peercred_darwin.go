package peercred

import (
	"syscall"
	"unsafe"
)

// From <sys/un.h> and <sys/ucred.h> (xnu bsd/sys/un.h, bsd/sys/ucred.h):
// the standard library's syscall package has neither, and the client may
// link nothing else (internal/deps).
const (
	solLocal      = 0 // SOL_LOCAL
	localPeerCred = 1 // LOCAL_PEERCRED: struct xucred
	localPeerPID  = 2 // LOCAL_PEERPID: pid_t
	xucredVersion = 0 // XUCRED_VERSION
)

// xucred is struct xucred: cr_version, cr_uid, cr_ngroups (a short), then
// NGROUPS (16) gids; 76 bytes.
type xucred struct {
	Version uint32
	UID     uint32
	NGroups int16
	Groups  [16]uint32
}

// read reads LOCAL_PEERCRED (uid and groups; the first group is the
// effective gid) and LOCAL_PEERPID.
func read(fd int) (Peer, error) {
	var x xucred
	n := uint32(unsafe.Sizeof(x))
	if _, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), solLocal, localPeerCred,
		uintptr(unsafe.Pointer(&x)), uintptr(unsafe.Pointer(&n)), 0); e != 0 {
		return Peer{}, e
	}
	if x.Version != xucredVersion {
		return Peer{}, syscall.EINVAL
	}
	p := Peer{UID: x.UID}
	for i := range min(int(x.NGroups), len(x.Groups)) {
		p.Groups = append(p.Groups, x.Groups[i])
	}
	if len(p.Groups) > 0 {
		p.GID = p.Groups[0]
	}
	if pid, err := syscall.GetsockoptInt(fd, solLocal, localPeerPID); err == nil {
		p.PID = int32(pid)
	}
	return p, nil
}
