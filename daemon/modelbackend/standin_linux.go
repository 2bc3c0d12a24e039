package modelbackend

import "github.com/forgedaemon/forged/ane/coreai/standin"

// attachStandIn points the bridge library's compute at the CPU: on Linux
// the only bridge that exists is the stand-in (ane/coreai/standin), whose
// chunk functions refchunk computes, so Core AI serving is tested here
// down to the cai_* C ABI. A library that is not the stand-in is refused
// with an error naming it.
func attachStandIn(path string) error { return standin.Attach(path) }
