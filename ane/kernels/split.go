package kernels

import (
	"runtime"

	"github.com/forgedaemon/forged/internal/parallel"
)

// minSplitWork is how many indices a load-time pass over a matrix must
// cover before splitRows hands it to more than one goroutine: a large
// export's matrices take milliseconds each, a test's tiny ones less than
// starting a goroutine.
const minSplitWork = 1 << 20

// splitRows calls fn on contiguous ranges [lo, hi) covering [0, n), at once
// on up to GOMAXPROCS goroutines when the n rows hold at least
// minSplitWork elements (perRow each), and returns when every call has.
// The ranges split the rows as evenly as they can; fn must write only what
// its rows own.
func splitRows(n, perRow int, fn func(lo, hi int)) {
	parts := min(runtime.GOMAXPROCS(0), n, max(1, n*perRow/minSplitWork))
	if parts <= 1 {
		fn(0, n)
		return
	}
	parallel.Each(parts, func(p int) { fn(p*n/parts, (p+1)*n/parts) })
}
