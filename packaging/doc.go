// Package packaging holds the release scripts (Homebrew formula, pkg,
// signing, uninstall). They only run on macOS; its test lints them here
// (shellcheck, ruby -c) and checks they agree with `forged install`.
package packaging
