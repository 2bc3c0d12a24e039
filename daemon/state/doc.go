// Package state is what the daemon knows and decides apart from any one
// connection (tailscale's ipnlocal): the published state subscribers see,
// the session table (every open session, grouped by the connection that
// owns it), residency (load, unload, pin, keep-alive, memory pressure,
// revision switches, the memory queue), serving a bundle store (pulls,
// rollback, the snapshot watch, the updater's source) and the config file
// as it runs (live apply, config.set). It holds no pointer to the Server:
// what it needs comes in as a Host and as functions.
package state
