// Package deps holds no code: its test pins what each binary and library
// links (as tailscale's depaware does), so a stray import that drags the
// offline rebuild into the daemon, or the daemon into the client, fails
// the build's tests instead of being noticed later.
package deps
