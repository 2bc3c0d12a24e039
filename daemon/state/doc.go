// Package state is what the daemon knows and decides apart from any one
// connection: the session table (every open session, grouped by the
// connection that owns it) and residency (load, unload, pin, keep-alive,
// memory pressure, revision switches, the memory queue). It holds no
// pointer to the Server: what it needs comes in as a Host.
package state
