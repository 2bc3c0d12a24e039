// Package ops is the daemon's op handlers (tailscale's localapi): for each
// connection, hello first, authorisation from the registry (wire.Ops),
// dispatch of plain and streaming requests, cancel, and the handlers
// themselves — status, tokenize, sessions, chat and generate (admission,
// scheduling, streaming), subscribe and the admin ops. It reaches the rest
// of the daemon only through Daemon.
package ops
