// Package runqueue says whether the machine has CPUs to spare right now,
// as the kernel counts its runnable threads. The worker pool asks it
// whether another process keeps the cores busy: then sharing a product
// between workers loses (a worker descheduled in its chunk holds the
// product up for a time slice), and trying again finds nothing.
package runqueue
